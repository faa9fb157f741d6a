// A small command-line flag parser: declared flags with help text, --name VALUE and --name=VALUE,
// clear errors for unknown flags, missing or malformed values, and "--" to end the flags.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace shoal::cli {

struct ParsedArgs {
  bool help = false;                    // -h or --help was given
  std::vector<std::string> positional;  // arguments that are not flags
  std::vector<std::string> after_dash;  // everything after "--"
};

class FlagSet {
 public:
  FlagSet(std::string usage, std::string summary) : usage_(std::move(usage)), summary_(std::move(summary)) {}

  void add_string(std::string name, std::string value_name, std::string help, std::optional<std::string>* target);
  void add_int(std::string name, std::string value_name, std::string help, std::optional<int64_t>* target,
               int64_t min_value, int64_t max_value);
  void add_bool(std::string name, std::string help, bool* target);

  // Parses args (without the program and subcommand names). Errors name the flag and what was wrong.
  Result<ParsedArgs> parse(std::span<const std::string> args) const;
  std::string help() const;

 private:
  struct Flag {
    std::string name;
    std::string value_name;  // empty: a boolean switch
    std::string help;
    std::function<Status(const std::string&)> set;
  };
  const Flag* find(const std::string& name) const;

  std::string usage_;
  std::string summary_;
  std::vector<Flag> flags_;
};

}  // namespace shoal::cli
