// The look of every `shoal ... --help`: the usage lines first, then the description, the flags with their
// help wrapped at 100 columns, the subcommands by their summaries and the footer. CLI11's Formatter does the rest.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

namespace shoal::cli {

class HelpFormat : public CLI::Formatter {
 public:
  // `usage`: one synopsis per line, without the "usage: " that the help puts before the first.
  explicit HelpFormat(std::string usage);

  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override;
  std::string make_usage(const CLI::App* app, std::string name) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;
  // A subcommand is listed with the first line of its description, its summary.
  std::string make_subcommand(const CLI::App* sub) const override;

 private:
  std::string usage_;
};

// `text` broken at spaces into lines of at most `width` characters (a longer word keeps its own line);
// the text's own line breaks are kept.
std::string wrap_text(const std::string& text, size_t width);

}  // namespace shoal::cli
