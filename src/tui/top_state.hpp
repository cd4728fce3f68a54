// What `gpudoctor top` shows, as plain values: per GPU the instant assessment and readings, a short
// history, its processes and its live diagnosis; the findings of the live diagnosis; and what the
// person looking at it chose (ViewState). TopCollector (top_collector.hpp) fills a TopState from
// frames; render_top (top_view.hpp) draws one. Copied between the sampling and the UI threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/causes.hpp"
#include "analysis/diagnosis.hpp"
#include "analysis/snapshot.hpp"
#include "core/device.hpp"

namespace gpudoctor::tui {

// One sample of the history panel; NaN where the GPU had no value.
struct HistoryPoint {
  double t_s = 0;         // frame time (seconds since the source opened)
  float power_pct = 0;    // power as a share of the default limit, in %
  float util_pct = 0;     // GPU-Util
  float sm_pct = 0;       // SM activity (GPM)
  float efficiency = 0;   // 0-1
  float clock_ratio = 0;  // SM clock / max SM clock
};

struct ProcessView {
  uint32_t pid = 0;
  std::string user;     // "" where unknown (the process is not on this host, or gone)
  std::string command;  // command line where the host has it, else the driver's process name
  std::optional<double> mem_mib;
  std::optional<double> sm_pct;
  std::string owner;  // its job, pod, container or unit ("job 41877.0"); "" none known
};

struct GpuView {
  DeviceInfo info;
  GpuAssessment now;  // from the last two samples (analysis/snapshot)
  std::optional<double> temp_c, temp_slowdown_c, clock_sm_mhz, clock_sm_max_mhz, pstate;
  std::optional<uint64_t> reasons;  // clock event reasons bitmask
  bool lost = false;
  bool processes_supported = false;
  std::vector<ProcessView> processes;
  std::vector<HistoryPoint> history;  // oldest first
  // The live diagnosis of this GPU (nullopt: not run yet, or nothing to judge it by).
  std::optional<Cause> cause;
  std::optional<double> cause_confidence;
};

struct FindingView {
  Severity severity = Severity::kInfo;
  Cause cause = Cause::kHealthy;
  std::vector<unsigned> gpus;  // GPU indexes
  double duration_s = 0;
  std::string summary;
};

struct TopState {
  std::string source;  // "sim:straggler", "nvml"
  std::string hostname, driver_version;
  int64_t time_unix_ms = 0;  // wall clock of the last frame (0: none yet)
  double time_s = 0;         // frame time of the last frame
  double interval_s = 0.5;   // sampling interval, for labels
  size_t frames = 0;
  std::vector<GpuView> gpus;

  // The live diagnosis over the last few minutes, refreshed every few seconds.
  bool diagnosed = false;
  double diagnosis_at_s = 0;    // frame time when it ran
  double diagnosis_span_s = 0;  // how much time it covered
  double diagnosis_every_s = 5;
  std::optional<Cause> verdict;
  std::vector<FindingView> findings;  // most GPU time lost first; healthy is not a finding
  std::vector<std::string> limitations;
};

enum class ProcessSort : uint8_t { kMemory, kSm, kPid, kGpu };
std::string_view process_sort_name(ProcessSort s);
ProcessSort next_sort(ProcessSort s);

// What the person chose: selection, views, options. Owned by the UI thread.
struct ViewState {
  size_t selected = 0;  // position in TopState::gpus
  bool detail = false;  // the one-GPU view
  bool paused = false;
  bool help = false;
  ProcessSort sort = ProcessSort::kMemory;
  bool unicode = true;   // block characters for bars and sparklines, else ASCII
  bool key_line = true;  // the line of keys at the bottom (not in one printed frame)
};

}  // namespace gpudoctor::tui
