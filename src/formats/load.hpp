// Loading telemetry from a file, whatever wrote it: the reader is chosen by content (or forced
// with --input-format). Every command that reads telemetry goes through here. An input is a file,
// `-` (standard input, read to its end), a gzip/xz/zstd archive of either (recognised by its
// first bytes), or a run folder (a W&B or MLflow run: formats/run_folders.hpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/encoding.hpp"

namespace gpudoctor {

struct LoadOptions {
  std::string input_format = "auto";  // one of input_formats()
  std::vector<std::string> columns;   // headerless nvidia-smi CSV: the --query-gpu list
  std::optional<double> power_limit_w;
  // --gpu-name: the model of GPUs the log leaves unnamed (nvidia-smi dmon).
  std::string gpu_name;
  // Generic CSV: --map COLUMN=FIELD overrides of the alias table.
  std::vector<std::pair<std::string, std::string>> map;
  // Reading `-`: asked when a read of standard input is interrupted by a signal (Ctrl-C); true
  // ends the reading and what arrived is read. Empty: standard input is read to its end.
  std::function<bool()> stop_reading;
  // Set by load_text, not by its callers: how a reader that decodes as it reads
  // (InputReader::decodes_as_it_reads) takes the text's bytes (text::ReadAs).
  text::ReadAs read_as = text::ReadAs::kUtf8;
  // Set (tests): counts the texts load_text decoded whole into a copy before reading them.
  size_t* texts_decoded_whole = nullptr;
};

std::vector<std::string> input_formats();
// Reads a file: a SQLite recording, or any log (mapped, then read by load_text); `-` is standard
// input; a compressed file is decompressed first; a W&B or MLflow run folder is read as one run.
// Any other folder is refused with a word on how to read a folder of logs. A column with one value
// throughout comes back as that value once (GpuSeries::compact).
Result<Recording> load_telemetry(const std::string& path, const LoadOptions& options);
// Reads a log held in memory, choosing the reader by content as load_telemetry does; origin names
// it in messages ("run.csv"). Recordings (SQLite) are read from files only.
Result<Recording> load_text(std::string_view text, const std::string& origin,
                            const LoadOptions& options);

}  // namespace gpudoctor
