// Where a run's GPU time went: every observed GPU second counted once, as working, lost to a
// cause (idle included), or unknown (observed but not judged: start-up, shutdown, pauses, too few
// samples, nothing in the input to judge by). Computed from a Diagnosis alone; the HTML report's
// bar draws it, and a finding's share of the GPU time is its cause's lost seconds over observed_s.
//
// The counting rule (docs/run.md, "The time bar"), per GPU, then summed:
//   observed = metrics["observed_s"] (the GPU's sampled time; at least its judged time)
//   lost[c]  = sum of lost_s of the judged samples whose cause is c (healthy samples lose 0;
//              an idle sample loses its whole interval)
//   working  = judged time - sum of lost (a judged sample's time that was not lost)
//   unknown  = observed - judged time
// so working + sum(lost) + unknown == observed. Of the idle time, the run's breakdown also says
// how much was free: idle on GPUs whose idle finding says nothing held them (no process, no
// memory in use, no owner), spare capacity rather than a job's loss. A sample judged as a problem
// whose lost time the input cannot measure (no power, no SM activity) loses 0 and counts as
// working.
#pragma once

#include <map>

#include "analysis/diagnosis.hpp"

namespace gpudoctor {

struct GpuTimeBreakdown {
  double observed_s = 0;  // GPU seconds observed (summed over GPUs)
  double working_s = 0;   // judged GPU seconds not lost
  double unknown_s = 0;   // observed GPU seconds no window judged
  // Lost GPU seconds by cause, idle included, healthy never; only causes that lost time (> 0).
  std::map<Cause, double> lost_s;
  double idle_free_s = 0;  // part of idle_s(): GPUs nothing held (only the run's breakdown)

  double idle_s() const;         // lost_s[kIdle], 0 when absent
  double lost_total_s() const;   // every cause, idle included
  double share(double s) const;  // s / observed_s, 0 when nothing was observed
};

// One GPU's time.
GpuTimeBreakdown gpu_time_breakdown(const GpuDiagnosis& g);
// The run's: every GPU's, summed (a GPU-second is a second of one GPU).
GpuTimeBreakdown gpu_time_breakdown(const Diagnosis& d);

}  // namespace gpudoctor
