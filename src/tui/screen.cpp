#include "tui/screen.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace gpudoctor::tui {

bool single_width(char32_t c) {
  if (c >= 0x20 && c <= 0x7E) return true;
  if (c >= 0xA0 && c <= 0x2FF) return c != 0xAD;                     // Latin, no soft hyphen
  if (c >= 0x370 && c <= 0x52F) return !(c >= 0x483 && c <= 0x489);  // Greek, Cyrillic
  if (c >= 0x2010 && c <= 0x2027) return true;                       // dashes, quotes, bullet, …
  if (c >= 0x2030 && c <= 0x205E) return true;
  if (c >= 0x2190 && c <= 0x22FF) return true;  // arrows, mathematical operators
  // Box drawing, blocks, shapes, less the two squares East Asian Width calls wide.
  if (c >= 0x2500 && c <= 0x25FF) return c != 0x25FD && c != 0x25FE;
  return false;
}

Screen::Screen(int rows, int cols, bool unicode)
    : rows_(std::max(0, rows)), cols_(std::max(0, cols)), unicode_(unicode) {
  cells_.resize(static_cast<size_t>(rows_) * static_cast<size_t>(cols_));
}

void Screen::set(int r, int c, char32_t ch, Style s) {
  if (r < 0 || r >= rows_ || c < 0 || c >= cols_) return;
  if (!single_width(ch) || (!unicode_ && ch > 0x7E)) ch = U'?';
  cells_[static_cast<size_t>(r * cols_ + c)] = {ch, s};
}

int Screen::put(int r, int c, std::string_view utf8, Style s, int max_cols) {
  if (r < 0 || r >= rows_) return 0;
  const int end = max_cols < 0 ? cols_ : std::min(cols_, c + max_cols);
  int col = c;
  for (char32_t ch : decode_utf8(utf8)) {
    if (col >= end) break;
    set(r, col, ch, s);
    ++col;
  }
  return std::max(0, col - c);
}

void Screen::field(int r, int c, int width, std::string_view utf8, Style s, Align align) {
  if (width <= 0) return;
  std::u32string text = decode_utf8(utf8);
  if (static_cast<int>(text.size()) > width) {
    text.resize(static_cast<size_t>(width));
    text.back() = unicode_ ? U'…' : U'~';
  }
  const int pad = width - static_cast<int>(text.size());
  int col = c;
  if (align == Align::kRight) {
    fill(r, col, pad, U' ', s);
    col += pad;
  }
  for (char32_t ch : text) set(r, col++, ch, s);
  if (align == Align::kLeft) fill(r, col, pad, U' ', s);
}

void Screen::fill(int r, int c, int n, char32_t ch, Style s) {
  for (int k = 0; k < n; ++k) set(r, c + k, ch, s);
}

void Screen::restyle(int r, int c, int n, Style s) {
  if (r < 0 || r >= rows_) return;
  for (int k = std::max(0, c); k < std::min(cols_, c + n); ++k)
    cells_[static_cast<size_t>(r * cols_ + k)].style = s;
}

std::string Screen::row_text(int r) const {
  std::string out;
  if (r < 0 || r >= rows_) return out;
  int last = cols_ - 1;
  while (last >= 0 && at(r, last).ch == U' ') --last;
  for (int c = 0; c <= last; ++c) append_utf8(out, at(r, c).ch);
  return out;
}

std::string Screen::text(bool trim_bottom) const {
  int last = rows_ - 1;
  if (trim_bottom)
    while (last >= 0 && row_text(last).empty()) --last;
  std::string out;
  for (int r = 0; r <= last; ++r) {
    out += row_text(r);
    out += '\n';
  }
  return out;
}

namespace {

std::string sgr(const Style& s, bool color) {
  std::string out = "\x1b[0";
  if (s.bold) out += ";1";
  if (s.dim) out += ";2";
  if (s.reverse) out += ";7";
  if (color) {
    switch (s.fg) {
      case Color::kDefault:
        break;
      case Color::kRed:
        out += ";31";
        break;
      case Color::kGreen:
        out += ";32";
        break;
      case Color::kYellow:
        out += ";33";
        break;
      case Color::kBlue:
        out += ";34";
        break;
      case Color::kMagenta:
        out += ";35";
        break;
      case Color::kCyan:
        out += ";36";
        break;
      case Color::kGray:
        out += ";90";
        break;
    }
  }
  out += 'm';
  return out;
}

}  // namespace

std::string AnsiWriter::update(const Screen& next) {
  std::string out;
  if (!valid_ || last_.rows() != next.rows() || last_.cols() != next.cols()) {
    out += "\x1b[0m\x1b[H\x1b[2J";  // the terminal is now blank: diff against a blank frame
    last_ = Screen(next.rows(), next.cols(), next.unicode());
    valid_ = true;
  }
  const Style plain{};
  Style current = plain;
  int cur_r = -1, cur_c = -1;  // cursor position, -1: unknown
  for (int r = 0; r < next.rows(); ++r) {
    for (int c = 0; c < next.cols(); ++c) {
      const Cell& want = next.at(r, c);
      if (want == last_.at(r, c)) continue;
      if (r != cur_r || c != cur_c)
        fmt::format_to(std::back_inserter(out), "\x1b[{};{}H", r + 1, c + 1);
      if (!(want.style == current)) {
        // Without colour, styles differing only in colour look the same: no sequence needed.
        Style a = want.style, b = current;
        if (!color_) a.fg = b.fg = Color::kDefault;
        if (!(a == b)) out += sgr(want.style, color_);
        current = want.style;
      }
      append_utf8(out, want.ch);
      cur_r = r;
      cur_c = c + 1 < next.cols() ? c + 1 : -1;  // at the margin the cursor stays put
      last_.set(r, c, want.ch, want.style);
    }
  }
  if (!(current == plain)) out += "\x1b[0m";
  return out;
}

}  // namespace gpudoctor::tui
