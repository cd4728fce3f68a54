// The environment audit `gpudoctor run` prints before the job starts: settings known to leave
// GPUs waiting (CUDA_LAUNCH_BLOCKING, NCCL overrides, OpenMP threads, too few CPU cores per GPU,
// the powersave CPU governor, a job pinned to CPUs far from its GPUs). Read-only: it looks at the
// job's environment and /sys, and only ever recommends.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/recording.hpp"

namespace gpudoctor::host {

struct AuditInput {
  std::map<std::string, std::string> env;    // the job's environment
  int cores = 1;                             // CPU cores the job may use
  std::vector<int> cpus;                     // their ids (affinity), for NUMA
  int gpus = 0;                              // GPUs the job may use
  std::vector<std::string> gpu_pci_bus_ids;  // as NVML writes them ("00000000:3B:00.0")
  std::string sys = "/sys";
};

std::vector<AuditItem> audit_environment(const AuditInput& in);

// The environment of this process, as a map.
std::map<std::string, std::string> current_environment();
// CPU ids this process may run on.
std::vector<int> affinity_cpus();
// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; empty on malformed input.
std::vector<int> parse_cpu_list(const std::string& text);

}  // namespace gpudoctor::host
