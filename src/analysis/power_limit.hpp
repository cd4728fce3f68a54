// The power limit of one GPU from everything its input says: the efficiency score's denominator,
// where it came from and how sure it is, and the caps the GPU was held at.
//
// In order of trust: the log's default-limit column (or what the reader put there from the model
// table, --gpu-name or --power-limit); a percent-of-limit column beside the watts (W&B
// powerPercent, GPU-Z / HWiNFO % of TDP, Afterburner's power percent: limit = power / percent);
// a cap column that moves (the highest cap seen is the board's, the ones below it lowered caps);
// the power held while the SW power-cap reason is set; a sustained flat top of the power
// distribution while busy (a plateau is a limit). A percent-of-limit column without watts gives
// the power ratio directly, with no watts at all.
#pragma once

#include <string>
#include <vector>

#include "analysis/config.hpp"
#include "core/recording.hpp"

namespace gpudoctor {

// Per sample: a column's values over a divisor (the power over the limit, or a percent column over
// 100), made where read (the same division, so the same bits, as a vector of them made before);
// NaN where the column has none, and at every index without a column.
class RatioColumn {
 public:
  RatioColumn() = default;
  RatioColumn(ColumnView of, double over) : of_(of), over_(over) {}
  // (A missing value's NaN divided is a NaN.)
  double operator[](size_t i) const { return of_ ? of_[i] / over_ : kMissing; }
  // No column: every value NaN.
  bool empty() const { return !of_; }

 private:
  ColumnView of_;
  double over_ = 1;
};

struct PowerLimitEvidence {
  double default_w = 0;             // the denominator; 0 when nothing gives one
  bool is_default = false;          // a board default, not an enforced limit standing in for one
  std::string source;               // "log", "model-table", "flag", "percent-of-limit column", ...
  double confidence = 0;            // 0-1: how sure the denominator is
  bool ratio_from_percent = false;  // power ratio read from a percent column (no watts needed)
  double plateau_w = 0;             // a flat top of the power while busy, 0 when none
  std::vector<double>
      cap_levels_w;  // distinct levels the GPU was held at (plateaus, caps), low first
  // Per sample: power / limit (from watts and the limit, or the percent column); NaN unknown.
  RatioColumn power_ratio;
};

// The power draw (W) the diagnosis reads: the averaged reading, or where the input has only the
// instantaneous one (DCGM's power_usage_instant), that (noisier: the limitations say so); none
// (false) when neither.
ColumnView power_draw(const GpuSeries& s);

PowerLimitEvidence resolve_power_limit(const GpuSeries& s, const DiagnosisConfig& cfg);

// The level a busy GPU's power sits flat at, from the samples given (watts, any order): the top
// of the distribution when at least 30 % of the samples sit within a few percent of it and
// hardly any above. 0 when the power does not plateau.
double power_plateau_w(std::vector<double> busy_power_w);

// Distinct flat levels among samples taken while a cap held the GPU (the SW power-cap reason, or a
// cap column): each level held by at least min_share of them, low first.
std::vector<double> power_levels_w(std::vector<double> capped_power_w, double min_share);

}  // namespace gpudoctor
