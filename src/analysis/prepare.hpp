// The first steps of diagnose() for one GPU, before any detector runs: the series it reads
// (sample intervals, efficiency and activity per sample, the power limit and the model's
// figures), then the phases of the activity (start-up, steady, pause, shutdown, idle) and the
// windows the detectors judge. Internal to src/analysis.
#pragma once

#include <algorithm>
#include <vector>

#include "analysis/config.hpp"
#include "analysis/detectors/detector.hpp"
#include "analysis/power_limit.hpp"
#include "core/recording.hpp"

namespace gpudoctor::diag {

// Static facts and per-sample derived series of one GPU (no phases or windows yet), with its
// power limit as resolve_power_limit(s, cfg) gives it (the second form takes it made already).
GpuData prepare(const GpuSeries& s, const DiagnosisConfig& cfg);
GpuData prepare(const GpuSeries& s, const DiagnosisConfig& cfg, PowerLimitEvidence limit);

// The running sums of d's samples (GpuData::sums) that the other GPUs' windows read of it
// (Context::peer_features, active_samples): made after prepare, for a GPU that has peers.
void running_sums(GpuData& d);

// Fills d.phases and d.windows from the activity mask.
void segment(GpuData& d, const DiagnosisConfig& cfg);

// The median of a column's known values; NaN when it has none (or there is no column).
double median_of(ColumnView c);
// The same over rows [i0, i1) (i0 <= i1 <= the column's size).
double median_of(ColumnView c, size_t i0, size_t i1);

// The value of rank n / 2 among value(0) .. value(n - 1) (what nth_element puts at n / 2: the
// median, the upper one of an even count), none of them NaN; NaN when n is 0. A value that more
// than half of them share (bit for bit) is that rank's, found in two passes without a copy: the
// time steps of a log sampled at one interval. Otherwise they are copied and selected.
template <class Value>
double median_by(size_t n, Value value) {
  if (n == 0) return kNaN;
  // The one value that may hold a majority (Boyer and Moore's vote), then its count.
  double candidate = value(0);
  size_t votes = 0;
  for (size_t i = 0; i < n; ++i) {
    const double x = value(i);
    if (votes == 0)
      candidate = x, votes = 1;
    else if (same_bits(x, candidate))
      ++votes;
    else
      --votes;
  }
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) count += same_bits(value(i), candidate);
  if (count > n / 2) return candidate;  // its run in sorted order covers rank n / 2
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(i);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(n / 2), v.end());
  return v[n / 2];
}

// The steps between successive samples' times, t[at(j + 1)] - t[at(j)], as median_by asks for
// them: j in order, pass after pass. Each time is read once while j follows the one asked last (a
// column of decimals decodes a time per read).
template <class At>
class TimeSteps {
 public:
  TimeSteps(ColumnView t, At at) : t_(t), at_(at) {}
  double operator()(size_t j) {
    const double from = j == last_ + 1 && last_ != kNone ? next_ : t_[at_(j)];
    next_ = t_[at_(j + 1)];
    last_ = j;
    return next_ - from;
  }

 private:
  static constexpr size_t kNone = ~size_t{0};
  ColumnView t_;
  At at_;
  size_t last_ = kNone;
  double next_ = 0;
};

}  // namespace gpudoctor::diag
