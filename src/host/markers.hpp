// Step markers: a job may report its step boundaries by appending lines to the file named by
// GPUDOCTOR_MARKERS (protocol in docs/run.md; a Python helper in contrib/python/):
//
//   <unix time in seconds> <event> [samples=<n>]
//
// with event step_start, data_ready (the batch is on the GPU) or step_end. With them a report
// gives throughput and the time per step split into waiting for data and computing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/recording.hpp"

namespace gpudoctor::host {

// One line of the protocol; nullopt when it is not one (ignored, counted by the caller).
std::optional<StepMarker> parse_marker(const std::string& line, int64_t start_unix_ms);

// Follows a marker file as the job appends to it; only whole lines are read.
class MarkerReader {
 public:
  explicit MarkerReader(std::string path) : path_(std::move(path)) {}
  void poll(int64_t start_unix_ms, std::vector<StepMarker>& out);
  size_t bad_lines() const { return bad_; }

 private:
  std::string path_;
  uint64_t offset_ = 0;
  std::string partial_;
  size_t bad_ = 0;
};

struct StepStats {
  size_t steps = 0;                  // completed steps (a step_end)
  double mean_step_s = kMissing;     // step_start (or the previous step_end) to step_end
  double mean_wait_s = kMissing;     // step_start to data_ready
  double mean_compute_s = kMissing;  // data_ready to step_end
  double throughput = kMissing;      // samples per second over the steps, where given
};
StepStats step_stats(const std::vector<StepMarker>& markers);

}  // namespace gpudoctor::host
