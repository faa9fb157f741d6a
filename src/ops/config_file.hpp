// `shoal agent --config PATH`: the flags of a host that runs shoal permanently (systemd), kept in a
// file. One `key = value` per line, keys being the agent's long flag names without the dashes
// (`min-hosts = 4`), `#` comments and blank lines allowed; `log-level` sets the log levels as the
// global `shoal --log-level` does. See packaging/shoal-agent.conf.example. Flags given on the command
// line override the file.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace shoal::ops {

struct ConfigFileArgs {
  std::vector<std::string> args;         // "--key", "value" pairs, in file order
  std::optional<std::string> log_level;  // from `log-level`
};

// Parses a config file's text; errors name the line ("PATH:LINE: ...") and what is wrong: no '=', a
// key that is not a flag name, an empty value, a key given twice.
Result<ConfigFileArgs> parse_config_text(const std::string& text, const std::string& path);
// Reads and parses the file; a file that cannot be read is an error naming it.
Result<ConfigFileArgs> read_config_file(const std::string& path);
// The value of --config in `args` ("--config PATH" or "--config=PATH"), before "--"; nullopt if absent.
std::optional<std::string> config_path_in(std::span<const std::string> args);

}  // namespace shoal::ops
