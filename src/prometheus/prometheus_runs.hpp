// The GPUs a Prometheus query finds, grouped into runs that are each diagnosed on their own
// (`diagnose --prometheus --group-by host|job|pod|none`, and `fleet` where it diagnoses): one run
// per host by default, so that a straggler is looked for among one machine's GPUs and never
// across unrelated hosts; one per owner (a Slurm job, a pod, a container, ...) where the series
// name owners (gpudoctor_gpu_owner_info, dcgm-exporter's hpc_job and pod labels), each cut to the
// time its owner held the GPUs; the rest of each host's GPU time is that host's own run.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/owner.hpp"
#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/load.hpp"
#include "prometheus/prometheus.hpp"

namespace gpudoctor {

enum class PromGroupBy { kHost, kJob, kPod, kNone };
std::string_view prom_group_by_code(PromGroupBy by);  // "host", "job", "pod", "none"
std::optional<PromGroupBy> prom_group_by_from_code(std::string_view code);

struct PromRun {
  std::string kind;            // "host", "owner" (a job, pod, ...), "all"
  std::string name;            // "node1", "job 41877 (alice)", "node1 (no owner)", "all GPUs"
  std::optional<Owner> owner;  // kind "owner": who
  std::vector<std::string> hosts;
  // Label matchers that pick the run's GPUs again (for a drill-down command line).
  std::string selector;
  Recording rec;
};

// The identity a run groups owners by: one Slurm job whatever its steps, one pod whatever its
// containers, one container, unit or user's processes.
std::string run_owner_key(const Owner& o);
// How a run names an owner: owner_label without the Slurm step ("job 41877 (alice)").
std::string run_owner_label(const Owner& o);

// Splits a recording whose GPUs carry their host (series_by_gpu) into runs, in order of host and
// name. A run over several hosts numbers its GPUs 0.. with a note each.
std::vector<PromRun> group_runs(Recording all, PromGroupBy by);

// The query's series, grouped into runs, each finished like any log (limits, notes).
Result<std::vector<PromRun>> load_prometheus_runs(const PrometheusQuery& q, PromGroupBy by,
                                                  const LoadOptions& options = {});

// "grouped by host: 3 runs" and the like, for the first line of a report.
std::string runs_summary(const std::vector<PromRun>& runs, PromGroupBy by);

}  // namespace gpudoctor
