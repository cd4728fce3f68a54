// Recording: the one in-memory form of telemetry that analysis reads, whatever it came from (a
// live window, a SQLite recording, an imported nvidia-smi / dmon / DCGM log, a capture). Columnar:
// per GPU a time vector and one column per field that the input had. A missing sample of a present
// field is NaN (never 0); a field the GPU does not support has no column and, where the input said
// why, an entry in `unsupported`.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/column.hpp"
#include "core/device.hpp"
#include "core/fields.hpp"
#include "core/time_column.hpp"
#include "core/trace.hpp"

namespace gpudoctor {

inline constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();
inline bool is_missing(double v) {
  return std::isnan(v);
}

struct ProcessSpan {
  uint32_t pid = 0;
  std::string name;
  double first_s = 0, last_s = 0;  // seconds since the recording's start
  std::optional<double> max_memory_mib;
};

// Who held the GPU from first_s to last_s (seconds since the recording's start).
struct OwnerSpan {
  Owner owner;
  double first_s = 0, last_s = 0;
};

// One GPU's telemetry. A value: copies are deep (every member, columns included).
struct GpuSeries {
  DeviceInfo info;
  // The host the GPU is in, where one input holds GPUs of several hosts (a Prometheus server);
  // "" otherwise (the Recording's system.hostname says it).
  std::string host;
  TimeColumn time_s;  // seconds since Recording::start_unix_ms, increasing
  // One column per field, present only for fields the input had; same length as time_s.
  using Column = FieldColumn;
  std::array<Column, kFieldCount> columns{};
  std::map<Field, int32_t> unsupported;  // field -> NVML code, where known
  std::vector<ProcessSpan> processes;
  std::vector<OwnerSpan> owners;  // empty: none known (or an input that cannot say)
  // The input lists compute processes (so an empty list means none ran); false for logs that
  // cannot say (nvidia-smi --query-gpu CSV, dmon, DCGM).
  bool processes_recorded = false;
  std::optional<double> lost_at_s;
  // Where the power limit columns came from: "log" (the input itself: a live source, a recording
  // or a log with a limit column), "model-table" (inferred from the GPU name), "flag"
  // (--power-limit), or "" when there is none.
  std::string power_limit_source;

  bool has(Field f) const { return columns[index_of(f)] != nullptr; }
  // The field's values (a view: valid until the series changes), or none (false).
  ColumnView column(Field f) const { return columns[index_of(f)].view(); }
  // Creates the column (NaN-filled to the current length) if needed; every value, to change.
  std::vector<double>& column_for_write(Field f);
  // Appends a time and NaN to every present column; returns the new row index.
  size_t append_row(double t_s);
  size_t size() const { return time_s.size(); }
  // Folds each column that holds one value throughout into that value once (core/column.hpp).
  void compact();
};

// The host around a job (`gpudoctor run`): whole-machine CPU and I/O wait, and the job's own
// process tree (CPU, processes, reads, context switches), one row per sample.
struct HostSample {
  double time_s = 0;                // seconds since the recording's start
  double cpu_pct = kMissing;        // whole machine, % of all cores busy
  double iowait_pct = kMissing;     // whole machine, % of CPU time waiting for I/O
  double job_cpu_cores = kMissing;  // the job's processes, in cores busy (2.5 = two and a half)
  double job_processes = kMissing;  // processes in the job's tree
  double job_read_mibs = kMissing;  // bytes the job's processes read from storage, MiB/s
  double job_ctx_switches_per_s = kMissing;
};

struct HostSeries {
  int cores = 0;  // CPU cores the job may run on
  std::vector<HostSample> samples;
};

// A step marker a job wrote (GPUDOCTOR_MARKERS protocol, docs/run.md).
struct StepMarker {
  double time_s = 0;
  std::string event;          // "step_start", "data_ready", "step_end"
  double samples = kMissing;  // step_end: samples (items) the step processed
};

// A finding of the environment audit of `gpudoctor run` / `gpudoctor check`.
struct AuditItem {
  std::string level;  // "pass", "warn", "fail", "info"
  std::string code;   // "cuda_launch_blocking", "cpu_governor", ...
  std::string message;
  std::string fix;
};

// A value like GpuSeries: copy it whole (`Recording copy = rec;`), never member by member.
struct Recording {
  SystemInfo system;
  int64_t start_unix_ms = 0;
  std::string source;  // "nvml", "sim:straggler", "nvidia-smi csv: run.csv", ...
  std::vector<GpuSeries> gpus;
  std::vector<std::string> notes;  // what the reader assumed (e.g. where a power limit came from)
  // `gpudoctor run`: the job's command line, its host series, step markers and the audit.
  std::vector<std::string> command;
  std::optional<HostSeries> host;
  std::vector<StepMarker> markers;
  std::vector<AuditItem> audit;
  // Profiler traces read beside (or instead of) telemetry, one per rank (core/trace.hpp).
  std::vector<TraceRank> traces;
};

// Everything of the recording but its GPUs (to fill with some of them): one copy, so that no field
// of a recording can be left behind (a field added to Recording and not here fails to compile:
// -Wmissing-field-initializers).
Recording without_gpus(const Recording& rec);

// Makes the earliest sample time of any GPU 0 when a GPU's first row came before the recording's
// start (rows of several GPUs interleave with jitter). `start_known`: also move start_unix_ms
// (false when the input's absolute start is unknown and only relative times matter).
void rebase_times(Recording& rec, bool start_known = true);

// Keeps only the samples with since_s <= time < until_s (seconds from the start); process spans
// are clipped to the same range.
void trim_recording(Recording& rec, double since_s, double until_s);

// Keeps only `rows` (increasing indices) of the time and of every column.
void keep_rows(GpuSeries& g, const std::vector<size_t>& rows);

// A copy of the GPU's rows whose time lies in one of `ranges` ([first, last] seconds, sorted and
// disjoint), with its processes and owners clipped to them; everything else (info, host, limits,
// unsupported fields) copied as it is.
GpuSeries slice_series(const GpuSeries& g, const std::vector<std::pair<double, double>>& ranges);

// Appends a frame of a live source: rec.gpus must already hold one GpuSeries per frame device
// (same order). Times are taken relative to rec.start_unix_ms; unsupported readings are noted,
// processes become spans, a lost GPU gets lost_at_s.
void append_frame(Recording& rec, const Frame& frame);

}  // namespace gpudoctor
