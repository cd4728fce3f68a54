// DeviceHealth: what `gpudoctor check` reads once per GPU besides the sampled fields: ECC mode and
// error counts, retired memory pages, row remapping and the default application clocks. Plain
// values; each reading is a value, or not supported / an error with the NVML code that said so
// (a GeForce board answers NOT_SUPPORTED for ECC: that means "not applicable", never zero).
#pragma once

#include <array>

#include "core/reading.hpp"

namespace gpudoctor {

struct DeviceHealth {
  // False when the source does not read these at all (the simulator): every reading is no_data.
  bool read = false;
  Reading ecc_mode_current, ecc_mode_pending;  // 1 enabled, 0 disabled
  // nvmlDeviceGetTotalEccErrors: volatile (since the driver loaded) and aggregate (lifetime).
  Reading ecc_volatile_corrected, ecc_volatile_uncorrected;
  Reading ecc_aggregate_corrected, ecc_aggregate_uncorrected;
  // nvmlDeviceGetRetiredPages by cause, and whether a retirement waits for a reset (1 / 0).
  Reading retired_pages_sbe, retired_pages_dbe, retired_pages_pending;
  // nvmlDeviceGetRemappedRows: rows remapped after correctable / uncorrectable errors, a remap
  // waiting for a reset (1 / 0), a remap that failed (1 / 0).
  Reading remapped_rows_corrected, remapped_rows_uncorrected, remap_pending, remap_failure;
  // nvmlDeviceGetDefaultApplicationsClock (graphics/SM and memory), MHz.
  Reading app_clock_default_sm_mhz, app_clock_default_mem_mhz;
  // nvmlDeviceGetMigMode's pending mode (1 enabled, 0 disabled): a change waits for a GPU reset.
  Reading mig_mode_pending;
};

// Every reading of DeviceHealth with its stable id (JSON, capture files), in declaration order.
struct HealthField {
  const char* id;
  Reading DeviceHealth::*member;
};
inline constexpr std::array<HealthField, 16> kHealthFields{{
    {"ecc_mode", &DeviceHealth::ecc_mode_current},
    {"ecc_mode_pending", &DeviceHealth::ecc_mode_pending},
    {"ecc_volatile_corrected", &DeviceHealth::ecc_volatile_corrected},
    {"ecc_volatile_uncorrected", &DeviceHealth::ecc_volatile_uncorrected},
    {"ecc_aggregate_corrected", &DeviceHealth::ecc_aggregate_corrected},
    {"ecc_aggregate_uncorrected", &DeviceHealth::ecc_aggregate_uncorrected},
    {"retired_pages_sbe", &DeviceHealth::retired_pages_sbe},
    {"retired_pages_dbe", &DeviceHealth::retired_pages_dbe},
    {"retired_pages_pending", &DeviceHealth::retired_pages_pending},
    {"remapped_rows_corrected", &DeviceHealth::remapped_rows_corrected},
    {"remapped_rows_uncorrected", &DeviceHealth::remapped_rows_uncorrected},
    {"remap_pending", &DeviceHealth::remap_pending},
    {"remap_failure", &DeviceHealth::remap_failure},
    {"app_clock_default_sm_mhz", &DeviceHealth::app_clock_default_sm_mhz},
    {"app_clock_default_mem_mhz", &DeviceHealth::app_clock_default_mem_mhz},
    {"mig_mode_pending", &DeviceHealth::mig_mode_pending},
}};

}  // namespace gpudoctor
