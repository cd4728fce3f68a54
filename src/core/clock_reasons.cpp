#include "core/clock_reasons.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace gpudoctor {
namespace {
constexpr std::array<ClockReason, 9> kReasons{{
    {0x1, "gpu_idle", "idle", false},
    {0x2, "applications_clocks", "app clocks set", true},
    {0x4, "sw_power_cap", "power cap", true},
    {0x8, "hw_slowdown", "HW slowdown", true},
    {0x10, "sync_boost", "sync boost", false},
    {0x20, "sw_thermal", "SW thermal", true},
    {0x40, "hw_thermal", "HW thermal", true},
    {0x80, "hw_power_brake", "power brake", true},
    {0x100, "display_clocks", "display clocks", false},
}};
}  // namespace

std::span<const ClockReason> clock_reasons() {
  return kReasons;
}

std::optional<uint64_t> reasons_mask(const Reading& r) {
  if (!r.has_value()) return std::nullopt;
  const double v = r.value();
  if (!(v >= 0) || v >= 9.0e15 || v != std::floor(v)) return std::nullopt;
  return static_cast<uint64_t>(v);
}

std::vector<std::string> decode_clock_reasons(uint64_t mask, bool words) {
  std::vector<std::string> out;
  uint64_t known = 0;
  for (const auto& r : kReasons) {
    known |= r.bit;
    if (mask & r.bit) out.emplace_back(words ? r.words : r.code);
  }
  if (const uint64_t rest = mask & ~known) out.push_back(fmt::format("0x{:x}", rest));
  return out;
}

std::string clock_reasons_summary(uint64_t mask) {
  if (mask == 0) return "none";
  return fmt::format("{}", fmt::join(decode_clock_reasons(mask, false), ","));
}

}  // namespace gpudoctor
