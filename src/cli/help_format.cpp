// HelpFormat: the order of a help text's parts, wrapped flag help, one-line subcommand summaries.
#include "cli/help_format.hpp"

#include <sstream>

namespace shoal::cli {
namespace {

constexpr size_t kHelpWidth = 100;  // the width of the explanatory text that shoal's help was written at
constexpr size_t kFlagColumn = 30;  // where a flag's help starts

}  // namespace

HelpFormat::HelpFormat(std::string usage) : usage_(std::move(usage)) {
  column_width(kFlagColumn);
  label("Usage", "usage");
}

std::string HelpFormat::make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const {
  if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
  std::string out = make_usage(app, name);
  if (const std::string description = make_description(app); !description.empty()) out += "\n" + description;
  out += make_positionals(app);
  out += make_groups(app, mode);
  out += make_subcommands(app, mode);
  if (const std::string footer = make_footer(app); !footer.empty()) out += "\n" + footer;
  // CLI11 ends a group with a blank line and starts the next with one: one is enough.
  for (auto at = out.find("\n\n\n"); at != std::string::npos; at = out.find("\n\n\n", at)) out.erase(at, 1);
  return out;
}

std::string HelpFormat::make_usage(const CLI::App* app, std::string name) const {
  if (usage_.empty()) return CLI::Formatter::make_usage(app, std::move(name));
  std::string out;
  std::istringstream lines(usage_);
  std::string line;
  for (bool first = true; std::getline(lines, line); first = false) {
    out += (first ? get_label("Usage") + ": " : std::string(get_label("Usage").size() + 2, ' ')) + line + "\n";
  }
  return out;
}

std::string HelpFormat::make_option_desc(const CLI::Option* opt) const {
  return wrap_text(opt->get_description(), kHelpWidth - kFlagColumn);
}

std::string HelpFormat::make_subcommand(const CLI::App* sub) const {
  const std::string& description = sub->get_description();
  std::ostringstream out;
  const std::string summary = description.substr(0, description.find('\n'));
  CLI::detail::format_help(out, sub->get_name(), wrap_text(summary, kHelpWidth - kFlagColumn), column_width_);
  return out.str();
}

std::string wrap_text(const std::string& text, size_t width) {
  std::string out;
  size_t line_length = 0;
  std::istringstream paragraphs(text);
  std::string paragraph;
  for (bool first_paragraph = true; std::getline(paragraphs, paragraph); first_paragraph = false) {
    if (!first_paragraph) out += '\n';
    line_length = 0;
    std::istringstream words(paragraph);
    std::string word;
    while (words >> word) {
      if (line_length > 0 && line_length + 1 + word.size() > width) {
        out += '\n';
        line_length = 0;
      } else if (line_length > 0) {
        out += ' ';
        ++line_length;
      }
      out += word;
      line_length += word.size();
    }
  }
  return out;
}

}  // namespace shoal::cli
