// Parsing the agent's config file into flags.
#include "ops/config_file.hpp"

#include <fstream>
#include <set>
#include <sstream>

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

// A value in matching double or single quotes loses them (for values with a leading '#' or spaces).
std::string unquote(const std::string& v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    return v.substr(1, v.size() - 2);
  }
  return v;
}

}  // namespace

Result<ConfigFileArgs> parse_config_text(const std::string& text, const std::string& path) {
  ConfigFileArgs out;
  std::set<std::string> seen;
  std::istringstream in(text);
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    const std::string line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) return fail(where + "expected `key = value`, got '" + line + "'");
    const std::string key = trim(line.substr(0, eq));
    const std::string value = unquote(trim(line.substr(eq + 1)));
    if (!is_flag_name(key)) {
      return fail(where + "'" + key + "' is not a flag name (lower-case letters, digits and '-', as in min-hosts)");
    }
    if (key == "config") return fail(where + "a config file cannot name another config file");
    if (value.empty()) return fail(where + "'" + key + "' has no value (leave the line out for the default)");
    if (!seen.insert(key).second) return fail(where + "'" + key + "' is given twice");
    if (key == "log-level") {
      out.log_level = value;
      continue;
    }
    out.args.push_back("--" + key);
    out.args.push_back(value);
  }
  return out;
}

Result<ConfigFileArgs> read_config_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return fail("cannot read the config file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return fail("cannot read the config file " + path);
  return parse_config_text(ss.str(), path);
}

std::optional<std::string> config_path_in(std::span<const std::string> args) {
  std::optional<std::string> path;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] == "--config" && i + 1 < args.size()) path = args[i + 1];
    if (args[i].rfind("--config=", 0) == 0) path = args[i].substr(9);
  }
  return path;
}

}  // namespace shoal::ops
