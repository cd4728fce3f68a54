// Diagnosis: from any telemetry (a recording, a log, a live window) say per GPU and for the run
// whether the GPUs really worked and, if not, why, with evidence, fixes and the GPU time lost.
// The JSON form is a stable contract (docs/diagnosis.md, docs/diagnosis.schema.json).
//
// How: each GPU's series is segmented into phases (start-up, steady, pauses, shutdown, idle);
// the steady state is cut into windows; each window is judged by the detectors (one file per cause
// in detectors/, tried in the cause table's priority order); consecutive windows with the same
// cause become findings, merged across GPUs; the verdict is the cause that cost the most GPU time.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/causes.hpp"
#include "analysis/config.hpp"
#include "core/recording.hpp"

namespace gpudoctor {

enum class Severity : uint8_t { kInfo, kWarning, kCritical };
std::string_view severity_code(Severity s);  // "info", "warning", "critical"

struct Phase {
  std::string kind;  // "startup", "steady", "pause", "shutdown", "idle"
  double start_s = 0, end_s = 0;
};

// Another cause the input cannot rule out, ranked after the finding's own: how likely, and what
// measurement would tell the two apart.
struct Alternative {
  Cause cause = Cause::kHealthy;
  double confidence = 0;
  std::string tell_apart;
};

// What the GPUs ran, from process names and the job's command line: "training", "serving" (an
// inference server), or "unknown". Decides which fixes a finding gives.
struct Workload {
  std::string kind = "unknown";
  std::string evidence;  // the name that decided it; empty for unknown
};

// How trustworthy the input's rows are: each issue found, with the samples and time it covers.
struct DataQualityIssue {
  std::string kind;  // "frozen", "gap", "time_backwards", "interleaved"
  unsigned gpu = 0;
  double start_s = 0, end_s = 0;
  size_t samples = 0;
  std::string detail;
};

struct Finding {
  Cause cause = Cause::kHealthy;
  std::vector<unsigned> gpus;  // GPU indexes
  Severity severity = Severity::kInfo;
  double confidence = 0;  // 0-1
  double start_s = 0, end_s = 0;
  std::string summary;
  nlohmann::ordered_json evidence = nlohmann::ordered_json::object();
  std::optional<double> lost_gpu_hours;   // nullopt where the input has no power or SM activity
  std::vector<Alternative> alternatives;  // most likely first; empty when the input decides
  std::vector<std::string> fixes;         // for the workload (both kinds when it is unknown)
  std::vector<std::string> owners;        // who held its GPUs meanwhile ("job 41877.0 (alice)")
  // The finding's share of the run's GPU time (its GPUs' judged time over every GPU's observed
  // time): a finding under finding_min_share is listed, never the verdict.
  double share = 0;
};

struct GpuDiagnosis {
  unsigned index = 0;
  std::string name, uuid;
  std::optional<Cause> verdict;  // nullopt: nothing in the input to judge this GPU by
  double confidence = 0;
  std::optional<double> efficiency;     // mean over the steady state
  std::optional<double> power_limit_w;  // the efficiency denominator (default limit)
  std::string power_limit_source;       // "log", "model-table", "flag", ... (power_limit.hpp)
  std::optional<double> power_limit_confidence;  // how sure that limit is, 0-1
  std::optional<double> enforced_limit_w;
  std::vector<Phase> phases;
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  std::optional<double> lost_gpu_hours;
  // A sample a window judged, with the GPU seconds it lost.
  struct JudgedSample {
    double t_s = 0, dt_s = 0;
    Cause cause = Cause::kHealthy;
    double lost_s = 0;
  };
  // The judged samples' time (not in the JSON; the report's time bar reads it): every judged
  // sample counted once, in time order, by count().
  struct JudgedTime {
    double judged_s = 0;  // judged samples' dt (negative ones as 0)
    // lost_s clamped to [0, dt], by cause (indexed by its value); healthy samples lose none.
    std::array<double, kCauseCount> lost_s{};
    double lost_total_s = 0;  // the same, every cause
    void count(const JudgedSample& j) {
      const double dt = std::max(0.0, j.dt_s);
      judged_s += dt;
      if (j.cause == Cause::kHealthy) return;
      const double l = std::clamp(j.lost_s, 0.0, dt);
      if (l <= 0) return;
      lost_s[static_cast<size_t>(j.cause)] += l;
      lost_total_s += l;
    }
  } judged_time;
  // Every judged sample, in time order: only where diagnose() was asked for them
  // (JudgedSamples::kEach; `serve`'s ledger counts them against wall-clock time).
  std::vector<JudgedSample> judged;
};

struct Diagnosis {
  std::optional<Cause> verdict;  // nullopt only when no GPU could be judged
  // One line for the verdict: the cause's meaning, or "2 of 8 GPUs idle: 25 % of the GPU time".
  std::string headline;
  double gpu_hours = 0;                  // every GPU's observed time
  std::optional<double> lost_gpu_hours;  // the run's total; nullopt where no GPU's is known
  // The efficiency lost time is measured against (a GPU below it loses time, healthy or not).
  double reference_efficiency = 0.8;
  std::string source;
  int64_t start_unix_ms = 0;
  double duration_s = 0;
  std::vector<GpuDiagnosis> gpus;
  std::vector<Finding> findings;  // most GPU time lost first
  std::vector<std::string> limitations;
  std::vector<std::string> input_notes;  // what the reader assumed
  Workload workload;
  std::vector<DataQualityIssue> data_quality;  // empty: nothing wrong found in the rows
  // What profiler traces read with the input say, per rank (analysis/trace_findings); null: none.
  nlohmann::ordered_json trace;
};

// Whether each judged sample is kept (GpuDiagnosis::judged) or only their time counted: a day of
// 100 ms samples is 32 bytes each, and only `serve` reads them one by one.
enum class JudgedSamples { kTimeOnly, kEach };

Diagnosis diagnose(const Recording& rec, const DiagnosisConfig& config = {},
                   JudgedSamples judged = JudgedSamples::kTimeOnly);

}  // namespace gpudoctor
