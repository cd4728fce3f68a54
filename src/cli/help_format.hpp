// How `--help` is laid out: every line fits the terminal (100 columns when the output is not one),
// descriptions wrapped under their column, and the command list one short line per command in
// the groups of the command table (cli/commands.cpp).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace gpudoctor::cli {

// The width help is wrapped to: the terminal's (at least 60) when standard output is one, else
// $COLUMNS when set, else 100.
size_t help_width();

// `text` wrapped to `width` columns at spaces (a word longer than a line stays whole); the first
// line starts after `first_used` columns already written, the others are indented by `indent`.
// Line breaks in the text are kept. Columns are counted in code points.
std::string wrap_text(std::string_view text, size_t width, size_t first_used, size_t indent);

class HelpFormatter : public CLI::Formatter {
 public:
  // `summary` gives a command's one-line summary for the command list ("" = its description).
  HelpFormatter(size_t width, std::function<std::string(const CLI::App*)> summary);

  std::string make_option(const CLI::Option* opt, bool is_positional) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_description(const CLI::App* app) const override;
  std::string make_footer(const CLI::App* app) const override;
  std::string make_usage(const CLI::App* app, std::string name) const override;

 private:
  std::string two_columns(const std::string& left, const std::string& right, size_t column) const;

  size_t width_;
  std::function<std::string(const CLI::App*)> summary_;
};

}  // namespace gpudoctor::cli
