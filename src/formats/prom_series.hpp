// Prometheus series into a Recording, without the network: the JSON answer of the HTTP API read
// into series (a saved answer, or what the client in prometheus/ fetched), and series grouped into
// GPUs under dcgm-exporter's names (DCGM_FI_DEV_POWER_USAGE, ...) or gpudoctor's own, with DCGM's
// units converted back to the catalogue's. formats/json_samples (saved answers),
// formats/prom_text (exposition snapshots) and prometheus/ read through it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct PromSeries {
  std::map<std::string, std::string> labels;       // __name__ included
  std::vector<std::pair<int64_t, double>> points;  // unix ms, value (NaN kept)
};

// The "data.result" of a query or query_range answer of resultType matrix (or vector), or the
// error Prometheus gave.
Result<std::vector<PromSeries>> parse_prometheus_answer(std::string_view body);
// The metric names the reader asks for, DCGM's first.
std::vector<std::string> prometheus_metric_names();
// Groups series into GPUs and fills a Recording (no finishing step: load_prometheus does that):
// each GPU keeps its host (GpuSeries::host) and its gpu label as index, and the owners its series
// name (gpudoctor_gpu_owner_info; dcgm-exporter's hpc_job, pod, namespace, container labels) as
// owner spans.
Recording series_by_gpu(const std::vector<PromSeries>& series, const std::string& source);
// GPUs of several hosts numbered 0.. in order, a note for each ("GPU 4 is node2 gpu 0 (UUID)").
void number_across_hosts(Recording& rec);
// series_by_gpu, then number_across_hosts.
Recording recording_from_series(const std::vector<PromSeries>& series, const std::string& source);

}  // namespace gpudoctor
