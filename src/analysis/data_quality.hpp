// How far the rows of an input can be trusted, before any judgement: time going back (or standing
// still), frozen rows (every value repeated: a hung logger writing its last reading again), gaps,
// and series that look like several GPUs interleaved on alternate rows without an index column.
// Frozen rows and rows whose time did not move forward are left out of the diagnosis; the rest is
// reported. Internal to src/analysis (diagnose() calls it; Diagnosis::data_quality shows it).
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/diagnosis.hpp"

namespace gpudoctor {

struct QualityScan {
  std::vector<DataQualityIssue> issues;
  // Per GPU, per sample: 1 = leave out; empty for a GPU with none to leave out.
  std::vector<std::vector<uint8_t>> drop;
  bool any_drop = false;
};

// One GPU's scan: which of its samples to leave out, and what was found.
struct GpuQuality {
  std::vector<uint8_t> drop;
  std::vector<DataQualityIssue> issues;
};
GpuQuality scan_gpu_quality(const GpuSeries& s, const DiagnosisConfig& cfg);
// The GPUs' scans as one, the issues in GPU order. (diagnose() runs each GPU's scan beside its
// power limit, several at once where the process may use several CPUs.)
QualityScan combine_quality(std::vector<GpuQuality> gpus);

}  // namespace gpudoctor
