#include "formats/csv_frame.hpp"

#include <algorithm>
#include <cstring>

#include "formats/encoding.hpp"
#include "text/text.hpp"

namespace gpudoctor::csv {

char detect_separator(std::string_view line) {
  size_t comma = 0, semi = 0, tab = 0;
  bool quoted = false;
  for (const char c : line) {
    if (c == '"') quoted = !quoted;
    if (quoted) continue;
    comma += c == ',';
    semi += c == ';';
    tab += c == '\t';
  }
  if (semi > comma && semi >= tab) return ';';
  if (tab > comma && tab > semi) return '\t';
  return ',';
}

Records::Next Records::next(std::vector<std::string_view>& cells, size_t& line_no,
                            std::string_view& raw) {
  // A text found not to be UTF-8 is read again once decoded: nothing more of it here.
  while (pos_ < text_.size() && !invalid_utf8_) {
    const std::string_view rest = text_.substr(pos_);
    // The line and its cells in one pass; a line with a quote is read again below.
    bool non_ascii = false;
    size_t len = text::split_line_trimmed(rest, sep_, '"', cells, non_ascii);
    const bool quoted = len == std::string_view::npos;
    if (quoted && stop_at_quotes_) return Next::kQuote;
    if (quoted) {
      const void* nl = std::memchr(rest.data(), '\n', rest.size());
      len = nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - rest.data())
                          : rest.size();
    }
    std::string_view line = rest.substr(0, len);
    // Every byte of the text is in what some call consumes, and each is checked there: the
    // line, or a quoted record's lines (text::ReadAs::kCheckUtf8).
    auto check = [&](std::string_view bytes) {
      if (bytes_ == text::ReadAs::kCheckUtf8 && !text::valid_utf8(bytes)) invalid_utf8_ = true;
    };
    if (!quoted && non_ascii) {
      check(line);
      // (Decoding adds no quote, separator or line end: all three are ASCII.)
      if (bytes_ == text::ReadAs::kWindows1252) {
        line = decoded(line);
        text::split_line_trimmed(line, sep_, '"', cells, non_ascii);
      }
    }
    line_no = ++line_;
    const std::string_view t = text::trim(line);
    if (t.empty() || t.front() == '#') {
      if (quoted) check(line);
      pos_ = std::min(text_.size(), pos_ + len + 1);
      continue;
    }
    text::passed(rest.data());
    if (!quoted) {
      pos_ = std::min(text_.size(), pos_ + len + 1);
      raw = t;
      return Next::kRecord;
    }
    size_t consumed = 0;
    const size_t line_before = line_;
    if (!split_quoted(rest, consumed, cells)) {
      check(line);
      pos_ = std::min(text_.size(), pos_ + len + 1);  // an unclosed quote: this line only
      raw = bytes_ == text::ReadAs::kWindows1252 ? text::trim(decoded(line)) : t;
      return Next::kMalformed;
    }
    std::string_view record = rest.substr(0, consumed);
    check(record);
    if (bytes_ == text::ReadAs::kWindows1252 &&
        std::any_of(record.begin(), record.end(), [](char c) { return (c & 0x80) != 0; })) {
      // Split again, decoded: the same cells, quotes and line ends.
      const size_t line_after = line_;
      line_ = line_before;
      record = decoded(record);
      size_t decoded_consumed = 0;
      split_quoted(record, decoded_consumed, cells);
      line_ = line_after;
    }
    pos_ += consumed;
    raw = text::trim(record);
    return Next::kRecord;
  }
  return Next::kEnd;
}

std::string_view Records::decoded(std::string_view bytes) {
  return text::decode_to_utf8(bytes, text::Encoding::kWindows1252, decoded_);
}

bool Records::split_quoted(std::string_view s, size_t& consumed,
                           std::vector<std::string_view>& cells) {
  own_.clear();
  spans_.clear();
  size_t pos = 0, newlines = 0;
  auto blank = [&](char c) { return c == ' ' || (c == '\t' && sep_ != '\t') || c == '\r'; };
  while (true) {
    while (pos < s.size() && blank(s[pos])) ++pos;
    if (pos < s.size() && s[pos] == '"') {
      ++pos;
      const size_t b = own_.size();
      while (true) {
        if (pos >= s.size()) return false;
        const char c = s[pos];
        if (c == '"') {
          if (pos + 1 < s.size() && s[pos + 1] == '"') {
            own_ += '"';
            pos += 2;
            continue;
          }
          ++pos;
          break;
        }
        newlines += c == '\n';
        own_ += c;
        ++pos;
      }
      // Anything between the closing quote and the separator is not RFC 4180: dropped.
      while (pos < s.size() && s[pos] != sep_ && s[pos] != '\n') ++pos;
      spans_.push_back({b, own_.size() - b, true});
    } else {
      const size_t b = pos;
      while (pos < s.size() && s[pos] != sep_ && s[pos] != '\n') ++pos;
      spans_.push_back({b, pos - b, false});
    }
    if (pos < s.size() && s[pos] == sep_) {
      ++pos;
      continue;
    }
    if (pos < s.size()) ++pos;  // the '\n' that ends the record
    break;
  }
  consumed = pos;
  line_ += newlines;
  cells.clear();
  for (const auto& sp : spans_)
    cells.push_back(
        text::trim(sp.own ? std::string_view(own_).substr(sp.b, sp.n) : s.substr(sp.b, sp.n)));
  return true;
}

}  // namespace gpudoctor::csv
