#include "core/duration.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

namespace gpudoctor {

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  const std::string original(text);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  size_t num_end = 0;
  while (num_end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[num_end])) || text[num_end] == '.'))
    ++num_end;
  if (num_end == 0)
    return usage_error(
        fmt::format("invalid duration '{}': expected e.g. 500ms, 2s, 5m, 2h", original));
  double number = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + num_end, number);
  if (ec != std::errc{} || ptr != text.data() + num_end)
    return usage_error(fmt::format("invalid duration '{}': bad number", original));
  const std::string_view suffix = text.substr(num_end);
  double scale_ms = 0;
  if (suffix.empty() || suffix == "s")
    scale_ms = 1000;
  else if (suffix == "ms")
    scale_ms = 1;
  else if (suffix == "m" || suffix == "min")
    scale_ms = 60'000;
  else if (suffix == "h")
    scale_ms = 3'600'000;
  else if (suffix == "d")
    scale_ms = 86'400'000;
  else
    return usage_error(fmt::format(
        "invalid duration '{}': unknown unit '{}' (use ms, s, m, h or d)", original, suffix));
  const double ms = number * scale_ms;
  if (!std::isfinite(ms) || ms > 1e12)  // ~31 years; more overflows clock arithmetic
    return usage_error(fmt::format("invalid duration '{}': too large", original));
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(ms)));
}

std::string iso8601_utc(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, unix_ms % 1000);
}

std::string format_duration(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms % 3'600'000 == 0 && ms != 0) return fmt::format("{}h", ms / 3'600'000);
  if (ms % 60'000 == 0 && ms != 0) return fmt::format("{}m", ms / 60'000);
  if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

std::string human_duration(double seconds) {
  const auto t = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600)
    return t % 60 ? fmt::format("{}m{:02}s", t / 60, t % 60) : fmt::format("{}m", t / 60);
  const long long m = (t + 30) / 60;
  return m % 60 ? fmt::format("{}h{:02}m", m / 60, m % 60) : fmt::format("{}h", m / 60);
}

}  // namespace gpudoctor
