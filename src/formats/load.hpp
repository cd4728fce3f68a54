// Loading telemetry from a file, whatever wrote it: the reader is chosen by content (or forced
// with --input-format). Every command that reads telemetry goes through here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct LoadOptions {
  std::string input_format = "auto";  // one of input_formats()
  std::vector<std::string> columns;   // headerless nvidia-smi CSV: the --query-gpu list
  std::optional<double> power_limit_w;
  // --gpu-name: the model of GPUs the log leaves unnamed (nvidia-smi dmon).
  std::string gpu_name;
  // Generic CSV: --map COLUMN=FIELD overrides of the alias table.
  std::vector<std::pair<std::string, std::string>> map;
};

std::vector<std::string> input_formats();
// Reads a file: a SQLite recording, or any log (mapped, then read by load_text).
Result<Recording> load_telemetry(const std::string& path, const LoadOptions& options);
// Reads a log held in memory, choosing the reader by content as load_telemetry does; origin names
// it in messages ("run.csv"). Recordings (SQLite) are read from files only.
Result<Recording> load_text(std::string_view text, const std::string& origin,
                            const LoadOptions& options);

}  // namespace gpudoctor
