// Baselines: the figures of a run a team is happy with (mean power, efficiency, throughput from
// step markers), saved by name and compared with later runs (`diagnose --baseline`,
// `run --baseline`): a drop of more than 20 % (DOMAIN.md §3) is a regression.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.hpp"
#include "core/recording.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct Baseline {
  std::string name;
  std::string created;  // ISO 8601 UTC
  std::string source;
  int gpus = 0;                        // GPUs with steady work
  std::optional<double> mean_power_w;  // per GPU, over their steady state
  std::optional<double> efficiency;    // per GPU
  std::optional<double> throughput;    // samples/s from step markers (whole job)
  std::optional<double> step_time_s;   // mean step time from step markers
};

struct Regression {
  std::string metric;  // "mean_power_w", "efficiency", "throughput"
  double baseline = 0, now = 0;
  double drop = 0;  // (baseline - now) / baseline
};

struct BaselineComparison {
  Baseline baseline;
  Baseline now;
  std::vector<Regression> regressions;  // drops above the threshold only
  // Throughput on N GPUs / (N x throughput on 1): when the baseline ran on one GPU.
  std::optional<double> scaling_efficiency;
};

// The figures of a diagnosed recording.
Baseline baseline_of(const Recording& rec, const Diagnosis& d);
BaselineComparison compare_to_baseline(const Baseline& baseline, const Baseline& now,
                                       double threshold = 0.2);

// Where baselines live: $GPUDOCTOR_BASELINE_DIR, else $XDG_DATA_HOME/gpudoctor/baselines, else
// ~/.local/share/gpudoctor/baselines.
std::string baseline_dir();
Result<std::string> save_baseline(const Baseline& b);  // returns the file written
Result<Baseline> load_baseline(const std::string& name);
std::vector<std::string> list_baselines();

nlohmann::ordered_json baseline_json(const Baseline& b);
nlohmann::ordered_json comparison_json(const BaselineComparison& c);

}  // namespace gpudoctor
