// The agent's config file format for CLI11: reading lines into config items, checked against the app's flags.
#include "ops/config_file.hpp"

#include <set>

namespace shoal::ops {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

bool is_flag_name(const std::string& key) {
  if (key.empty() || key.front() == '-' || key.back() == '-') return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

bool is_quote(char c) { return c == '"' || c == '\''; }

// A value in matching double or single quotes loses them (for values with a leading '#' or spaces).
std::string unquote(const std::string& v) {
  if (v.size() >= 2 && is_quote(v.front()) && v.back() == v.front()) return v.substr(1, v.size() - 2);
  return v;
}

// The value as a line of the file must spell it for unquote(trim(...)) to give it back.
std::string quoted(const std::string& v) {
  const bool plain = !v.empty() && trim(v) == v && v.front() != '#' && unquote(v) == v;
  if (plain) return v;
  return v.find('"') == std::string::npos ? '"' + v + '"' : '\'' + v + '\'';
}

// The words a switch takes in a file; CLI11 reads each of them as the boolean it names.
bool is_switch_word(const std::string& v) {
  static const std::set<std::string> words = {"true", "false", "yes", "no", "on", "off", "1", "0"};
  return words.count(v) > 0;
}

// The first problem that the flag's own checks find with `value`, as CLI11 will run them when it applies
// the value (each check sees what the one before it made of the value); empty when there is none.
std::string refusal(CLI::Option& flag, std::string value) {
  for (int i = 0;; ++i) {
    const CLI::Validator* check = nullptr;
    try {
      check = flag.get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return {};  // past the last check
    }
    try {
      if (std::string problem = (*check)(value); !problem.empty()) return problem;
    } catch (const CLI::ValidationError& e) {
      return e.what();
    }
  }
}

// `text` with its control characters written as \xNN: a message quotes lines of the file, which may hold any
// byte, and is printed to a terminal (and read through what(), which a NUL would cut short).
std::string printable(const std::string& text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
    } else {
      out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xf]};
    }
  }
  return out;
}

}  // namespace

ConfigLineError::ConfigLineError(int line, const std::string& problem)
    : CLI::ConfigError("ConfigLineError", "line " + std::to_string(line) + ": " + printable(problem),
                       CLI::ExitCodes::ConfigError),
      line_(line),
      problem_(printable(problem)) {}

std::vector<CLI::ConfigItem> ConfigFileFormat::from_config(std::istream& input) const {
  std::vector<CLI::ConfigItem> items;
  std::set<std::string> seen;
  std::string raw;
  for (int line_no = 1; std::getline(input, raw); ++line_no) {
    const auto refuse = [line_no](const std::string& problem) { return ConfigLineError(line_no, problem); };
    const std::string line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) throw refuse("expected `key = value`, got '" + line + "'");
    const std::string key = trim(line.substr(0, eq));
    const std::string value = unquote(trim(line.substr(eq + 1)));
    if (!is_flag_name(key)) {
      throw refuse("'" + key + "' is not a flag name (lower-case letters, digits and '-', as in min-hosts)");
    }
    CLI::Option* flag = app_.get_option_no_throw("--" + key);
    if (flag != nullptr && flag == app_.get_config_ptr()) throw refuse("a config file cannot name another config file");
    if (flag == nullptr) throw refuse("'" + key + "' is not a flag of " + app_.get_name());
    if (!flag->get_configurable()) throw refuse("'" + key + "' cannot be set in a config file");
    if (value.empty()) throw refuse("'" + key + "' has no value (leave the line out for the default)");
    if (!seen.insert(key).second) throw refuse("'" + key + "' is given twice");
    if (flag->get_expected_min() == 0) {  // a switch, as CLI11 tells them apart
      if (!is_switch_word(value)) throw refuse("'" + key + "' is a switch: true or false, not '" + value + "'");
    } else if (std::string problem = refusal(*flag, value); !problem.empty()) {
      throw refuse(key + ": " + problem);
    }
    CLI::ConfigItem item;
    item.name = key;
    item.inputs = {value};
    items.push_back(std::move(item));
  }
  return items;
}

std::string ConfigFileFormat::to_config(const CLI::App* app, bool /*default_also*/, bool write_description,
                                        std::string /*prefix*/) const {
  std::string out;
  for (const CLI::Option* flag : app->get_options()) {
    if (flag->count() == 0 || !flag->get_configurable() || flag->get_lnames().empty()) continue;
    if (write_description) out += "# " + flag->get_description() + "\n";
    // The flag's last value is the one it holds (later values replace earlier ones).
    out += flag->get_lnames().front() + " = " + quoted(flag->results().back()) + "\n";
  }
  return out;
}

CLI::Option* add_config_flag(CLI::App& app, const std::string& help) {
  app.config_formatter(std::make_shared<ConfigFileFormat>(app));
  return app.set_config("--config", "", help)->type_name("PATH");
}

std::string config_error_text(const std::string& path, const CLI::Error& error) {
  if (const auto* line = dynamic_cast<const ConfigLineError*>(&error)) {
    return path + ":" + std::to_string(line->line()) + ": " + line->problem();
  }
  return error.what();
}

}  // namespace shoal::ops
