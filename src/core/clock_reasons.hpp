// Clock event ("throttle") reasons: NVML's bitmask decoded to words, one table for all uses.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/reading.hpp"

namespace gpudoctor {

struct ClockReason {
  uint64_t bit;
  std::string_view code;   // stable snake_case code, used as a metric label
  std::string_view words;  // what a person reads
  bool limits_work;        // true when the reason means the GPU is held below what it could do
};

std::span<const ClockReason> clock_reasons();
// The bitmask a reading holds; nullopt when it holds none or a value no bitmask can be
// (negative, fractional, too large: a corrupt log, not a reason).
std::optional<uint64_t> reasons_mask(const Reading& r);
// The reasons set in mask, in table order. Unknown bits come back as "0x..." entries.
std::vector<std::string> decode_clock_reasons(uint64_t mask, bool words = true);
// "sw_power_cap,hw_slowdown" style list; "none" for 0.
std::string clock_reasons_summary(uint64_t mask);

}  // namespace gpudoctor
