// The first steps of diagnose() for one GPU, before any detector runs: the series it reads
// (sample intervals, efficiency and activity per sample, the power limit and the model's
// figures), then the phases of the activity (start-up, steady, pause, shutdown, idle) and the
// windows the detectors judge. Internal to src/analysis.
#pragma once

#include <vector>

#include "analysis/config.hpp"
#include "analysis/detectors/detector.hpp"
#include "core/recording.hpp"

namespace gpudoctor::diag {

// Static facts and per-sample derived series of one GPU (no phases or windows yet).
GpuData prepare(const GpuSeries& s, const DiagnosisConfig& cfg);

// Fills d.phases and d.windows from the activity mask.
void segment(GpuData& d, const DiagnosisConfig& cfg);

// The median of a column's known values; NaN when it has none (or there is no column).
double median_of(ColumnView c);
// The same over rows [i0, i1) (i0 <= i1 <= the column's size).
double median_of(ColumnView c, size_t i0, size_t i1);

}  // namespace gpudoctor::diag
