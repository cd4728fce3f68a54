// power_capped: the enforced power limit is below the board's default and the GPU is held at it
// (power at the cap, or the SW power cap reason). At the default limit, power-cap clocking is how
// dense math normally runs and is not a finding.
#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"

namespace gpudoctor::diag {
namespace {

std::optional<Candidate> check(const Context& ctx, size_t g, const WindowFeatures& w) {
  if (w.idle) return std::nullopt;
  const Features& f = w.f;
  const GpuData& d = ctx.gpus[g];
  if (!d.default_limit_known) return std::nullopt;
  if (!known(f.enforced_w) && f.has_reasons && f.reason(kReasonSwPowerCap) >= 0.5 &&
      known(f.power_ratio) && f.power_ratio >= ctx.cfg.idle_power_ratio) {
    // No cap column, but the SW power-cap reason held the GPU at a level below the board's limit.
    // Where the log shows several such levels, the highest stands for the board's limit and each
    // one below it is a lowered cap; against a known default, a level clearly below it is.
    // Against a known default the power must also sit flat at its level: at the default limit
    // the cap reason flickers on and off as dense work meets the limit, with power moving.
    const bool levels = d.cap_levels_w.size() > 1 && d.limit_source.starts_with("highest");
    const bool held = levels ? f.power_ratio < 0.97
                             : f.power_ratio < ctx.cfg.cap_lowered_ratio - 0.05 &&
                                   f.power_sd_ratio < 0.02 && f.reason(kReasonSwPowerCap) >= 0.8;
    if (held) {
      Candidate c;
      c.confidence = levels ? 0.7 : 0.75;
      c.variant = "reason";
      c.evidence["enforced_limit_w"] = nullptr;
      c.evidence["cap_level_w"] = round_to(f.power_w, 1);
      c.evidence["default_limit_w"] = round_to(d.default_limit_w, 1);
      c.evidence["limit_source"] = d.limit_source;
      c.evidence["power_w"] = round_to(f.power_w, 1);
      c.evidence["sw_power_cap_fraction"] = round_to(f.reason(kReasonSwPowerCap), 3);
      c.evidence["clock_ratio"] = round_to(f.clock_ratio, 3);
      return c;
    }
  }
  if (!known(f.enforced_w)) {
    // The input has no enforced limit (nvidia-smi dmon): a power controller holding a cap pins
    // the power flat while it lowers the clocks; a GPU below its cap follows its work instead.
    // Flat power well below the default with clocks below maximum is a lowered cap, said with
    // less confidence. Clocks pushed below clock_very_low_ratio are left to the clocks detector:
    // a pinned low clock (HW slowdown, locked clocks) also flattens power, and a cap rarely goes
    // that deep.
    const bool flat = f.power_sd_ratio < 0.02 && f.busy_fraction >= 0.9;
    if (!flat || !(f.power_ratio < ctx.cfg.cap_lowered_ratio - 0.1) ||
        !(f.power_ratio >= ctx.cfg.idle_power_ratio) ||
        !(f.clock_ratio < ctx.cfg.clock_low_ratio) ||
        !(f.clock_ratio >= ctx.cfg.clock_very_low_ratio))
      return std::nullopt;
    Candidate c;
    c.confidence = 0.5;
    c.variant = "inferred";
    c.evidence["enforced_limit_w"] = nullptr;
    c.evidence["default_limit_w"] = round_to(d.default_limit_w, 1);
    c.evidence["power_w"] = round_to(f.power_w, 1);
    c.evidence["power_sd_ratio"] = round_to(f.power_sd_ratio, 4);
    c.evidence["clock_ratio"] = round_to(f.clock_ratio, 3);
    return c;
  }
  if (!(f.enforced_w < ctx.cfg.cap_lowered_ratio * d.default_limit_w)) return std::nullopt;
  const double cap_reason = f.reason(kReasonSwPowerCap);
  const bool at_cap =
      f.at_cap >= ctx.cfg.at_cap_ratio || (f.has_reasons && cap_reason >= ctx.cfg.reason_fraction);
  if (!at_cap) return std::nullopt;
  Candidate c;
  c.confidence = f.has_reasons ? 0.9 : 0.75;
  c.evidence["enforced_limit_w"] = round_to(f.enforced_w, 1);
  c.evidence["default_limit_w"] = round_to(d.default_limit_w, 1);
  c.evidence["power_w"] = round_to(f.power_w, 1);
  c.evidence["power_to_enforced"] = round_to(f.at_cap, 3);
  if (f.has_reasons) c.evidence["sw_power_cap_fraction"] = round_to(cap_reason, 3);
  c.evidence["clock_ratio"] = round_to(f.clock_ratio, 3);
  return c;
}

std::string describe(const Finding& f) {
  if (known(ev(f, "cap_level_w"))) {
    std::string src;
    if (const auto it = f.evidence.find("limit_source"); it != f.evidence.end() && it->is_string())
      src = it->get<std::string>();
    return fmt::format(
        "{} held by the SW power cap at {:.0f} W, below {:.0f} W, {} (the power-cap clock "
        "reason active in {} of samples)",
        gpu_list(f.gpus), ev(f, "cap_level_w"), ev(f, "default_limit_w"),
        src.starts_with("highest") ? "the highest level this log shows" : "the default limit",
        pct(ev(f, "sw_power_cap_fraction")));
  }
  if (!known(ev(f, "enforced_limit_w")))
    return fmt::format(
        "{} probably held at a lowered power cap: power flat at {:.0f} W of the {:.0f} W default "
        "while the SM clock runs at {} of maximum (the input has no enforced limit to confirm it)",
        gpu_list(f.gpus), ev(f, "power_w"), ev(f, "default_limit_w"), pct(ev(f, "clock_ratio")));
  return fmt::format(
      "{} held at a lowered power cap: {:.0f} W enforced of the {:.0f} W default, drawing {:.0f} W",
      gpu_list(f.gpus), ev(f, "enforced_limit_w"), ev(f, "default_limit_w"), ev(f, "power_w"));
}

}  // namespace

const Detector kPowerCapDetector{Cause::kPowerCapped, check, describe};

}  // namespace gpudoctor::diag
