// Dispatch of `shoal SUBCOMMAND ...`, the global flags and the top-level help.
#include "cli/cli.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command_line.hpp"
#include "cli/help_format.hpp"
#include "cli/version_text.hpp"

namespace shoal::cli {
namespace {

int version_command(std::span<const std::string> args) {
  auto app = command_app("shoal version", "shoal version",
                         "Print the version, the git revision and the backends compiled in.");
  if (auto done = parse_command(*app, args)) return *done;
  std::cout << version_text();
  return kExitOk;
}

std::string subcommands_text() {
  std::string out = "Subcommands:\n";
  for (const auto& s : subcommands()) {
    std::string left = "  " + s.name;
    left.resize(16, ' ');
    out += left + s.summary + "\n";
  }
  return out;
}

// `shoal` before the subcommand: the global flags; the subcommand and what follows are left for it.
std::unique_ptr<CLI::App> shoal_app(bool* version) {
  auto app = std::make_unique<CLI::App>(
      "shoal keeps a training job running while hosts fail and join: the hosts agree on the member list\n"
      "among themselves (SWIM gossip, committed views), derive ranks, rebuild the communicator and keep\n"
      "checkpoints in peers' memory.",
      "shoal");
  app->formatter(std::make_shared<HelpFormat>("shoal [--log-level SPEC] SUBCOMMAND [flags]\nshoal --version | --help"));
  app->option_defaults()->group("Global flags")->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app->set_help_flag("-h,--help", "this help; `shoal SUBCOMMAND --help` for each subcommand");
  add_log_level_flag(*app);
  app->add_flag("--version", *version, "same as `shoal version`");
  app->prefix_command();  // parsing stops at the subcommand: the rest is its own
  app->footer(subcommands_text() +
              "\nEnvironment:\n"
              "  SHOAL_LOG     the default of --log-level\n"
              "  SHOAL_TCP_BACKOFF_CAP_MS\n"
              "                cap on TCP's retransmission backoff for shoal's and Gloo's connections, in ms\n"
              "                (1000..120000; 0: the kernel's default; default 1000; needs Linux 6.15+)");
  return app;
}

std::string top_help() {
  bool version = false;
  return shoal_app(&version)->help();
}

int help_command(std::span<const std::string> args) {
  auto app = command_app("shoal help", "shoal help [SUBCOMMAND]",
                         "Print the help of shoal, or that of SUBCOMMAND (the same as `shoal SUBCOMMAND --help`).");
  std::string name;
  app->add_option("subcommand", name, "the subcommand to explain")->type_name("SUBCOMMAND");
  if (auto done = parse_command(*app, args)) return *done;
  if (name.empty()) {
    std::cout << top_help();
    return kExitOk;
  }
  for (const auto& s : subcommands()) {
    if (s.name == name) {
      const std::vector<std::string> help = {"--help"};
      return s.run(help);
    }
  }
  std::cerr << "shoal help: unknown subcommand '" << name << "' (see `shoal --help`)\n";
  return kExitUsage;
}

}  // namespace

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> table = {
      {"agent", "run one member of a cluster (gossip, committed views, control socket)", agent_command},
      {"members", "print a running agent's member list", members_command},
      {"status", "one screen about a running agent: view, members, last changes, checkpoints", status_command},
      {"view",
       "print a running agent's committed view and ranks; `view force` overrides a stall, `view exclude`/`readmit` "
       "hold hosts out",
       view_command},
      {"drain", "leave at a step boundary: the trainers save, a peer holds it, the host leaves gracefully",
       drain_command},
      {"health", "per-host compute and wait per step from the job's own steps, and the straggler verdict",
       health_command},
      {"check", "pre-flight check: a compute probe on every host and link probes between pairs, flagging outliers",
       check_command},
      {"ckpt", "list the checkpoint versions a running agent's host holds (`ckpt ls`)", ckpt_command},
      {"keygen", "print a new cluster key for --key-file", keygen_command},
      {"demo", "run the local multi-host demo", demo_command},
      {"version", "print version, git revision and backends", version_command},
      {"help", "print this help, or a subcommand's (`help SUBCOMMAND`)", help_command},
  };
  return table;
}

int run_cli(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  bool version = false;
  auto shoal = shoal_app(&version);
  const auto parsed = parse_args(*shoal, args);
  if (!parsed) {
    std::cerr << "shoal: " << parsed.error().message << " (see `shoal --help`)\n";
    return kExitUsage;
  }
  if (*parsed == Parsed::help) {
    std::cout << shoal->help();
    return kExitOk;
  }
  if (version) return version_command({});
  const std::vector<std::string> rest = shoal->remaining();
  if (rest.empty()) {
    std::cerr << shoal->help();
    return kExitUsage;
  }
  const std::string& name = rest.front();
  for (const auto& s : subcommands()) {
    if (s.name != name) continue;
    std::vector<std::string> sub_args;
    if (const auto level = log_level_of(*shoal)) sub_args = {"--log-level", *level};
    sub_args.insert(sub_args.end(), rest.begin() + 1, rest.end());
    return s.run(sub_args);
  }
  const bool flag = name.size() > 1 && name.front() == '-';
  std::cerr << "shoal: unknown " << (flag ? "flag" : "subcommand") << " '" << name << "' (see `shoal --help`)\n";
  return kExitUsage;
}

}  // namespace shoal::cli
