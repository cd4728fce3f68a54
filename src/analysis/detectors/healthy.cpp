// healthy: fed and busy. Efficiency (power / default limit x SM activity, or power / limit alone
// where SM activity is not measured) at or above low_efficiency.
#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"

namespace gpudoctor::diag {
namespace {

std::optional<Candidate> check(const Context& ctx, size_t, const WindowFeatures& w) {
  if (w.idle || !(w.f.efficiency >= ctx.cfg.low_efficiency)) return std::nullopt;
  if (memory_controller_bound(ctx, w.f)) return std::nullopt;
  Candidate c;
  c.confidence = known(w.f.sm) && known(w.f.power_ratio) ? 0.9 : 0.7;
  c.evidence["efficiency"] = round_to(w.f.efficiency, 3);
  c.evidence["power_ratio"] = round_to(w.f.power_ratio, 3);
  c.evidence["util_pct"] = round_to(w.f.util, 1);
  c.evidence["sm_pct"] = round_to(w.f.sm, 1);
  return c;
}

std::string describe(const Finding& f) {
  return fmt::format("{} fed and busy: efficiency {:.2f}, power {} of the limit", gpu_list(f.gpus),
                     ev(f, "efficiency"), pct(ev(f, "power_ratio")));
}

}  // namespace

const Detector kHealthyDetector{Cause::kHealthy, check, describe};

}  // namespace gpudoctor::diag
