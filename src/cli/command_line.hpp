// How every `shoal` subcommand reads its command line with CLI11: its App (the shared help format, flags
// that keep their last value, the global --log-level), parsing with usage errors and help, and the log
// levels it sets up.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/result.hpp"

namespace shoal::cli {

// A subcommand's App, named as the user types it ("shoal members"). Its help shows `usage` (one synopsis
// per line) first, then `description`; its flags are the group "Flags", a flag given twice keeps its last
// value (so that a later flag overrides an earlier one, as the config file's yield to the command line),
// and it takes `--log-level SPEC` like `shoal` itself.
std::unique_ptr<CLI::App> command_app(const std::string& name, const std::string& usage,
                                      const std::string& description);
// The same for a subcommand of one (`shoal ckpt ls`, `shoal view force`); the first line of its
// description is its summary in the parent's help.
CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& usage,
                      const std::string& description);
// `--log-level SPEC` with its check, for command_app and for `shoal` itself.
void add_log_level_flag(CLI::App& app);

enum class Parsed { ok, help };

// Parses `args` (without the program and subcommand names) into `app`. The error is a sentence naming the
// flag and what is wrong; one about a line of the config file names the file and the line.
Result<Parsed> parse_args(CLI::App& app, std::span<const std::string> args);

// The name of the (sub)command that `app` parsed, as the user typed it: "shoal ckpt ls".
std::string command_name(const CLI::App& app);

// The --log-level given to `app` or to the subcommand it parsed (the later one wins); from the command
// line or, for `shoal agent`, its config file.
std::optional<std::string> log_level_of(const CLI::App& app);

// parse_args for a subcommand, then the log levels (--log-level, else $SHOAL_LOG, else info). Returns the
// exit status when the command is done: kExitOk after printing its help, kExitUsage after printing
// "NAME: message (see `NAME --help`)". nullopt: go on.
std::optional<int> parse_command(CLI::App& app, std::span<const std::string> args);

}  // namespace shoal::cli
