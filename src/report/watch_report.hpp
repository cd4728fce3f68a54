// Renders `gpudoctor watch` lines: one line per GPU per interval, like `nvidia-smi dmon` but with
// power as a share of the default limit, SM activity, the efficiency score, clock event reasons
// and the snapshot verdict. Three formats: an aligned table, CSV (loads into pandas as is; empty
// cells where a value is not available) and JSON lines.
#pragma once

#include <string>
#include <vector>

#include "analysis/snapshot.hpp"
#include "core/device.hpp"
#include "core/result.hpp"

namespace gpudoctor {

enum class WatchFormat { kTable, kCsv, kJsonl };
Result<WatchFormat> parse_watch_format(const std::string& s);

class WatchRenderer {
 public:
  explicit WatchRenderer(WatchFormat format) : format_(format) {}
  // The column header ("" for JSON lines). Tables repeat it every screen; CSV prints it once.
  std::string header() const;
  // The lines for one frame. assessments is parallel to frame.devices.
  std::string rows(const std::vector<DeviceInfo>& devices, const Frame& frame,
                   const std::vector<GpuAssessment>& assessments) const;

 private:
  WatchFormat format_;
};

}  // namespace gpudoctor
