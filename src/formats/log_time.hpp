// Times as logs write them: ISO 8601 and its relatives, times of day, dates. Epoch and elapsed
// numbers are told apart by the reader from their size (generic_csv.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpudoctor::csv {

// ISO 8601 and similar: "2024-05-14T10:31:07.412Z", "2024-05-14 10:31:07+02:00", "...-0500",
// "... UTC", "2024/05/14 10:31:07.412" (no zone). Milliseconds since the epoch; zoned: the text
// gave a zone (else it is read as UTC).
std::optional<int64_t> parse_datetime(std::string_view s, bool& zoned);
// Also day-first dates with a time: "14.5.2024 9:05:03" (HWiNFO), "14-05-2024 09:05:03" (MSI
// Afterburner), read as UTC.
// "10:31:07", "10:31:07.412", "9:5:3.25": milliseconds since midnight.
std::optional<int64_t> parse_time_of_day(std::string_view s);
// "2024-05-14", "2024/05/14", "14.5.2024", "14-05-2024": milliseconds since the epoch at midnight.
std::optional<int64_t> parse_date(std::string_view s);
// "14.5.2024 9:05:03", "14-05-2024 09:05:03".
std::optional<int64_t> parse_day_first_datetime(std::string_view s);
// "20240314" (nvidia-smi dmon -o D; a real date from 1970 on), else parse_date's forms:
// milliseconds since the epoch at midnight. (Not in parse_date: a number column is no date.)
std::optional<int64_t> parse_compact_date(std::string_view s);
// "Tue Nov 26 10:21:07 2024" (C's ctime, `date`, nvidia-smi's table): milliseconds since the
// epoch, read as UTC.
std::optional<int64_t> parse_ctime(std::string_view s);

// A Unix epoch time as a number: seconds, milliseconds, microseconds or nanoseconds told by its
// size (from 1e8 s, 1973, on), e.g. `date +%s` or `date +%s.%N` output. Milliseconds since the
// epoch; unit names the unit read ("seconds" ...).
std::optional<int64_t> parse_epoch_ms(std::string_view s, std::string_view* unit = nullptr);

inline constexpr double kDayMs = 86400000.0;

}  // namespace gpudoctor::csv
