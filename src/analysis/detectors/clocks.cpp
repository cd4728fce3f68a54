// clocks_limited: SM clocks well below their maximum under load for a reason other than heat or
// power: application / locked clocks (0x2), HW slowdown (0x8) or power brake (0x80). A GPU at its
// power limit clocks down by design and is left to the power-cap and healthy detectors.
#include <algorithm>

#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"

namespace gpudoctor::diag {
namespace {

std::optional<Candidate> check(const Context& ctx, size_t, const WindowFeatures& w) {
  if (w.idle) return std::nullopt;
  const Features& f = w.f;
  const auto& cfg = ctx.cfg;
  if (!(f.clock_ratio < cfg.clock_low_ratio)) return std::nullopt;
  if (f.at_cap >= cfg.at_cap_ratio) return std::nullopt;
  const bool app_low = f.app_clock_ratio < cfg.clock_low_ratio;
  Candidate c;
  std::string why;
  if (f.has_reasons) {
    const double app = f.reason(kReasonAppClocks), slow = f.reason(kReasonHwSlowdown),
                 brake = f.reason(kReasonHwPowerBrake);
    const double top = std::max({app, slow, brake});
    if (top >= cfg.reason_fraction) {
      c.confidence = 0.9;
      why = top == app ? "applications_clocks_setting"
                       : (top == slow ? "hw_slowdown" : "hw_power_brake");
      c.evidence["reason_fraction"] = round_to(top, 3);
    } else if (app_low) {
      c.confidence = 0.8;
      why = "application_clocks";
    } else {
      return std::nullopt;
    }
  } else if (app_low) {
    c.confidence = 0.75;
    why = "application_clocks";
  } else if (f.clock_ratio < cfg.clock_very_low_ratio && !(f.temp_max >= cfg.hot_temp_c) &&
             f.busy_fraction >= 0.9) {
    // Without reasons, only a GPU that is busy throughout: clocks also fall in the gaps of a
    // duty cycle, which is the GPU idling, not being held.
    c.confidence = 0.45;
    why = "unknown";
  } else {
    return std::nullopt;
  }
  c.evidence["clock_ratio"] = round_to(f.clock_ratio, 3);
  c.evidence["app_clock_ratio"] = round_to(f.app_clock_ratio, 3);
  c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
  c.evidence["temp_max_c"] = round_to(f.temp_max, 0);
  c.evidence["reason"] = why;
  return c;
}

std::string describe(const Finding& f) {
  std::string why;
  if (const auto it = f.evidence.find("reason"); it != f.evidence.end() && it->is_string())
    why = it->get<std::string>();
  const char* words = why == "applications_clocks_setting" || why == "application_clocks"
                          ? "application or locked clocks"
                      : why == "hw_slowdown"    ? "HW slowdown"
                      : why == "hw_power_brake" ? "the power brake"
                                                : "an unknown reason (no clock event reasons in "
                                                  "the input)";
  return fmt::format("{}: SM clock held at {} of maximum under load by {}", gpu_list(f.gpus),
                     pct(ev(f, "clock_ratio")), words);
}

}  // namespace

const Detector kClocksDetector{Cause::kClocksLimited, check, describe};

}  // namespace gpudoctor::diag
