// Dispatch of `shoal SUBCOMMAND ...`, the global flags and the top-level help.
#include "cli/cli.hpp"

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.hpp"
#include "cli/flags.hpp"
#include "cli/version_text.hpp"

namespace shoal::cli {
namespace {

int version_command(std::span<const std::string> args) {
  FlagSet flags("shoal version", "Print the version, the git revision and the backends compiled in.");
  int exit_code = kExitOk;
  if (!parse_subcommand(flags, args, "shoal version", &exit_code)) return exit_code;
  std::cout << version_text();
  return kExitOk;
}

}  // namespace

std::optional<ParsedArgs> parse_subcommand(const FlagSet& flags, std::span<const std::string> args,
                                           std::string_view prog, int* exit_code, bool allow_positional) {
  auto parsed = flags.parse(args);
  if (!parsed) {
    std::cerr << prog << ": " << parsed.error().message << " (see `" << prog << " --help`)\n";
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  if (parsed->help) {
    std::cout << flags.help();
    *exit_code = kExitOk;
    return std::nullopt;
  }
  if (!allow_positional && !parsed->positional.empty()) {
    std::cerr << prog << ": unexpected argument '" << parsed->positional.front() << "'\n";
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  return std::move(*parsed);
}

namespace {

std::string top_help() {
  std::string out =
      "usage: shoal [--log-level SPEC] SUBCOMMAND [flags]\n"
      "       shoal --version | --help\n\n"
      "shoal keeps a training job running while hosts fail and join: the hosts agree on the member list\n"
      "among themselves (SWIM gossip, committed views), derive ranks, rebuild the communicator and keep\n"
      "checkpoints in peers' memory.\n\nsubcommands:\n";
  for (const auto& s : subcommands()) {
    std::string left = "  " + s.name;
    left.resize(14, ' ');
    out += left + s.summary + "\n";
  }
  out +=
      "\nglobal flags:\n"
      "  --log-level SPEC   log levels, e.g. info or warn,gossip=debug (default: $SHOAL_LOG, else info);\n"
      "                     also accepted after the subcommand (`shoal agent --log-level debug ...`)\n"
      "  --version          same as `shoal version`\n"
      "  -h, --help         this help; `shoal SUBCOMMAND --help` for each subcommand\n"
      "\nenvironment:\n"
      "  SHOAL_LOG          the default of --log-level\n"
      "  SHOAL_TCP_BACKOFF_CAP_MS\n"
      "                     cap on TCP's retransmission backoff for shoal's and Gloo's connections, in ms\n"
      "                     (1000..120000; 0: the kernel's default; default 1000; needs Linux 6.15+)\n";
  return out;
}

int help_command(std::span<const std::string>) {
  std::cout << top_help();
  return kExitOk;
}

}  // namespace

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> table = {
      {"agent", "run one member of a cluster (gossip, committed views, control socket)", agent_command},
      {"members", "print a running agent's member list", members_command},
      {"status", "one screen about a running agent: view, members, last changes, checkpoints", status_command},
      {"view", "print a running agent's committed view and ranks; `view force` overrides a stall", view_command},
      {"ckpt", "list the checkpoint versions a running agent's host holds (`ckpt ls`)", ckpt_command},
      {"keygen", "print a new cluster key for --key-file", keygen_command},
      {"demo", "run the local multi-host demo", demo_command},
      {"version", "print version, git revision and backends", version_command},
      {"help", "print this help", help_command},
  };
  return table;
}

namespace {
bool g_log_level_given = false;

// `--log-level SPEC` or `--log-level=SPEC` at args[j]: how many arguments it spans (0: another argument)
// and its value (none: missing, at the end or before a `--`).
struct LogLevelFlag {
  size_t span = 0;
  std::optional<std::string> value;
};
LogLevelFlag log_level_at(const std::vector<std::string>& args, size_t j) {
  constexpr std::string_view kWithValue = "--log-level=";
  const std::string& a = args[j];
  if (a.rfind(kWithValue, 0) == 0) return {1, a.substr(kWithValue.size())};
  if (a != "--log-level") return {};
  if (j + 1 >= args.size() || args[j + 1] == "--") return {1, std::nullopt};
  return {2, args[j + 1]};
}

int missing_log_level() {
  std::cerr << "shoal: --log-level needs a value (SPEC)\n";
  return kExitUsage;
}
}  // namespace

bool log_level_given() { return g_log_level_given; }

int run_cli(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::optional<std::string> log_flag;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--version") return version_command({});
    if (a == "-h" || a == "--help") return help_command({});
    const LogLevelFlag flag = log_level_at(args, i);
    if (flag.span == 0) break;
    if (!flag.value) return missing_log_level();
    log_flag = flag.value;
    i += flag.span - 1;
  }
  // `shoal agent --log-level debug ...` works too: the flag may follow the subcommand (up to a `--`,
  // after which everything belongs to the launched command).
  if (i < args.size()) {
    for (size_t j = i + 1; j < args.size() && args[j] != "--";) {
      const LogLevelFlag flag = log_level_at(args, j);
      if (flag.span == 0) {
        ++j;
        continue;
      }
      if (!flag.value) return missing_log_level();
      log_flag = flag.value;
      const auto at = args.begin() + static_cast<std::ptrdiff_t>(j);
      args.erase(at, at + static_cast<std::ptrdiff_t>(flag.span));
    }
  }
  g_log_level_given = log_flag.has_value();
  auto spec = log::spec_from(log_flag ? std::optional<std::string_view>(*log_flag) : std::nullopt);
  if (!spec) {
    std::cerr << "shoal: " << spec.error().message << "\n";
    return kExitUsage;
  }
  log::setup(*spec);

  if (i >= args.size()) {
    std::cerr << top_help();
    return kExitUsage;
  }
  const std::string& name = args[i];
  for (const auto& s : subcommands()) {
    if (s.name == name) {
      return s.run(std::span<const std::string>(args).subspan(i + 1));
    }
  }
  std::cerr << "shoal: unknown subcommand '" << name << "' (see `shoal --help`)\n";
  return kExitUsage;
}

}  // namespace shoal::cli
