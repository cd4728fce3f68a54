// The JSON scanning under formats/kineto_trace: a Cursor that reads the few members a trace's
// analysis needs out of one framed value (strings unescaped, numbers as text, every other value
// skipped whole), Kineto's microsecond times as exact nanoseconds, and the Feed that frames one
// whole value at a time in a window over a ByteStream. Internal to the trace reader (and its
// fuzz target through it); no JSON tree is ever built.
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "formats/input_bytes.hpp"

namespace gpudoctor::kineto_scan {

// A cursor over JSON text that reads only what the trace needs: strings (unescaped where they
// hold an escape), numbers as text, and skips any other value whole.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  size_t pos() const { return i_; }
  bool at_end() {
    space();
    return i_ == s_.size();
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  char peek() {
    space();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  // A string's content; `owned` holds it where it had escapes.
  bool string(std::string_view& out, std::string& owned) {
    if (!eat('"')) return false;
    const size_t start = i_;
    bool escaped = false;
    // A plain loop: names and keys are short, where memchr's call costs more than it saves.
    for (;;) {
      while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\\') ++i_;
      if (i_ >= s_.size()) return false;
      if (s_[i_] == '"') break;
      escaped = true;
      i_ += 2;  // the backslash and the byte it escapes
    }
    out = s_.substr(start, i_ - start);
    ++i_;
    if (escaped) {
      owned = unescape(out);
      out = owned;
    }
    return true;
  }
  bool number(std::string_view& out) {
    space();
    const size_t start = i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-' ||
                              s_[i_] == '+' || s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E'))
      ++i_;
    out = s_.substr(start, i_ - start);
    return i_ > start;
  }
  // Any value, not kept.
  bool skip(int depth = 0) {
    if (depth > 64) return false;
    const char c = peek();
    if (c == '"') {
      std::string_view v;
      std::string o;
      return string(v, o);
    }
    if (c == '{' || c == '[') {
      ++i_;
      const char close = c == '{' ? '}' : ']';
      if (eat(close)) return true;
      do {
        if (c == '{') {
          std::string_view k;
          std::string o;
          if (!string(k, o) || !eat(':')) return false;
        }
        if (!skip(depth + 1)) return false;
      } while (eat(','));
      return eat(close);
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      std::string_view v;
      return number(v);
    }
    for (std::string_view w : {"true", "false", "null"})
      if (s_.substr(i_, w.size()) == w) {
        i_ += w.size();
        return true;
      }
    return false;
  }

 private:
  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  static std::string unescape(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] != '\\' || i + 1 >= in.size()) {
        out += in[i];
        continue;
      }
      const char e = in[++i];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          unsigned cp = 0;
          if (i + 4 < in.size() &&
              std::from_chars(in.data() + i + 1, in.data() + i + 5, cp, 16).ec == std::errc())
            i += 4;
          // Surrogates and controls become '?': names are for people, not for round trips.
          utf8(out, (cp >= 0xD800 && cp < 0xE000) || cp < 0x20 ? '?' : cp);
          break;
        }
        default:
          out += e;  // \" \\ \/
      }
    }
    return out;
  }

  std::string_view s_;
  size_t i_ = 0;
};

// Where JSON text that the input ended inside stops being JSON, or nothing where it is JSON as
// far as it goes (a value cut short, a scalar perhaps cut): a brace missing mid-file makes the
// framing run on to the end of the input, and is a syntax error, not a cut.
inline std::optional<size_t> breaks_at(std::string_view partial) {
  Cursor c(partial);
  if (c.skip()) {
    if (c.at_end()) return std::nullopt;
    return c.pos();
  }
  const size_t at = std::min(c.pos(), partial.size());
  const std::string_view rest = partial.substr(at);
  if (rest.empty()) return std::nullopt;
  for (std::string_view w : {"true", "false", "null"})
    if (w.starts_with(rest)) return std::nullopt;  // a literal cut short
  return at;
}

inline constexpr int64_t kMaxMicros = 3'000'000'000'000'000;

// Microseconds as Kineto writes them ("1712195495505582.988", "41.0", "3e2") in nanoseconds,
// exactly where the text has at most three decimals.
inline bool micros_to_ns(std::string_view t, int64_t& ns, bool& sub_us) {
  if (t.find_first_of("eE") != std::string_view::npos) {
    const double v = std::strtod(std::string(t).c_str(), nullptr);
    if (!std::isfinite(v) || std::fabs(v) > static_cast<double>(kMaxMicros)) return false;
    ns = static_cast<int64_t>(std::llround(v * 1000));
    return true;
  }
  const bool neg = !t.empty() && t.front() == '-';
  if (neg) t.remove_prefix(1);
  const size_t dot = t.find('.');
  const std::string_view whole = t.substr(0, dot);
  int64_t us = 0;
  // Up to 3e15 us (the year 2065) either way: a start, a base and a duration added stay within
  // an int64 of nanoseconds.
  if (whole.empty() || whole.size() > 16 ||
      std::from_chars(whole.data(), whole.data() + whole.size(), us).ec != std::errc() ||
      us > kMaxMicros)
    return false;
  int64_t frac = 0;
  if (dot != std::string_view::npos) {
    const std::string_view f = t.substr(dot + 1);
    for (size_t k = 0; k < 3; ++k) {
      const char c = k < f.size() ? f[k] : '0';
      if (c < '0' || c > '9') return false;
      frac = frac * 10 + (c - '0');
    }
    sub_us = sub_us || frac != 0;
  }
  ns = us * 1000 + frac;
  if (neg) ns = -ns;
  return true;
}

inline bool to_int(std::string_view t, int64_t& v) {
  const size_t dot = t.find('.');
  if (dot != std::string_view::npos) t = t.substr(0, dot);
  return !t.empty() && std::from_chars(t.data(), t.data() + t.size(), v).ec == std::errc();
}

// The input a window at a time. The parser asks for one whole JSON value at a time (an event, a
// member's value): the window holds it whole while a Cursor reads it, then moves on, so memory
// holds the largest single value plus a chunk, never the file. Values are framed by their
// brackets and quotes only; the Cursor then reads (and checks) the JSON inside.
class Feed {
 public:
  explicit Feed(ByteStream& in) : in_(in) {}
  std::optional<Error> error;                          // a read that failed (a corrupt archive ...)
  uint64_t pos() const { return base_ + i_; }          // bytes before the cursor
  uint64_t size_read() const { return base_ + len_; }  // the input's bytes read so far
  // Whether the input ended inside (or before) the last value asked for: value() failed for
  // want of bytes, or a scalar ran to the end (where it may have been cut). A read error is not
  // an end: `error` says it.
  bool ended_in_value() const { return ended_in_value_ && !error; }
  // The last value framed, or where value() failed for want of bytes, the bytes it had (up to
  // the end); valid until the next call. last_start(): where it starts in the input.
  std::string_view last_value() const { return last_; }
  uint64_t last_start() const { return last_start_; }
  // Nothing but blanks left before the end of the input.
  bool at_end() {
    space();
    return i_ >= len_ && eof_ && !error;
  }

  void space() {
    for (;;) {
      while (i_ < len_ && is_space(buf_[i_])) ++i_;
      if (i_ < len_ || !more(i_)) return;
    }
  }
  // A UTF-8 byte order mark at the start.
  void skip_bom() {
    while (len_ - i_ < 3 && more(i_)) {
    }
    if (std::string_view(buf_.data() + i_, len_ - i_).starts_with("\xEF\xBB\xBF")) i_ += 3;
  }
  bool eat(char c) {
    space();
    if (i_ < len_ && buf_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  char peek() {
    space();
    return i_ < len_ ? buf_[i_] : '\0';
  }
  // The next whole value, from its first byte to its last (a scalar runs to the next ',', '}',
  // ']', ':' or blank); valid until the next call. False at the end of the input or of a read.
  bool value(std::string_view& out) {
    ended_in_value_ = false;
    space();
    last_ = {};
    last_start_ = pos();
    if (i_ >= len_) {
      ended_in_value_ = true;
      return false;
    }
    const char first = buf_[i_];
    size_t k = 0;  // bytes of the value framed so far, from i_
    if (first == '{' || first == '[' || first == '"') {
      int64_t depth = 0;
      bool in_string = false;
      for (;;) {
        const char* p = buf_.data() + i_;
        const size_t n = len_ - i_;
        bool done = false;
        while (k < n) {
          if (in_string) {
            // To the closing quote or a backslash: most of a trace is short strings, where a
            // plain loop beats memchr's call.
            while (k < n && p[k] != '"' && p[k] != '\\') ++k;
            if (k == n) break;
            if (p[k] == '\\') {
              if (k + 1 >= n) break;  // the escaped byte is in the next chunk
              k += 2;
              continue;
            }
            in_string = false;
            ++k;
            if (depth == 0) {
              done = true;
              break;
            }
            continue;
          }
          const char c = p[k];
          if (c == '"') {
            in_string = true;
          } else if (c == '{' || c == '[') {
            ++depth;
          } else if ((c == '}' || c == ']') && --depth <= 0) {
            ++k;
            done = true;
            break;
          }
          ++k;
        }
        if (done) break;
        if (!more(i_)) {
          ended_in_value_ = true;  // the value is cut short
          last_ = std::string_view(buf_.data() + i_, len_ - i_);
          last_start_ = pos();
          return false;
        }
      }
    } else {
      for (;;) {
        while (i_ + k < len_ && !ends_scalar(buf_[i_ + k])) ++k;
        if (i_ + k < len_) break;
        if (!more(i_)) {
          ended_in_value_ = true;  // the scalar ran to the end: perhaps cut
          break;
        }
      }
      if (k == 0) return false;
    }
    out = last_ = std::string_view(buf_.data() + i_, k);
    last_start_ = pos();
    i_ += k;
    return true;
  }

 private:
  static bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  static bool ends_scalar(char c) {
    return c == ',' || c == '}' || c == ']' || c == ':' || is_space(c);
  }
  // Reads the next chunk, keeping the bytes from `keep` on (moved to the front): false at the end
  // or on an error.
  bool more(size_t keep) {
    if (eof_) return false;
    if (keep > 0) {
      std::memmove(buf_.data(), buf_.data() + keep, len_ - keep);
      len_ -= keep;
      i_ -= keep;
      base_ += keep;
    }
    // Chunks from 64 KiB up to kChunk: a small trace costs a small window.
    chunk_ = std::min(kChunk, chunk_ * 2);
    if (buf_.size() - len_ < chunk_) buf_.resize(std::max(buf_.size() * 2, len_ + chunk_));
    auto r = in_.read(buf_.data() + len_, buf_.size() - len_);
    if (!r) {
      error = r.error();
      eof_ = true;
      return false;
    }
    if (r.value() == 0) eof_ = true;
    len_ += r.value();
    return r.value() > 0;
  }

  static constexpr size_t kChunk = size_t{1} << 20;
  size_t chunk_ = size_t{32} << 10;
  ByteStream& in_;
  std::string buf_;
  size_t i_ = 0, len_ = 0;
  uint64_t base_ = 0;  // the input's bytes before buf_[0]
  bool eof_ = false;
  bool ended_in_value_ = false;
  std::string_view last_;
  uint64_t last_start_ = 0;
};

}  // namespace gpudoctor::kineto_scan
