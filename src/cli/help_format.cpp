#include "cli/help_format.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/utf8.hpp"

namespace gpudoctor::cli {

size_t help_width() {
  struct winsize ws {};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return std::max<size_t>(60, ws.ws_col);
  if (const char* c = std::getenv("COLUMNS"); c && *c) {
    char* end = nullptr;
    const long v = std::strtol(c, &end, 10);
    if (end && *end == '\0' && v > 0) return std::max<size_t>(60, static_cast<size_t>(v));
  }
  return 100;
}

std::string wrap_text(std::string_view text, size_t width, size_t first_used, size_t indent) {
  std::string out;
  size_t used = first_used;
  bool line_has_word = false;
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == '\n') {
      out += '\n';
      out.append(indent, ' ');
      used = indent;
      line_has_word = false;
      ++pos;
      continue;
    }
    if (text[pos] == ' ') {
      ++pos;
      continue;
    }
    size_t end = pos;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
    const std::string_view word = text.substr(pos, end - pos);
    const size_t w = text_columns(word);
    if (line_has_word && used + 1 + w > width) {
      out += '\n';
      out.append(indent, ' ');
      used = indent;
      line_has_word = false;
    }
    if (line_has_word) {
      out += ' ';
      ++used;
    }
    out += word;
    used += w;
    line_has_word = true;
    pos = end;
  }
  return out;
}

HelpFormatter::HelpFormatter(size_t width, std::function<std::string(const CLI::App*)> summary)
    : width_(width), summary_(std::move(summary)) {
  column_width(std::min<size_t>(30, width / 3));
}

std::string HelpFormatter::two_columns(const std::string& left, const std::string& right,
                                       size_t column) const {
  std::string out = "  " + left;
  size_t used = 2 + text_columns(left);
  if (!right.empty()) {
    if (used + 1 > column) {
      out += '\n';
      used = 0;
    }
    out.append(column - used, ' ');
    out += wrap_text(right, width_, column, column);
  }
  return out + "\n";
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  return two_columns(make_option_name(opt, is_positional) + make_option_opts(opt),
                     make_option_desc(opt), column_width_);
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  // Command names are short: their column is the longest name's, not the options'.
  size_t longest = 0;
  if (const CLI::App* parent = sub->get_parent())
    for (const CLI::App* c : parent->get_subcommands({}))
      longest = std::max(longest, text_columns(c->get_display_name(true)));
  std::string s = summary_ ? summary_(sub) : std::string();
  return two_columns(sub->get_display_name(true), s.empty() ? sub->get_description() : s,
                     std::min(column_width_, longest + 4));
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  const std::string d = CLI::Formatter::make_description(app);
  if (d.empty()) return d;
  return wrap_text(d.substr(0, d.size() - 1), width_, 0, 0) + "\n";
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  const std::string f = app->get_footer();
  if (f.empty()) return f;
  return wrap_text(f, width_, 0, 0) + "\n";
}

std::string HelpFormatter::make_usage(const CLI::App* app, std::string name) const {
  const std::string u = CLI::Formatter::make_usage(app, std::move(name));
  if (u.empty()) return u;
  // "Usage: gpudoctor diagnose [OPTIONS] input\n\n": the line wrapped under its first word.
  const size_t nl = u.find('\n');
  const std::string line = u.substr(0, nl);
  return wrap_text(line, width_, 0, 7) + (nl == std::string::npos ? "" : u.substr(nl));
}

}  // namespace gpudoctor::cli
