// Shared parts of the stand-in NVML library: the exported entry points' declarations, the replay
// state loaded by nvmlInit, and the prologue every device call runs (init check, handle check,
// forced delay, lost GPU, forced error).
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

#include "capture.hpp"
#include "sources/nvml/nvml_types.hpp"

// Every export is declared here with its type taken from entry_points.def, so a definition whose
// signature differs from what gpudoctor calls does not compile ("conflicting declaration").
namespace fake_nvml::sig {
#define GPUDOCTOR_NVML(member, need, type, ...) using member = type;
#include "sources/nvml/entry_points.def"
#undef GPUDOCTOR_NVML
}  // namespace fake_nvml::sig

#define FAKE_NVML_API __attribute__((visibility("default")))

extern "C" {
// clang-format off
FAKE_NVML_API fake_nvml::sig::init nvmlInit;
FAKE_NVML_API fake_nvml::sig::shutdown nvmlShutdown;
FAKE_NVML_API fake_nvml::sig::error_string nvmlErrorString;
FAKE_NVML_API fake_nvml::sig::device_count nvmlDeviceGetCount;
FAKE_NVML_API fake_nvml::sig::handle_by_index nvmlDeviceGetHandleByIndex;
FAKE_NVML_API fake_nvml::sig::driver_version nvmlSystemGetDriverVersion;
FAKE_NVML_API fake_nvml::sig::nvml_version nvmlSystemGetNVMLVersion;
FAKE_NVML_API fake_nvml::sig::cuda_driver_version nvmlSystemGetCudaDriverVersion;
FAKE_NVML_API fake_nvml::sig::process_name nvmlSystemGetProcessName;
FAKE_NVML_API fake_nvml::sig::name nvmlDeviceGetName;
FAKE_NVML_API fake_nvml::sig::uuid nvmlDeviceGetUUID;
FAKE_NVML_API fake_nvml::sig::serial nvmlDeviceGetSerial;
FAKE_NVML_API fake_nvml::sig::pci_info nvmlDeviceGetPciInfo_v2;
FAKE_NVML_API fake_nvml::sig::persistence_mode nvmlDeviceGetPersistenceMode;
FAKE_NVML_API fake_nvml::sig::mig_mode nvmlDeviceGetMigMode;
FAKE_NVML_API fake_nvml::sig::architecture nvmlDeviceGetArchitecture;
FAKE_NVML_API fake_nvml::sig::utilization nvmlDeviceGetUtilizationRates;
FAKE_NVML_API fake_nvml::sig::power_usage nvmlDeviceGetPowerUsage;
FAKE_NVML_API fake_nvml::sig::total_energy nvmlDeviceGetTotalEnergyConsumption;
FAKE_NVML_API fake_nvml::sig::enforced_power_limit nvmlDeviceGetEnforcedPowerLimit;
FAKE_NVML_API fake_nvml::sig::power_limit nvmlDeviceGetPowerManagementLimit;
FAKE_NVML_API fake_nvml::sig::power_default_limit nvmlDeviceGetPowerManagementDefaultLimit;
FAKE_NVML_API fake_nvml::sig::power_limit_constraints nvmlDeviceGetPowerManagementLimitConstraints;
FAKE_NVML_API fake_nvml::sig::temperature nvmlDeviceGetTemperature;
FAKE_NVML_API fake_nvml::sig::temperature_threshold nvmlDeviceGetTemperatureThreshold;
FAKE_NVML_API fake_nvml::sig::clock nvmlDeviceGetClockInfo;
FAKE_NVML_API fake_nvml::sig::max_clock nvmlDeviceGetMaxClockInfo;
FAKE_NVML_API fake_nvml::sig::app_clock nvmlDeviceGetApplicationsClock;
FAKE_NVML_API fake_nvml::sig::pstate nvmlDeviceGetPerformanceState;
FAKE_NVML_API fake_nvml::sig::clock_event_reasons nvmlDeviceGetCurrentClocksThrottleReasons;
FAKE_NVML_API fake_nvml::sig::memory nvmlDeviceGetMemoryInfo;
FAKE_NVML_API fake_nvml::sig::pcie_throughput nvmlDeviceGetPcieThroughput;
FAKE_NVML_API fake_nvml::sig::pcie_gen nvmlDeviceGetCurrPcieLinkGeneration;
FAKE_NVML_API fake_nvml::sig::pcie_gen_max nvmlDeviceGetMaxPcieLinkGeneration;
FAKE_NVML_API fake_nvml::sig::pcie_width nvmlDeviceGetCurrPcieLinkWidth;
FAKE_NVML_API fake_nvml::sig::pcie_width_max nvmlDeviceGetMaxPcieLinkWidth;
FAKE_NVML_API fake_nvml::sig::fan nvmlDeviceGetFanSpeed;
FAKE_NVML_API fake_nvml::sig::compute_processes nvmlDeviceGetComputeRunningProcesses_v2;
FAKE_NVML_API fake_nvml::sig::ecc_mode nvmlDeviceGetEccMode;
FAKE_NVML_API fake_nvml::sig::total_ecc_errors nvmlDeviceGetTotalEccErrors;
FAKE_NVML_API fake_nvml::sig::retired_pages nvmlDeviceGetRetiredPages;
FAKE_NVML_API fake_nvml::sig::retired_pages_pending nvmlDeviceGetRetiredPagesPendingStatus;
FAKE_NVML_API fake_nvml::sig::remapped_rows nvmlDeviceGetRemappedRows;
FAKE_NVML_API fake_nvml::sig::default_app_clock nvmlDeviceGetDefaultApplicationsClock;
FAKE_NVML_API fake_nvml::sig::handle_by_uuid nvmlDeviceGetHandleByUUID;
FAKE_NVML_API fake_nvml::sig::mig_parent nvmlDeviceGetDeviceHandleFromMigDeviceHandle;
FAKE_NVML_API fake_nvml::sig::encoder_util nvmlDeviceGetEncoderUtilization;
FAKE_NVML_API fake_nvml::sig::decoder_util nvmlDeviceGetDecoderUtilization;
FAKE_NVML_API fake_nvml::sig::pcie_replay_counter nvmlDeviceGetPcieReplayCounter;
FAKE_NVML_API fake_nvml::sig::event_set_create nvmlEventSetCreate;
FAKE_NVML_API fake_nvml::sig::register_events nvmlDeviceRegisterEvents;
FAKE_NVML_API fake_nvml::sig::event_set_wait nvmlEventSetWait;
FAKE_NVML_API fake_nvml::sig::event_set_free nvmlEventSetFree;
#ifndef FAKE_NVML_LEGACY
// Entry points a pre-r520 driver did not have (see docs/capture-format.md).
FAKE_NVML_API fake_nvml::sig::init nvmlInit_v2;
FAKE_NVML_API fake_nvml::sig::device_count nvmlDeviceGetCount_v2;
FAKE_NVML_API fake_nvml::sig::handle_by_index nvmlDeviceGetHandleByIndex_v2;
FAKE_NVML_API fake_nvml::sig::cuda_driver_version nvmlSystemGetCudaDriverVersion_v2;
FAKE_NVML_API fake_nvml::sig::pci_info nvmlDeviceGetPciInfo_v3;
FAKE_NVML_API fake_nvml::sig::clock_event_reasons nvmlDeviceGetCurrentClocksEventReasons;
FAKE_NVML_API fake_nvml::sig::compute_processes nvmlDeviceGetComputeRunningProcesses_v3;
FAKE_NVML_API fake_nvml::sig::process_utilization nvmlDeviceGetProcessUtilization;
FAKE_NVML_API fake_nvml::sig::field_values nvmlDeviceGetFieldValues;
FAKE_NVML_API fake_nvml::sig::gpm_query_support nvmlGpmQueryDeviceSupport;
FAKE_NVML_API fake_nvml::sig::gpm_sample_alloc nvmlGpmSampleAlloc;
FAKE_NVML_API fake_nvml::sig::gpm_sample_free nvmlGpmSampleFree;
FAKE_NVML_API fake_nvml::sig::gpm_sample_get nvmlGpmSampleGet;
FAKE_NVML_API fake_nvml::sig::gpm_metrics_get nvmlGpmMetricsGet;
FAKE_NVML_API fake_nvml::sig::event_set_wait nvmlEventSetWait_v2;
FAKE_NVML_API fake_nvml::sig::grid_licensable_features nvmlDeviceGetGridLicensableFeatures_v4;
#endif
// clang-format on
}  // extern "C"

namespace fake_nvml {

// What nvmlInit loaded; immutable until the last nvmlShutdown drops it. Calls in flight keep
// their own reference, so a shutdown never frees data under a running call.
struct State {
  Capture capture;
  Replay replay;
  std::chrono::steady_clock::time_point origin;  // nvmlInit
  int64_t origin_wall_us = 0;                    // system clock at nvmlInit, microseconds

  // Replay time now: seconds since nvmlInit times speed, plus the start offset.
  double now() const;
  // System-clock microseconds at which replay time t happens (or happened).
  int64_t wall_us(double t) const;
  // The device a handle points at, or nullptr when the handle is not one of this state's.
  const nvmlDevice_st* device(nvmlDevice_t handle) const;
};

// The loaded state, or nullptr before nvmlInit / after the last nvmlShutdown.
std::shared_ptr<const State> current_state();
nvmlReturn_t init();
nvmlReturn_t shutdown();
const char* error_string(nvmlReturn_t code);

// A device call in progress.
struct Call {
  std::shared_ptr<const State> state;
  const nvmlDevice_st* dev = nullptr;
  double now = 0;  // replay time, taken after any forced delay
  std::optional<double> get(std::string_view field) const { return dev->value(field, now); }
};

// Prologue of a device call that reads `keys` (field ids or "processes", "gpm", ...): checks
// init, the handle, then `args_ok`; sleeps the longest delay of the keys (holding no lock);
// answers GPU_IS_LOST after lost_at_s and the capture's forced error of the first key that has
// one. NVML_SUCCESS means go on. extra_delay_ms: a delay decided by the caller (longest wins).
nvmlReturn_t begin(nvmlDevice_t handle, bool args_ok, std::initializer_list<std::string_view> keys,
                   Call& call, double extra_delay_ms = 0);

// Copies s with its NUL, or answers INSUFFICIENT_SIZE / INVALID_ARGUMENT like NVML.
nvmlReturn_t copy_string(std::string_view s, char* buf, unsigned length);

// Rounds a value in NVML's unit to an unsigned integer type, clamped to its range.
template <class T>
T to_unsigned(double v) {
  if (!(v > 0)) return 0;
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(std::round(v));
}

}  // namespace fake_nvml
