// The framing layer of the CSV-like log readers: lines, cells, separators and RFC 4180 quotes
// (a quoted cell may hold the separator, doubled quotes and line breaks). The readers above it see
// records of trimmed, unquoted cells and never the bytes' layout. Text reaches it as UTF-8
// (load.cpp decodes other encodings once, at the edge), or as Windows-1252 that it decodes line by
// line (text::ReadAs): a log whose only such bytes are in its header ("°C") is read in place.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "formats/encoding.hpp"

namespace gpudoctor::csv {

// ',' ';' or tab: the one a header line uses most (outside quotes); ',' on a tie.
char detect_separator(std::string_view line);

// Splits a text into records of trimmed, unquoted cells: RFC 4180 quotes (a quoted cell may hold
// the separator, doubled quotes and line breaks). Blank lines and '#' comment lines are skipped.
class Records {
 public:
  // kQuote: a line holds a quote and the records were asked to stop there (stop_at_quotes).
  enum class Next { kRecord, kMalformed, kEnd, kQuote };

  Records(std::string_view text, char sep, size_t line_before,
          text::ReadAs bytes = text::ReadAs::kUtf8)
      : text_(text), sep_(sep), line_(line_before), bytes_(bytes) {}

  // line_no: the line the record starts on; raw: its text, trimmed. Cells and raw are UTF-8 (with
  // text::ReadAs::kWindows1252, views into the record decoded, valid until the next call).
  Next next(std::vector<std::string_view>& cells, size_t& line_no, std::string_view& raw);

  // From now on, a line that holds a quote (comment lines too) is not read: next() says kQuote,
  // and says it again, without consuming the line. For a reader of one piece of a text, where a
  // quoted cell may hold line ends from the piece before.
  void stop_at_quotes() { stop_at_quotes_ = true; }

  // Bytes consumed so far, and the number of the last line read.
  size_t position() const { return pos_; }
  bool at_end() const { return pos_ >= text_.size(); }
  size_t line() const { return line_; }
  // With text::ReadAs::kCheckUtf8: some line read so far is not valid UTF-8.
  bool invalid_utf8() const { return invalid_utf8_; }

 private:
  struct Span {
    size_t b, n;
    bool own;
  };

  bool split_quoted(std::string_view s, size_t& consumed, std::vector<std::string_view>& cells);
  // text::ReadAs::kWindows1252: the bytes decoded to UTF-8, in decoded_.
  std::string_view decoded(std::string_view bytes);

  std::string_view text_;
  char sep_;
  size_t line_;
  size_t pos_ = 0;
  text::ReadAs bytes_;
  bool invalid_utf8_ = false;
  bool stop_at_quotes_ = false;
  std::string own_, decoded_;
  std::vector<Span> spans_;
};

}  // namespace gpudoctor::csv
