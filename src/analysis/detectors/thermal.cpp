// thermal_throttle: the clocks were cut for temperature. With clock event reasons, the thermal
// bits (SW 0x20, HW 0x40) say so directly; without them, the temperature at the slowdown
// threshold (or the hot threshold) together with clocks below maximum; without clocks too, the
// temperature held at the slowdown threshold, with less confidence.
#include <algorithm>

#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"

namespace gpudoctor::diag {
namespace {

std::optional<Candidate> check(const Context& ctx, size_t g, const WindowFeatures& w) {
  if (w.idle) return std::nullopt;
  const Features& f = w.f;
  const auto& cfg = ctx.cfg;
  const double thermal = std::max(f.reason(kReasonSwThermal), f.reason(kReasonHwThermal));
  const double slowdown = ctx.gpus[g].slowdown_temp_c;
  Candidate c;
  if (f.has_reasons) {
    if (thermal < cfg.reason_fraction) return std::nullopt;
    c.confidence = 0.9;
  } else if (known(f.clock_ratio)) {
    const double hot = known(slowdown) ? std::min(slowdown - 2, cfg.hot_temp_c) : cfg.hot_temp_c;
    if (!(f.temp_max >= hot) || !(f.clock_ratio < cfg.clock_low_ratio)) return std::nullopt;
    c.confidence = 0.55;
  } else {
    // No clocks either: the temperature alone, held at the model's slowdown threshold (where
    // the GPU cuts its clocks) over the window on average, not a peak.
    if (!known(slowdown) || !(f.temp_mean >= slowdown - 2)) return std::nullopt;
    c.confidence = 0.45;
  }
  c.evidence["temp_max_c"] = round_to(f.temp_max, 0);
  c.evidence["temp_mean_c"] = round_to(f.temp_mean, 1);
  c.evidence["slowdown_temp_c"] = round_to(slowdown, 0);
  if (f.has_reasons) c.evidence["thermal_reason_fraction"] = round_to(thermal, 3);
  c.evidence["clock_ratio"] = round_to(f.clock_ratio, 3);
  c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
  return c;
}

std::string describe(const Finding& f) {
  std::string s =
      fmt::format("{} throttled by heat: up to {:.0f} °C", gpu_list(f.gpus), ev(f, "temp_max_c"));
  if (known(ev(f, "slowdown_temp_c")))
    s += fmt::format(" (slowdown at {:.0f} °C)", ev(f, "slowdown_temp_c"));
  if (known(ev(f, "clock_ratio")))
    s += fmt::format(", SM clock at {} of maximum", pct(ev(f, "clock_ratio")));
  if (known(ev(f, "thermal_reason_fraction")))
    s += fmt::format(", thermal slowdown active {} of the time",
                     pct(ev(f, "thermal_reason_fraction")));
  return s;
}

}  // namespace

const Detector kThermalDetector{Cause::kThermalThrottle, check, describe};

}  // namespace gpudoctor::diag
