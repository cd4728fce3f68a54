// Directories that the tool that wrote them keeps as one run, and folders of logs.
//
// A W&B run folder (`wandb/run-YYYYMMDD_HHMMSS-ID/` or `offline-run-...`) holds the run file
// `run-ID.wandb` and `files/wandb-metadata.json`, whose GPU names (`gpu_devices`, `gpu_nvidia`,
// `gpu`), `gpu_count` and `host` name what the run file's metrics leave unnamed. An MLflow run
// (`mlruns/EXP/RUN/`) keeps its system metrics as one file per metric in `metrics/system/`
// (`gpu_0_utilization_percentage`, `gpu_0_power_usage_watts` ...), each line `timestamp_ms value
// step`: they become one table read by the column catalogue's MLflow names. Any other directory
// is a folder of logs: its files (and run folders), each a run, or merged into one
// (merge_recordings: the same job's GPUs, one log per GPU or per node).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/load.hpp"

namespace gpudoctor {

enum class FolderKind { kWandbRun, kMlflowRun, kLogs };

struct RunFolder {
  FolderKind kind = FolderKind::kLogs;
  std::string run_file;     // W&B: the .wandb file
  std::string metadata;     // W&B: files/wandb-metadata.json ("" when absent)
  std::string metrics_dir;  // MLflow: the metrics/system folder
};

// What the directory `dir` is.
RunFolder classify_folder(const std::string& dir);

// Reads a W&B or MLflow run folder (classify_folder's answer for it).
Result<Recording> load_run_folder(const std::string& dir, const RunFolder& run,
                                  const LoadOptions& options);

// The names W&B's metadata gives (files/wandb-metadata.json), put on the GPUs the run file left
// unnamed, with a note. `json` is the file's text.
void apply_wandb_metadata(Recording& rec, const std::string& json, const std::string& origin);

// MLflow's metrics/system files as one CSV table (a timestamp_ms column, then one column per GPU
// metric file, "system/gpu_0_power_usage_watts"); `skipped` gets the files that are not GPU
// metrics.
Result<std::string> mlflow_system_table(const std::string& metrics_dir,
                                        std::vector<std::string>& skipped);

// A folder of logs: its regular files and run folders (not hidden, not symbolic links to
// folders), sorted by name, numbers in their order (gpu2.csv before gpu10.csv).
Result<std::vector<std::string>> folder_logs(const std::string& dir);

// A folder's logs (folder_logs) read as one run (--merge): each read with `options`, then merged;
// those that cannot be read are named in a note (an error when none can).
Result<Recording> load_merged_folder(const std::string& dir, const std::vector<std::string>& files,
                                     const LoadOptions& options);

// An error's first words, for a table or a note: the origin's name and the details left off
// ("not a format gpudoctor reads", "a corrupt gzip archive").
std::string error_gist(std::string message, const std::string& origin);

// Several logs of one job as one recording: GPUs renumbered in order, each keeping its host
// (GpuSeries::host when the parts name different hosts), times aligned by absolute time where
// every part has it (else each part starts at 0), notes saying what was merged.
Recording merge_recordings(std::vector<std::pair<std::string, Recording>> parts);

}  // namespace gpudoctor
