// The stand-in NVML library: replays a capture file (docs/capture-format.md) through NVML's C
// interface. This file has the lifecycle, system, identity and reading calls; processes, field
// values and GPM are in fake_nvml_processes_gpm.cpp.
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime.hpp"

using fake_nvml::begin;
using fake_nvml::Call;
using fake_nvml::copy_string;
using fake_nvml::to_unsigned;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// The driver's sampling period for the video engines' utilization, as the stand-in states it.
constexpr unsigned kEngineSamplingPeriodUs = 1000000;

// A call that answers one field as an unsigned value: value * scale.
template <class T>
nvmlReturn_t read_field(nvmlDevice_t device, std::string_view field, T* out, double scale = 1) {
  Call c;
  if (const auto r = begin(device, out != nullptr, {field}, c)) return r;
  const auto v = c.get(field);
  if (!v) return NVML_ERROR_NOT_SUPPORTED;
  *out = to_unsigned<T>(*v * scale);
  return NVML_SUCCESS;
}

nvmlReturn_t device_count(unsigned* count) {
  const auto state = fake_nvml::current_state();
  if (!state) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(state->capture.devices.size());
  return NVML_SUCCESS;
}

nvmlReturn_t handle_by_index(unsigned index, nvmlDevice_t* device) {
  const auto state = fake_nvml::current_state();
  if (!state) return NVML_ERROR_UNINITIALIZED;
  const auto& devices = state->capture.devices;
  if (device == nullptr || index >= devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  const nvmlDevice_st& d = devices[index];
  if (d.lost_at_s && state->now() >= *d.lost_at_s) return NVML_ERROR_GPU_IS_LOST;
  *device = const_cast<nvmlDevice_t>(&d);  // NVML handles are non-const; nothing writes through
  return NVML_SUCCESS;
}

nvmlReturn_t cuda_driver_version(int* version) {
  const auto state = fake_nvml::current_state();
  if (!state) return NVML_ERROR_UNINITIALIZED;
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!state->capture.cuda_driver_version) return NVML_ERROR_NOT_SUPPORTED;
  *version = *state->capture.cuda_driver_version;
  return NVML_SUCCESS;
}

nvmlReturn_t system_string(const std::optional<std::string> fake_nvml::Capture::*member, char* buf,
                           unsigned length) {
  const auto state = fake_nvml::current_state();
  if (!state) return NVML_ERROR_UNINITIALIZED;
  const auto& s = state->capture.*member;
  if (!s) return NVML_ERROR_NOT_SUPPORTED;
  return copy_string(*s, buf, length);
}

nvmlReturn_t device_string(nvmlDevice_t device, std::string_view key,
                           const std::optional<std::string> nvmlDevice_st::*member, char* buf,
                           unsigned length) {
  Call c;
  if (const auto r = begin(device, buf != nullptr, {key}, c)) return r;
  const auto& s = c.dev->*member;
  if (!s) return NVML_ERROR_NOT_SUPPORTED;
  return copy_string(*s, buf, length);
}

// _v3 fills the current nvmlPciInfo_t. _v2 fills the struct's original layout: a 16-byte bus id
// where busIdLegacy now is, the same ids, then four zeroed reserved words where busId now
// starts; so a caller of _v2 must read busIdLegacy, as with an old driver.
nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t* pci, bool v3) {
  Call c;
  if (const auto r = begin(device, pci != nullptr, {"pci_bus_id"}, c)) return r;
  const nvmlDevice_st& d = *c.dev;
  if (!d.pci_bus_id) return NVML_ERROR_NOT_SUPPORTED;
  nvmlPciInfo_t info{};
  std::snprintf(info.busIdLegacy, sizeof info.busIdLegacy, "%04X:%02X:%02X.%X",
                d.pci_domain & 0xffff, d.pci_bus & 0xff, d.pci_device & 0x1f, d.pci_function & 0x7);
  info.domain = d.pci_domain;
  info.bus = d.pci_bus;
  info.device = d.pci_device;
  if (v3) {
    std::snprintf(info.busId, sizeof info.busId, "%08X:%02X:%02X.%X", d.pci_domain,
                  d.pci_bus & 0xff, d.pci_device & 0x1f, d.pci_function & 0x7);
    *pci = info;
  } else {
    std::memcpy(pci, &info, offsetof(nvmlPciInfo_t, busId) + 16);
  }
  return NVML_SUCCESS;
}

// nvmlDeviceGetClockInfo / MaxClockInfo / ApplicationsClock: graphics and SM share one field.
nvmlReturn_t clock_query(nvmlDevice_t device, unsigned type, unsigned* mhz,
                         std::string_view sm_field, std::string_view mem_field) {
  std::string_view field;
  if (type == NVML_CLOCK_GRAPHICS || type == NVML_CLOCK_SM) field = sm_field;
  if (type == NVML_CLOCK_MEM) field = mem_field;
  if (type == NVML_CLOCK_VIDEO) field = "clock_video_mhz";
  if (field.empty()) {
    Call c;
    return begin(device, false, {}, c);  // unknown clock type
  }
  return read_field(device, field, mhz);
}

nvmlReturn_t clock_event_reasons(nvmlDevice_t device, unsigned long long* reasons) {
  return read_field(device, "clock_event_reasons", reasons);
}

}  // namespace

extern "C" {

// ---- Lifecycle and system ------------------------------------------------------------------

nvmlReturn_t nvmlInit() {
  return fake_nvml::init();
}
nvmlReturn_t nvmlShutdown() {
  return fake_nvml::shutdown();
}
const char* nvmlErrorString(nvmlReturn_t result) {
  return fake_nvml::error_string(result);
}
nvmlReturn_t nvmlDeviceGetCount(unsigned* count) {
  return device_count(count);
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t* device) {
  return handle_by_index(index, device);
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  return cuda_driver_version(version);
}
#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlInit_v2() {
  return fake_nvml::init();
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  return device_count(count);
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  return handle_by_index(index, device);
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return cuda_driver_version(version);
}
#endif

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned length) {
  return system_string(&fake_nvml::Capture::driver_version, version, length);
}
nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned length) {
  return system_string(&fake_nvml::Capture::nvml_version, version, length);
}

// ---- Identity ------------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned length) {
  return device_string(device, "name", &nvmlDevice_st::name, name, length);
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned length) {
  return device_string(device, "uuid", &nvmlDevice_st::uuid, uuid, length);
}
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned length) {
  return device_string(device, "serial", &nvmlDevice_st::serial, serial, length);
}
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(device, pci, false);
}
#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(device, pci, true);
}
#endif

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, unsigned* mode) {
  Call c;
  if (const auto r = begin(device, mode != nullptr, {"persistence_mode"}, c)) return r;
  if (!c.dev->persistence_mode) return NVML_ERROR_NOT_SUPPORTED;
  *mode = *c.dev->persistence_mode ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned* current, unsigned* pending) {
  Call c;
  if (const auto r = begin(device, current != nullptr && pending != nullptr, {"mig_mode"}, c)) {
    return r;
  }
  if (!c.dev->mig_mode) return NVML_ERROR_NOT_SUPPORTED;
  *current = *c.dev->mig_mode ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  // A change waiting for a reset: health key mig_mode_pending (default: the current mode).
  const auto pend = c.dev->health_value("mig_mode_pending");
  *pending = pend ? (*pend != 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED) : *current;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned* arch) {
  Call c;
  if (const auto r = begin(device, arch != nullptr, {"architecture"}, c)) return r;
  if (!c.dev->architecture) return NVML_ERROR_NOT_SUPPORTED;
  *arch = *c.dev->architecture;
  return NVML_SUCCESS;
}

// ---- Readings ------------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* util) {
  Call c;
  if (const auto r = begin(device, util != nullptr, {"util_gpu_pct", "util_mem_pct"}, c)) return r;
  const auto gpu = c.get("util_gpu_pct");
  const auto mem = c.get("util_mem_pct");
  if (!gpu || !mem) return NVML_ERROR_NOT_SUPPORTED;
  util->gpu = to_unsigned<unsigned>(*gpu);
  util->memory = to_unsigned<unsigned>(*mem);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned* mw) {
  return read_field(device, "power_w", mw, 1000);
}
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* mj) {
  return read_field(device, "energy_mj", mj);
}
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned* mw) {
  return read_field(device, "power_limit_enforced_w", mw, 1000);
}
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned* mw) {
  return read_field(device, "power_limit_w", mw, 1000);
}
nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned* mw) {
  return read_field(device, "power_limit_default_w", mw, 1000);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned* min_mw,
                                                          unsigned* max_mw) {
  Call c;
  if (const auto r = begin(device, min_mw != nullptr && max_mw != nullptr,
                           {"power_limit_min_w", "power_limit_max_w"}, c)) {
    return r;
  }
  const auto lo = c.get("power_limit_min_w");
  const auto hi = c.get("power_limit_max_w");
  if (!lo || !hi) return NVML_ERROR_NOT_SUPPORTED;
  *min_mw = to_unsigned<unsigned>(*lo * 1000);
  *max_mw = to_unsigned<unsigned>(*hi * 1000);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned sensor, unsigned* celsius) {
  if (sensor != NVML_TEMPERATURE_GPU) {
    Call c;
    return begin(device, false, {}, c);
  }
  return read_field(device, "temp_c", celsius);
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, unsigned type,
                                               unsigned* celsius) {
  if (type != NVML_TEMPERATURE_THRESHOLD_SLOWDOWN) {
    Call c;
    if (const auto r = begin(device, celsius != nullptr, {}, c)) return r;
    return NVML_ERROR_NOT_SUPPORTED;
  }
  return read_field(device, "temp_slowdown_c", celsius);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned type, unsigned* mhz) {
  return clock_query(device, type, mhz, "clock_sm_mhz", "clock_mem_mhz");
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, unsigned type, unsigned* mhz) {
  return clock_query(device, type, mhz, "clock_sm_max_mhz", "clock_mem_max_mhz");
}
nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, unsigned type, unsigned* mhz) {
  return clock_query(device, type, mhz, "clock_app_sm_mhz", "clock_app_mem_mhz");
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, unsigned* pstate) {
  return read_field(device, "pstate", pstate);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long* reasons) {
  return clock_event_reasons(device, reasons);
}
#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* reasons) {
  return clock_event_reasons(device, reasons);
}
#endif

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  Call c;
  if (const auto r = begin(device, memory != nullptr, {"mem_total_mib", "mem_used_mib"}, c)) {
    return r;
  }
  const auto total = c.get("mem_total_mib");
  const auto used = c.get("mem_used_mib");
  if (!total || !used) return NVML_ERROR_NOT_SUPPORTED;
  memory->total = to_unsigned<unsigned long long>(*total * kMiB);
  memory->used = std::min(memory->total, to_unsigned<unsigned long long>(*used * kMiB));
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned counter, unsigned* kbs) {
  if (counter == NVML_PCIE_UTIL_TX_BYTES) return read_field(device, "pcie_tx_mibs", kbs, 1024);
  if (counter == NVML_PCIE_UTIL_RX_BYTES) return read_field(device, "pcie_rx_mibs", kbs, 1024);
  Call c;
  return begin(device, false, {}, c);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned* gen) {
  return read_field(device, "pcie_link_gen", gen);
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned* gen) {
  return read_field(device, "pcie_link_gen_max", gen);
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned* width) {
  return read_field(device, "pcie_link_width", width);
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned* width) {
  return read_field(device, "pcie_link_width_max", width);
}
nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned* pct) {
  return read_field(device, "fan_pct", pct);
}

// A GPU's or a MIG device's handle by its UUID (both since R450).
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  const auto state = fake_nvml::current_state();
  if (!state) return NVML_ERROR_UNINITIALIZED;
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (const auto* list : {&state->capture.devices, &state->capture.mig_devices})
    for (const nvmlDevice_st& d : *list)
      if (d.uuid && *d.uuid == uuid) {
        if (d.lost_at_s && state->now() >= *d.lost_at_s) return NVML_ERROR_GPU_IS_LOST;
        *device = const_cast<nvmlDevice_t>(&d);  // nothing writes through handles
        return NVML_SUCCESS;
      }
  return NVML_ERROR_NOT_FOUND;
}

// The GPU of a MIG device's handle; a GPU's own handle is not a MIG handle.
nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t* device) {
  const auto state = fake_nvml::current_state();
  if (!state) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (const nvmlDevice_st& m : state->capture.mig_devices)
    if (&m == mig) {
      *device = const_cast<nvmlDevice_t>(&state->capture.devices[*m.mig_parent]);
      return NVML_SUCCESS;
    }
  return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned* pct,
                                             unsigned* period_us) {
  if (period_us == nullptr) pct = nullptr;  // both are required
  const nvmlReturn_t r = read_field(device, "util_enc_pct", pct);
  if (r == NVML_SUCCESS) *period_us = kEngineSamplingPeriodUs;
  return r;
}
nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned* pct,
                                             unsigned* period_us) {
  if (period_us == nullptr) pct = nullptr;
  const nvmlReturn_t r = read_field(device, "util_dec_pct", pct);
  if (r == NVML_SUCCESS) *period_us = kEngineSamplingPeriodUs;
  return r;
}
nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned* count) {
  return read_field(device, "pcie_replays", count);
}

}  // extern "C"
