#include "analysis/time_breakdown.hpp"

#include <algorithm>
#include <set>

namespace gpudoctor {

double GpuTimeBreakdown::idle_s() const {
  const auto it = lost_s.find(Cause::kIdle);
  return it == lost_s.end() ? 0 : it->second;
}

double GpuTimeBreakdown::lost_total_s() const {
  double sum = 0;
  for (const auto& [cause, s] : lost_s) sum += s;
  return sum;
}

double GpuTimeBreakdown::share(double s) const {
  return observed_s > 0 ? s / observed_s : 0;
}

GpuTimeBreakdown gpu_time_breakdown(const GpuDiagnosis& g) {
  GpuTimeBreakdown b;
  const double judged_s = g.judged_time.judged_s;
  for (size_t c = 0; c < kCauseCount; ++c)
    if (g.judged_time.lost_s[c] > 0) b.lost_s[static_cast<Cause>(c)] = g.judged_time.lost_s[c];
  const double lost = g.judged_time.lost_total_s;
  double observed = 0;
  if (const auto it = g.metrics.find("observed_s"); it != g.metrics.end() && it->is_number())
    observed = it->get<double>();
  // observed_s is rounded to 0.1 s: never less than the time judged.
  b.observed_s = std::max(observed, judged_s);
  b.working_s = judged_s - lost;
  b.unknown_s = b.observed_s - judged_s;
  return b;
}

GpuTimeBreakdown gpu_time_breakdown(const Diagnosis& d) {
  // GPUs an idle finding says nothing held (its evidence's "held" is 0).
  std::set<unsigned> free_gpus;
  for (const auto& f : d.findings) {
    if (f.cause != Cause::kIdle) continue;
    const auto it = f.evidence.find("held");
    if (it != f.evidence.end() && it->is_number() && it->get<double>() < 0.5)
      free_gpus.insert(f.gpus.begin(), f.gpus.end());
  }
  GpuTimeBreakdown run;
  for (const auto& g : d.gpus) {
    const GpuTimeBreakdown b = gpu_time_breakdown(g);
    if (free_gpus.count(g.index)) run.idle_free_s += b.idle_s();
    run.observed_s += b.observed_s;
    run.working_s += b.working_s;
    run.unknown_s += b.unknown_s;
    for (const auto& [cause, s] : b.lost_s) run.lost_s[cause] += s;
  }
  return run;
}

}  // namespace gpudoctor
