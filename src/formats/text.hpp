// Small text helpers shared by the log readers (nvidia-smi CSV, dmon, DCGM ...): line splitting,
// trimming, numbers with a unit suffix, timestamps. All work on string_views into the caller's
// text and allocate nothing, so a reader can stay at memory speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gpudoctor::text {

// Spaces, tabs, CR and LF removed from both ends.
std::string_view trim(std::string_view s);
std::string_view trim_left(std::string_view s);
// The text without a leading UTF-8 byte order mark.
std::string_view strip_bom(std::string_view s);
bool iequals(std::string_view a, std::string_view b);
// ASCII lower case (HTTP header names, tokens).
std::string lower(std::string_view s);
bool istarts_with(std::string_view s, std::string_view prefix);
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

// Splits at every sep into out (cleared first); cells keep their spaces. "" gives one empty cell.
void split(std::string_view line, char sep, std::vector<std::string_view>& out);
// As split, with each cell trimmed.
void split_trimmed(std::string_view line, char sep, std::vector<std::string_view>& out);

// The whole of s (trimmed) as a finite number; nullopt for anything else ("", "12x", "nan").
std::optional<double> parse_double(std::string_view s);
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

bool is_space(char c);
// Whitespace-separated tokens of s into out (cleared first): dmon-style columns.
void split_ws(std::string_view s, std::vector<std::string_view>& out);

// The checks every reader makes first: an empty file, UTF-16 text (with or without its byte
// order mark), binary data, a --power-limit that is not a positive number of watts. `what` names
// the format ("nvidia-smi dmon output").
std::optional<Error> check_input(std::string_view body, const std::string& origin,
                                 std::string_view what, std::optional<double> power_limit_w);

}  // namespace gpudoctor::text
