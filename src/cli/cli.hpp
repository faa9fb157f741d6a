// The shoal command line: global flags, the subcommand table and dispatch.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/flags.hpp"

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

// A subcommand's opening: parses `args`; a usage error prints "PROG: message (see `PROG --help`)", --help
// prints the help, and positional arguments are refused unless allowed. Returns nullopt when the
// subcommand is done and should return *exit_code (kExitUsage, or kExitOk after --help).
std::optional<ParsedArgs> parse_subcommand(const FlagSet& flags, std::span<const std::string> args,
                                           std::string_view prog, int* exit_code, bool allow_positional = false);

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
int keygen_command(std::span<const std::string> args);

}  // namespace shoal::cli
