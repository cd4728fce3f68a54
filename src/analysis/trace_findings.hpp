// Profiler traces in a diagnosis: each rank's measures (analysis/trace_measures) as the
// diagnosis' `trace` block, and the causes a trace names with kernel-level evidence:
// launch_overhead (most kernels tiny and the GPU idle waiting for launches), data_starvation (the
// training loop waits in the DataLoader), communication_wait (NCCL time compute does not hide;
// with several ranks, the straggler the others wait for). Each finding's evidence carries a
// `trace` object. With no GPU telemetry beside the trace, the trace alone gives the verdict, the
// headline and the limits.
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/config.hpp"
#include "analysis/diagnosis.hpp"
#include "analysis/trace_measures.hpp"
#include "core/recording.hpp"

namespace gpudoctor {

// The thresholds a trace finding needs (fractions): the trace_* rows of analysis/config.def, so
// that --config overrides them and docs/diagnosis.md lists them with the others.
struct TraceThresholds {
  double small_kernel_share = 0.5;   // launch_overhead: kernels under 10 us, of all kernels
  double idle_share = 0.2;           // launch_overhead: idle time of the span
  double host_wait_share = 0.5;      // launch_overhead: of the idle time, waiting for launches
  double host_bound_share = 0.5;     // launch_overhead whatever the kernels: waiting, of the span
  double dataloader_share = 0.1;     // data_starvation: DataLoader time of the steps' time
  double exposed_comm_share = 0.15;  // communication_wait: exposed NCCL time of the span
};
TraceThresholds trace_thresholds(const DiagnosisConfig& c);

// One rank's measures as JSON (times in ms, shares as fractions of the span).
nlohmann::ordered_json trace_measures_json(const TraceMeasures& m);

// Adds what rec.traces say to `out` (nothing when it has none).
void add_trace_findings(Diagnosis& out, const Recording& rec, const TraceThresholds& th = {});

}  // namespace gpudoctor
