// JSON telemetry: JSON lines (one sample object per line: W&B's wandb-events.jsonl, home-made
// loggers), a JSON array of sample objects, an object holding a list of GPUs (`gpustat --json`:
// one row per GPU, the outer fields such as query_time carried to each), a columnar object of
// equal-length arrays ({"ts": [...], "per_gpu": {"0": [...], "1": [...]}}), and Prometheus HTTP
// API answers saved to a file (a query_range or query answer).
//
// Samples are flattened into one table (nested keys joined with '.', a list of numbers as
// key.0, key.1, ...) and read by the column catalogue like any CSV, so the tools' own metric names
// are known in one place; Prometheus answers go through the Prometheus reader's own grouping. The
// JSON is read in place (formats/json_scan: views into the text, no DOM) where the text allows,
// else by nlohmann's DOM; both give the same cells.
#pragma once

#include <string>
#include <string_view>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/load.hpp"

namespace gpudoctor {

// True when the first non-blank byte opens a JSON object or array.
bool looks_like_json_samples(std::string_view head);

Result<Recording> read_json_samples(std::string_view text, const std::string& origin,
                                    const LoadOptions& options);

}  // namespace gpudoctor
