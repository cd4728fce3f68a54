// The stand-in NVML library, continued: compute processes, process names and utilization,
// nvmlDeviceGetFieldValues and the GPM calls.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "runtime.hpp"

// What an nvmlGpmSample_t points at: the device and replay time nvmlGpmSampleGet recorded.
struct nvmlGpmSample_st {
  const nvmlDevice_st* device = nullptr;  // nullptr until a successful nvmlGpmSampleGet
  double t = 0;
};

using fake_nvml::begin;
using fake_nvml::Call;
using fake_nvml::to_unsigned;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

#ifndef FAKE_NVML_LEGACY
int64_t wall_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
#endif

// nvmlDeviceGetComputeRunningProcesses_v2/_v3 (same nvmlProcessInfo_t layout).
nvmlReturn_t compute_processes(nvmlDevice_t device, unsigned* count, nvmlProcessInfo_t* infos) {
  Call c;
  if (const auto r = begin(device, count != nullptr, {"processes"}, c)) return r;
  const auto* snap = c.dev->processes_at(c.now, nullptr);
  const size_t n = snap ? snap->processes.size() : 0;
  if (n == 0) {
    *count = 0;
    return NVML_SUCCESS;
  }
  if (infos == nullptr || *count < n) {
    *count = static_cast<unsigned>(n);
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& p = snap->processes[i];
    infos[i].pid = p.pid;
    infos[i].usedGpuMemory = p.used_memory_mib
                                 ? to_unsigned<unsigned long long>(*p.used_memory_mib * kMiB)
                                 : NVML_VALUE_NOT_AVAILABLE;
    infos[i].gpuInstanceId = 0xffffffffU;  // what NVML reports without MIG
    infos[i].computeInstanceId = 0xffffffffU;
  }
  *count = static_cast<unsigned>(n);
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_LEGACY
// Field-value ids this library answers: the capture field each reads and how. A counter is the
// integral of the capture's rate (nvlink_mibs, MiB/s) in NVML's unit (KiB), half of it each way.
struct FieldValueSource {
  unsigned id;
  std::string_view field;
  double scale;  // NVML value = capture value (or its integral) * scale
  bool counter;
};
constexpr FieldValueSource kFieldValueSources[] = {
    {NVML_FI_DEV_POWER_AVERAGE, "power_w", 1000, false},
    {NVML_FI_DEV_POWER_INSTANT, "power_instant_w", 1000, false},
    {NVML_FI_DEV_MEMORY_TEMP, "temp_mem_c", 1, false},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, "nvlink_mibs", 1024 / 2.0, true},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, "nvlink_mibs", 1024 / 2.0, true},
};
constexpr unsigned kAllLinks = 0xffffffffU;  // the NVLink counters' scopeId for every link

const FieldValueSource* source_for_id(unsigned id) {
  for (const auto& f : kFieldValueSources)
    if (f.id == id) return &f;
  return nullptr;
}

// GPM metric ids this library answers, and the capture field each reads.
struct MetricField {
  unsigned id;
  std::string_view field;
};
constexpr MetricField kMetricFields[] = {
    {NVML_GPM_METRIC_GRAPHICS_UTIL, "gpm_graphics_util_pct"},
    {NVML_GPM_METRIC_SM_UTIL, "gpm_sm_util_pct"},
    {NVML_GPM_METRIC_SM_OCCUPANCY, "gpm_sm_occupancy_pct"},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, "gpm_tensor_util_pct"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, "gpm_dram_bw_util_pct"},
    {NVML_GPM_METRIC_FP64_UTIL, "gpm_fp64_util_pct"},
    {NVML_GPM_METRIC_FP32_UTIL, "gpm_fp32_util_pct"},
    {NVML_GPM_METRIC_FP16_UTIL, "gpm_fp16_util_pct"},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, "gpm_pcie_tx_mibs"},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, "gpm_pcie_rx_mibs"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, "gpm_nvlink_rx_mibs"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, "gpm_nvlink_tx_mibs"},
};

std::string_view field_for_metric(unsigned id) {
  for (const auto& m : kMetricFields) {
    if (m.id == id) return m.field;
  }
  return {};
}

// metricInfo strings: NVML hands out pointers to its own static strings.
char kUnitPercent[] = "%";
char kUnitMibs[] = "MiB/sec";
char kNoName[] = "";
#endif

}  // namespace

extern "C" {

// ---- Processes -----------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned* count,
                                                     nvmlProcessInfo_t* infos) {
  return compute_processes(device, count, infos);
}
#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned* count,
                                                     nvmlProcessInfo_t* infos) {
  return compute_processes(device, count, infos);
}
#endif

// The name from the most recent sample, on any device, that lists pid.
nvmlReturn_t nvmlSystemGetProcessName(unsigned pid, char* name, unsigned length) {
  const auto state = fake_nvml::current_state();
  if (!state) return NVML_ERROR_UNINITIALIZED;
  if (name == nullptr || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
  const double now = state->now();
  const fake_nvml::Process* best = nullptr;
  double best_t = -std::numeric_limits<double>::infinity();
  for (const auto& d : state->capture.devices) {
    double t = 0;
    const auto* p = d.find_process(pid, now, &t);
    if (p != nullptr && t > best_t) {
      best = p;
      best_t = t;
    }
  }
  if (best == nullptr) return NVML_ERROR_NOT_FOUND;
  return fake_nvml::copy_string(best->name, name, length);
}

#ifndef FAKE_NVML_LEGACY
// Samples newer than last_seen_us for the held processes that have sm_util_pct. Each sample is
// stamped with the system-clock time at which the replay reached the capture sample it comes
// from, so a caller passing back the last timestamp it saw gets NOT_FOUND until the next sample.
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t* samples,
                                             unsigned* count, unsigned long long last_seen_us) {
  Call c;
  if (const auto r = begin(device, count != nullptr, {"process_utilization"}, c)) return r;
  double sample_t = 0;
  const auto* snap = c.dev->processes_at(c.now, &sample_t);
  const int64_t stamp = std::max<int64_t>(0, c.state->wall_us(sample_t));
  std::vector<nvmlProcessUtilizationSample_t> out;
  if (snap != nullptr && static_cast<unsigned long long>(stamp) > last_seen_us) {
    for (const auto& p : snap->processes) {
      if (!p.sm_util_pct) continue;
      nvmlProcessUtilizationSample_t s{};
      s.pid = p.pid;
      s.timeStamp = static_cast<unsigned long long>(stamp);
      s.smUtil = to_unsigned<unsigned>(*p.sm_util_pct);
      s.memUtil = to_unsigned<unsigned>(p.mem_util_pct.value_or(0));
      s.encUtil = to_unsigned<unsigned>(p.enc_util_pct.value_or(0));
      s.decUtil = to_unsigned<unsigned>(p.dec_util_pct.value_or(0));
      out.push_back(s);
    }
  }
  if (out.empty()) return NVML_ERROR_NOT_FOUND;
  if (samples == nullptr || *count < out.size()) {
    *count = static_cast<unsigned>(out.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(out.begin(), out.end(), samples);
  *count = static_cast<unsigned>(out.size());
  return NVML_SUCCESS;
}

// ---- Field values --------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t* values) {
  // The call waits for the slowest field it reads.
  double delay = 0;
  if (const auto state = fake_nvml::current_state(); state && values != nullptr) {
    if (const auto* d = state->device(device)) {
      for (int i = 0; i < count; ++i) {
        if (const auto* src = source_for_id(values[i].fieldId))
          delay = std::max(delay, d->delay_ms(src->field));
      }
    }
  }
  Call c;
  if (const auto r = begin(device, values != nullptr && count >= 0, {"field_values"}, c, delay)) {
    return r;
  }
  const int64_t now_us = wall_now_us();
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.timestamp = now_us;
    v.latencyUsec = 0;
    v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v.value.ullVal = 0;
    const FieldValueSource* src = source_for_id(v.fieldId);
    // The capture has each counter over all links only: a single link is not supported.
    if (src == nullptr || (src->counter && v.scopeId != kAllLinks)) {
      v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    if (const auto e = c.dev->error(src->field)) {
      v.nvmlReturn = *e;
      continue;
    }
    const auto w = src->counter ? c.dev->integral(src->field, c.now) : c.get(src->field);
    if (!w) {
      v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    v.nvmlReturn = NVML_SUCCESS;
    if (src->counter) {
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
      v.value.ullVal = to_unsigned<unsigned long long>(*w * src->scale);
    } else {
      v.value.uiVal = to_unsigned<unsigned>(*w * src->scale);
    }
  }
  return NVML_SUCCESS;
}

// ---- vGPU licensing ------------------------------------------------------------------------

// A capture with "vgpu_licensed" is a vGPU guest: one enabled feature, licensed when the value is
// non-zero. Without it the GPU is not a vGPU: success with isGridLicenseSupported 0, as on bare
// metal.
nvmlReturn_t nvmlDeviceGetGridLicensableFeatures_v4(nvmlDevice_t device,
                                                    nvmlGridLicensableFeatures_t* features) {
  Call c;
  if (const auto r = begin(device, features != nullptr, {"vgpu_licensed"}, c)) return r;
  std::memset(features, 0, sizeof(*features));
  const auto licensed = c.get("vgpu_licensed");
  if (!licensed) return NVML_SUCCESS;
  features->isGridLicenseSupported = 1;
  features->licensableFeaturesCount = 1;
  nvmlGridLicensableFeature_t& f = features->gridLicensableFeatures[0];
  f.featureCode = 4;  // NVML_GRID_LICENSE_FEATURE_CODE_COMPUTE
  f.featureState = *licensed != 0 ? 1U : 0U;
  f.featureEnabled = 1;
  std::snprintf(f.productName, sizeof f.productName, "%s", "NVIDIA Virtual Compute Server");
  return NVML_SUCCESS;
}

// ---- GPM -----------------------------------------------------------------------------------

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* support) {
  Call c;
  if (const auto r = begin(device, support != nullptr, {}, c)) return r;
  if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  support->isSupportedDevice = c.dev->gpm_supported ? 1U : 0U;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  if (!fake_nvml::current_state()) return NVML_ERROR_UNINITIALIZED;
  if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *sample = new (std::nothrow) nvmlGpmSample_st();
  return *sample != nullptr ? NVML_SUCCESS : 20;  // NVML_ERROR_MEMORY
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  delete sample;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  Call c;
  if (const auto r = begin(device, sample != nullptr, {"gpm"}, c)) return r;
  if (!c.dev->gpm_supported) return NVML_ERROR_NOT_SUPPORTED;
  sample->device = c.dev;
  sample->t = c.now;
  return NVML_SUCCESS;
}

// Each metric is the capture's value at the time of the second sample.
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* m) {
  const auto state = fake_nvml::current_state();
  if (!state) return NVML_ERROR_UNINITIALIZED;
  if (m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (m->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const nvmlGpmSample_st* s1 = m->sample1;
  const nvmlGpmSample_st* s2 = m->sample2;
  if (m->numMetrics > kGpmMetricCapacity || s1 == nullptr || s2 == nullptr ||
      s1->device == nullptr || s1->device != s2->device || !(s2->t > s1->t)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const nvmlDevice_st* d = state->device(const_cast<nvmlDevice_t>(s2->device));
  if (d == nullptr) return NVML_ERROR_INVALID_ARGUMENT;  // sampled before a re-init
  for (unsigned i = 0; i < m->numMetrics; ++i) {
    nvmlGpmMetric_t& metric = m->metrics[i];
    const auto field = field_for_metric(metric.metricId);
    const bool rate = field.ends_with("_mibs");
    metric.value = 0;
    metric.metricInfo.shortName = kNoName;
    metric.metricInfo.longName = kNoName;
    metric.metricInfo.unit = rate ? kUnitMibs : kUnitPercent;
    metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    if (field.empty()) continue;
    if (const auto e = d->error(field)) {
      metric.nvmlReturn = *e;
      continue;
    }
    if (const auto v = d->value(field, s2->t)) {
      metric.value = *v;
      metric.nvmlReturn = NVML_SUCCESS;
    }
  }
  return NVML_SUCCESS;
}
#endif  // FAKE_NVML_LEGACY

}  // extern "C"
