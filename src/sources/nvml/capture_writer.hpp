// CaptureWriter: turns frames from any source into a capture file (docs/capture-format.md) that the
// stand-in NVML library replays. This is how test fixtures come from real machines.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device.hpp"
#include "core/health.hpp"
#include "core/result.hpp"

namespace gpudoctor {

class CaptureWriter {
 public:
  CaptureWriter(const SystemInfo& system, const std::vector<DeviceInfo>& devices);
  // Adds one frame; times are taken relative to the first frame added.
  void add(const Frame& frame);
  // Writes each device's "health" object (same order as the devices): values as read, NOT_SUPPORTED
  // as an absent key, other codes into "errors". Sources that do not read health add nothing.
  void set_health(const std::vector<DeviceHealth>& health);
  size_t frames() const { return frames_; }
  nlohmann::json to_json() const;
  // Writes atomically (temporary file, then rename), so an interrupted write leaves no half file.
  Result<Nothing> write(const std::string& path) const;

 private:
  nlohmann::json doc_;
  double t0_ = -1;
  double last_t_ = -1;
  size_t frames_ = 0;
  std::vector<std::vector<Reading>> last_;  // per device, last value written per field
};

}  // namespace gpudoctor
