// The scale bench's output: one OpenMetrics file per chunk (`promtool tsdb create-blocks-from
// openmetrics` makes one 2 h block of it) holding the series as Prometheus stores them after
// scraping each host every interval:
//   path 1, every host (`gpudoctor serve`, scrape job "gpudoctor", instance HOST:9835): up (0
//     while the host does not report),
//     gpudoctor_gpu_info, gpudoctor_gpu_owner_info (the owner's job label as exported_job, as a
//     default scrape config renames it; empty labels left out, as Prometheus drops them),
//     gpudoctor_lost_gpu_seconds_total{cause} and gpudoctor_gpu_seconds_total{state};
//   path 2, the dcgm hosts (dcgm-exporter, scrape job "dcgm-exporter", instance HOST:9400): up,
//     its families (fleet_sim.hpp) with its labels, hpc_job for a Slurm job's GPUs and pod,
//     namespace, container for a pod's (one copy of each series per owner, as dcgm-exporter does).
// And what a fleet report should find: the GPU seconds by state and the lost seconds by cause
// per job, user, namespace, pod and host, a GPU's seconds split evenly among its owners (a GPU
// without one: owner_kind "none"), summed over the span (truth()).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "fleet_sim.hpp"

namespace gpudoctor::fleet_bench {

class ChunkWriter {
 public:
  ChunkWriter(const std::vector<HostPlan>& plan,
              const std::vector<std::vector<DeviceInfo>>& devices, const FleetOptions& o);
  // Writes the chunk starting at cs; returns the number of samples written.
  Result<size_t> write(const std::string& path, int64_t cs, const std::vector<HostChunk>& chunks);
  // The totals over everything written so far.
  nlohmann::ordered_json truth() const;

 private:
  struct Labels;  // per host, GPU (and epoch): the label strings, built once
  void account(int64_t cs, const std::vector<HostChunk>& chunks);

  const std::vector<HostPlan>& plan_;
  const std::vector<std::vector<DeviceInfo>>& devices_;
  const FleetOptions& o_;
  std::vector<std::vector<std::string>> own_, info_, dcgm_;  // [host][gpu]
  std::vector<std::string> up_, dcgm_up_;                    // [host]
  std::map<std::string, GpuLedger> by_job_, by_user_, by_namespace_, by_pod_, by_host_;
  GpuLedger fleet_;
};

}  // namespace gpudoctor::fleet_bench
