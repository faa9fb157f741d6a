// Fuzz target: the agent's config file (ops::ConfigFileFormat) read by CLI11 for an app with flags of every
// kind the agent has. Any bytes give values or one ConfigLineError naming a line of the input; what the
// format accepts, CLI11 applies without a further error; and what the app then writes as a config file
// reads back to the same values.
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ops/config_file.hpp"

namespace {

// Flags like the agent's: text, a checked number, a transformed value, switches, and the config flag itself.
struct FuzzApp {
  std::optional<std::string> name, seeds, level;
  std::optional<int64_t> slots;
  std::optional<uint64_t> count;
  bool no_slurm = false, local_rank_arg = false;
  CLI::App app{"fuzz", "shoal agent"};

  FuzzApp() {
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("--name", name);
    app.add_option("--seeds", seeds);
    app.add_option("--log-level", level);
    app.add_option("--slots", slots)->check(CLI::Range(0, 1024));
    // A transform, as the agent's sizes and durations have: "007" becomes "7".
    app.add_option("--count", count)
        ->transform(CLI::Validator(
            [](std::string& v) {
              if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) {
                return "'" + v + "' is not a small number";
              }
              v = std::to_string(std::stoull(v));
              return std::string();
            },
            ""));
    app.add_flag("--no-slurm", no_slurm);
    app.add_flag("--local-rank-arg", local_rank_arg);
    shoal::ops::add_config_flag(app, "read flags from PATH");
  }

  // Every flag that holds a value, with its results.
  std::map<std::string, std::vector<std::string>> values() const {
    std::map<std::string, std::vector<std::string>> out;
    for (const CLI::Option* opt : app.get_options()) {
      if (opt->count() > 0) out[opt->get_name()] = opt->results();
    }
    return out;
  }
};

size_t line_count(const std::string& text) {
  size_t n = 1;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  FuzzApp first;
  try {
    std::istringstream in(text);
    first.app.parse_from_stream(in);
  } catch (const shoal::ops::ConfigLineError& e) {
    const auto line = static_cast<size_t>(e.line());
    if (line < 1 || line > line_count(text) || e.problem().empty()) __builtin_trap();
    if (std::string(e.what()) != "line " + std::to_string(line) + ": " + e.problem()) __builtin_trap();
    return 0;
  } catch (const CLI::Error&) {
    __builtin_trap();  // accepted by the format, refused by CLI11: the two disagree
  }

  // The values the file set, written as a config file, read back: the same values.
  const std::string written = first.app.config_to_str();
  FuzzApp second;
  try {
    std::istringstream in(written);
    second.app.parse_from_stream(in);
  } catch (const CLI::Error&) {
    __builtin_trap();
  }
  if (second.values() != first.values()) __builtin_trap();
  if (second.name != first.name || second.seeds != first.seeds || second.level != first.level ||
      second.slots != first.slots || second.count != first.count || second.no_slurm != first.no_slurm ||
      second.local_rank_arg != first.local_rank_arg) {
    __builtin_trap();
  }
  return 0;
}
