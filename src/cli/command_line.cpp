// Parsing a subcommand's command line with CLI11, and the messages of its usage errors.
#include "cli/command_line.hpp"

#include <iostream>
#include <vector>

#include "base/log.hpp"
#include "cli/cli.hpp"
#include "cli/flag_values.hpp"
#include "cli/help_format.hpp"
#include "ops/config_file.hpp"

namespace shoal::cli {
namespace {

void setup_command(CLI::App& app, const std::string& usage) {
  app.formatter(std::make_shared<HelpFormat>(usage));
  app.option_defaults()->group("Flags")->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_help_flag("-h,--help", "show this help");
  add_log_level_flag(app);
}

// The subcommand that `app` parsed, if any.
const CLI::App* chosen(const CLI::App& app) {
  const auto subs = app.get_subcommands();
  return subs.empty() ? nullptr : subs.front();
}

// What CLI11 calls extras, named one at a time: "unknown flag '--x'", "unknown subcommand 'x'" or
// "unexpected argument 'x'" for the first of them (CLI11's own message lists them all, last first).
std::string extras_text(const CLI::App& app) {
  const CLI::App* deepest = &app;
  while (const CLI::App* sub = chosen(*deepest)) deepest = sub;
  const auto rest = app.remaining(true);
  if (rest.empty()) return "unexpected arguments";
  const std::string& first = rest.front();
  if (first.size() > 1 && first.front() == '-') return "unknown flag '" + first + "'";
  if (!deepest->get_subcommands({}).empty()) return "unknown subcommand '" + first + "'";
  return "unexpected argument '" + first + "'";
}

std::string config_path_of(const CLI::App& app) {
  const CLI::Option* config = app.get_config_ptr();
  return config != nullptr && !config->results().empty() ? config->results().back() : std::string();
}

}  // namespace

std::unique_ptr<CLI::App> command_app(const std::string& name, const std::string& usage,
                                      const std::string& description) {
  auto app = std::make_unique<CLI::App>(description, name);
  setup_command(*app, usage);
  return app;
}

CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& usage,
                      const std::string& description) {
  CLI::App* sub = parent.add_subcommand(name, description);
  setup_command(*sub, usage);
  return sub;
}

void add_log_level_flag(CLI::App& app) {
  app.add_option("--log-level",
                 "log levels, e.g. info or warn,gossip=debug (default: $SHOAL_LOG, else info); accepted before "
                 "and after the subcommand")
      ->type_name("SPEC")
      ->check(checked_by([](const std::string& spec) { return log::parse_spec(spec); }));
}

Result<Parsed> parse_args(CLI::App& app, std::span<const std::string> args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the arguments last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return Parsed::help;
  } catch (const CLI::ExtrasError&) {
    return fail(extras_text(app));
  } catch (const CLI::RequiredError& e) {
    // A subcommand is missing because an unknown word stands in its place: that word is the news.
    return fail(app.remaining(true).empty() ? std::string(e.what()) : extras_text(app));
  } catch (const CLI::ParseError& e) {
    return fail(ops::config_error_text(config_path_of(app), e));
  }
  return Parsed::ok;
}

std::string command_name(const CLI::App& app) {
  std::string name = app.get_name();
  for (const CLI::App* sub = chosen(app); sub != nullptr; sub = chosen(*sub)) name += " " + sub->get_name();
  return name;
}

std::optional<std::string> log_level_of(const CLI::App& app) {
  std::optional<std::string> level;
  for (const CLI::App* a = &app; a != nullptr; a = chosen(*a)) {
    const CLI::Option* flag = a->get_option_no_throw("--log-level");
    if (flag != nullptr && flag->count() > 0) level = flag->results().back();
  }
  return level;
}

std::optional<int> parse_command(CLI::App& app, std::span<const std::string> args) {
  const auto parsed = parse_args(app, args);
  const std::string name = command_name(app);
  if (!parsed) {
    std::cerr << name << ": " << parsed.error().message << " (see `" << name << " --help`)\n";
    return kExitUsage;
  }
  if (*parsed == Parsed::help) {
    std::cout << app.help();
    return kExitOk;
  }
  const auto level = log_level_of(app);
  const auto spec = log::spec_from(level ? std::optional<std::string_view>(*level) : std::nullopt);
  if (!spec) {
    std::cerr << name << ": " << spec.error().message << "\n";
    return kExitUsage;
  }
  log::setup(*spec);
  return std::nullopt;
}

}  // namespace shoal::cli
