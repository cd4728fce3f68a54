// The stand-in NVML library, continued: the health calls `gpudoctor check` makes once per GPU
// (ECC mode and counts, retired pages, row remapping, default application clocks), answered from
// the device's "health" object (docs/capture-format.md). A key the capture lacks makes its call
// answer NOT_SUPPORTED, as a board without the feature does.
#include <initializer_list>
#include <string_view>

#include "runtime.hpp"

using fake_nvml::begin;
using fake_nvml::Call;
using fake_nvml::to_unsigned;

namespace {

// Made-up page addresses for nvmlDeviceGetRetiredPages: distinct, page-aligned.
constexpr unsigned long long kFirstPage = 0x1f0000ULL;
constexpr unsigned long long kPageStep = 0x1000ULL;

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, unsigned* current, unsigned* pending) {
  Call c;
  if (const auto r = begin(device, current != nullptr && pending != nullptr,
                           {"ecc_mode", "ecc_mode_pending"}, c)) {
    return r;
  }
  const auto cur = c.dev->health_value("ecc_mode");
  if (!cur) return NVML_ERROR_NOT_SUPPORTED;
  const double pend = c.dev->health_value("ecc_mode_pending").value_or(*cur);
  *current = *cur > 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  *pending = pend > 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, unsigned error_type,
                                         unsigned counter_type, unsigned long long* count) {
  const bool corrected = error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED;
  const bool volatile_counter = counter_type == NVML_VOLATILE_ECC;
  const bool args_ok = count != nullptr &&
                       (corrected || error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED) &&
                       (volatile_counter || counter_type == NVML_AGGREGATE_ECC);
  std::string_view key =
      volatile_counter ? (corrected ? "ecc_volatile_corrected" : "ecc_volatile_uncorrected")
                       : (corrected ? "ecc_aggregate_corrected" : "ecc_aggregate_uncorrected");
  Call c;
  if (const auto r = begin(device, args_ok, {key}, c)) return r;
  const auto v = c.dev->health_value(key);
  if (!v) return NVML_ERROR_NOT_SUPPORTED;
  *count = to_unsigned<unsigned long long>(*v);
  return NVML_SUCCESS;
}

// Like the driver: *page_count in is the room in addresses; too little room answers
// INSUFFICIENT_SIZE with the count needed.
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, unsigned cause, unsigned* page_count,
                                       unsigned long long* addresses) {
  const bool sbe = cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS;
  const bool args_ok =
      page_count != nullptr && (sbe || cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
  const std::string_view key = sbe ? "retired_pages_sbe" : "retired_pages_dbe";
  Call c;
  if (const auto r = begin(device, args_ok, {key}, c)) return r;
  const auto v = c.dev->health_value(key);
  if (!v) return NVML_ERROR_NOT_SUPPORTED;
  const unsigned n = to_unsigned<unsigned>(*v);
  if (*page_count < n) {
    *page_count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (n > 0 && addresses == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < n; ++i)
    addresses[i] = kFirstPage + (sbe ? 0 : 0x100000ULL) + i * kPageStep;
  *page_count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, unsigned* pending) {
  Call c;
  if (const auto r = begin(device, pending != nullptr, {"retired_pages_pending"}, c)) return r;
  const auto v = c.dev->health_value("retired_pages_pending");
  if (!v) return NVML_ERROR_NOT_SUPPORTED;
  *pending = *v > 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

// One call, four answers: supported when the capture has any of the four keys (the others 0),
// in the samples' values (what the sampler reads over time) or else in "health".
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned* corrected,
                                       unsigned* uncorrected, unsigned* pending,
                                       unsigned* failure) {
  Call c;
  const bool args_ok =
      corrected != nullptr && uncorrected != nullptr && pending != nullptr && failure != nullptr;
  if (const auto r = begin(device, args_ok,
                           {"remapped_rows_corrected", "remapped_rows_uncorrected", "remap_pending",
                            "remap_failure"},
                           c)) {
    return r;
  }
  auto held = [&](std::string_view key) {
    const auto v = c.get(key);
    return v ? v : c.dev->health_value(key);
  };
  const auto corr = held("remapped_rows_corrected");
  const auto unc = held("remapped_rows_uncorrected");
  const auto pend = held("remap_pending");
  const auto fail = held("remap_failure");
  if (!corr && !unc && !pend && !fail) return NVML_ERROR_NOT_SUPPORTED;
  *corrected = to_unsigned<unsigned>(corr.value_or(0));
  *uncorrected = to_unsigned<unsigned>(unc.value_or(0));
  *pending = pend.value_or(0) > 0 ? 1 : 0;
  *failure = fail.value_or(0) > 0 ? 1 : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device, unsigned type,
                                                   unsigned* mhz) {
  std::string_view key;
  if (type == NVML_CLOCK_GRAPHICS || type == NVML_CLOCK_SM) key = "app_clock_default_sm_mhz";
  if (type == NVML_CLOCK_MEM) key = "app_clock_default_mem_mhz";
  Call c;
  if (const auto r = begin(device, mhz != nullptr && !key.empty(), {key}, c)) return r;
  const auto v = c.dev->health_value(key);
  if (!v) return NVML_ERROR_NOT_SUPPORTED;
  *mhz = to_unsigned<unsigned>(*v);
  return NVML_SUCCESS;
}

}  // extern "C"
