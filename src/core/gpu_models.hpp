// GPU model table: the published characteristics of common NVIDIA data-centre and workstation
// GPUs (power limits, idle power, clocks, memory, thermal thresholds, links). Used where a log has
// no power limit (infer it from the GPU name), and by the simulator to behave like the real board.
// One table; lookups by canonical key or by the name NVML / nvidia-smi reports.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "core/device.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct GpuModel {
  std::string_view key;        // "h100-sxm", "a100-sxm4-80gb", ... (simulator scenarios use it)
  std::string_view nvml_name;  // the name NVML reports, e.g. "NVIDIA H100 80GB HBM3"
  Architecture architecture;
  double tdp_w;  // default power limit
  double power_limit_min_w;
  double power_limit_max_w;
  double idle_w;             // P0 idle power with a context, persistence mode on
  double sm_clock_max_mhz;   // max boost clock
  double sm_clock_base_mhz;  // base clock
  double sm_clock_min_mhz;   // lowest clock the power cap can push it to
  double mem_clock_mhz;
  double mem_total_mib;  // as NVML reports total (slightly below the marketing size)
  double slowdown_temp_c;
  double shutdown_temp_c;
  double thermal_resistance_c_per_w;  // steady-state temperature rise per watt with stock cooling
  double thermal_time_constant_s;
  int pcie_gen_max;
  int pcie_width_max;
  double nvlink_gb_s;  // total NVLink bandwidth per GPU in GB/s, 0 when none
  double dram_bandwidth_gb_s;
  bool passive_cooling;  // no fan reading (SXM and most data-centre boards)
  bool hbm = false;      // HBM memory: NVML reports its temperature; Ampere+ remaps its rows
};

std::span<const GpuModel> gpu_models();
std::optional<GpuModel> gpu_model_by_key(std::string_view key);
// What a person types for a key (`model=H200`, `model=a100-sxm4-80`): the key itself or a
// unique prefix of one, case-insensitively. Ambiguous or unknown text is a usage error naming
// the close keys.
Result<GpuModel> find_gpu_model(std::string_view text);
// Matches what NVML, nvidia-smi or DCGM call the GPU ("NVIDIA A100-SXM4-40GB", "Tesla
// V100-SXM2-32GB", "NVIDIA GeForce RTX 4090", "H100 PCIe" ...), case-insensitively and tolerant of
// vendor prefixes.
std::optional<GpuModel> gpu_model_by_name(std::string_view name);

}  // namespace gpudoctor
