// serve's ledger of GPU seconds (docs/owners.md, "The ledger"), for one GPU: every sample waits
// until a diagnosis judges it, then counts once, by the cause that diagnosis gave it: a working
// GPU's lost seconds go to that cause, the rest to working; an idle GPU's whole interval is idle
// but allocated (and lost to idle) when something held it, else free. A sample no diagnosis
// judges (start-up, pauses) counts as working when something held the GPU, else free, once a
// later sample was judged or it has left the window. So the counters run on across diagnosis
// windows and never count a second twice. LiveExporter keeps one per GPU; the fleet bench's
// generator (bench/fleet) runs the same rule over consecutive windows of simulated frames.
// Thread-safety: none; one owner drives it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "analysis/causes.hpp"
#include "analysis/diagnosis.hpp"

namespace gpudoctor {

// serve's ledger for one GPU: counters since the exporter started (gpudoctor_lost_gpu_seconds_
// total by cause, gpudoctor_gpu_seconds_total by state). Each sample is counted once.
struct GpuLedger {
  std::array<double, kCauseCount> lost_s{};  // by cause (healthy stays 0)
  double working_s = 0, lost_total_s = 0, idle_allocated_s = 0, free_s = 0;
};

// What one sample added to the counters, and when it was taken.
struct CountedSample {
  int64_t unix_ms = 0;
  GpuLedger delta;
};

class LedgerBook {
 public:
  // A new sample of the GPU (time order): dt_s since the previous one, allocated when an owner or
  // a process held the GPU.
  void add_sample(int64_t unix_ms, double dt_s, bool allocated);
  // Counts the samples a diagnosis judged (GpuDiagnosis::judged, times from start_unix_ms), then
  // the pending ones no diagnosis will judge: those up to the last judged sample, and those older
  // than now_ms - keep_ms (they have left the window). Counted samples go to `counted` too.
  void judge(const std::vector<GpuDiagnosis::JudgedSample>& judged, int64_t start_unix_ms,
             int64_t now_ms, int64_t keep_ms, std::vector<CountedSample>* counted = nullptr);
  // Counts every pending sample as never judged (the source stopped: no diagnosis will come).
  void flush(std::vector<CountedSample>* counted = nullptr);
  // The counters since the start.
  const GpuLedger& totals() const { return totals_; }
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    int64_t ms = 0;
    double dt_s = 0;
    bool allocated = false;
    bool counted = false;
  };
  void add(int64_t ms, const GpuLedger& delta, std::vector<CountedSample>* counted);
  void count_unjudged(const Pending& p, std::vector<CountedSample>* counted);

  std::deque<Pending> pending_;
  GpuLedger totals_;
};

}  // namespace gpudoctor
