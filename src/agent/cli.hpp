// The shoal command line: global flags, the subcommand table and dispatch.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace shoal::agent {

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

int run_cli(int argc, char** argv);
// Whether `shoal --log-level` was given: a subcommand's own source of levels (a config file) yields to it.
bool log_level_given();

// Subcommands (one file each).
int demo_command(std::span<const std::string> args);
int agent_command(std::span<const std::string> args);
int members_command(std::span<const std::string> args);
int view_command(std::span<const std::string> args);
int ckpt_command(std::span<const std::string> args);
int status_command(std::span<const std::string> args);

}  // namespace shoal::agent
