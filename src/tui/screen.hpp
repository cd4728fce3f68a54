// Screen: a frame of terminal cells (one character and its style each) that the TUI renders into,
// and AnsiWriter, which turns the difference between the frame on the terminal and the next one
// into the few escape sequences that repaint only what changed. Pure: no terminal I/O here, so
// frames can be compared in tests as text.
//
// Every cell is one column wide: text written into a Screen is clipped to it, and characters that
// may take two columns or none (CJK, emoji, combining marks, controls) are written as '?', so a
// process name can never shift what follows it on the terminal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.hpp"

namespace gpudoctor::tui {

enum class Color : uint8_t { kDefault, kRed, kGreen, kYellow, kBlue, kMagenta, kCyan, kGray };

struct Style {
  Color fg = Color::kDefault;
  bool bold = false;
  bool dim = false;
  bool reverse = false;
  friend bool operator==(const Style&, const Style&) = default;
};

struct Cell {
  char32_t ch = U' ';
  Style style;
  friend bool operator==(const Cell&, const Cell&) = default;
};

enum class Align : uint8_t { kLeft, kRight };

// True for characters the TUI may put in a cell (one column wide on every terminal).
bool single_width(char32_t c);
// Text is decoded with core/utf8 (invalid bytes become U+FFFD, which put() writes as '?').
using gpudoctor::append_utf8;
using gpudoctor::decode_utf8;

class Screen {
 public:
  Screen() = default;
  Screen(int rows, int cols, bool unicode = true);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  bool unicode() const { return unicode_; }
  const Cell& at(int r, int c) const { return cells_[static_cast<size_t>(r * cols_ + c)]; }

  // One character at (r, c); ignored outside the screen.
  void set(int r, int c, char32_t ch, Style s = {});
  // Text from (r, c), clipped to the screen and to `max_cols` columns (< 0: to the right edge).
  // Returns the columns written.
  int put(int r, int c, std::string_view utf8, Style s = {}, int max_cols = -1);
  // Text in the field [c, c + width): padded with spaces, or cut with an ellipsis when too long.
  void field(int r, int c, int width, std::string_view utf8, Style s = {},
             Align align = Align::kLeft);
  // n copies of ch from (r, c).
  void fill(int r, int c, int n, char32_t ch, Style s = {});
  // Gives the cells [c, c + n) of row r the style s, keeping their characters.
  void restyle(int r, int c, int n, Style s);

  // Row r as text, trailing spaces removed.
  std::string row_text(int r) const;
  // Every row followed by '\n'; trailing blank rows dropped when trim_bottom.
  std::string text(bool trim_bottom = false) const;

 private:
  int rows_ = 0, cols_ = 0;
  bool unicode_ = true;
  std::vector<Cell> cells_;
};

// Repaints a terminal with ANSI escape sequences (cursor positioning and SGR attributes), writing
// only the cells that differ from the previous frame. The terminal must not wrap at the right
// margin (the Terminal turns autowrap off), so the bottom-right cell can be written safely.
class AnsiWriter {
 public:
  explicit AnsiWriter(bool color = true) : color_(color) {}
  // The bytes that turn the last frame written into `next`: everything after invalidate() or a
  // size change (the screen is cleared first), else only the changed cells ("" when none).
  std::string update(const Screen& next);
  // The terminal's content is unknown (resize, resumed after Ctrl-Z, Ctrl-L): repaint it all.
  void invalidate() { valid_ = false; }

 private:
  bool color_;
  bool valid_ = false;
  Screen last_;
};

}  // namespace gpudoctor::tui
