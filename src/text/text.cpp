#include "text/text.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <system_error>

#include <sys/mman.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <unistd.h>

#include <fmt/format.h>

namespace gpudoctor::text {
namespace {

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Reads exactly n digits at s[pos]; advances pos.
bool read_digits(std::string_view s, size_t& pos, size_t n, int64_t& out) {
  if (pos + n > s.size()) return false;
  int64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  pos += n;
  out = v;
  return true;
}

}  // namespace

std::string_view strip_bom(std::string_view s) {
  if (s.size() >= 3 && static_cast<unsigned char>(s[0]) == 0xEF &&
      static_cast<unsigned char>(s[1]) == 0xBB && static_cast<unsigned char>(s[2]) == 0xBF)
    return s.substr(3);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::optional<bool> parse_enabled(std::string_view v) {
  v = trim(v);
  if (iequals(v, "Enabled") || iequals(v, "On") || v == "1") return true;
  if (iequals(v, "Disabled") || iequals(v, "Off") || v == "0") return false;
  return std::nullopt;
}

bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

bool contains_ci(std::string_view s, std::string_view needle) {
  for (size_t i = 0; i + needle.size() <= s.size(); ++i)
    if (iequals(s.substr(i, needle.size()), needle)) return true;
  return false;
}

bool is_blank(std::string_view s) {
  for (const char c : s)
    if (!is_space(c)) return false;
  return true;
}

bool looks_binary(std::string_view head) {
  size_t control = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    const auto c = static_cast<unsigned char>(head[i]);
    if (c == 0) return true;
    // (An ANSI colour code, "\x1b[32m", is text a terminal prints: nvitop, gpustat in colour.)
    if (c == 0x1b && i + 1 < head.size() && head[i + 1] == '[') continue;
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f') ++control;
  }
  return control > 0 && control * 100 > head.size();  // over 1% control bytes
}

namespace {
// How far behind the reading position pages are kept (what the current record may still look at;
// touching a dropped page is correct anyway), and how often a release is worth a system call: a
// call per MiB read costs nothing measurable, and the text then holds at most 2 MiB of memory
// (a small log's peak is mostly that; a large one's is its series).
constexpr size_t kPassedLag = size_t{1} << 20;
constexpr size_t kPassedStep = detail::kPassedStepBytes;
}  // namespace

ReleasePassed::ReleasePassed(std::string_view mapped) noexcept {
  detail::PassedWindow& w = detail::passed_window;
  w.begin = w.dropped = reinterpret_cast<uintptr_t>(mapped.data());
  w.end = w.begin + mapped.size();
  w.next = w.begin + kPassedStep;
}

ReleasePassed::~ReleasePassed() {
  detail::passed_window = {};
}

void detail::release_passed(const char* p) noexcept {
  PassedWindow& w = passed_window;
  const auto at = reinterpret_cast<uintptr_t>(p);
  if (at + kPassedStep < w.next) w.dropped = w.begin;  // a new pass from further back
  w.next = at + kPassedStep;
  if (at < w.begin + kPassedLag) return;
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t upto = (at - kPassedLag) & ~(page - 1);
  const uintptr_t from = (w.dropped + page - 1) & ~(page - 1);
  if (upto <= from) return;
  ::madvise(reinterpret_cast<void*>(from), upto - from, MADV_DONTNEED);  // advice: may fail
  w.dropped = upto;
}

void detail::release_range(const PassedWindow& w, const char* b, const char* e) noexcept {
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t from =
      (std::max(reinterpret_cast<uintptr_t>(b), w.begin) + page - 1) & ~(page - 1);
  const uintptr_t upto = std::min(reinterpret_cast<uintptr_t>(e), w.end) & ~(page - 1);
  if (upto <= from) return;  // outside the mapping, or less than a page
  ::madvise(reinterpret_cast<void*>(from), upto - from, MADV_DONTNEED);  // advice: may fail
}

bool LineReader::next(std::string_view& line) {
  if (rest_.empty()) return false;
  const void* nl = std::memchr(rest_.data(), '\n', rest_.size());
  size_t len;
  if (nl == nullptr) {
    line = rest_;
    len = rest_.size();
    rest_ = {};
  } else {
    len = static_cast<size_t>(static_cast<const char*>(nl) - rest_.data());
    line = rest_.substr(0, len);
    rest_.remove_prefix(len + 1);
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ++line_number_;
  passed(rest_.data());
  return true;
}

namespace {

// Sixteen bytes at p: bit k of each mask is set where byte k equals that mask's byte.
#if defined(__SSE2__)
struct Masks16 {
  __m128i a, b, c;
  Masks16(char x, char y, char z) : a(_mm_set1_epi8(x)), b(_mm_set1_epi8(y)), c(_mm_set1_epi8(z)) {}
  // The first mask alone (a split at one separator).
  unsigned only_a(const char* p) const {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(w, a)));
  }
  // (high: the bytes of 0x80 or more.)
  void of(const char* p, unsigned& ma, unsigned& mb, unsigned& mc, unsigned& high) const {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    ma = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(w, a)));
    mb = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(w, b)));
    mc = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(w, c)));
    high = static_cast<unsigned>(_mm_movemask_epi8(w));
  }
};
#else
// Without SSE2 (not x86-64): byte by byte, the same masks.
struct Masks16 {
  char a, b, c;
  Masks16(char x, char y, char z) : a(x), b(y), c(z) {}
  unsigned only_a(const char* p) const {
    unsigned m = 0;
    for (unsigned k = 0; k < 16; ++k) m |= static_cast<unsigned>(p[k] == a) << k;
    return m;
  }
  void of(const char* p, unsigned& ma, unsigned& mb, unsigned& mc, unsigned& high) const {
    ma = mb = mc = high = 0;
    for (unsigned k = 0; k < 16; ++k) {
      ma |= static_cast<unsigned>(p[k] == a) << k;
      mb |= static_cast<unsigned>(p[k] == b) << k;
      mc |= static_cast<unsigned>(p[k] == c) << k;
      high |= static_cast<unsigned>(static_cast<unsigned char>(p[k]) >= 0x80) << k;
    }
  }
};
#endif

}  // namespace

namespace {

// A line cut at every sep into out, each cell as `cell` makes it (as is, or trimmed): sixteen bytes
// at a time (log cells are a few bytes, shorter than a call to memchr is worth), each separator a
// cut, lowest address first.
template <class Cell>
void split_into(std::string_view line, char sep, std::vector<std::string_view>& out, Cell cell) {
  out.clear();
  const char* const b = line.data();
  const size_t n = line.size();
  size_t start = 0, i = 0;
  const Masks16 masks(sep, sep, sep);
  for (; i + 16 <= n; i += 16) {
    unsigned hits = masks.only_a(b + i);
    while (hits != 0) {
      const size_t at = i + static_cast<size_t>(std::countr_zero(hits));
      out.push_back(cell(line.substr(start, at - start)));
      start = at + 1;
      hits &= hits - 1;
    }
  }
  for (; i < n; ++i) {
    if (b[i] != sep) continue;
    out.push_back(cell(line.substr(start, i - start)));
    start = i + 1;
  }
  out.push_back(cell(line.substr(start)));
}

}  // namespace

void split(std::string_view line, char sep, std::vector<std::string_view>& out) {
  split_into(line, sep, out, [](std::string_view c) { return c; });
}

void split_trimmed(std::string_view line, char sep, std::vector<std::string_view>& out) {
  // (Each cell trimmed as it is cut, while its bytes are at hand.)
  split_into(line, sep, out, [](std::string_view c) { return trim(c); });
}

size_t split_line_trimmed(std::string_view text, char sep, char stop,
                          std::vector<std::string_view>& out, bool& non_ascii) {
  out.clear();
  unsigned high_bytes = 0;  // the blocks' high bytes up to the line's end
  const char* const b = text.data();
  const size_t n = text.size();
  size_t start = 0, i = 0;
  // The cell before a separator or the line's end, trimmed.
  auto cut = [&](size_t at) {
    out.push_back(trim(text.substr(start, at - start)));
    start = at + 1;
  };
  const Masks16 masks(sep, '\n', stop);
  for (; i + 16 <= n; i += 16) {
    unsigned at_sep = 0, at_end = 0, at_stop = 0, high = 0;
    masks.of(b + i, at_sep, at_end, at_stop, high);
    unsigned hits = at_sep | at_end | at_stop;
    while (hits != 0) {
      const unsigned bit = hits & (~hits + 1);
      const size_t at = i + static_cast<size_t>(std::countr_zero(hits));
      if (bit & at_stop) return std::string_view::npos;
      cut(at);
      if (bit & at_end) {
        non_ascii = (high_bytes | (high & (bit - 1))) != 0;  // (the bytes before the end)
        return at;
      }
      hits &= hits - 1;
    }
    high_bytes |= high;
  }
  for (; i < n; ++i) {
    const char c = b[i];
    if (c == stop) return std::string_view::npos;
    if (c == sep || c == '\n') cut(i);
    if (c == '\n') {
      non_ascii = high_bytes != 0;
      return i;
    }
    high_bytes |= static_cast<unsigned char>(c) >= 0x80;
  }
  out.push_back(trim(text.substr(start)));
  non_ascii = high_bytes != 0;
  return n;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  if (!parse_double(s, v)) return std::nullopt;
  return v;
}

namespace detail {

// Anything the fast path does not take: more digits, exponents, or not a number at all.
bool parse_double_slow(std::string_view s, double& out) {
  if (s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

}  // namespace detail

std::optional<int64_t> parse_int(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<uint64_t> parse_hex(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<NumberWithUnit> parse_number_with_unit(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  // from_chars would take "inf", "nan" and hex floats' prefixes; a value starts with a digit, a
  // sign or a point.
  const char c0 = s.front();
  if (!((c0 >= '0' && c0 <= '9') || c0 == '-' || c0 == '.')) return std::nullopt;
  // Plain decimals ("21234MB", "45.0 C") take parse_double's fast path; from_chars, the rest
  // (exponents, more digits), with the same result.
  size_t j = c0 == '-' ? 1 : 0, digits = 0;
  bool point = false;
  for (; j < s.size(); ++j) {
    const char c = s[j];
    if (c >= '0' && c <= '9')
      ++digits;
    else if (c == '.' && !point)
      point = true;
    else
      break;
  }
  double v = 0;
  if (digits > 0 && digits <= 15 && (j == s.size() || (s[j] != 'e' && s[j] != 'E')) &&
      parse_double(s.substr(0, j), v)) {
    NumberWithUnit out;
    out.value = v;
    out.unit = trim_left(s.substr(j));
    return out;
  }
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || !std::isfinite(v)) return std::nullopt;
  NumberWithUnit out;
  out.value = v;
  out.unit = trim_left(s.substr(static_cast<size_t>(p - s.data())));
  return out;
}

double scaled(double value, double factor) {
  if (factor == 1) return value;
  const double x = value * factor;
  if (x == 0 || !std::isfinite(x) || factor == 0) return x;
  int e = 0;
  if (std::fabs(std::frexp(factor, &e)) == 0.5) return x;  // a power of two: exact
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const int k = 11 - static_cast<int>(std::floor(std::log10(std::fabs(x))));
  if (k > 22 || k < -22) return x;
  if (k >= 0) return std::round(x * kPow10[k]) / kPow10[k];
  return std::round(x / kPow10[-k]) * kPow10[-k];
}

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  // Howard Hinnant's algorithm.
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::optional<int64_t> parse_timestamp_ms(std::string_view s) {
  s = trim(s);
  size_t pos = 0;
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!read_digits(s, pos, 4, year)) return std::nullopt;
  if (pos >= s.size() || (s[pos] != '/' && s[pos] != '-')) return std::nullopt;
  const char date_sep = s[pos++];
  if (!read_digits(s, pos, 2, month)) return std::nullopt;
  if (pos >= s.size() || s[pos++] != date_sep) return std::nullopt;
  if (!read_digits(s, pos, 2, day)) return std::nullopt;
  if (pos >= s.size() || (s[pos] != ' ' && s[pos] != 'T')) return std::nullopt;
  ++pos;
  if (!read_digits(s, pos, 2, hour)) return std::nullopt;
  if (pos >= s.size() || s[pos++] != ':') return std::nullopt;
  if (!read_digits(s, pos, 2, minute)) return std::nullopt;
  if (pos >= s.size() || s[pos++] != ':') return std::nullopt;
  if (!read_digits(s, pos, 2, second)) return std::nullopt;
  double frac_ms = 0;
  if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
    ++pos;
    double scale = 100;
    size_t digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      frac_ms += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
  }
  if (pos < s.size() && s[pos] == 'Z') ++pos;
  if (pos != s.size()) return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  const int64_t days =
      days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second;
  return secs * 1000 + static_cast<int64_t>(std::llround(frac_ms));
}

std::string format_timestamp_ms(int64_t unix_ms, char date_sep) {
  int64_t days = unix_ms >= 0 ? unix_ms / 86400000 : (unix_ms - 86399999) / 86400000;
  int64_t ms_of_day = unix_ms - days * 86400000;
  // civil_from_days (Howard Hinnant).
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
  const int64_t hh = ms_of_day / 3600000;
  ms_of_day %= 3600000;
  const int64_t mm = ms_of_day / 60000;
  ms_of_day %= 60000;
  return fmt::format("{:04}{}{:02}{}{:02} {:02}:{:02}:{:02}.{:03}", y, date_sep, m, date_sep, d, hh,
                     mm, ms_of_day / 1000, ms_of_day % 1000);
}

namespace {

// Bit k set where byte k of the sixteen at p is whitespace (space, \t \n \v \f \r: is_space).
unsigned whitespace16(const char* p) {
#if defined(__SSE2__)
  const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  // \t..\r are 0x09..0x0D: w - 0x09 at most 4, unsigned (min(x, 4) == x).
  const __m128i d = _mm_sub_epi8(w, _mm_set1_epi8(0x09));
  const __m128i controls = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(4)), d);
  return static_cast<unsigned>(
      _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(w, _mm_set1_epi8(' ')), controls)));
#else
  unsigned m = 0;
  for (unsigned k = 0; k < 16; ++k) m |= static_cast<unsigned>(is_space(p[k])) << k;
  return m;
#endif
}

}  // namespace

// Whitespace-separated tokens of s into out (cleared first).
void split_ws(std::string_view s, std::vector<std::string_view>& out) {
  // Sixteen bytes at a time: the bytes where whitespace turns to a token and back, from a mask of
  // the whitespace (the tools' aligned logs are mostly spaces, and a byte loop was a quarter of
  // reading dmon).
  out.clear();
  const char* const b = s.data();
  const size_t n = s.size();
  size_t i = 0, start = 0;
  bool in_token = false;
  for (; i + 16 <= n; i += 16) {
    const unsigned space = whitespace16(b + i);
    // Bit k: byte k is not of the kind of the byte before it (before byte 0: the last block's).
    unsigned turns = (space ^ ((space << 1) | (in_token ? 0u : 1u))) & 0xFFFFu;
    while (turns != 0) {
      const auto k = static_cast<size_t>(std::countr_zero(turns));
      if ((space >> k) & 1u)
        out.emplace_back(b + start, i + k - start);  // a token ends
      else
        start = i + k;  // one begins
      turns &= turns - 1;
    }
    in_token = ((space >> 15) & 1u) == 0;
  }
  for (; i < n; ++i) {
    const bool space = is_space(b[i]);
    if (in_token && space) out.emplace_back(b + start, i - start);
    if (!in_token && !space) start = i;
    in_token = !space;
  }
  if (in_token) out.emplace_back(b + start, n - start);
}

bool looks_utf16(std::string_view head) {
  const auto b0 = head.size() >= 2 ? static_cast<unsigned char>(head[0]) : 0;
  const auto b1 = head.size() >= 2 ? static_cast<unsigned char>(head[1]) : 0;
  if ((b0 == 0xFF && b1 == 0xFE) || (b0 == 0xFE && b1 == 0xFF)) return true;  // its byte order mark
  // Without one: ASCII text in UTF-16 has a NUL in every other byte, and only there.
  size_t pairs = 0, zero_even = 0, zero_odd = 0;
  for (size_t i = 0; i + 1 < head.size(); i += 2) {
    ++pairs;
    zero_even += head[i] == 0;
    zero_odd += head[i + 1] == 0;
  }
  if (pairs < 2) return false;
  const size_t most = std::max(zero_even, zero_odd), least = std::min(zero_even, zero_odd);
  return most * 10 >= pairs * 9 && least * 20 <= pairs;
}

std::optional<Error> check_input(std::string_view body, const std::string& origin,
                                 std::string_view what, std::optional<double> power_limit_w) {
  if (is_blank(body)) return usage_error(fmt::format("{}: empty file", origin));
  if (looks_utf16(body.substr(0, 4096)))
    return usage_error(fmt::format(
        "{}: UTF-16 text (as Windows PowerShell's > writes it); convert it to UTF-8 first, "
        "e.g. iconv -f UTF-16 -t UTF-8",
        origin));
  if (looks_binary(body.substr(0, 4096)))
    return usage_error(fmt::format("{}: binary data, not {}", origin, what));
  if (power_limit_w && !(std::isfinite(*power_limit_w) && *power_limit_w > 0))
    return usage_error(
        fmt::format("--power-limit: expected watts above 0, got {}", *power_limit_w));
  return std::nullopt;
}

}  // namespace gpudoctor::text
