// `gpudoctor check`: a one-shot audit of the machine's GPU settings and health, each check a
// pass / warn / fail / info line with the fix (docs/check.md lists every check and its rule).
// A pure function over plain values: two samples per GPU (as `status` takes them), the health
// readings NVML gives once (ECC, retired pages, row remapping, default application clocks) and
// the host facts and audit items of host/. Read-only by construction: it only recommends.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/health.hpp"
#include "core/recording.hpp"

namespace gpudoctor {

struct CheckThresholds {
  double idle_util_pct = 5;         // below: the PCIe link cannot be judged (links downshift)
  double power_limit_ratio = 0.95;  // enforced limit below this share of the default: lowered
  double thermal_margin_c = 10;     // closer than this to the slowdown temperature: warn
  double hot_temp_c = 85;           // without a slowdown threshold: warn from here
};

struct GpuCheckInput {
  DeviceInfo info;
  DeviceSample first, second;  // two samples interval_s apart
  double interval_s = 0.25;
  DeviceHealth health;
  // Host side: the GPU's NUMA node (nullopt: /sys does not say; -1: none reported) and
  // host::audit_environment's numa_affinity item for this GPU, when it raised one.
  std::optional<int> numa_node;
  std::optional<AuditItem> numa_warning;
  int numa_nodes = 0;  // NUMA nodes on the machine (0: not known)
};

struct CheckInput {
  SystemInfo system;
  std::vector<GpuCheckInput> gpus;
  // Distinct CPU frequency governors on the CPUs this process may use (empty: not visible) and
  // host::audit_environment's cpu_governor item, when it raised one.
  std::vector<std::string> cpu_governors;
  std::optional<AuditItem> governor_warning;
};

struct GpuCheckResult {
  unsigned index = 0;
  std::string name, uuid, pci_bus_id;
  std::vector<AuditItem> items;
};

struct CheckResult {
  std::vector<AuditItem> machine;
  std::vector<GpuCheckResult> gpus;
  // Items at this level ("pass", "warn", "fail", "info"), machine and GPUs together.
  int count(const std::string& level) const;
  // "fail" when any check failed, else "warn" when any warned, else "pass".
  std::string overall() const;
};

// Every check of one GPU, in docs/check.md's order.
std::vector<AuditItem> check_gpu(const GpuCheckInput& gpu, const CheckThresholds& t = {});
// Machine-wide items (driver and CUDA versions, CPU governor), then every GPU.
CheckResult check_machine(const CheckInput& in, const CheckThresholds& t = {});

}  // namespace gpudoctor
