// FlagSet: parsing and help text for the subcommands of the shoal binary.
#include "cli/flags.hpp"

#include <charconv>

namespace shoal::cli {

void FlagSet::add_string(std::string name, std::string value_name, std::string help,
                         std::optional<std::string>* target) {
  flags_.push_back({std::move(name), std::move(value_name), std::move(help), [target](const std::string& v) -> Status {
                      *target = v;
                      return Ok{};
                    }});
}

void FlagSet::add_int(std::string name, std::string value_name, std::string help, std::optional<int64_t>* target,
                      int64_t min_value, int64_t max_value) {
  flags_.push_back({std::move(name), std::move(value_name), std::move(help),
                    [target, min_value, max_value](const std::string& v) -> Status {
                      int64_t n = 0;
                      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
                      if (ec != std::errc() || end != v.data() + v.size())
                        return fail("'" + v + "' is not a whole number");
                      if (n < min_value || n > max_value) {
                        return fail(v + " is out of range [" + std::to_string(min_value) + ", " +
                                    std::to_string(max_value) + "]");
                      }
                      *target = n;
                      return Ok{};
                    }});
}

void FlagSet::add_bool(std::string name, std::string help, bool* target) {
  flags_.push_back({std::move(name), "", std::move(help), [target](const std::string&) -> Status {
                      *target = true;
                      return Ok{};
                    }});
}

const FlagSet::Flag* FlagSet::find(const std::string& name) const {
  for (const auto& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Result<ParsedArgs> FlagSet::parse(std::span<const std::string> args) const {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      out.after_dash.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (arg == "-h" || arg == "--help") {
      out.help = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      out.positional.push_back(arg);
      continue;
    }
    if (arg.rfind("--", 0) != 0) return fail("unknown flag '" + arg + "' (flags are spelled --name)");
    const auto eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const Flag* flag = find(name);
    if (flag == nullptr) return fail("unknown flag '--" + name + "'");
    std::string value;
    if (flag->value_name.empty()) {
      if (eq != std::string::npos) return fail("--" + name + " takes no value");
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= args.size()) return fail("--" + name + " needs a value (" + flag->value_name + ")");
      value = args[++i];
    }
    if (auto st = flag->set(value); !st) return fail("--" + name + ": " + st.error().message);
  }
  return out;
}

std::string FlagSet::help() const {
  std::string out = "usage: " + usage_ + "\n\n" + summary_ + "\n";
  if (flags_.empty()) return out;
  out += "\nflags:\n";
  for (const auto& f : flags_) {
    std::string left = "  --" + f.name + (f.value_name.empty() ? "" : " " + f.value_name);
    if (left.size() < 28)
      left.resize(28, ' ');
    else
      left += "\n" + std::string(28, ' ');
    out += left + f.help + "\n";
  }
  out += "  -h, --help                show this help\n";
  return out;
}

}  // namespace shoal::cli
