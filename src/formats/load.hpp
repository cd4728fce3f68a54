// Loading telemetry from a file, whatever wrote it: the reader is chosen by content (or forced
// with --input-format). Every command that reads telemetry goes through here.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct LoadOptions {
  std::string input_format = "auto";  // auto, recording, capture, smi-csv
  std::vector<std::string> columns;   // headerless nvidia-smi CSV: the --query-gpu list
  std::optional<double> power_limit_w;
  // Generic CSV: --map COLUMN=FIELD overrides of the alias table.
  std::vector<std::pair<std::string, std::string>> map;
};

std::vector<std::string> input_formats();
Result<Recording> load_telemetry(const std::string& path, const LoadOptions& options);

}  // namespace gpudoctor
