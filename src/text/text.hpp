// Small text helpers shared by the log readers (nvidia-smi CSV, dmon, DCGM ...): line splitting,
// trimming, numbers with a unit suffix, timestamps. All work on string_views into the caller's
// text and allocate nothing, so a reader can stay at memory speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gpudoctor::text {

// Space, tab, CR, LF, form feed, vertical tab. (Inline, as trim: every reader calls them per cell.)
inline bool is_space(char c) {
  return static_cast<unsigned char>(c) <= ' ' &&
         (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v');
}
// Spaces, tabs, CR and LF removed from both ends.
inline std::string_view trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}
inline std::string_view trim_left(std::string_view s) {
  size_t b = 0;
  while (b < s.size() && is_space(s[b])) ++b;
  return s.substr(b);
}
// The text without a leading UTF-8 byte order mark.
std::string_view strip_bom(std::string_view s);
bool iequals(std::string_view a, std::string_view b);
// A switch as tools write it: "Enabled"/"On"/"1" true, "Disabled"/"Off"/"0" false, else nothing.
std::optional<bool> parse_enabled(std::string_view v);
// ASCII lower case (HTTP header names, tokens).
std::string lower(std::string_view s);
bool istarts_with(std::string_view s, std::string_view prefix);
// needle anywhere in s, ASCII case ignored.
bool contains_ci(std::string_view s, std::string_view needle);
bool is_blank(std::string_view s);
// True when the text holds bytes no text log has (NUL, or many control characters).
bool looks_binary(std::string_view head);
// True when the text is UTF-16: a UTF-16 byte order mark, or a NUL in (nearly) every other byte.
bool looks_utf16(std::string_view head);
// True when the text's last line has no line end: a file cut short (tools end every line).
inline bool ends_inside_a_line(std::string_view body) {
  return !body.empty() && body.back() != '\n';
}
// What an error about a header without rows adds when the file ends inside its last line.
inline std::string_view cut_short_suffix(std::string_view body) {
  return ends_inside_a_line(body) ? " (the file ends inside it: cut short)" : "";
}

// The pages of a mapped file that reading has passed go back to the kernel as reading goes on, so
// that a log costs the series kept, not its text (a 20 GB log need not fit in memory). The loader
// registers the mapping for the reading thread (ReleasePassed); the framing (LineReader,
// csv::Records) says how far it has read (passed), and the encoding check, which reads in pieces
// on several threads, hands back each piece it has checked (detail::release_range). A page touched
// again later (a reader that reads the rows a second time) is read back from the file: dropping is
// only ever a cost, never a change of what a reader sees. Nothing is dropped of text that is not
// a registered mapping (decoded or decompressed text, standard input, tests' strings).
class ReleasePassed {
 public:
  // `mapped`: a read-only private mapping of a file, for the life of this object.
  explicit ReleasePassed(std::string_view mapped) noexcept;
  ~ReleasePassed();
  ReleasePassed(const ReleasePassed&) = delete;
  ReleasePassed& operator=(const ReleasePassed&) = delete;
};
namespace detail {
struct PassedWindow {            // addresses as integers
  uintptr_t begin = 0, end = 0;  // the registered mapping
  uintptr_t dropped = 0;         // pages before it are handed back
  uintptr_t next = 0;            // the next position worth a release
};
// How often a release is worth a system call.
inline constexpr size_t kPassedStepBytes = size_t{1} << 20;
inline thread_local PassedWindow passed_window;
void release_passed(const char* p) noexcept;
// Hands back the whole pages of [b, e) where they lie in the mapping `w` registers: a piece of the
// text another thread has read out of order and is done with (the encoding check's pieces).
void release_range(const PassedWindow& w, const char* b, const char* e) noexcept;
}  // namespace detail
// No release on this thread while it lives: the thread reads parts of the text out of order (a
// chunk of a log read by several threads), and says what it has passed once they are merged.
class PassedPause {
 public:
  PassedPause() noexcept : saved_(detail::passed_window) { detail::passed_window = {}; }
  ~PassedPause() { detail::passed_window = saved_; }
  PassedPause(const PassedPause&) = delete;
  PassedPause& operator=(const PassedPause&) = delete;

 private:
  detail::PassedWindow saved_;
};
// Reading has passed p (a position in the text being read): the pages well behind it may go.
// A few comparisons when there is nothing to do. A position behind the last one starts a new pass.
inline void passed(const char* p) noexcept {
  // (As integers: p may point into any other text, and next past the mapping's end.)
  const detail::PassedWindow& w = detail::passed_window;
  const auto at = reinterpret_cast<uintptr_t>(p);
  if (at >= w.begin && at < w.end && (at >= w.next || at + detail::kPassedStepBytes < w.next))
    detail::release_passed(p);
}

// Iterates the lines of a text: LF or CRLF endings (the CR is removed), the last line may lack an
// ending. line_number() is 1-based and counts every line, blank ones too.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : rest_(text) {}
  bool next(std::string_view& line);
  size_t line_number() const { return line_number_; }
  // Bytes not yet returned.
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
  size_t line_number_ = 0;
};

// a == b, for texts of a few bytes (cells): compared a word at a time, the last word overlapping
// the one before (never a byte outside either text), rather than byte by byte, where texts that
// differ leave the loop at a different byte each time, or by a call to memcmp.
[[gnu::always_inline]] inline bool equal_small(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  const char *p = a.data(), *q = b.data();
  const auto word = [](const char* s) {
    uint64_t w;
    std::memcpy(&w, s, 8);
    return w;
  };
  const auto half = [](const char* s) {
    uint32_t w;
    std::memcpy(&w, s, 4);
    return w;
  };
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8)
      if (word(p + i) != word(q + i)) return false;
    return word(p + n - 8) == word(q + n - 8);
  }
  if (n >= 4) return ((half(p) ^ half(q)) | (half(p + n - 4) ^ half(q + n - 4))) == 0;
  // 0 to 3 bytes: the first, middle and last are all of them.
  return n == 0 || (p[0] == q[0] && p[n / 2] == q[n / 2] && p[n - 1] == q[n - 1]);
}

// Splits at every sep into out (cleared first); cells keep their spaces. "" gives one empty cell.
void split(std::string_view line, char sep, std::vector<std::string_view>& out);
// As split, with each cell trimmed.
void split_trimmed(std::string_view line, char sep, std::vector<std::string_view>& out);
// The first line of `text` (up to its first '\n', not included) split at every sep into out, each
// cell trimmed: one pass over the bytes that finds the line's end and its cells together. Returns
// the line's length; npos (out unspecified) where a `stop` byte comes first: a quote, say, that
// the caller reads another way. non_ascii: whether the line holds a byte of 0x80 or more (set
// when the line is returned).
size_t split_line_trimmed(std::string_view text, char sep, char stop,
                          std::vector<std::string_view>& out, bool& non_ascii);

// The whole of s (trimmed) as a finite number; nullopt for anything else ("", "12x", "nan").
std::optional<double> parse_double(std::string_view s);
// The same into out, false for anything else: what the readers call per cell (inline, and no
// optional returned through memory on the way).
bool parse_double(std::string_view s, double& out);
namespace detail {
bool parse_double_slow(std::string_view s, double& out);
}
inline bool parse_double(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty()) return false;
  // Fast path, what logs write nearly always: [-+]digits[.digits] with at most 15 digits. The
  // digits are an exact integer and 10^k is exact, so one division is correctly rounded: the
  // same double from_chars gives (Clinger's fast path).
  static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  size_t i = s.front() == '-' || s.front() == '+' ? 1 : 0;
  uint64_t m = 0;
  int digits = 0, frac = -1;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      if (++digits > 15) return detail::parse_double_slow(s, out);
      m = m * 10 + static_cast<uint64_t>(c - '0');
      if (frac >= 0) ++frac;
    } else if (c == '.' && frac < 0) {
      frac = 0;
    } else if (c == 'e' || c == 'E' || c == '+' || c == '-') {
      return detail::parse_double_slow(s, out);
    } else {
      return false;  // ("45 C", "93%": from_chars would not take the whole text either)
    }
  }
  if (digits == 0) return detail::parse_double_slow(s, out);
  double v = static_cast<double>(m);
  if (frac > 0) v /= kPow10[frac];
  out = s.front() == '-' ? -v : v;
  return true;
}
std::optional<int64_t> parse_int(std::string_view s);
// "0x1f", "0X1F" or "1f" as hexadecimal.
std::optional<uint64_t> parse_hex(std::string_view s);

// value x factor, a unit conversion (mW to W, a 0-1 ratio to %): where the factor is not a power
// of two, the product is rounded to 12 significant digits, so that 398710 mW is 398.71 W and 0.942
// is 94.2 %, not 398.71000000000004 and 94.19999999999999 (binary rounding, not the log's value).
double scaled(double value, double factor);

// "152.34 W", "99 %", "30512MiB", "-3": the number and what follows it (trimmed, "" when none).
struct NumberWithUnit {
  double value = 0;
  std::string_view unit;
};
std::optional<NumberWithUnit> parse_number_with_unit(std::string_view s);

// Days since 1970-01-01 of a proleptic Gregorian date.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d);
// "2024/03/14 10:15:02.123" (nvidia-smi), "2024-03-14 10:15:02", "2024-03-14T10:15:02.5Z": the
// wall-clock time as milliseconds since the Unix epoch, read as UTC (no time zone is applied; a
// trailing "Z" is accepted). Fractions beyond milliseconds are rounded.
std::optional<int64_t> parse_timestamp_ms(std::string_view s);
// "2024/03/14 10:15:02.123" (date_sep '/') of a Unix time in ms, as UTC.
std::string format_timestamp_ms(int64_t unix_ms, char date_sep = '/');

// Whitespace-separated tokens of s into out (cleared first): dmon-style columns.
void split_ws(std::string_view s, std::vector<std::string_view>& out);

// The checks every reader makes first: an empty file, UTF-16 text (with or without its byte
// order mark), binary data, a --power-limit that is not a positive number of watts. `what` names
// the format ("nvidia-smi dmon output").
std::optional<Error> check_input(std::string_view body, const std::string& origin,
                                 std::string_view what, std::optional<double> power_limit_w);

}  // namespace gpudoctor::text
