// Parsing and printing of durations as users type them: "500ms", "2s", "1.5m", "2h", "30" (s).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpudoctor {

Result<std::chrono::milliseconds> parse_duration(std::string_view text);
std::string format_duration(std::chrono::milliseconds d);
// A length of time for people, to the second: "45s", "5m20s", "2h05m" (minutes from 1 h on).
std::string human_duration(double seconds);
// "2026-11-30T06:55:52.123Z" (UTC, milliseconds).
std::string iso8601_utc(int64_t unix_ms);

}  // namespace gpudoctor
