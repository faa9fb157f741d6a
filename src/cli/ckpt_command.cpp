// `shoal ckpt ls`: what a running agent's host holds in shared memory: its ranks' own checkpoint
// versions and the replicas it keeps for peers.
#include <cinttypes>
#include <cstdio>
#include <iostream>

#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/control_ask.hpp"

namespace shoal::cli {
namespace {

std::string human_bytes(uint64_t b) {
  char out[32];
  if (b >= (1ull << 30)) {
    std::snprintf(out, sizeof out, "%.2f GiB", static_cast<double>(b) / (1ull << 30));
  } else if (b >= (1ull << 20)) {
    std::snprintf(out, sizeof out, "%.1f MiB", static_cast<double>(b) / (1ull << 20));
  } else {
    std::snprintf(out, sizeof out, "%" PRIu64 " B", b);
  }
  return out;
}

int print_table(const control::JsonValue& doc, bool verify) {
  const auto text = [](const control::JsonValue& v, const char* key) {
    const control::JsonValue* f = v.find(key);
    return f ? f->as_string().value_or("") : std::string();
  };
  const auto number = [](const control::JsonValue& v, const char* key) {
    const control::JsonValue* f = v.find(key);
    return f ? f->as_uint64().value_or(0) : 0;
  };
  const auto flag = [](const control::JsonValue& v, const char* key) {
    const control::JsonValue* f = v.find(key);
    return f && f->as_bool().value_or(false);
  };
  std::printf("job %s, segments /dev/shm/shoal.%s.*\n", text(doc, "job").c_str(), text(doc, "store").c_str());
  std::printf("%-8s %5s %10s %5s %12s %-8s %-28s %s\n", "KIND", "RANK", "STEP", "WORLD", "BYTES",
              verify ? "VERIFIED" : "SEALED", "FROM", "SEGMENT");
  const control::JsonValue* held = doc.find("held");
  size_t rows = 0;
  for (const auto& h : held ? held->items() : std::vector<control::JsonValue>{}) {
    ++rows;
    if (!flag(h, "sealed")) {
      std::printf("%-8s %5s %10s %5s %12s %-8s %-28s %s  (%s)\n", text(h, "kind").c_str(), "-", "-", "-",
                  human_bytes(number(h, "segment_bytes")).c_str(), "no", "-", text(h, "segment").c_str(),
                  text(h, "problem").c_str());
      continue;
    }
    std::string state = "yes";
    if (verify) state = flag(h, "verified") ? "yes" : "FAILED";
    std::printf("%-8s %5" PRIu64 " %10" PRIu64 " %5" PRIu64 " %12s %-8s %-28s %s%s\n", text(h, "kind").c_str(),
                number(h, "rank"), number(h, "step"), number(h, "world"), human_bytes(number(h, "bytes")).c_str(),
                state.c_str(), text(h, "from").c_str(), text(h, "segment").c_str(),
                verify && !flag(h, "verified") ? ("  (" + text(h, "problem") + ")").c_str() : "");
  }
  if (rows == 0) std::printf("(nothing held)\n");
  if (const control::JsonValue* dir = doc.find("persist_dir")) {
    const control::JsonValue* persisted = doc.find("persisted");
    const auto files = persisted ? persisted->items() : std::vector<control::JsonValue>{};
    std::printf("\npersisted in %s: %zu version(s)%s\n", dir->as_string().value_or("").c_str(), files.size(),
                doc.find("persist_counters") && flag(*doc.find("persist_counters"), "busy") ? ", writing" : "");
    for (const auto& p : files) {
      std::printf("%-8s %5" PRIu64 " %10" PRIu64 " %5" PRIu64 " %12s %-8s %-28s %s\n", "disk", number(p, "rank"),
                  number(p, "step"), number(p, "world"), human_bytes(number(p, "bytes")).c_str(), "yes", "(this agent)",
                  text(p, "path").c_str());
    }
  }
  return kExitOk;
}

int ls_command(const std::optional<std::string>& control, const std::optional<std::string>& name, bool json,
               bool verify) {
  return ask_agent("shoal ckpt ls", control, name, verify ? "ckpt-ls verify" : "ckpt-ls",
                   [json, verify](const control::JsonValue& doc, const std::string& raw) {
                     if (json) {
                       std::cout << raw << (raw.empty() || raw.back() != '\n' ? "\n" : "");
                       return kExitOk;
                     }
                     return print_table(doc, verify);
                   });
}

}  // namespace

int ckpt_command(std::span<const std::string> args) {
  std::optional<std::string> control, name;
  bool json = false, verify = false;
  auto app = command_app("shoal ckpt", "shoal ckpt ls [--control PATH | --name NAME] [--json] [--verify]",
                         "In-memory checkpoints of a running agent's host.");
  app->require_subcommand(1);
  CLI::App* ls =
      add_command(*app, "ls", "shoal ckpt ls [--control PATH | --name NAME] [--json] [--verify]",
                  "List the checkpoint versions this agent's host holds in shared memory and in --ckpt-dir.\n"
                  "Its ranks' own versions (local) and the replicas it keeps for peers (replica), with rank, step,\n"
                  "the world size they were saved in, size, whether they are sealed (complete) and where they came\n"
                  "from (a trainer on this host, or the peer that replicated them here); then what --ckpt-dir\n"
                  "holds, when the agent has one. --verify also checks every buffer's checksum in memory (reads all\n"
                  "the bytes). Exit status: 0 on success, 1 when no agent answers, 2 on a usage error.");
  add_agent_socket_flags(*ls, control, name);
  ls->add_flag("--json", json, "print the agent's JSON document");
  ls->add_flag("--verify", verify, "verify the data checksums of every sealed version");
  if (auto done = parse_command(*app, args)) return *done;
  return ls_command(control, name, json, verify);
}

}  // namespace shoal::cli
