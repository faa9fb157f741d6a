// `shoal check`: the pre-flight check, coordinated by a running agent over the members of its committed
// view: a compute probe on every host and link probes between pairs of hosts in two rounds, with the hosts
// and links outside a factor of the median flagged. A table for people, --json for scripts.
#include <CLI/CLI.hpp>
#include <cinttypes>
#include <cstdio>
#include <iostream>

#include "cli/byte_size.hpp"
#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/control_ask.hpp"
#include "cli/flag_values.hpp"

namespace shoal::cli {
namespace {

// The agent answers within its own bound (a minute at worst, when members do not answer); this waits longer.
constexpr std::chrono::seconds kCheckTimeout{75};

std::string figure(const std::optional<double>& v, const char* format) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, *v);
  return buf;
}

std::string joined(const std::vector<std::string>& names, const char* none) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? none : out;
}

int print_check(const control::CheckReply& doc) {
  std::printf("check of epoch %" PRIu64 " from %s: %zu host(s), %zu link probe(s) in %.1f s (factor %.2f, up to %s "
              "or %" PRIu32 " ms per link)\n",
              doc.epoch, doc.self.c_str(), doc.hosts.size(), doc.links.size(), doc.elapsed_ms / 1000.0, doc.factor,
              human_bytes(doc.bytes).c_str(), doc.max_ms);
  std::printf("medians: %s GFLOP/s, %s Gb/s\n", figure(doc.median_gflops, "%.1f").c_str(),
              figure(doc.median_gbps, "%.2f").c_str());
  std::printf("\n%-24s %10s %8s %10s %7s  %s\n", "HOST", "GFLOP/S", "RATIO", "BEST_GBPS", "SLOW", "FLAGGED");
  for (const auto& h : doc.hosts) {
    const std::string slow = std::to_string(h.slow_links) + "/" + std::to_string(h.links);
    std::string flagged = h.flagged ? "yes (" + joined(h.reasons, "") + ")" : "no";
    if (h.error) flagged += "  " + *h.error;
    std::printf("%-24s %10s %8s %10s %7s  %s\n", h.name.c_str(), figure(h.gflops, "%.1f").c_str(),
                figure(h.compute_ratio, "%.2f").c_str(), figure(h.gbps, "%.2f").c_str(), slow.c_str(),
                flagged.c_str());
  }
  std::printf("\n%-5s %-24s %-24s %9s %9s %9s  %s\n", "ROUND", "FROM", "TO", "GBPS", "RTT_US", "MS", "SLOW");
  for (const auto& l : doc.links) {
    std::string slow = l.slow ? "yes" : "no";
    if (l.error) slow += "  " + *l.error;
    std::printf("%-5" PRIu32 " %-24s %-24s %9s %9s %9.1f  %s\n", l.round, l.a.c_str(), l.b.c_str(),
                figure(l.gbps, "%.2f").c_str(), figure(l.rtt_us, "%.0f").c_str(), l.elapsed_ms, slow.c_str());
  }
  std::printf("\nflagged hosts: %s; slow links: %s\n", joined(doc.flagged, "none").c_str(),
              joined(doc.slow_links, "none").c_str());
  if (doc.dropped > 0) std::printf("dropped: %" PRIu64 " figure(s) out of range\n", doc.dropped);
  return kExitOk;
}

}  // namespace

int check_command(std::span<const std::string> args) {
  std::optional<std::string> control, name;
  bool json = false;
  std::optional<double> factor;
  std::optional<uint64_t> bytes;
  std::optional<int64_t> ms, pings;
  auto app = command_app(
      "shoal check",
      "shoal check [--control PATH | --name NAME] [--json] [--factor F] [--bytes N] [--ms MS] [--pings N]",
      "Pre-flight check of a formed cluster, coordinated by the agent asked over the members of its committed\n"
      "view. Every host runs a compute probe (single-precision matrix multiplies: cuBLAS on the first GPU\n"
      "where the CUDA 13 runtime and a GPU are there, else OpenBLAS on one core), all at once. Then link probes over TCP between the hosts' agent addresses (the\n"
      "addresses the trainers' Gloo traffic uses too), sealed with the cluster key when there is one: round\n"
      "1 pairs the hosts in rank order; round 2 pairs the slowest of round 1 with the fastest, so that a slow\n"
      "host (every link of it slow) is told apart from one slow link. Each probe times a few round trips, then\n"
      "sends up to --bytes for at most --ms. With an odd count one host sits out each round (a different one).\n"
      "Flagged: a host whose GFLOP/s lies outside --factor of the median (either side), a link below the\n"
      "median bandwidth divided by --factor (or failed), a host whose every link is slow (network), a host\n"
      "that did not answer (unreachable). A member that does not answer is waited for a few seconds, never\n"
      "longer. With fewer than 4 hosts a slow host cannot always be told from a slow link. Takes seconds:\n"
      "about 2 s for 8 hosts on one loaded 2-core machine with the defaults (bench/check_bench.py).\n"
      "Exit status: 0 when the check ran (flagged hosts or not), 1 when\n"
      "no agent answers or it cannot run a check (no committed view yet, one running), 2 on a usage error.");
  add_agent_socket_flags(*app, control, name);
  app->add_flag("--json", json,
                "print the agent's JSON document: {\"self\", \"epoch\", \"factor\", \"median_gflops\", "
                "\"median_gbps\", \"hosts\": [{\"name\", \"flagged\", \"reasons\", \"gflops\", \"compute_ratio\", "
                "\"gbps\", ...}...], \"links\": [{\"a\", \"b\", \"round\", \"gbps\", \"rtt_us\", \"slow\", "
                "...}...], \"flagged\", \"slow_links\", \"dropped\", ...}; a figure not measured is null");
  app->add_option("--factor", factor, "how far from the median a figure may lie before it is flagged (default 1.5)")
      ->type_name("F")
      ->check(CLI::Range(1.01, 100.0));
  app->add_option("--bytes", bytes,
                  "bytes each link probe sends at most: a number, or with K, M or G (default 64M; at most 1G)")
      ->type_name("SIZE")
      ->transform(byte_size());
  app->add_option("--ms", ms, "milliseconds each link probe sends for at most (default 500; at most 5000)")
      ->type_name("MS")
      ->check(whole_number(1, 5000));
  app->add_option("--pings", pings, "round trips timed per link probe (default 8; at most 64)")
      ->type_name("N")
      ->check(whole_number(1, 64));
  if (auto done = parse_command(*app, args)) return *done;
  if (bytes && (*bytes == 0 || *bytes > (uint64_t{1} << 30))) {
    std::cerr << "shoal check: --bytes must lie in 1..1G (see `shoal check --help`)\n";
    return kExitUsage;
  }
  std::string request = "check";
  if (factor) request += " factor=" + std::to_string(*factor);
  if (bytes) request += " bytes=" + std::to_string(*bytes);
  if (ms) request += " ms=" + std::to_string(*ms);
  if (pings) request += " pings=" + std::to_string(*pings);
  return ask_agent(
      "shoal check", control, name, request,
      [json](const control::CheckReply& doc, const std::string& raw) {
        if (json) {
          std::cout << raw << (raw.empty() || raw.back() != '\n' ? "\n" : "");
          return kExitOk;
        }
        return print_check(doc);
      },
      kCheckTimeout);
}

}  // namespace shoal::cli
