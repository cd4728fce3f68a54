// launch_overhead: GPU-Util high and flat yet little real work (low power, low SM activity, low
// DRAM) and no sign of waiting on peers: one tiny kernel after another, the CPU launch-bound.
// The last detector tried: what remains of busy-but-idle windows.
#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"

namespace gpudoctor::diag {
namespace {

std::optional<Candidate> check(const Context& ctx, size_t, const Window& w) {
  if (w.idle || !known(w.f.efficiency) || !known(w.f.util)) return std::nullopt;
  const Features& f = w.f;
  if (f.efficiency >= ctx.cfg.low_efficiency) return std::nullopt;
  Candidate c;
  if (known(f.sm))
    c.confidence = f.sm < ctx.cfg.low_sm_pct ? 0.8 : 0.4;
  else
    c.confidence = 0.55;
  c.evidence["util_pct"] = round_to(f.util, 1);
  c.evidence["sm_pct"] = round_to(f.sm, 1);
  c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
  c.evidence["dram_pct"] = round_to(f.dram, 1);
  c.evidence["mem_util_pct"] = round_to(f.mem_util, 1);
  c.evidence["efficiency"] = round_to(f.efficiency, 3);
  return c;
}

std::string describe(const Finding& f) {
  std::string s = fmt::format("{} busy but idle: GPU-Util {:.0f} % yet power {} of the limit",
                              gpu_list(f.gpus), ev(f, "util_pct"), pct(ev(f, "power_ratio")));
  if (known(ev(f, "sm_pct"))) s += fmt::format(" and SM activity {:.0f} %", ev(f, "sm_pct"));
  s += ": many small kernels, the CPU cannot launch them fast enough";
  return s;
}

}  // namespace

const Detector kLaunchOverheadDetector{Cause::kLaunchOverhead, check, describe};

}  // namespace gpudoctor::diag
