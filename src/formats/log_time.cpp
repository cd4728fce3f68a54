#include "formats/log_time.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "formats/log_units.hpp"
#include "text/text.hpp"

namespace gpudoctor::csv {

using text::iequals;

std::optional<int64_t> parse_datetime(std::string_view s, bool& zoned) {
  s = text::trim(s);
  zoned = false;
  if (s.size() < 16 || !is_digit(s[0])) return std::nullopt;
  if (s[4] != '-' && s[4] != '/') return parse_day_first_datetime(s);
  int64_t offset_min = 0;
  if (s.back() == 'Z' || s.back() == 'z') {
    zoned = true;
    s.remove_suffix(1);
  } else if (s.size() > 22 &&
             (iequals(s.substr(s.size() - 3), "UTC") || iequals(s.substr(s.size() - 3), "GMT"))) {
    zoned = true;
    s = text::trim(s.substr(0, s.size() - 3));
  } else {
    // The last sign past the date ("2024-03-14"): a loop, not find_last_of, which costs a memchr
    // per byte of every time.
    size_t p = s.size();
    while (p > 11 && s[p - 1] != '+' && s[p - 1] != '-') --p;
    p = p > 11 ? p - 1 : std::string_view::npos;
    if (p != std::string_view::npos) {
      std::string_view z = s.substr(p + 1);
      int64_t hh = 0, mm = 0;
      auto two = [&](std::string_view d, int64_t& out) {
        if (d.size() < 2 || !is_digit(d[0]) || !is_digit(d[1])) return false;
        out = (d[0] - '0') * 10 + (d[1] - '0');
        return true;
      };
      if (!two(z, hh)) return std::nullopt;
      z.remove_prefix(2);
      if (!z.empty() && z.front() == ':') z.remove_prefix(1);
      if (!z.empty()) {
        if (z.size() != 2 || !two(z, mm)) return std::nullopt;
      }
      if (hh > 23 || mm > 59) return std::nullopt;
      offset_min = (s[p] == '-' ? -1 : 1) * (hh * 60 + mm);
      zoned = true;
      s = text::trim(s.substr(0, p));
    }
  }
  char buf[64];
  if (s.size() == 16 && s[13] == ':') {  // "2024-05-14T10:31": no seconds
    std::memcpy(buf, s.data(), 16);
    std::memcpy(buf + 16, ":00", 3);
    s = std::string_view(buf, 19);
  }
  const auto ms = text::parse_timestamp_ms(s);
  if (!ms) return std::nullopt;
  return *ms - offset_min * 60000;
}

// "10:31:07", "10:31:07.412", "9:5:3.25" (HWiNFO writes no leading zeros): milliseconds since
// midnight.
std::optional<int64_t> parse_time_of_day(std::string_view s) {
  s = text::trim(s);
  if (s.size() < 5 || s.size() > 40) return std::nullopt;
  if (s.size() >= 8 && s[2] == ':' && s[5] == ':') {
    char buf[64] = "1970-01-01 ";
    std::memcpy(buf + 11, s.data(), s.size());
    // (Else "22:44:4.713": HWiNFO writes seconds without their leading zero, read below.)
    if (auto t = text::parse_timestamp_ms(std::string_view(buf, 11 + s.size()))) return t;
  }
  // H:M:S with one or two digits each, then an optional fraction.
  char buf[64] = "1970-01-01 ";
  size_t o = 11, i = 0;
  for (int part = 0; part < 3; ++part) {
    size_t j = i;
    while (j < s.size() && is_digit(s[j])) ++j;
    if (j == i || j - i > 2) return std::nullopt;
    if (j - i == 1) buf[o++] = '0';
    for (size_t k = i; k < j; ++k) buf[o++] = s[k];
    if (part < 2) {
      if (j >= s.size() || s[j] != ':') return std::nullopt;
      buf[o++] = ':';
      i = j + 1;
    } else {
      i = j;
    }
  }
  const std::string_view rest = s.substr(i);
  if (o + rest.size() >= sizeof buf) return std::nullopt;
  std::memcpy(buf + o, rest.data(), rest.size());
  return text::parse_timestamp_ms(std::string_view(buf, o + rest.size()));
}

// "2024-05-14" or "2024/05/14"; day first: "14.5.2024" (HWiNFO), "14-05-2024" (MSI Afterburner).
// Milliseconds since the epoch at midnight.
std::optional<int64_t> parse_date(std::string_view s) {
  s = text::trim(s);
  if (s.size() == 10 && (s[4] == '-' || s[4] == '/')) {
    char buf[32];
    std::memcpy(buf, s.data(), 10);
    std::memcpy(buf + 10, " 00:00:00", 9);
    return text::parse_timestamp_ms(std::string_view(buf, 19));
  }
  // D.M.YYYY or DD-MM-YYYY.
  unsigned num[3] = {0, 0, 0};
  size_t i = 0;
  char sep = 0;
  for (int part = 0; part < 3; ++part) {
    size_t j = i;
    while (j < s.size() && is_digit(s[j])) ++j;
    const size_t len = j - i;
    if (len == 0 || (part < 2 && len > 2) || (part == 2 && len != 4)) return std::nullopt;
    for (size_t k = i; k < j; ++k) num[part] = num[part] * 10 + static_cast<unsigned>(s[k] - '0');
    if (part < 2) {
      if (j >= s.size() || (s[j] != '.' && s[j] != '-')) return std::nullopt;
      if (sep != 0 && s[j] != sep) return std::nullopt;
      sep = s[j];
      i = j + 1;
    } else if (j != s.size()) {
      return std::nullopt;
    }
  }
  const unsigned d = num[0], m = num[1];
  if (d < 1 || d > 31 || m < 1 || m > 12) return std::nullopt;
  return text::days_from_civil(num[2], m, d) * 86400000;
}

// "14.5.2024 9:05:03", "14-05-2024 09:05:03": a day-first date, a space, a time of day.
std::optional<int64_t> parse_day_first_datetime(std::string_view s) {
  s = text::trim(s);
  const size_t sp = s.find(' ');
  if (sp == std::string_view::npos || sp < 8 || sp > 10) return std::nullopt;
  const auto d = parse_date(s.substr(0, sp));
  if (!d || s.substr(0, sp).find('/') != std::string_view::npos) return std::nullopt;
  const auto t = parse_time_of_day(s.substr(sp + 1));
  if (!t) return std::nullopt;
  return *d + *t;
}

std::optional<int64_t> parse_compact_date(std::string_view s) {
  s = text::trim(s);
  // (Eight characters of another form, "9.1.2026", are parse_date's.)
  if (s.size() != 8 || !std::all_of(s.begin(), s.end(), is_digit)) return parse_date(s);
  unsigned y = 0, m = 0, d = 0;
  for (size_t i = 0; i < 8; ++i) {
    unsigned& part = i < 4 ? y : i < 6 ? m : d;
    part = part * 10 + static_cast<unsigned>(s[i] - '0');
  }
  static constexpr unsigned kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1970 || m < 1 || m > 12 || d < 1 || d > kDays[m - 1]) return std::nullopt;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (m == 2 && d == 29 && !leap) return std::nullopt;
  return text::days_from_civil(y, m, d) * 86400000;
}

std::optional<int64_t> parse_ctime(std::string_view t) {
  t = text::trim(t);
  if (t.size() < 20 || t.size() > 40 || t[0] < 'A' || t[0] > 'Z') return std::nullopt;
  std::vector<std::string_view> tok;
  text::split_ws(t, tok);
  if (tok.size() != 5) return std::nullopt;
  static constexpr std::array<std::string_view, 7> kWeekDays{"Mon", "Tue", "Wed", "Thu",
                                                             "Fri", "Sat", "Sun"};
  static constexpr std::array<std::string_view, 12> kMonths{
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (std::find(kWeekDays.begin(), kWeekDays.end(), tok[0]) == kWeekDays.end()) return std::nullopt;
  const auto m = std::find(kMonths.begin(), kMonths.end(), tok[1]);
  if (m == kMonths.end()) return std::nullopt;
  const auto day = text::parse_int(tok[2]);
  const auto year = text::parse_int(tok[4]);
  const std::string_view hms = tok[3];
  if (!day || *day < 1 || *day > 31 || !year || *year < 1970 || *year > 9999 || hms.size() != 8 ||
      hms[2] != ':' || hms[5] != ':')
    return std::nullopt;
  const auto h = text::parse_int(hms.substr(0, 2));
  const auto mi = text::parse_int(hms.substr(3, 2));
  const auto sec = text::parse_int(hms.substr(6, 2));
  if (!h || !mi || !sec || *h > 23 || *mi > 59 || *sec > 60) return std::nullopt;
  const int64_t days = text::days_from_civil(*year, static_cast<unsigned>(m - kMonths.begin() + 1),
                                             static_cast<unsigned>(*day));
  return ((days * 24 + *h) * 60 + *mi) * 60000 + *sec * 1000;
}

std::optional<int64_t> parse_epoch_ms(std::string_view s, std::string_view* unit) {
  const auto x = text::parse_double(s);
  if (!x) return std::nullopt;
  const double a = *x;
  if (!(a >= 1e8) || a >= 1e20) return std::nullopt;
  const double ms_per = a < 1e11 ? 1000 : a < 1e14 ? 1 : a < 1e17 ? 1e-3 : 1e-6;
  if (unit != nullptr)
    *unit = ms_per == 1000   ? "seconds"
            : ms_per == 1    ? "milliseconds"
            : ms_per == 1e-3 ? "microseconds"
                             : "nanoseconds";
  return static_cast<int64_t>(std::llround(a * ms_per));
}

}  // namespace gpudoctor::csv
