// The shoal command line: global flags, the subcommand table and dispatch.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace shoal::cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct Subcommand {
  std::string name;
  std::string summary;
  int (*run)(std::span<const std::string> args);
};

// Every subcommand the binary offers, in the order `shoal --help` lists them.
const std::vector<Subcommand>& subcommands();

// `shoal [--log-level SPEC] SUBCOMMAND ARGS...`: the global flags, then the subcommand's run() with ARGS
// (preceded by `--log-level SPEC` when given before it, so that it counts as given to the subcommand).
int run_cli(int argc, char** argv);

// Subcommands (one file each).
int demo_command(std::span<const std::string> args);
int agent_command(std::span<const std::string> args);
int members_command(std::span<const std::string> args);
int view_command(std::span<const std::string> args);
int drain_command(std::span<const std::string> args);
int ckpt_command(std::span<const std::string> args);
int status_command(std::span<const std::string> args);
int health_command(std::span<const std::string> args);
int check_command(std::span<const std::string> args);
int keygen_command(std::span<const std::string> args);

}  // namespace shoal::cli
