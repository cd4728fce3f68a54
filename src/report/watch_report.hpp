// Renders `gpudoctor watch` lines: one line per GPU per interval, like `nvidia-smi dmon` but with
// power as a share of the default limit, SM activity, the efficiency score, clock event reasons
// the snapshot verdict and the live cause (the verdict of a diagnosis over the last minutes). Three
// formats: an aligned table that fits the terminal, CSV (loads into pandas as is; empty cells
// where a value is not available) and JSON lines.
#pragma once

#include <optional>
#include <string>
#include <vector>
#include "report/text_table.hpp"

#include "analysis/causes.hpp"
#include "analysis/snapshot.hpp"
#include "core/device.hpp"
#include "core/result.hpp"

namespace gpudoctor {

enum class WatchFormat { kTable, kCsv, kJsonl };
Result<WatchFormat> parse_watch_format(const std::string& s);

class WatchRenderer {
 public:
  // `width`: what the table fits (the least needed columns go first).
  explicit WatchRenderer(WatchFormat format, size_t width = 100);
  // The column header ("" for JSON lines). Tables repeat it every screen; CSV prints it once.
  std::string header() const;
  // The lines for one frame. assessments and causes (the live diagnosis' verdict per GPU, nullopt
  // before one) are parallel to frame.devices.
  std::string rows(const std::vector<DeviceInfo>& devices, const Frame& frame,
                   const std::vector<GpuAssessment>& assessments,
                   const std::vector<std::optional<Cause>>& causes = {}) const;

 private:
  WatchFormat format_;
  TextTable table_;
};

}  // namespace gpudoctor
