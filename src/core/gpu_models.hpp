// GPU model table: the published characteristics of NVIDIA GPUs people run work on (data-centre,
// workstation, consumer and laptop boards, Kepler to Blackwell): power limits, clocks, memory,
// thermal thresholds, links, and where each row's figures come from. Used where a log has no power
// limit, clock or temperature threshold (taken from the GPU name), and by the simulator to behave
// like the real board. The table is data (core/gpu_models.tsv, embedded by the build and read
// once, on first use; docs/gpu-models.md); lookups by canonical key or by the name NVML,
// nvidia-smi, W&B, GPU-Z or HWiNFO report. Thread-safe: the table is built once and never changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.hpp"
#include "core/result.hpp"

namespace gpudoctor {

// Where a board is used; laptop boards run at a power limit the laptop's maker picks in a range.
enum class GpuKind : uint8_t { kDatacenter, kWorkstation, kConsumer, kLaptop };
std::string_view gpu_kind_name(GpuKind kind);  // "datacenter", "workstation", "consumer", "laptop"

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
  // What the table says beyond the simulator's figures (defaulted, so that designated
  // initialisers of the fields above still compile).
  GpuKind kind = GpuKind::kDatacenter;
  // Laptops: the TGP range the laptop's maker chooses from (tdp_w is a typical value within it);
  // 0 for boards with one default limit.
  double limit_range_min_w = 0;
  double limit_range_max_w = 0;
  bool slowdown_is_family_default = false;  // unpublished: the kind and architecture's default
  std::string_view memory_type;             // "HBM3", "GDDR6X", ...
  std::string_view aliases;                 // other names people use, ';'-separated
  std::string_view source;                  // where the row's figures come from
};

std::span<const GpuModel> gpu_models();
std::optional<GpuModel> gpu_model_by_key(std::string_view key);
// What a person types for a key (`model=H200`, `model=a100-sxm4-80`): the key itself or a
// unique prefix of one, case-insensitively. Ambiguous or unknown text is a usage error naming
// the close keys.
Result<GpuModel> find_gpu_model(std::string_view text);
// Matches what NVML, nvidia-smi, DCGM, W&B, GPU-Z, HWiNFO or a person call the GPU ("NVIDIA
// A100-SXM4-40GB", "Tesla V100-SXM2-32GB", "GPU [#0]: NVIDIA GeForce RTX 3060 Ti:", "3070 Ti",
// "H100 PCIe" ...), case-insensitively and tolerant of vendor words. A laptop's name ("... Laptop
// GPU", "Mobile", "Max-Q") matches laptop rows only. Nothing for a name that fits no row or only
// the start of several ("NVIDIA A100").
std::optional<GpuModel> gpu_model_by_name(std::string_view name);
// The models whose names are nearest to a name gpu_model_by_name does not know (a typo, a word
// missing or too many), best first, at most `most`: the NVML names, for a "did you mean".
std::vector<std::string_view> nearest_gpu_model_names(std::string_view name, std::size_t most = 3);
// "did you mean X or Y?" for a name not in the table, or "" when no name is near.
std::string gpu_name_suggestion(std::string_view name);
// "not in the model table; did you mean X? (`gpudoctor models` lists it)": for messages.
std::string gpu_name_not_found(std::string_view name);

// A GPU's name in at most `width` characters for a table column, without losing what tells
// boards apart: as it is when it fits, else without the vendor words ("NVIDIA", "GeForce",
// "Tesla"), else cut in the middle ("RTX PRO 600...on Edition"), never at the end (a cut end
// turns "RTX 3060 Laptop GPU" into the desktop card).
std::string gpu_name_for_column(std::string_view name, std::size_t width);

// Rows of core/gpu_models.tsv the program could not read (and left out), one line each naming
// the row; empty for a sound table (a unit test keeps it so).
std::span<const std::string> gpu_model_table_problems();

}  // namespace gpudoctor
