// GPU model table and lookups. See gpu_models.hpp.
//
// Where the figures come from (per field, unless a row says otherwise):
//   tdp / min / max power limit, max and base (default application) SM clock, memory clock,
//   slowdown / shutdown temperature, PCIe generation and width: `nvidia-smi -q` output of the
//   board where one was found in public issues and test fixtures, otherwise NVIDIA's data sheet
//   or product brief. Rows say "observed" for figures read from a real nvidia-smi output.
//   mem_total_mib: "FB Memory Usage Total" / the nvidia-smi table as printed by recent (>= 525)
//   drivers with the board's default ECC setting.
//   nvlink_gb_s, dram_bandwidth_gb_s, hbm (the memory type): NVIDIA data sheets (bidirectional
//   NVLink total per GPU; for PCIe boards, the optional NVLink bridge).
//   ESTIMATES (not published by NVIDIA): idle_w, sm_clock_min_mhz, thermal_resistance_c_per_w,
//   thermal_time_constant_s, and any temperature or power limit a row marks "est".
//     idle_w: P0 with a context and nothing running, from the few public nvidia-smi snapshots
//       in that state, rounded.
//     sm_clock_min_mhz: roughly the clock a full load holds at the minimum power limit,
//       f_max * sqrt((P_min - P_idle) / (TDP - P_idle)), rounded to 15 MHz and never above
//       the base clock.
//     thermal_resistance_c_per_w: chosen so that at TDP with a 30 C inlet the steady GPU
//       temperature is ~70 C for SXM modules and big-cooler consumer boards, ~78 C for
//       passively cooled PCIe boards in a server and for blower workstation boards.
//     thermal_time_constant_s: 20-60 s, larger for heavier heat sinks.
#include "core/gpu_models.hpp"

#include <array>
#include <cctype>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpudoctor {
namespace {

// One model per block, fields grouped by topic (kept by hand, hence no clang-format).
// clang-format off
constexpr std::array kModels{
    // ---------------------------------------------------------------- Ampere, data centre
    // A100 SXM4 40GB. Observed: 400/100/400 W, 1410/1095 MHz, mem 1215 MHz, 40960 MiB.
    // Slowdown/shutdown as observed on the 80GB SXM4 board (same module and thermal solution).
    GpuModel{.key = "a100-sxm4-40gb", .nvml_name = "NVIDIA A100-SXM4-40GB",
             .architecture = Architecture::kAmpere,
             .tdp_w = 400, .power_limit_min_w = 100, .power_limit_max_w = 400, .idle_w = 55,
             .sm_clock_max_mhz = 1410, .sm_clock_base_mhz = 1095, .sm_clock_min_mhz = 510,
             .mem_clock_mhz = 1215, .mem_total_mib = 40960,
             .slowdown_temp_c = 89, .shutdown_temp_c = 92,
             .thermal_resistance_c_per_w = 0.100, .thermal_time_constant_s = 40,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 600, .dram_bandwidth_gb_s = 1555, .passive_cooling = true,
             .hbm = true},
    // A100 SXM4 80GB. Observed: 1410 MHz max, 1275 MHz default application clock, mem 1593 MHz,
    // 81920 MiB, slowdown 89 / shutdown 92 C. Data sheet TDP 400 W (some HGX boards ship with a
    // 500 W limit; the 400 W board is the common one).
    GpuModel{.key = "a100-sxm4-80gb", .nvml_name = "NVIDIA A100-SXM4-80GB",
             .architecture = Architecture::kAmpere,
             .tdp_w = 400, .power_limit_min_w = 100, .power_limit_max_w = 400, .idle_w = 60,
             .sm_clock_max_mhz = 1410, .sm_clock_base_mhz = 1275, .sm_clock_min_mhz = 480,
             .mem_clock_mhz = 1593, .mem_total_mib = 81920,
             .slowdown_temp_c = 89, .shutdown_temp_c = 92,
             .thermal_resistance_c_per_w = 0.100, .thermal_time_constant_s = 40,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 600, .dram_bandwidth_gb_s = 2039, .passive_cooling = true,
             .hbm = true},
    // A100 PCIe 40GB. Observed: 250 W cap, 40960 MiB. Data sheet: 765/1410 MHz, mem 1215 MHz,
    // 1555 GB/s, 600 GB/s with the NVLink bridge. Min power limit 150 W and temperatures: est
    // (same GA100 thresholds as the SXM4 board).
    GpuModel{.key = "a100-pcie-40gb", .nvml_name = "NVIDIA A100-PCIE-40GB",
             .architecture = Architecture::kAmpere,
             .tdp_w = 250, .power_limit_min_w = 150, .power_limit_max_w = 250, .idle_w = 35,
             .sm_clock_max_mhz = 1410, .sm_clock_base_mhz = 765, .sm_clock_min_mhz = 765,
             .mem_clock_mhz = 1215, .mem_total_mib = 40960,
             .slowdown_temp_c = 89, .shutdown_temp_c = 92,
             .thermal_resistance_c_per_w = 0.192, .thermal_time_constant_s = 35,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 600, .dram_bandwidth_gb_s = 1555, .passive_cooling = true,
             .hbm = true},
    // A100 PCIe 80GB. Data sheet: 300 W, 1065/1410 MHz, HBM2e 1512 MHz, 1935 GB/s. Min power
    // limit 150 W and temperatures: est.
    GpuModel{.key = "a100-pcie-80gb", .nvml_name = "NVIDIA A100 80GB PCIe",
             .architecture = Architecture::kAmpere,
             .tdp_w = 300, .power_limit_min_w = 150, .power_limit_max_w = 300, .idle_w = 45,
             .sm_clock_max_mhz = 1410, .sm_clock_base_mhz = 1065, .sm_clock_min_mhz = 900,
             .mem_clock_mhz = 1512, .mem_total_mib = 81920,
             .slowdown_temp_c = 89, .shutdown_temp_c = 92,
             .thermal_resistance_c_per_w = 0.160, .thermal_time_constant_s = 35,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 600, .dram_bandwidth_gb_s = 1935, .passive_cooling = true,
             .hbm = true},
    // A30. Data sheet: 165 W, 930/1440 MHz, HBM2 1215 MHz, 933 GB/s, 200 GB/s NVLink bridge.
    // Observed 24576 MiB. Min power limit and temperatures: est.
    GpuModel{.key = "a30", .nvml_name = "NVIDIA A30", .architecture = Architecture::kAmpere,
             .tdp_w = 165, .power_limit_min_w = 100, .power_limit_max_w = 165, .idle_w = 30,
             .sm_clock_max_mhz = 1440, .sm_clock_base_mhz = 930, .sm_clock_min_mhz = 930,
             .mem_clock_mhz = 1215, .mem_total_mib = 24576,
             .slowdown_temp_c = 89, .shutdown_temp_c = 92,
             .thermal_resistance_c_per_w = 0.291, .thermal_time_constant_s = 30,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 200, .dram_bandwidth_gb_s = 933, .passive_cooling = true,
             .hbm = true},
    // A10. Observed: 150 W cap, 23028 MiB (ECC on; 24564 MiB with ECC off). Data sheet:
    // 885/1695 MHz, 600 GB/s. Min power limit 100 W and temperatures as observed on the A10G
    // (same GA102 board family): est for this board. Passive; nvidia-smi prints a 0 % fan.
    GpuModel{.key = "a10", .nvml_name = "NVIDIA A10", .architecture = Architecture::kAmpere,
             .tdp_w = 150, .power_limit_min_w = 100, .power_limit_max_w = 150, .idle_w = 30,
             .sm_clock_max_mhz = 1695, .sm_clock_base_mhz = 885, .sm_clock_min_mhz = 885,
             .mem_clock_mhz = 6251, .mem_total_mib = 23028,
             .slowdown_temp_c = 95, .shutdown_temp_c = 98,
             .thermal_resistance_c_per_w = 0.320, .thermal_time_constant_s = 30,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 0, .dram_bandwidth_gb_s = 600, .passive_cooling = true},
    // A10G (AWS g5). Observed: 300/100/300 W, 1710 MHz max, mem 6251 MHz, slowdown 95 /
    // shutdown 98 C, 23028 MiB. Base clock: as the A10 (est).
    GpuModel{.key = "a10g", .nvml_name = "NVIDIA A10G", .architecture = Architecture::kAmpere,
             .tdp_w = 300, .power_limit_min_w = 100, .power_limit_max_w = 300, .idle_w = 35,
             .sm_clock_max_mhz = 1710, .sm_clock_base_mhz = 885, .sm_clock_min_mhz = 840,
             .mem_clock_mhz = 6251, .mem_total_mib = 23028,
             .slowdown_temp_c = 95, .shutdown_temp_c = 98,
             .thermal_resistance_c_per_w = 0.160, .thermal_time_constant_s = 30,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 0, .dram_bandwidth_gb_s = 600, .passive_cooling = true},

    // ---------------------------------------------------------------- Hopper
    // H100 SXM5 80GB. Observed: 700 W, 1980 MHz max (and default application clock), mem
    // 2619 MHz, 81559 MiB; 700/200 W allowable range (NVIDIA DGX Redfish documentation).
    // Base clock: data sheet. Temperatures: est (87 C max operating with the +2 / +5 C
    // slowdown / shutdown offsets that current drivers print as T.Limit margins).
    GpuModel{.key = "h100-sxm", .nvml_name = "NVIDIA H100 80GB HBM3",
             .architecture = Architecture::kHopper,
             .tdp_w = 700, .power_limit_min_w = 200, .power_limit_max_w = 700, .idle_w = 70,
             .sm_clock_max_mhz = 1980, .sm_clock_base_mhz = 1590, .sm_clock_min_mhz = 900,
             .mem_clock_mhz = 2619, .mem_total_mib = 81559,
             .slowdown_temp_c = 89, .shutdown_temp_c = 92,
             .thermal_resistance_c_per_w = 0.057, .thermal_time_constant_s = 45,
             .pcie_gen_max = 5, .pcie_width_max = 16,
             .nvlink_gb_s = 900, .dram_bandwidth_gb_s = 3350, .passive_cooling = true,
             .hbm = true},
    // H100 PCIe 80GB. Observed: 350 W cap, 81559 MiB. Product brief: 350 W, PCIe Gen5, HBM2e
    // > 2 TB/s, 1755 MHz boost; base clock 1125 MHz; 600 GB/s with the NVLink bridge.
    // Min power limit 200 W and temperatures: est.
    GpuModel{.key = "h100-pcie", .nvml_name = "NVIDIA H100 PCIe",
             .architecture = Architecture::kHopper,
             .tdp_w = 350, .power_limit_min_w = 200, .power_limit_max_w = 350, .idle_w = 50,
             .sm_clock_max_mhz = 1755, .sm_clock_base_mhz = 1125, .sm_clock_min_mhz = 1125,
             .mem_clock_mhz = 1593, .mem_total_mib = 81559,
             .slowdown_temp_c = 89, .shutdown_temp_c = 92,
             .thermal_resistance_c_per_w = 0.137, .thermal_time_constant_s = 35,
             .pcie_gen_max = 5, .pcie_width_max = 16,
             .nvlink_gb_s = 600, .dram_bandwidth_gb_s = 2000, .passive_cooling = true,
             .hbm = true},
    // H100 NVL 94GB. Observed: 400 W cap, 95830 MiB, NVLink bridge NV12 at 26.6 GB/s per link
    // per direction (~600 GB/s total). Data sheet: 350-400 W configurable, 3.9 TB/s HBM3.
    // Clocks and min power limit: est from the data sheet (1785 MHz boost).
    GpuModel{.key = "h100-nvl", .nvml_name = "NVIDIA H100 NVL",
             .architecture = Architecture::kHopper,
             .tdp_w = 400, .power_limit_min_w = 200, .power_limit_max_w = 400, .idle_w = 65,
             .sm_clock_max_mhz = 1785, .sm_clock_base_mhz = 1080, .sm_clock_min_mhz = 1080,
             .mem_clock_mhz = 2619, .mem_total_mib = 95830,
             .slowdown_temp_c = 89, .shutdown_temp_c = 92,
             .thermal_resistance_c_per_w = 0.120, .thermal_time_constant_s = 35,
             .pcie_gen_max = 5, .pcie_width_max = 16,
             .nvlink_gb_s = 600, .dram_bandwidth_gb_s = 3900, .passive_cooling = true,
             .hbm = true},
    // H200 SXM 141GB. Observed: 700 W cap, 143771 MiB. Data sheet: 4.8 TB/s HBM3e, 900 GB/s
    // NVLink. Clocks as the H100 SXM5 (same GH100 die); mem clock 3201 MHz; min power limit
    // and temperatures: est.
    GpuModel{.key = "h200", .nvml_name = "NVIDIA H200", .architecture = Architecture::kHopper,
             .tdp_w = 700, .power_limit_min_w = 200, .power_limit_max_w = 700, .idle_w = 75,
             .sm_clock_max_mhz = 1980, .sm_clock_base_mhz = 1590, .sm_clock_min_mhz = 885,
             .mem_clock_mhz = 3201, .mem_total_mib = 143771,
             .slowdown_temp_c = 89, .shutdown_temp_c = 92,
             .thermal_resistance_c_per_w = 0.057, .thermal_time_constant_s = 45,
             .pcie_gen_max = 5, .pcie_width_max = 16,
             .nvlink_gb_s = 900, .dram_bandwidth_gb_s = 4800, .passive_cooling = true,
             .hbm = true},

    // ---------------------------------------------------------------- Volta
    // V100 SXM2. Observed (32GB board): 300/150/300 W, 1530 MHz max, 1290 MHz default
    // application clock, mem 877 MHz, slowdown 87 / shutdown 90 C; 16160 / 32510 MiB.
    GpuModel{.key = "v100-sxm2-16gb", .nvml_name = "Tesla V100-SXM2-16GB",
             .architecture = Architecture::kVolta,
             .tdp_w = 300, .power_limit_min_w = 150, .power_limit_max_w = 300, .idle_w = 40,
             .sm_clock_max_mhz = 1530, .sm_clock_base_mhz = 1290, .sm_clock_min_mhz = 990,
             .mem_clock_mhz = 877, .mem_total_mib = 16160,
             .slowdown_temp_c = 87, .shutdown_temp_c = 90,
             .thermal_resistance_c_per_w = 0.133, .thermal_time_constant_s = 35,
             .pcie_gen_max = 3, .pcie_width_max = 16,
             .nvlink_gb_s = 300, .dram_bandwidth_gb_s = 900, .passive_cooling = true,
             .hbm = true},
    GpuModel{.key = "v100-sxm2-32gb", .nvml_name = "Tesla V100-SXM2-32GB",
             .architecture = Architecture::kVolta,
             .tdp_w = 300, .power_limit_min_w = 150, .power_limit_max_w = 300, .idle_w = 40,
             .sm_clock_max_mhz = 1530, .sm_clock_base_mhz = 1290, .sm_clock_min_mhz = 990,
             .mem_clock_mhz = 877, .mem_total_mib = 32510,
             .slowdown_temp_c = 87, .shutdown_temp_c = 90,
             .thermal_resistance_c_per_w = 0.133, .thermal_time_constant_s = 35,
             .pcie_gen_max = 3, .pcie_width_max = 16,
             .nvlink_gb_s = 300, .dram_bandwidth_gb_s = 900, .passive_cooling = true,
             .hbm = true},
    // V100 PCIe. Observed: 250 W cap, 16160 / 32510 MiB. Data sheet: 1230/1380 MHz, 900 GB/s.
    // Min power limit 100 W and temperatures (as the SXM2 board): est.
    GpuModel{.key = "v100-pcie-16gb", .nvml_name = "Tesla V100-PCIE-16GB",
             .architecture = Architecture::kVolta,
             .tdp_w = 250, .power_limit_min_w = 100, .power_limit_max_w = 250, .idle_w = 35,
             .sm_clock_max_mhz = 1380, .sm_clock_base_mhz = 1230, .sm_clock_min_mhz = 765,
             .mem_clock_mhz = 877, .mem_total_mib = 16160,
             .slowdown_temp_c = 87, .shutdown_temp_c = 90,
             .thermal_resistance_c_per_w = 0.192, .thermal_time_constant_s = 35,
             .pcie_gen_max = 3, .pcie_width_max = 16,
             .nvlink_gb_s = 0, .dram_bandwidth_gb_s = 900, .passive_cooling = true,
             .hbm = true},
    GpuModel{.key = "v100-pcie-32gb", .nvml_name = "Tesla V100-PCIE-32GB",
             .architecture = Architecture::kVolta,
             .tdp_w = 250, .power_limit_min_w = 100, .power_limit_max_w = 250, .idle_w = 35,
             .sm_clock_max_mhz = 1380, .sm_clock_base_mhz = 1230, .sm_clock_min_mhz = 765,
             .mem_clock_mhz = 877, .mem_total_mib = 32510,
             .slowdown_temp_c = 87, .shutdown_temp_c = 90,
             .thermal_resistance_c_per_w = 0.192, .thermal_time_constant_s = 35,
             .pcie_gen_max = 3, .pcie_width_max = 16,
             .nvlink_gb_s = 0, .dram_bandwidth_gb_s = 900, .passive_cooling = true,
             .hbm = true},

    // ---------------------------------------------------------------- Turing
    // T4. Observed: 70/60/70 W, 1590 MHz max, 585 MHz default application clock, mem 5001 MHz,
    // 15360 MiB, slowdown 93 / shutdown 96 C, ~27 W in P0 with a process.
    GpuModel{.key = "t4", .nvml_name = "Tesla T4", .architecture = Architecture::kTuring,
             .tdp_w = 70, .power_limit_min_w = 60, .power_limit_max_w = 70, .idle_w = 27,
             .sm_clock_max_mhz = 1590, .sm_clock_base_mhz = 585, .sm_clock_min_mhz = 585,
             .mem_clock_mhz = 5001, .mem_total_mib = 15360,
             .slowdown_temp_c = 93, .shutdown_temp_c = 96,
             .thermal_resistance_c_per_w = 0.686, .thermal_time_constant_s = 25,
             .pcie_gen_max = 3, .pcie_width_max = 16,
             .nvlink_gb_s = 0, .dram_bandwidth_gb_s = 320, .passive_cooling = true},

    // ---------------------------------------------------------------- Ada Lovelace
    // L4. Observed: 72/40/72 W, 2040 MHz max, mem 6251 MHz, 23034 MiB, ~27 W in P0, T.Limit
    // margins that put max operating at 84 C, slowdown 86 C, shutdown 89 C. Base: data sheet.
    GpuModel{.key = "l4", .nvml_name = "NVIDIA L4", .architecture = Architecture::kAda,
             .tdp_w = 72, .power_limit_min_w = 40, .power_limit_max_w = 72, .idle_w = 27,
             .sm_clock_max_mhz = 2040, .sm_clock_base_mhz = 795, .sm_clock_min_mhz = 795,
             .mem_clock_mhz = 6251, .mem_total_mib = 23034,
             .slowdown_temp_c = 86, .shutdown_temp_c = 89,
             .thermal_resistance_c_per_w = 0.667, .thermal_time_constant_s = 25,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 0, .dram_bandwidth_gb_s = 300, .passive_cooling = true},
    // L40S. Observed: 350 W cap, 46068 MiB (ECC on). Data sheet: 1110/2520 MHz, 864 GB/s.
    // Min power limit and temperatures: est.
    GpuModel{.key = "l40s", .nvml_name = "NVIDIA L40S", .architecture = Architecture::kAda,
             .tdp_w = 350, .power_limit_min_w = 100, .power_limit_max_w = 350, .idle_w = 60,
             .sm_clock_max_mhz = 2520, .sm_clock_base_mhz = 1110, .sm_clock_min_mhz = 930,
             .mem_clock_mhz = 9001, .mem_total_mib = 46068,
             .slowdown_temp_c = 88, .shutdown_temp_c = 91,
             .thermal_resistance_c_per_w = 0.137, .thermal_time_constant_s = 35,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 0, .dram_bandwidth_gb_s = 864, .passive_cooling = true},
    // L40. Data sheet: 300 W, 735/2490 MHz, 48 GB GDDR6 ECC (46068 MiB as the L40S), 864 GB/s.
    // Min power limit and temperatures: est.
    GpuModel{.key = "l40", .nvml_name = "NVIDIA L40", .architecture = Architecture::kAda,
             .tdp_w = 300, .power_limit_min_w = 100, .power_limit_max_w = 300, .idle_w = 55,
             .sm_clock_max_mhz = 2490, .sm_clock_base_mhz = 735, .sm_clock_min_mhz = 735,
             .mem_clock_mhz = 9001, .mem_total_mib = 46068,
             .slowdown_temp_c = 88, .shutdown_temp_c = 91,
             .thermal_resistance_c_per_w = 0.160, .thermal_time_constant_s = 35,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 0, .dram_bandwidth_gb_s = 864, .passive_cooling = true},
    // RTX 6000 Ada Generation (blower). Observed: 300 W cap, 49140 MiB. Data sheet:
    // 915/2505 MHz, 960 GB/s. Min power limit and temperatures: est.
    GpuModel{.key = "rtx-6000-ada", .nvml_name = "NVIDIA RTX 6000 Ada Generation",
             .architecture = Architecture::kAda,
             .tdp_w = 300, .power_limit_min_w = 100, .power_limit_max_w = 300, .idle_w = 50,
             .sm_clock_max_mhz = 2505, .sm_clock_base_mhz = 915, .sm_clock_min_mhz = 915,
             .mem_clock_mhz = 10001, .mem_total_mib = 49140,
             .slowdown_temp_c = 92, .shutdown_temp_c = 95,
             .thermal_resistance_c_per_w = 0.160, .thermal_time_constant_s = 40,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 0, .dram_bandwidth_gb_s = 960, .passive_cooling = false},
    // GeForce RTX 4090 (Founders Edition). Observed: 450 W cap, 24564 MiB; 150 W min limit from a
    // public nvidia-smi -q of a 450 W board. Max power limit 600 W is the Founders Edition's
    // (partner boards range 450-600 W).
    // Data sheet: 2235/2520 MHz, 1008 GB/s, 90 C max GPU temperature; slowdown 92 /
    // shutdown 95 C as printed for an Ada consumer board with that maximum: est for this board.
    GpuModel{.key = "rtx-4090", .nvml_name = "NVIDIA GeForce RTX 4090",
             .architecture = Architecture::kAda,
             .tdp_w = 450, .power_limit_min_w = 150, .power_limit_max_w = 600, .idle_w = 60,
             .sm_clock_max_mhz = 2520, .sm_clock_base_mhz = 2235, .sm_clock_min_mhz = 1215,
             .mem_clock_mhz = 10501, .mem_total_mib = 24564,
             .slowdown_temp_c = 92, .shutdown_temp_c = 95,
             .thermal_resistance_c_per_w = 0.089, .thermal_time_constant_s = 50,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 0, .dram_bandwidth_gb_s = 1008, .passive_cooling = false},

    // ---------------------------------------------------------------- Ampere, workstation/consumer
    // RTX A6000 (blower). Observed: 49140 MiB (ECC off, the default), 300 W cap; and a public
    // nvidia-smi -q whose clocks match this board: 300/100/300 W, mem 8001 MHz, 1800 MHz default
    // application clock, 93 C max operating. Data sheet: 1410 MHz base, 1800 MHz boost,
    // 768 GB/s, 112.5 GB/s NVLink bridge. Slowdown / shutdown: est (GA102).
    GpuModel{.key = "rtx-a6000", .nvml_name = "NVIDIA RTX A6000",
             .architecture = Architecture::kAmpere,
             .tdp_w = 300, .power_limit_min_w = 100, .power_limit_max_w = 300, .idle_w = 60,
             .sm_clock_max_mhz = 1800, .sm_clock_base_mhz = 1410, .sm_clock_min_mhz = 735,
             .mem_clock_mhz = 8001, .mem_total_mib = 49140,
             .slowdown_temp_c = 95, .shutdown_temp_c = 98,
             .thermal_resistance_c_per_w = 0.160, .thermal_time_constant_s = 40,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 112.5, .dram_bandwidth_gb_s = 768, .passive_cooling = false},
    // GeForce RTX 3090 (Founders Edition). Observed: 350 W cap, 24576 MiB; 350/100/400 W and
    // slowdown 95 / shutdown 98 C from a public nvidia-smi -q of a 350 W GA102 board.
    // Data sheet: 1395/1695 MHz, GDDR6X 9751 MHz, 936 GB/s, 112.5 GB/s NVLink bridge.
    GpuModel{.key = "rtx-3090", .nvml_name = "NVIDIA GeForce RTX 3090",
             .architecture = Architecture::kAmpere,
             .tdp_w = 350, .power_limit_min_w = 100, .power_limit_max_w = 400, .idle_w = 90,
             .sm_clock_max_mhz = 1695, .sm_clock_base_mhz = 1395, .sm_clock_min_mhz = 510,
             .mem_clock_mhz = 9751, .mem_total_mib = 24576,
             .slowdown_temp_c = 95, .shutdown_temp_c = 98,
             .thermal_resistance_c_per_w = 0.129, .thermal_time_constant_s = 50,
             .pcie_gen_max = 4, .pcie_width_max = 16,
             .nvlink_gb_s = 112.5, .dram_bandwidth_gb_s = 936, .passive_cooling = false},
};
// clang-format on

// Other names the same boards go by (cloud catalogues, DCGM, people). The NVML name of each model
// is matched too. Normalised the same way as the looked-up name, so case, dashes and vendor
// prefixes do not matter here.
struct Alias {
  std::string_view key;
  std::string_view name;
};

constexpr std::array kAliases{
    Alias{"a100-sxm4-40gb", "A100-SXM4-40GB"},
    Alias{"a100-sxm4-40gb", "A100 SXM 40GB"},
    Alias{"a100-sxm4-40gb", "A100 40GB SXM4"},
    Alias{"a100-sxm4-40gb", "A100 40GB SXM"},
    Alias{"a100-sxm4-80gb", "A100-SXM4-80GB"},
    Alias{"a100-sxm4-80gb", "A100 SXM 80GB"},
    Alias{"a100-sxm4-80gb", "A100 80GB SXM4"},
    Alias{"a100-sxm4-80gb", "A100 80GB SXM"},
    Alias{"a100-pcie-40gb", "A100 40GB PCIe"},
    Alias{"a100-pcie-80gb", "A100 PCIe 80GB"},
    Alias{"h100-sxm", "H100 SXM"},
    Alias{"h100-sxm", "H100 SXM5"},
    Alias{"h100-sxm", "H100 SXM 80GB"},
    Alias{"h100-sxm", "H100 SXM5 80GB"},
    Alias{"h100-sxm", "H100 80GB SXM5"},
    Alias{"h100-sxm", "H100 80GB SXM"},
    Alias{"h100-pcie", "H100 PCIe 80GB"},
    Alias{"h100-pcie", "H100 80GB PCIe"},
    Alias{"h100-nvl", "H100 NVL 94GB"},
    Alias{"h200", "H200 SXM"},
    Alias{"h200", "H200 SXM5"},
    Alias{"h200", "H200 141GB"},
    Alias{"h200", "H200 SXM 141GB"},
    Alias{"h200", "H200 SXM5 141GB"},
    Alias{"h200", "H200 141GB HBM3e"},
    Alias{"v100-sxm2-16gb", "V100 16GB SXM2"},
    Alias{"v100-sxm2-32gb", "V100 32GB SXM2"},
    Alias{"v100-pcie-16gb", "V100 16GB PCIe"},
    Alias{"v100-pcie-32gb", "V100 32GB PCIe"},
    Alias{"rtx-a6000", "A6000"},
    Alias{"rtx-6000-ada", "RTX 6000 Ada"},
    Alias{"rtx-3090", "RTX 3090"},
    Alias{"rtx-4090", "RTX 4090"},
};

// Vendor and brand words that say nothing about which board it is.
constexpr std::array<std::string_view, 3> kNoiseWords{"nvidia", "tesla", "geforce"};

// A token right after a matched name that makes it a different board: "RTX 3090 Ti",
// "RTX 4090 D", "RTX 4090 Laptop GPU", "H200 NVL", "H100 SXM5 94GB" (an alias must then spell the
// size out itself).
constexpr std::array<std::string_view, 21> kVariantWords{
    "ti",   "super", "d",    "laptop", "mobile", "max",  "maxq",  "nvl",  "ada",   "pcie", "sxm",
    "sxm2", "sxm3",  "sxm4", "sxm5",   "sxm6",   "hbm2", "hbm2e", "hbm3", "hbm3e", "oem",
};

bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& words, std::string_view w) {
  for (auto x : words)
    if (x == w) return true;
  return false;
}

// "NVIDIA A100-SXM4-80GB" -> {"a100", "sxm4", "80gb"}: lower case, anything but letters, digits
// and dots separates tokens, vendor words dropped, "80 GB" joined to "80gb".
std::vector<std::string> tokens_of(std::string_view name) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    if (cur == "gb" && !out.empty() && is_digits(out.back())) {
      out.back() += cur;
    } else if (!contains(kNoiseWords, cur)) {
      out.push_back(cur);
    }
    cur.clear();
  };
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '.') {
      cur.push_back(static_cast<char>(std::tolower(u)));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

bool is_size_token(const std::string& t) {
  return t.size() > 2 && t.ends_with("gb") &&
         is_digits(std::string_view(t).substr(0, t.size() - 2));
}

// How well `candidate` names the board called `name`: 0 for no match, otherwise the candidate's
// length in characters (longer is more specific). A candidate matches when its tokens appear
// consecutively in the name and are not followed by a token that makes it another board.
std::size_t match_score(const std::vector<std::string>& name,
                        const std::vector<std::string>& candidate) {
  if (candidate.empty() || candidate.size() > name.size()) return 0;
  std::size_t chars = 0;
  for (const auto& t : candidate) chars += t.size() + 1;
  for (std::size_t i = 0; i + candidate.size() <= name.size(); ++i) {
    bool same = true;
    for (std::size_t j = 0; j < candidate.size() && same; ++j) same = name[i + j] == candidate[j];
    if (!same) continue;
    const std::size_t next = i + candidate.size();
    if (next < name.size() && (contains(kVariantWords, name[next]) || is_size_token(name[next])))
      continue;
    return chars;
  }
  return 0;
}

const GpuModel* find_by_key(std::string_view key) {
  for (const auto& m : kModels)
    if (m.key == key) return &m;
  return nullptr;
}

}  // namespace

std::span<const GpuModel> gpu_models() {
  return kModels;
}

std::optional<GpuModel> gpu_model_by_key(std::string_view key) {
  if (const GpuModel* m = find_by_key(key)) return *m;
  return std::nullopt;
}

Result<GpuModel> find_gpu_model(std::string_view text) {
  const auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string want = lower(text);
  std::vector<std::string_view> prefixed;
  for (const auto& m : kModels) {
    if (m.key == want) return m;
    if (!want.empty() && m.key.starts_with(want)) prefixed.push_back(m.key);
  }
  if (prefixed.size() == 1) return *find_by_key(prefixed.front());
  if (!prefixed.empty())
    return usage_error(
        fmt::format("GPU model '{}' is ambiguous: {}", text, fmt::join(prefixed, ", ")));
  // Close keys: those sharing the longest leading part with the text (at least one character).
  std::size_t best = 0;
  std::vector<std::string_view> close;
  for (const auto& m : kModels) {
    std::size_t k = 0;
    while (k < want.size() && k < m.key.size() && want[k] == m.key[k]) ++k;
    if (k == 0 || k < best) continue;
    if (k > best) close.clear();
    best = k;
    close.push_back(m.key);
  }
  if (close.empty())
    return usage_error(
        fmt::format("unknown GPU model '{}' (`gpudoctor sim --list` lists them)", text));
  return usage_error(
      fmt::format("unknown GPU model '{}'; close: {}", text, fmt::join(close, ", ")));
}

std::optional<GpuModel> gpu_model_by_name(std::string_view name) {
  const std::vector<std::string> tokens = tokens_of(name);
  if (tokens.empty()) return std::nullopt;
  const GpuModel* best = nullptr;
  std::size_t best_score = 0;
  auto consider = [&](const GpuModel* m, std::string_view candidate) {
    if (m == nullptr) return;
    const std::size_t score = match_score(tokens, tokens_of(candidate));
    if (score > best_score) {
      best = m;
      best_score = score;
    }
  };
  for (const auto& m : kModels) consider(&m, m.nvml_name);
  for (const auto& a : kAliases) consider(find_by_key(a.key), a.name);
  if (best == nullptr) return std::nullopt;
  return *best;
}

}  // namespace gpudoctor
