#include "formats/column_catalogue.hpp"

#include "core/clock_reasons.hpp"
#include "formats/text.hpp"

namespace gpudoctor::csv {

namespace {

// The catalogue: the names tools and home-made loggers give their columns, each with the field (or
// role) it stands for, how its unit is found and the tool it comes from. Besides these, every field
// id ("power_w", exact unit), its stem without the unit ("power", unit by rule), every nvidia-smi
// --query-gpu name, every DCGM name (DCGM's scale: ratios x100) and every gpudoctor Prometheus name
// are names too (lookup_base). A unit may follow any name as a suffix ("power_mw",
// "mem_used_bytes", "elapsed_ms") or in brackets ("power (mW)").
constexpr Field kNoField{};
constexpr CatalogueEntry kEntries[] = {
    // Time. Epoch s / ms / us / ns, ISO 8601, time of day or elapsed seconds: told by the values.
    {"time", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"timestamp", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"time_stamp", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"ts", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"query_time", Role::kTime, kNoField, Rule::kAsIs, "gpustat"},
    {"datetime", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"date_time", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"t", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"elapsed", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"elapsed_time", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"epoch", Role::kTime, kNoField, Rule::kEpochOnly, "home-made"},
    {"epoch_time", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"unix", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"unix_time", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"unixtime", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"time_unix", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"unix_timestamp", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"wall_time", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"walltime", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"sample_time", Role::kTime, kNoField, Rule::kAsIs, "home-made"},
    {"date", Role::kDate, kNoField, Rule::kAsIs, "home-made"},
    // GPU identity.
    {"gpu", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"gpu_id", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"gpu_index", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"gpu_idx", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"gpu_num", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"gpu_number", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"index", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"idx", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"device", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"device_id", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"device_index", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"dev", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"cuda_device", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"minor_number", Role::kGpu, kNoField, Rule::kAsIs, "home-made"},
    {"uuid", Role::kUuid, kNoField, Rule::kAsIs, "home-made"},
    {"gpu_uuid", Role::kUuid, kNoField, Rule::kAsIs, "home-made"},
    {"device_uuid", Role::kUuid, kNoField, Rule::kAsIs, "home-made"},
    {"pci_bus_id", Role::kBusId, kNoField, Rule::kAsIs, "home-made"},
    {"bus_id", Role::kBusId, kNoField, Rule::kAsIs, "home-made"},
    {"pci_bus", Role::kBusId, kNoField, Rule::kAsIs, "home-made"},
    {"gpu_bus_id", Role::kBusId, kNoField, Rule::kAsIs, "home-made"},
    {"name", Role::kName, kNoField, Rule::kAsIs, "home-made"},
    {"gpu_name", Role::kName, kNoField, Rule::kAsIs, "home-made"},
    {"model", Role::kName, kNoField, Rule::kAsIs, "home-made"},
    {"gpu_model", Role::kName, kNoField, Rule::kAsIs, "home-made"},
    {"model_name", Role::kName, kNoField, Rule::kAsIs, "home-made"},
    {"product", Role::kName, kNoField, Rule::kAsIs, "home-made"},
    {"product_name", Role::kName, kNoField, Rule::kAsIs, "home-made"},
    {"device_name", Role::kName, kNoField, Rule::kAsIs, "home-made"},
    {"gpu_type", Role::kName, kNoField, Rule::kAsIs, "home-made"},
    {"host", Role::kHost, kNoField, Rule::kAsIs, "home-made"},
    {"hostname", Role::kHost, kNoField, Rule::kAsIs, "home-made"},
    {"node", Role::kHost, kNoField, Rule::kAsIs, "home-made"},
    {"node_name", Role::kHost, kNoField, Rule::kAsIs, "home-made"},
    {"nodename", Role::kHost, kNoField, Rule::kAsIs, "home-made"},
    {"machine", Role::kHost, kNoField, Rule::kAsIs, "home-made"},
    {"server", Role::kHost, kNoField, Rule::kAsIs, "home-made"},
    {"instance", Role::kHost, kNoField, Rule::kAsIs, "home-made"},
    // Power and energy. pynvml's power calls return mW: the rule tells them from W by size.
    {"power", Role::kField, Field::kPower, Rule::kWattsOrMilli, "home-made"},
    {"power_draw", Role::kField, Field::kPower, Rule::kWattsOrMilli, "gpustat"},
    {"power_usage", Role::kField, Field::kPower, Rule::kWattsOrMilli, "home-made"},
    {"power_used", Role::kField, Field::kPower, Rule::kWattsOrMilli, "home-made"},
    {"gpu_power", Role::kField, Field::kPower, Rule::kWattsOrMilli, "home-made"},
    {"board_power", Role::kField, Field::kPower, Rule::kWattsOrMilli, "home-made"},
    {"pwr", Role::kField, Field::kPower, Rule::kWattsOrMilli, "home-made"},
    {"power_instant", Role::kField, Field::kPowerInstant, Rule::kWattsOrMilli, "home-made"},
    {"instant_power", Role::kField, Field::kPowerInstant, Rule::kWattsOrMilli, "home-made"},
    {"power_draw_instant", Role::kField, Field::kPowerInstant, Rule::kWattsOrMilli, "home-made"},
    {"total_energy", Role::kField, Field::kEnergy, Rule::kAsIs, "home-made"},
    {"energy_consumption", Role::kField, Field::kEnergy, Rule::kAsIs, "home-made"},
    {"total_energy_consumption", Role::kField, Field::kEnergy, Rule::kAsIs, "home-made"},
    {"power_management_limit", Role::kField, Field::kPowerLimit, Rule::kWattsOrMilli, "home-made"},
    {"enforced_power_limit", Role::kField, Field::kPowerLimitEnforced, Rule::kWattsOrMilli,
     "gpustat"},
    {"default_power_limit", Role::kField, Field::kPowerLimitDefault, Rule::kWattsOrMilli,
     "home-made"},
    {"tdp", Role::kField, Field::kPowerLimitDefault, Rule::kWattsOrMilli, "home-made"},
    // Utilization: percent, or a 0-1 ratio (told by the values).
    {"util", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio, "home-made"},
    {"utilization", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio, "home-made"},
    {"gpu_util", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio, "home-made"},
    {"gpu_utilization", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio, "nvitop"},
    {"utilization_gpu", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio, "gpustat"},
    {"mem_util", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio, "home-made"},
    {"memory_util", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio, "home-made"},
    {"mem_utilization", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio, "home-made"},
    {"memory_utilization", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio, "home-made"},
    {"utilization_memory", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio, "home-made"},
    {"mem_copy_util", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio, "home-made"},
    {"fan", Role::kField, Field::kFan, Rule::kPercentOrRatio, "home-made"},
    {"fan_speed", Role::kField, Field::kFan, Rule::kPercentOrRatio, "home-made"},
    // DCGM profiling style activities (DCGM writes them as 0-1 ratios).
    {"sm_active", Role::kField, Field::kGpmSmUtil, Rule::kPercentOrRatio, "home-made"},
    {"sm_activity", Role::kField, Field::kGpmSmUtil, Rule::kPercentOrRatio, "home-made"},
    {"sm_occupancy", Role::kField, Field::kGpmSmOccupancy, Rule::kPercentOrRatio, "home-made"},
    {"tensor_active", Role::kField, Field::kGpmTensorAny, Rule::kPercentOrRatio, "home-made"},
    {"tensor_activity", Role::kField, Field::kGpmTensorAny, Rule::kPercentOrRatio, "home-made"},
    {"tensor_util", Role::kField, Field::kGpmTensorAny, Rule::kPercentOrRatio, "home-made"},
    {"pipe_tensor_active", Role::kField, Field::kGpmTensorAny, Rule::kPercentOrRatio, "home-made"},
    {"dram_active", Role::kField, Field::kGpmDramBw, Rule::kPercentOrRatio, "home-made"},
    {"dram_activity", Role::kField, Field::kGpmDramBw, Rule::kPercentOrRatio, "home-made"},
    {"dram_util", Role::kField, Field::kGpmDramBw, Rule::kPercentOrRatio, "home-made"},
    {"gr_engine_active", Role::kField, Field::kGpmGraphicsUtil, Rule::kPercentOrRatio, "home-made"},
    {"graphics_active", Role::kField, Field::kGpmGraphicsUtil, Rule::kPercentOrRatio, "home-made"},
    {"fp64_active", Role::kField, Field::kGpmFp64, Rule::kPercentOrRatio, "home-made"},
    {"fp32_active", Role::kField, Field::kGpmFp32, Rule::kPercentOrRatio, "home-made"},
    {"fp16_active", Role::kField, Field::kGpmFp16, Rule::kPercentOrRatio, "home-made"},
    {"nvlink_rx", Role::kField, Field::kGpmNvlinkRx, Rule::kAsIs, "home-made"},
    {"nvlink_tx", Role::kField, Field::kGpmNvlinkTx, Rule::kAsIs, "home-made"},
    // Temperature, clocks, performance state.
    {"temp", Role::kField, Field::kTemp, Rule::kAsIs, "home-made"},
    {"temperature", Role::kField, Field::kTemp, Rule::kAsIs, "home-made"},
    {"gpu_temp", Role::kField, Field::kTemp, Rule::kAsIs, "home-made"},
    {"gpu_temperature", Role::kField, Field::kTemp, Rule::kAsIs, "home-made"},
    {"temperature_gpu", Role::kField, Field::kTemp, Rule::kAsIs, "gpustat"},
    {"sm_clock", Role::kField, Field::kClockSm, Rule::kMhzOrGhz, "home-made"},
    {"graphics_clock", Role::kField, Field::kClockSm, Rule::kMhzOrGhz, "home-made"},
    {"gr_clock", Role::kField, Field::kClockSm, Rule::kMhzOrGhz, "home-made"},
    {"clocks_sm", Role::kField, Field::kClockSm, Rule::kMhzOrGhz, "home-made"},
    {"sm_clk", Role::kField, Field::kClockSm, Rule::kMhzOrGhz, "home-made"},
    {"gpu_clock", Role::kField, Field::kClockSm, Rule::kMhzOrGhz, "home-made"},
    {"core_clock", Role::kField, Field::kClockSm, Rule::kMhzOrGhz, "home-made"},
    {"mem_clock", Role::kField, Field::kClockMem, Rule::kMhzOrGhz, "home-made"},
    {"memory_clock", Role::kField, Field::kClockMem, Rule::kMhzOrGhz, "home-made"},
    {"clocks_mem", Role::kField, Field::kClockMem, Rule::kMhzOrGhz, "home-made"},
    {"mem_clk", Role::kField, Field::kClockMem, Rule::kMhzOrGhz, "home-made"},
    {"max_sm_clock", Role::kField, Field::kClockSmMax, Rule::kMhzOrGhz, "home-made"},
    {"max_mem_clock", Role::kField, Field::kClockMemMax, Rule::kMhzOrGhz, "home-made"},
    {"perf_state", Role::kField, Field::kPstate, Rule::kAsIs, "home-made"},
    {"performance_state", Role::kField, Field::kPstate, Rule::kAsIs, "home-made"},
    // Clock event ("throttle") reasons: NVML's bitmask, decimal or 0x hex.
    {"throttle_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs, "home-made"},
    {"throttle_reason", Role::kField, Field::kClockEventReasons, Rule::kAsIs, "home-made"},
    {"throttle", Role::kField, Field::kClockEventReasons, Rule::kAsIs, "home-made"},
    {"clocks_throttle_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs, "home-made"},
    {"clock_throttle_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs, "home-made"},
    {"clocks_event_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs, "home-made"},
    {"event_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs, "home-made"},
    {"clock_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs, "home-made"},
    // Memory: MiB, or bytes (told by the name or the values).
    {"memory_used", Role::kField, Field::kMemUsed, Rule::kMibOrBytes, "home-made"},
    {"used_memory", Role::kField, Field::kMemUsed, Rule::kMibOrBytes, "home-made"},
    {"fb_used", Role::kField, Field::kMemUsed, Rule::kMibOrBytes, "home-made"},
    {"gpu_mem_used", Role::kField, Field::kMemUsed, Rule::kMibOrBytes, "home-made"},
    {"vram_used", Role::kField, Field::kMemUsed, Rule::kMibOrBytes, "home-made"},
    {"memory_total", Role::kField, Field::kMemTotal, Rule::kMibOrBytes, "home-made"},
    {"total_memory", Role::kField, Field::kMemTotal, Rule::kMibOrBytes, "home-made"},
    {"fb_total", Role::kField, Field::kMemTotal, Rule::kMibOrBytes, "home-made"},
    {"vram_total", Role::kField, Field::kMemTotal, Rule::kMibOrBytes, "home-made"},
    // PCIe.
    {"pcie_tx_throughput", Role::kField, Field::kPcieTx, Rule::kAsIs, "home-made"},
    {"pcie_rx_throughput", Role::kField, Field::kPcieRx, Rule::kAsIs, "home-made"},
    {"pcie_gen", Role::kField, Field::kPcieGen, Rule::kAsIs, "home-made"},
    {"pcie_width", Role::kField, Field::kPcieWidth, Rule::kAsIs, "home-made"},
    // nvidia-smi --query-gpu: one column per clock-event reason, "Active" / "Not Active" (both
    // spellings: clocks_throttle_reasons before driver 535, clocks_event_reasons after).
    {"clocks_throttle_reasons_gpu_idle", Role::kReason, kNoField, Rule::kAsIs, "nvidia-smi", 1,
     false, Reasons::kFlag, "gpu_idle"},
    {"clocks_throttle_reasons_applications_clocks_setting", Role::kReason, kNoField, Rule::kAsIs,
     "nvidia-smi", 1, false, Reasons::kFlag, "applications_clocks"},
    {"clocks_throttle_reasons_sw_power_cap", Role::kReason, kNoField, Rule::kAsIs, "nvidia-smi", 1,
     false, Reasons::kFlag, "sw_power_cap"},
    {"clocks_throttle_reasons_hw_slowdown", Role::kReason, kNoField, Rule::kAsIs, "nvidia-smi", 1,
     false, Reasons::kFlag, "hw_slowdown"},
    {"clocks_throttle_reasons_sync_boost", Role::kReason, kNoField, Rule::kAsIs, "nvidia-smi", 1,
     false, Reasons::kFlag, "sync_boost"},
    {"clocks_throttle_reasons_sw_thermal_slowdown", Role::kReason, kNoField, Rule::kAsIs,
     "nvidia-smi", 1, false, Reasons::kFlag, "sw_thermal"},
    {"clocks_throttle_reasons_hw_thermal_slowdown", Role::kReason, kNoField, Rule::kAsIs,
     "nvidia-smi", 1, false, Reasons::kFlag, "hw_thermal"},
    {"clocks_throttle_reasons_hw_power_brake_slowdown", Role::kReason, kNoField, Rule::kAsIs,
     "nvidia-smi", 1, false, Reasons::kFlag, "hw_power_brake"},
    {"clocks_throttle_reasons_display_clock_setting", Role::kReason, kNoField, Rule::kAsIs,
     "nvidia-smi", 1, false, Reasons::kFlag, "display_clocks"},
    {"clocks_event_reasons_gpu_idle", Role::kReason, kNoField, Rule::kAsIs, "nvidia-smi", 1, false,
     Reasons::kFlag, "gpu_idle"},
    {"clocks_event_reasons_applications_clocks_setting", Role::kReason, kNoField, Rule::kAsIs,
     "nvidia-smi", 1, false, Reasons::kFlag, "applications_clocks"},
    {"clocks_event_reasons_sw_power_cap", Role::kReason, kNoField, Rule::kAsIs, "nvidia-smi", 1,
     false, Reasons::kFlag, "sw_power_cap"},
    {"clocks_event_reasons_hw_slowdown", Role::kReason, kNoField, Rule::kAsIs, "nvidia-smi", 1,
     false, Reasons::kFlag, "hw_slowdown"},
    {"clocks_event_reasons_sync_boost", Role::kReason, kNoField, Rule::kAsIs, "nvidia-smi", 1,
     false, Reasons::kFlag, "sync_boost"},
    {"clocks_event_reasons_sw_thermal_slowdown", Role::kReason, kNoField, Rule::kAsIs, "nvidia-smi",
     1, false, Reasons::kFlag, "sw_thermal"},
    {"clocks_event_reasons_hw_thermal_slowdown", Role::kReason, kNoField, Rule::kAsIs, "nvidia-smi",
     1, false, Reasons::kFlag, "hw_thermal"},
    {"clocks_event_reasons_hw_power_brake_slowdown", Role::kReason, kNoField, Rule::kAsIs,
     "nvidia-smi", 1, false, Reasons::kFlag, "hw_power_brake"},
    {"clocks_event_reasons_display_clock_setting", Role::kReason, kNoField, Rule::kAsIs,
     "nvidia-smi", 1, false, Reasons::kFlag, "display_clocks"},
    // nvidia-smi dmon / pmon column names (dmon -s pucvmet; pmon -s um).
    {"sm", Role::kField, Field::kUtilGpu, Rule::kAsIs, "nvidia-smi dmon"},
    {"mem", Role::kField, Field::kUtilMem, Rule::kAsIs, "nvidia-smi dmon"},
    {"pclk", Role::kField, Field::kClockSm, Rule::kMhzOrGhz, "nvidia-smi dmon"},
    {"mclk", Role::kField, Field::kClockMem, Rule::kMhzOrGhz, "nvidia-smi dmon"},
    {"gtemp", Role::kField, Field::kTemp, Rule::kAsIs, "nvidia-smi dmon"},
    {"fb", Role::kField, Field::kMemUsed, Rule::kAsIs, "nvidia-smi dmon"},
    // dcgmi dmon short tags (dcgmi dmon -l): DCGM's scale, ratios 0-1, PCIe/NVLink bytes/s.
    {"gputl", Role::kField, Field::kUtilGpu, Rule::kAsIs, "dcgmi dmon", 1},
    {"mcutl", Role::kField, Field::kUtilMem, Rule::kAsIs, "dcgmi dmon", 1},
    {"smclk", Role::kField, Field::kClockSm, Rule::kAsIs, "dcgmi dmon", 1},
    {"mmclk", Role::kField, Field::kClockMem, Rule::kAsIs, "dcgmi dmon", 1},
    {"saclk", Role::kField, Field::kClockAppSm, Rule::kAsIs, "dcgmi dmon", 1},
    {"maclk", Role::kField, Field::kClockAppMem, Rule::kAsIs, "dcgmi dmon", 1},
    {"smmax", Role::kField, Field::kClockSmMax, Rule::kAsIs, "dcgmi dmon", 1},
    {"mmmax", Role::kField, Field::kClockMemMax, Rule::kAsIs, "dcgmi dmon", 1},
    {"tmptr", Role::kField, Field::kTemp, Rule::kAsIs, "dcgmi dmon", 1},
    {"sdtmp", Role::kField, Field::kTempSlowdown, Rule::kAsIs, "dcgmi dmon", 1},
    {"totec", Role::kField, Field::kEnergy, Rule::kAsIs, "dcgmi dmon", 1},
    {"pmlmt", Role::kField, Field::kPowerLimit, Rule::kAsIs, "dcgmi dmon", 1},
    {"pmdef", Role::kField, Field::kPowerLimitDefault, Rule::kAsIs, "dcgmi dmon", 1},
    {"eplmt", Role::kField, Field::kPowerLimitEnforced, Rule::kAsIs, "dcgmi dmon", 1},
    {"pstat", Role::kField, Field::kPstate, Rule::kAsIs, "dcgmi dmon", 1},
    {"fansp", Role::kField, Field::kFan, Rule::kAsIs, "dcgmi dmon", 1},
    {"txtpt", Role::kField, Field::kPcieTx, Rule::kAsIs, "dcgmi dmon", 1 / 1024.0},
    {"rxtpt", Role::kField, Field::kPcieRx, Rule::kAsIs, "dcgmi dmon", 1 / 1024.0},
    {"fbttl", Role::kField, Field::kMemTotal, Rule::kAsIs, "dcgmi dmon", 1},
    {"fbusd", Role::kField, Field::kMemUsed, Rule::kAsIs, "dcgmi dmon", 1},
    {"gract", Role::kField, Field::kGpmGraphicsUtil, Rule::kAsIs, "dcgmi dmon", 100},
    {"smact", Role::kField, Field::kGpmSmUtil, Rule::kAsIs, "dcgmi dmon", 100},
    {"smocc", Role::kField, Field::kGpmSmOccupancy, Rule::kAsIs, "dcgmi dmon", 100},
    {"tenso", Role::kField, Field::kGpmTensorAny, Rule::kAsIs, "dcgmi dmon", 100},
    {"drama", Role::kField, Field::kGpmDramBw, Rule::kAsIs, "dcgmi dmon", 100},
    {"fp64a", Role::kField, Field::kGpmFp64, Rule::kAsIs, "dcgmi dmon", 100},
    {"fp32a", Role::kField, Field::kGpmFp32, Rule::kAsIs, "dcgmi dmon", 100},
    {"fp16a", Role::kField, Field::kGpmFp16, Rule::kAsIs, "dcgmi dmon", 100},
    {"pcitx", Role::kField, Field::kGpmPcieTx, Rule::kAsIs, "dcgmi dmon", 1 / kMiB},
    {"pcirx", Role::kField, Field::kGpmPcieRx, Rule::kAsIs, "dcgmi dmon", 1 / kMiB},
    {"nvltx", Role::kField, Field::kGpmNvlinkTx, Rule::kAsIs, "dcgmi dmon", 1 / kMiB},
    {"nvlrx", Role::kField, Field::kGpmNvlinkRx, Rule::kAsIs, "dcgmi dmon", 1 / kMiB},
    {"dvcctr", Role::kField, Field::kClockEventReasons, Rule::kAsIs, "dcgmi dmon", 1},
    {"powinst", Role::kField, Field::kPowerInstant, Rule::kAsIs, "dcgmi dmon", 1},
    {"pmmin", Role::kField, Field::kPowerLimitMin, Rule::kAsIs, "dcgmi dmon", 1},
    {"pmmax", Role::kField, Field::kPowerLimitMax, Rule::kAsIs, "dcgmi dmon", 1},
    {"pcimg", Role::kField, Field::kPcieGenMax, Rule::kAsIs, "dcgmi dmon", 1},
    {"pcimw", Role::kField, Field::kPcieWidthMax, Rule::kAsIs, "dcgmi dmon", 1},
    {"pcilg", Role::kField, Field::kPcieGen, Rule::kAsIs, "dcgmi dmon", 1},
    {"pcilw", Role::kField, Field::kPcieWidth, Rule::kAsIs, "dcgmi dmon", 1},
    {"dvnam", Role::kName, kNoField, Rule::kAsIs, "dcgmi dmon"},
    {"pcbid", Role::kBusId, kNoField, Rule::kAsIs, "dcgmi dmon"},
    {"srnum", Role::kSerial, kNoField, Rule::kAsIs, "dcgmi dmon"},
    {"drver", Role::kDriver, kNoField, Rule::kAsIs, "dcgmi dmon"},
    {"entityid", Role::kGpu, kNoField, Rule::kAsIs, "dcgmi dmon"},
    {"entity_id", Role::kGpu, kNoField, Rule::kAsIs, "dcgmi dmon"},
    // TechPowerUp GPU-Z sensor log (units in brackets: "GPU Load [%]").
    {"gpu_load", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio, "GPU-Z"},
    {"memory_controller_load", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio, "GPU-Z"},
    {"board_power_draw", Role::kField, Field::kPower, Rule::kWattsOrMilli, "GPU-Z"},
    {"memory_used_dedicated", Role::kField, Field::kMemUsed, Rule::kMibOrBytes, "GPU-Z"},
    {"perfcap_reason", Role::kReason, kNoField, Rule::kAsIs, "GPU-Z", 1, false,
     Reasons::kGpuzPerfCap},
    // HWiNFO64 CSV log ("GPU Core Load [%]", "Performance Limit - Power [Yes/No]").
    {"gpu_core_load", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio, "HWiNFO"},
    {"gpu_memory_controller_load", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio, "HWiNFO"},
    {"gpu_memory_clock", Role::kField, Field::kClockMem, Rule::kMhzOrGhz, "HWiNFO"},
    {"gpu_memory_allocated", Role::kField, Field::kMemUsed, Rule::kMibOrBytes, "HWiNFO"},
    {"gpu_core_clock", Role::kField, Field::kClockSm, Rule::kMhzOrGhz, "HWiNFO"},
    {"performance_limit_power", Role::kReason, kNoField, Rule::kAsIs, "HWiNFO", 1, false,
     Reasons::kFlag, "sw_power_cap"},
    {"performance_limit_thermal", Role::kReason, kNoField, Rule::kAsIs, "HWiNFO", 1, false,
     Reasons::kFlag, "sw_thermal"},
    {"performance_limit_utilization", Role::kReason, kNoField, Rule::kAsIs, "HWiNFO", 1, false,
     Reasons::kFlag, "gpu_idle"},
    // MSI Afterburner log column names (the 02 line of a .hml).
    {"gpu_usage", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio, "MSI Afterburner"},
    {"fb_usage", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio, "MSI Afterburner"},
    // (The .hml reader adds " [flag]" to the 0/1 limit graphs: "Power limit" is not watts.)
    {"power_limit_flag", Role::kReason, kNoField, Rule::kAsIs, "MSI Afterburner", 1, false,
     Reasons::kFlag, "sw_power_cap"},
    {"temp_limit_flag", Role::kReason, kNoField, Rule::kAsIs, "MSI Afterburner", 1, false,
     Reasons::kFlag, "sw_thermal"},
    {"no_load_limit_flag", Role::kReason, kNoField, Rule::kAsIs, "MSI Afterburner", 1, false,
     Reasons::kFlag, "gpu_idle"},
    // Weights & Biases system metrics, after the GPU number ("system.gpu.0.gpu", "gpu.0.gpu"):
    // gpu is GPU-Util, memory the memory controller's; powerWatts, smClock ... are names anyway.
    {"gpu", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio, "Weights & Biases", 1, true},
    {"memory", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio, "Weights & Biases", 1, true},
    {"memory_allocated_bytes", Role::kField, Field::kMemUsed, Rule::kAsIs, "Weights & Biases",
     1 / kMiB, true},
    {"enforced_power_limit_watts", Role::kField, Field::kPowerLimitEnforced, Rule::kAsIs,
     "Weights & Biases", 1, true},
    // MLflow system metrics ("system/gpu_0_utilization_percentage"): MB are 10^6 bytes.
    {"utilization_percentage", Role::kField, Field::kUtilGpu, Rule::kAsIs, "MLflow", 1, true},
    {"memory_usage_megabytes", Role::kField, Field::kMemUsed, Rule::kAsIs, "MLflow", 1e6 / kMiB,
     true},
    {"power_usage_watts", Role::kField, Field::kPower, Rule::kAsIs, "MLflow", 1, true},
    {"power_usage_percentage", Role::kField, Field::kPowerPercent, Rule::kAsIs, "MLflow", 1, true},
    // Home-made pynvml loggers.
    {"frequency", Role::kField, Field::kClockSm, Rule::kMhzOrGhz, "pynvml logger"},
    {"power_cap", Role::kField, Field::kPowerLimitEnforced, Rule::kWattsOrMilli, "pynvml logger"},
    {"memory_usage", Role::kField, Field::kMemUsed, Rule::kMibOrBytes, "pynvml logger"},
};

}  // namespace

std::span<const CatalogueEntry> catalogue() {
  return kEntries;
}

Meaning field_meaning(Field f, Rule rule, double factor, bool unit_named) {
  Meaning m;
  m.role = Role::kField;
  m.field = f;
  m.rule = rule;
  m.factor = factor;
  m.unit_named = unit_named;
  return m;
}

namespace {

Rule rule_for(Unit u) {
  switch (u) {
    case Unit::kPercent:
      return Rule::kPercentOrRatio;
    case Unit::kWatt:
      return Rule::kWattsOrMilli;
    case Unit::kMebibyte:
      return Rule::kMibOrBytes;
    case Unit::kMegahertz:
      return Rule::kMhzOrGhz;
    default:
      return Rule::kAsIs;
  }
}

// A catalogue id without its unit word: "power_w" -> "power", "util_gpu_pct" -> "util_gpu".
std::string_view id_stem(const FieldInfo& fi) {
  const size_t us = fi.id.rfind('_');
  if (us == std::string_view::npos) return {};
  const UnitToken* u = unit_exact(fi.id.substr(us + 1));
  if (u == nullptr || u->kind != 0 || u->unit != fi.unit || u->factor != 1) return {};
  return fi.id.substr(0, us);
}

std::string_view factor_label(const CatalogueEntry& a) {
  if (a.factor == 100) return "0-1 ratio";
  if (a.factor == 1 / kMiB) return a.field == Field::kMemUsed ? "bytes" : "bytes/s";
  if (a.factor == 1 / 1024.0) return "KiB/s";
  if (a.factor == 1e6 / kMiB) return "MB of 10^6 bytes";
  return {};
}

uint64_t bit_of_reason(std::string_view code) {
  for (const auto& r : clock_reasons())
    if (r.code == code) return r.bit;
  return 0;
}

Meaning entry_meaning(const CatalogueEntry& a) {
  Meaning m;
  if (a.role == Role::kField) {
    m = field_meaning(a.field, a.rule, a.factor, a.factor != 1);
    if (a.factor != 1) m.unit_label = factor_label(a);
  } else {
    m.role = a.role;
    m.rule = a.rule;
  }
  if (a.role == Role::kReason) {
    m.field = Field::kClockEventReasons;
    m.reasons = a.reasons;
    m.bit = bit_of_reason(a.reason);
  }
  m.tool = a.tool;
  return m;
}

// after_gpu: n followed a GPU number ("gpu.0.gpu"), where the per-GPU entries come first.
std::optional<Meaning> lookup_base(std::string_view n, bool after_gpu) {
  if (n.empty()) return std::nullopt;
  for (const auto& fi : all_fields())
    if (fi.id == n) return field_meaning(fi.field, Rule::kAsIs, 1, true);
  if (after_gpu)
    for (const auto& a : kEntries)
      if (a.per_gpu && a.name == n) return entry_meaning(a);
  for (const auto& a : kEntries)
    if (!a.per_gpu && a.name == n) return entry_meaning(a);
  for (const auto& fi : all_fields())
    if (const auto stem = id_stem(fi); !stem.empty() && stem == n)
      return field_meaning(fi.field, rule_for(fi.unit), 1, false);
  for (const auto& fi : all_fields()) {
    std::string_view rest = fi.smi_names;
    while (!rest.empty()) {
      const size_t bar = rest.find('|');
      if (norm_equals(rest.substr(0, bar), n)) return field_meaning(fi.field, Rule::kAsIs, 1, true);
      rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
    }
  }
  for (const auto& fi : all_fields()) {
    if (!fi.dcgm_name.empty() && norm_equals(fi.dcgm_name, n)) {
      Meaning m = field_meaning(fi.field, Rule::kAsIs, fi.dcgm_scale, true);
      m.dcgm = true;
      if (fi.dcgm_scale == 100) m.unit_label = "DCGM 0-1 ratio";
      return m;
    }
  }
  for (const auto& fi : all_fields())
    if (norm_equals(fi.prom_name, n))
      return field_meaning(fi.field, Rule::kAsIs, prom_scale(fi), true);
  return std::nullopt;
}

}  // namespace

bool apply_unit(Meaning& m, const UnitToken& u) {
  if (m.role == Role::kField && u.kind == 0 && u.unit == info(m.field).unit) {
    m.factor = u.factor;
    m.rule = Rule::kAsIs;
    m.unit_named = true;
    m.dcgm = false;
    m.unit_label = u.label;
    return true;
  }
  if ((m.role == Role::kTime || m.role == Role::kDate) && u.kind == 1) {
    m.time_unit_s = u.factor;
    m.unit_label = u.label;
    return true;
  }
  if ((m.role == Role::kTime || m.role == Role::kDate) && u.kind == 2) {
    m.utc = true;
    return true;
  }
  return false;
}

std::optional<Meaning> lookup(std::string_view n, bool after_gpu) {
  if (auto m = lookup_base(n, after_gpu)) return m;
  size_t pos = n.size();
  for (int words = 1; words <= 2; ++words) {
    if (pos == 0) break;
    pos = n.rfind('_', pos - 1);
    if (pos == std::string_view::npos || pos == 0) break;
    const UnitToken* u = unit_joined(n.substr(pos + 1));
    if (u == nullptr) continue;
    if (auto m = lookup_base(n.substr(0, pos), after_gpu); m && apply_unit(*m, *u)) return m;
  }
  return std::nullopt;
}

void split_annotation(std::string_view s, std::string_view& base, std::string_view& ann) {
  s = text::trim(s);
  base = s;
  ann = {};
  if (s.size() < 3) return;
  const char close = s.back();
  if (close != ')' && close != ']') return;
  const size_t open = s.rfind(close == ')' ? '(' : '[');
  if (open == std::string_view::npos || open == 0) return;
  base = text::trim(s.substr(0, open));
  ann = text::trim(s.substr(open + 1, s.size() - open - 2));
  if (base.empty()) {
    base = s;
    ann = {};
  }
}

namespace {

// One column per GPU: "GPU0", "gpu_1", "cuda0", "gpu0_power", "gpu1_power_w", "power_gpu0".
struct WideName {
  int gpu = -1;
  std::string_view rest;  // the quantity, "" for a bare "GPU0"
};

std::optional<WideName> match_wide(std::string_view n) {
  if (n.starts_with("system_")) n.remove_prefix(7);  // W&B's "system.gpu.0.gpu", MLflow's
  static constexpr std::string_view kPrefixes[] = {"device", "nvidia", "cuda", "gpu", "dev"};
  auto number = [](std::string_view digits) {
    int v = 0;
    for (const char c : digits) v = v * 10 + (c - '0');
    return v;
  };
  for (const auto p : kPrefixes) {
    if (!n.starts_with(p)) continue;
    size_t i = p.size();
    if (i < n.size() && n[i] == '_') ++i;
    size_t j = i;
    while (j < n.size() && is_digit(n[j])) ++j;
    if (j == i || j - i > 4) continue;
    WideName w;
    w.gpu = number(n.substr(i, j - i));
    if (j == n.size()) return w;
    if (n[j] == '_') ++j;
    w.rest = n.substr(j);
    if (w.rest.empty()) continue;
    return w;
  }
  size_t b = n.size();
  while (b > 0 && is_digit(n[b - 1])) --b;
  if (b == n.size() || n.size() - b > 4) return std::nullopt;
  size_t k = b;
  if (k > 0 && n[k - 1] == '_') --k;
  for (const auto p : kPrefixes) {
    if (k <= p.size() + 1 || n.substr(k - p.size(), p.size()) != p || n[k - p.size() - 1] != '_')
      continue;
    WideName w;
    w.gpu = number(n.substr(b));
    w.rest = n.substr(0, k - p.size() - 1);
    return w;
  }
  return std::nullopt;
}

// The name's meaning, with camelCase words split as a fallback; c.gpu and c.bare for one column
// per GPU.
bool resolve_name(std::string_view name, Column& c) {
  std::string prev;
  for (const bool camel : {false, true}) {
    const std::string n = normalise(name, camel);
    if (camel && n == prev) break;
    prev = n;
    c.gpu = -1;
    if (auto m = lookup(n)) {
      c.m = *m;
      return true;
    }
    if (const auto w = match_wide(n)) {
      c.gpu = w->gpu;
      if (w->rest.empty()) {
        c.bare = true;
        return true;
      }
      if (auto m = lookup(w->rest, true)) {
        c.m = *m;
        return true;
      }
      if (c.unknown_wide_gpu < 0) c.unknown_wide_gpu = w->gpu;
    }
  }
  c.gpu = -1;
  // "DeviceStatsMonitor.on_train_batch_end/utilization.gpu" (Lightning): the last part.
  if (const size_t slash = name.rfind('/');
      slash != std::string_view::npos && slash + 1 < name.size())
    return resolve_name(name.substr(slash + 1), c);
  return false;
}

}  // namespace

Column resolve(std::string_view raw) {
  Column c;
  c.name = std::string(text::trim(raw));
  std::string_view base, ann;
  split_annotation(c.name, base, ann);
  c.base = std::string(base);
  if (!ann.empty()) c.ann_unit = unit_joined(normalise(ann));
  bool found = false;
  if (!ann.empty() && c.ann_unit == nullptr) {
    // Not a unit: part of the name ("power (GPU 0)", "time (unix ms)"); else, of several words,
    // a remark ("power_w (avg over 1 s)"); else a unit gpudoctor does not read ("temp (F)").
    found = resolve_name(c.base + "_" + std::string(ann), c);
    if (!found && resolve_name(c.base, c)) {
      found = true;
      if (normalise(ann).find('_') == std::string::npos && c.m.role == Role::kField) {
        c.unit_mismatch = true;
        c.m.role = Role::kUnknown;
        return c;
      }
    }
  } else {
    found = resolve_name(c.base, c);
  }
  if (!found || c.bare) return c;
  if (c.m.role == Role::kGpu || c.m.role == Role::kTime || c.m.role == Role::kDate ||
      c.m.role == Role::kHost)
    c.gpu = -1;  // "gpu0_time": the time is the row's, whatever the column says
  if (c.ann_unit != nullptr && !apply_unit(c.m, *c.ann_unit)) {
    c.unit_mismatch = c.m.role == Role::kField;
    if (c.unit_mismatch) c.m.role = Role::kUnknown;
  }
  return c;
}

bool is_identity(Role r) {
  return r == Role::kTime || r == Role::kDate || r == Role::kGpu || r == Role::kUuid ||
         r == Role::kBusId || r == Role::kHost || r == Role::kName || r == Role::kSerial ||
         r == Role::kDriver;
}

bool glob_match(std::string_view pat, std::string_view s) {
  size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && (pat[p] == '?' || lower(pat[p]) == lower(s[i]))) {
      ++p;
      ++i;
    } else if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

bool has_wildcard(std::string_view s) {
  return s.find_first_of("*?") != std::string_view::npos;
}
// "GPU0" -> "GPU*": the --map pattern a message suggests for one-column-per-GPU names.
std::string wide_pattern(std::string_view name) {
  size_t b = name.size();
  while (b > 0 && is_digit(name[b - 1])) --b;
  if (b == name.size()) return std::string(name);
  return std::string(name.substr(0, b)) + "*";
}

const CatalogueEntry* dcgm_short_tag(std::string_view tag) {
  const std::string n = normalise(tag);
  // Each name is in the table once: POWER and UUID# are the rows power and uuid, which home-made
  // loggers use too. A name without a GPU number only ("gpu.0.gpu" is not GPUTL).
  for (const auto& e : kEntries)
    if (!e.per_gpu && e.name == n) return &e;
  return nullptr;
}

std::string_view role_name(Role r) {
  switch (r) {
    case Role::kUnknown:
      return "unknown";
    case Role::kIgnore:
      return "ignored";
    case Role::kField:
      return "field";
    case Role::kTime:
      return "time";
    case Role::kDate:
      return "date";
    case Role::kGpu:
      return "GPU id";
    case Role::kUuid:
      return "GPU uuid";
    case Role::kBusId:
      return "PCI bus id";
    case Role::kName:
      return "GPU name";
    case Role::kHost:
      return "host";
    case Role::kReason:
      return "clock-event reason";
    case Role::kSerial:
      return "GPU serial";
    case Role::kDriver:
      return "driver version";
  }
  return "unknown";
}

}  // namespace gpudoctor::csv
