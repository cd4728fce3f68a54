#include "analysis/verdict.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gpudoctor::diag {

std::optional<Cause> verdict_of(const Tally& t, const DiagnosisConfig& cfg) {
  if (t.judged_h <= 0) return std::nullopt;
  const double healthy_h = t.hours_of(Cause::kHealthy);
  if (healthy_h >= cfg.healthy_share * t.judged_h) return Cause::kHealthy;
  const double min_h = cfg.finding_min_share * std::max(t.judged_h, t.windows_h);
  std::optional<Cause> best;
  double best_lost = -1, best_cover = -1;
  for (const auto& [cause, c] : t.by_cause) {
    if (cause == Cause::kHealthy || c.hours < min_h) continue;
    if (c.lost_h > best_lost + 1e-12 ||
        (std::abs(c.lost_h - best_lost) <= 1e-12 && c.hours > best_cover))
      best = cause, best_lost = c.lost_h, best_cover = c.hours;
  }
  if (!best && healthy_h >= min_h) return Cause::kHealthy;
  return best;
}

std::string headline(const Diagnosis& d, double idle_h, double observed_h) {
  if (!d.verdict) return "cannot tell from this input (see limitations)";
  const size_t idle =
      static_cast<size_t>(std::count_if(d.gpus.begin(), d.gpus.end(), [](const GpuDiagnosis& g) {
        return g.verdict == Cause::kIdle;
      }));
  const bool some_idle = d.gpus.size() > 1 && idle > 0 && idle < d.gpus.size() && observed_h > 0;
  if (!some_idle) return std::string(cause_info(*d.verdict).what);
  const std::string gpus = fmt::format("{} of {} GPUs idle: {:.0f} % of the GPU time", idle,
                                       d.gpus.size(), 100 * idle_h / observed_h);
  if (*d.verdict == Cause::kIdle) return gpus;
  return fmt::format("{} ({})", cause_info(*d.verdict).what, gpus);
}

}  // namespace gpudoctor::diag
