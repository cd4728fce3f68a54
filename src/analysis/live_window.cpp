#include "analysis/live_window.hpp"

#include <algorithm>
#include <limits>

namespace gpudoctor {

LiveWindow::LiveWindow(const std::string& source, const SystemInfo& system,
                       const std::vector<DeviceInfo>& devices, LiveWindowOptions options)
    : options_(std::move(options)) {
  window_.system = system;
  window_.source = "live: " + source;
  for (const auto& d : devices) {
    GpuSeries g;
    g.info = d;
    g.power_limit_source = "log";
    window_.gpus.push_back(std::move(g));
  }
}

bool LiveWindow::add(const Frame& frame) {
  if (frames_ == 0) {
    window_.start_unix_ms = frame.time_unix_ms;
    first_time_s_ = frame.time_s;
  }
  append_frame(window_, frame);
  ++frames_;
  last_time_s_ = frame.time_s;
  if (frame.time_s - last_diagnosis_s_ >= options_.every_s) return diagnose_now();
  return false;
}

bool LiveWindow::diagnose_now() {
  if (frames_ < options_.min_frames || last_time_s_ - first_time_s_ < options_.min_span_s)
    return false;
  last_diagnosis_s_ = last_time_s_;
  double now = -std::numeric_limits<double>::infinity();
  for (const auto& g : window_.gpus)
    if (!g.time_s.empty()) now = std::max(now, g.time_s.back());
  trim_recording(window_, now - options_.window_s, std::numeric_limits<double>::infinity());
  double first = std::numeric_limits<double>::infinity(), last = -first;
  for (const auto& g : window_.gpus)
    if (!g.time_s.empty())
      first = std::min(first, g.time_s.front()), last = std::max(last, g.time_s.back());
  span_s_ = last >= first ? last - first : 0;
  diagnosis_ = diagnose(window_, options_.config);
  return true;
}

std::optional<Cause> LiveWindow::cause(unsigned gpu_index) const {
  if (!diagnosis_) return std::nullopt;
  for (const auto& g : diagnosis_->gpus)
    if (g.index == gpu_index) return g.verdict;
  return std::nullopt;
}

}  // namespace gpudoctor
