// The live diagnosis of a running source: frames go into a rolling window (a Recording of the
// last few minutes), and every few seconds of frame time the diagnosis runs over it. `top` and
// `watch` keep one; each GPU's live cause comes from the latest diagnosis.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/config.hpp"
#include "analysis/diagnosis.hpp"
#include "core/recording.hpp"

namespace gpudoctor {

struct LiveWindowOptions {
  double window_s = 300;   // what the diagnosis looks at
  double every_s = 5;      // how often it runs (frame time)
  size_t min_frames = 10;  // frames before the first diagnosis
  double min_span_s = 10;  // and this much time
  DiagnosisConfig config;
};

class LiveWindow {
 public:
  LiveWindow(const std::string& source, const SystemInfo& system,
             const std::vector<DeviceInfo>& devices, LiveWindowOptions options = {});

  // Appends a frame (devices in the order given above); runs the diagnosis when it is due.
  // Returns whether it ran.
  bool add(const Frame& frame);
  // Runs the diagnosis over the last window_s now, when there are enough frames; returns whether
  // it ran.
  bool diagnose_now();

  // The latest diagnosis (none before the first), and the time its samples spanned.
  const std::optional<Diagnosis>& diagnosis() const { return diagnosis_; }
  double diagnosis_span_s() const { return span_s_; }
  // A GPU's verdict in the latest diagnosis (nullopt before one, or when it could not tell).
  std::optional<Cause> cause(unsigned gpu_index) const;
  const Recording& window() const { return window_; }
  size_t frames() const { return frames_; }

 private:
  LiveWindowOptions options_;
  Recording window_;
  size_t frames_ = 0;
  double first_time_s_ = 0, last_time_s_ = 0;
  double last_diagnosis_s_ = -1e300;
  double span_s_ = 0;
  std::optional<Diagnosis> diagnosis_;
};

}  // namespace gpudoctor
