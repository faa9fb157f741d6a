// `shoal agent --config PATH`: the flags of a host that runs shoal permanently (systemd), kept in a file and
// read through CLI11's config-file support with a format of our own. One `key = value` per line, keys being
// the long flag names without the dashes (`min-hosts = 4`, `no-slurm = true`), `#` comments and blank lines
// allowed, and a value in matching quotes loses them; `log-level` sets the log levels as `--log-level` does.
// See packaging/shoal-agent.conf.example. Flags given on the command line override the file (CLI11's rule).
#pragma once

#include <CLI/CLI.hpp>
#include <istream>
#include <string>
#include <vector>

namespace shoal::ops {

// A line of a config file that cannot be used: `line` counts from 1, `problem` says what is wrong.
class ConfigLineError : public CLI::ConfigError {
 public:
  ConfigLineError(int line, const std::string& problem);
  int line() const { return line_; }
  const std::string& problem() const { return problem_; }

 private:
  int line_;
  std::string problem_;
};

// Reads (and writes) config files for the flags of `app`. Every refusal is a ConfigLineError: a line
// without '=', a key that is no flag name of `app` or one a file cannot set (help, config), an empty
// value, a key given twice, a switch whose value is not true or false, and a value that the flag's own
// checks refuse. What it returns, CLI11 therefore applies without a further error.
class ConfigFileFormat : public CLI::Config {
 public:
  explicit ConfigFileFormat(CLI::App& app) : app_(app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
  // `key = value` for each flag of `app` that has a value (CLI::App::config_to_str), quoted where reading
  // it back would change it; with write_description, each preceded by its help as a comment.
  std::string to_config(const CLI::App* app, bool default_also, bool write_description,
                        std::string prefix) const override;

 private:
  CLI::App& app_;
};

// Makes `app` read `--config PATH` with ConfigFileFormat; returns the flag.
CLI::Option* add_config_flag(CLI::App& app, const std::string& help);

// An error met while `app` parsed, as its user reads it: "PATH:LINE: problem" when it is a line of the
// config file at `path`, else the error's own message.
std::string config_error_text(const std::string& path, const CLI::Error& error);

}  // namespace shoal::ops
