// `shoal health`: node health as a running agent's local trainer measured it on the job's own steps:
// each host's median compute (outside collectives) and wait (inside them) per step, and the straggler
// verdict every rank of the view shares. A table for people, --json for scripts.
#include <cinttypes>
#include <cstdio>
#include <iostream>

#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/control_ask.hpp"

namespace shoal::cli {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

int print_health(const control::HealthReply& doc) {
  if (!doc.reported) {
    std::printf("%s: no figures yet: no local trainer has run %" PRIu32
                " steps of an elastic loop since this agent started\n",
                doc.self.c_str(), doc.rule.exchange_every);
    return kExitOk;
  }
  std::printf("epoch %" PRIu64 ", step %" PRIu64 " (%" PRIu64 " evaluation(s), reported %.1f s ago); stragglers: %s\n",
              doc.epoch, doc.step, doc.evaluations, doc.age_s.value_or(0), joined(doc.stragglers).c_str());
  std::printf("rule: median compute over the last %" PRIu32
              " steps > %.2f x the job's median (and > %.1f ms above "
              "it) at %" PRIu32 " evaluations in a row; cleared at <= %.2f x at %" PRIu32 " in a row\n",
              doc.rule.window_steps, doc.rule.factor, doc.rule.min_excess_ms, doc.rule.raise_after,
              doc.rule.clear_factor, doc.rule.clear_after);
  std::printf("%-24s %12s %12s %8s  %s\n", "HOST", "COMPUTE_MS", "WAIT_MS", "SAMPLES", "STRAGGLER");
  for (const auto& h : doc.hosts) {
    std::printf("%-24s %12.1f %12.1f %8" PRIu32 "  %s\n", h.name.c_str(), h.compute_ms, h.wait_ms, h.samples,
                h.straggler ? "yes" : (h.samples < doc.rule.min_samples ? "no data" : "no"));
  }
  if (doc.dropped.records + doc.dropped.figures + doc.dropped.forged > 0) {
    std::printf("dropped: %" PRIu64 " timing record(s), %" PRIu64 " figure(s) out of range, %" PRIu64
                " record(s) whose cluster-key tag did not verify\n",
                doc.dropped.records, doc.dropped.figures, doc.dropped.forged);
  }
  std::printf("figures %s; eviction: %s\n",
              doc.authenticated ? "sealed with the cluster key and verified" : "not authenticated (open cluster)",
              doc.eviction.empty() ? "off" : doc.eviction.c_str());
  return kExitOk;
}

}  // namespace

int health_command(std::span<const std::string> args) {
  std::optional<std::string> control, name;
  bool json = false;
  auto app = command_app(
      "shoal health", "shoal health [--control PATH | --name NAME] [--json]",
      "Node health as the agent's local trainer measured it on the job's own steps: each host's median time\n"
      "per step outside collectives (compute) and inside them (wait), and the straggler verdict that every\n"
      "rank of the view computes alike from the same figures. A host is named when its median compute\n"
      "exceeds the job's median (of all hosts) by the rule's factor (default 1.2, and by at least 5 ms) at 2\n"
      "evaluations in a row (one every 5 steps, over the last 10 steps); it is cleared below 1.1 x. A host\n"
      "without figures is never named, and a job slowed down as a whole has no straggler. Needs a trainer\n"
      "that runs shoal's elastic loop with its agent embedded. Exit status: 0 on success, 1 when no agent\n"
      "answers, 2 on a usage error.");
  add_agent_socket_flags(*app, control, name);
  app->add_flag("--json", json,
                "print the agent's JSON document: {\"self\", \"reported\", \"epoch\", \"step\", \"hosts\": [{\"name\", "
                "\"compute_ms\", \"wait_ms\", \"samples\", \"straggler\"}...], \"stragglers\", \"rule\", ...}");
  if (auto done = parse_command(*app, args)) return *done;
  return ask_agent("shoal health", control, name, "health",
                   [json](const control::HealthReply& doc, const std::string& raw) {
                     if (json) {
                       std::cout << raw << (raw.empty() || raw.back() != '\n' ? "\n" : "");
                       return kExitOk;
                     }
                     return print_health(doc);
                   });
}

}  // namespace shoal::cli
