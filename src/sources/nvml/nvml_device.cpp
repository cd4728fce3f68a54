#include "sources/nvml/nvml_device.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <utility>

#include <fmt/format.h>

namespace gpudoctor {
namespace {

// Codes after which a call is never tried again on this device.
bool is_permanent(nvmlReturn_t r) {
  return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION ||
         r == NVML_ERROR_FUNCTION_NOT_FOUND;
}

constexpr double kMiB = 1024.0 * 1024.0;

struct GpmMetricField {
  unsigned metric;
  Field field;
};
constexpr std::array<GpmMetricField, 12> kGpmMetrics{{
    {NVML_GPM_METRIC_GRAPHICS_UTIL, Field::kGpmGraphicsUtil},
    {NVML_GPM_METRIC_SM_UTIL, Field::kGpmSmUtil},
    {NVML_GPM_METRIC_SM_OCCUPANCY, Field::kGpmSmOccupancy},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, Field::kGpmTensorAny},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, Field::kGpmDramBw},
    {NVML_GPM_METRIC_FP64_UTIL, Field::kGpmFp64},
    {NVML_GPM_METRIC_FP32_UTIL, Field::kGpmFp32},
    {NVML_GPM_METRIC_FP16_UTIL, Field::kGpmFp16},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, Field::kGpmPcieTx},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, Field::kGpmPcieRx},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, Field::kGpmNvlinkRx},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, Field::kGpmNvlinkTx},
}};

// The field values read in one nvmlDeviceGetFieldValues call, in NvmlDevice::fv_caps_ order.
constexpr unsigned kAllLinks = 0xffffffffU;  // scopeId: every NVLink of the GPU (as DCGM asks)
struct FieldValueId {
  unsigned id;
  unsigned scope;
};
constexpr FieldValueId kFieldValueIds[] = {
    {NVML_FI_DEV_POWER_AVERAGE, 0},
    {NVML_FI_DEV_POWER_INSTANT, 0},
    {NVML_FI_DEV_MEMORY_TEMP, 0},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, kAllLinks},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, kAllLinks},
};
enum FieldValueSlot : size_t {
  kFvPowerAverage,
  kFvPowerInstant,
  kFvMemTemp,
  kFvNvlinkTx,
  kFvNvlinkRx
};

// Rates from counters need reads at least this far apart (seconds), as GPM metrics do.
constexpr double kMinRateSpanS = 0.1;

// At most this many events are taken from the event set per sample (an XID storm must not keep
// the worker in NVML); the rest wait for the next sample.
constexpr int kMaxEventsPerSample = 64;

// The catalogue's fields of one cadence (sample() copies the static and slow ones each time).
const std::vector<Field>& fields_of(Cadence c) {
  static const auto by_cadence = [] {
    std::array<std::vector<Field>, 3> out;
    for (const auto& fi : all_fields()) out[static_cast<size_t>(fi.cadence)].push_back(fi.field);
    return out;
  }();
  return by_cadence[static_cast<size_t>(c)];
}

// A field value as a double, nullopt for a value type this code does not know.
std::optional<double> field_value(const nvmlFieldValue_t& fv) {
  switch (fv.valueType) {
    case NVML_VALUE_TYPE_DOUBLE:
      return fv.value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return fv.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return static_cast<double>(fv.value.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<double>(fv.value.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<double>(fv.value.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT:
      return fv.value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return fv.value.usVal;
    default:
      return std::nullopt;
  }
}

Reading failed(nvmlReturn_t r) {
  return is_permanent(r) ? Reading::unsupported(r) : Reading::error(r);
}

template <class Fn>
std::string read_string(Fn fn, unsigned size) {
  std::vector<char> buf(size, '\0');
  if (fn(buf.data(), size) != NVML_SUCCESS) return "";
  buf.back() = '\0';
  return buf.data();
}

}  // namespace

NvmlDevice::NvmlDevice(const NvmlApi& api, nvmlDevice_t handle, unsigned index)
    : api_(api), handle_(handle) {
  info_.index = index;
  build_readers();
  caps_.resize(readers_.size());
}

NvmlDevice::~NvmlDevice() {
  if (api_.gpm_sample_free) {
    if (gpm_prev_) api_.gpm_sample_free(gpm_prev_);
    if (gpm_cur_) api_.gpm_sample_free(gpm_cur_);
  }
  if (events_ && api_.event_set_free) api_.event_set_free(events_);
}

void NvmlDevice::build_readers() {
  const auto& a = api_;
  nvmlDevice_t h = handle_;
  // Calls one "unsigned out" NVML getter and stores the value scaled into field f.
  auto scalar = [h](auto fn, Field f, double scale) {
    return [fn, h, f, scale](DeviceSample& s) -> nvmlReturn_t {
      if (!fn) return NVML_ERROR_FUNCTION_NOT_FOUND;
      unsigned v = 0;
      const nvmlReturn_t r = fn(h, &v);
      if (r == NVML_SUCCESS) s[f] = Reading::of(v * scale);
      return r;
    };
  };
  auto typed = [h](auto fn, unsigned type, Field f, double scale) {
    return [fn, h, type, f, scale](DeviceSample& s) -> nvmlReturn_t {
      if (!fn) return NVML_ERROR_FUNCTION_NOT_FOUND;
      unsigned v = 0;
      const nvmlReturn_t r = fn(h, type, &v);
      if (r == NVML_SUCCESS) s[f] = Reading::of(v * scale);
      return r;
    };
  };
  // nvmlDeviceGetEncoderUtilization / ...DecoderUtilization: percent and the sampling period.
  auto engine_util = [h](auto fn, Field f) {
    return [fn, h, f](DeviceSample& s) -> nvmlReturn_t {
      if (!fn) return NVML_ERROR_FUNCTION_NOT_FOUND;
      unsigned pct = 0, period_us = 0;
      const nvmlReturn_t r = fn(h, &pct, &period_us);
      if (r == NVML_SUCCESS) s[f] = Reading::of(pct);
      return r;
    };
  };
  using enum Field;
  using enum Cadence;
  readers_ = {
      {"utilization",
       {kUtilGpu, kUtilMem},
       kSample,
       [&a, h](DeviceSample& s) -> nvmlReturn_t {
         if (!a.utilization) return NVML_ERROR_FUNCTION_NOT_FOUND;
         nvmlUtilization_t u{};
         const nvmlReturn_t r = a.utilization(h, &u);
         if (r == NVML_SUCCESS) {
           s[kUtilGpu] = Reading::of(u.gpu);
           s[kUtilMem] = Reading::of(u.memory);
         }
         return r;
       }},
      {"field_values",
       {kPower, kPowerInstant, kTempMem, kNvlink},
       kSample,
       [this, &a, h](DeviceSample& s) -> nvmlReturn_t { return read_field_values(a, h, s); }},
      {"energy",
       {kEnergy},
       kSample,
       [&a, h](DeviceSample& s) -> nvmlReturn_t {
         if (!a.total_energy) return NVML_ERROR_FUNCTION_NOT_FOUND;
         unsigned long long mj = 0;
         const nvmlReturn_t r = a.total_energy(h, &mj);
         if (r == NVML_SUCCESS) s[kEnergy] = Reading::of(static_cast<double>(mj));
         return r;
       }},
      {"enforced_power_limit",
       {kPowerLimitEnforced},
       kSample,
       scalar(a.enforced_power_limit, kPowerLimitEnforced, 1e-3)},
      {"power_limit", {kPowerLimit}, kSample, scalar(a.power_limit, kPowerLimit, 1e-3)},
      {"power_default_limit",
       {kPowerLimitDefault},
       kStatic,
       scalar(a.power_default_limit, kPowerLimitDefault, 1e-3)},
      {"power_limit_constraints",
       {kPowerLimitMin, kPowerLimitMax},
       kStatic,
       [&a, h](DeviceSample& s) -> nvmlReturn_t {
         if (!a.power_limit_constraints) return NVML_ERROR_FUNCTION_NOT_FOUND;
         unsigned lo = 0, hi = 0;
         const nvmlReturn_t r = a.power_limit_constraints(h, &lo, &hi);
         if (r == NVML_SUCCESS) {
           s[kPowerLimitMin] = Reading::of(lo / 1000.0);
           s[kPowerLimitMax] = Reading::of(hi / 1000.0);
         }
         return r;
       }},
      {"temperature", {kTemp}, kSample, typed(a.temperature, NVML_TEMPERATURE_GPU, kTemp, 1)},
      {"temperature_threshold",
       {kTempSlowdown},
       kStatic,
       typed(a.temperature_threshold, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, kTempSlowdown, 1)},
      {"clock_sm", {kClockSm}, kSample, typed(a.clock, NVML_CLOCK_SM, kClockSm, 1)},
      {"clock_mem", {kClockMem}, kSample, typed(a.clock, NVML_CLOCK_MEM, kClockMem, 1)},
      {"max_clock_sm", {kClockSmMax}, kStatic, typed(a.max_clock, NVML_CLOCK_SM, kClockSmMax, 1)},
      {"max_clock_mem",
       {kClockMemMax},
       kStatic,
       typed(a.max_clock, NVML_CLOCK_MEM, kClockMemMax, 1)},
      {"app_clock_sm",
       {kClockAppSm},
       kSample,
       typed(a.app_clock, NVML_CLOCK_GRAPHICS, kClockAppSm, 1)},
      {"app_clock_mem",
       {kClockAppMem},
       kSample,
       typed(a.app_clock, NVML_CLOCK_MEM, kClockAppMem, 1)},
      {"pstate",
       {kPstate},
       kSample,
       [&a, h](DeviceSample& s) -> nvmlReturn_t {
         if (!a.pstate) return NVML_ERROR_FUNCTION_NOT_FOUND;
         unsigned p = NVML_PSTATE_UNKNOWN;
         const nvmlReturn_t r = a.pstate(h, &p);
         if (r == NVML_SUCCESS)
           s[kPstate] = p == NVML_PSTATE_UNKNOWN ? Reading::unsupported(NVML_ERROR_NOT_SUPPORTED)
                                                 : Reading::of(p);
         return r;
       }},
      {"clock_event_reasons",
       {kClockEventReasons},
       kSample,
       [&a, h](DeviceSample& s) -> nvmlReturn_t {
         if (!a.clock_event_reasons) return NVML_ERROR_FUNCTION_NOT_FOUND;
         unsigned long long mask = 0;
         const nvmlReturn_t r = a.clock_event_reasons(h, &mask);
         if (r == NVML_SUCCESS) s[kClockEventReasons] = Reading::of(static_cast<double>(mask));
         return r;
       }},
      {"memory",
       {kMemUsed},
       kSample,
       [&a, h](DeviceSample& s) -> nvmlReturn_t {
         if (!a.memory) return NVML_ERROR_FUNCTION_NOT_FOUND;
         nvmlMemory_t m{};
         const nvmlReturn_t r = a.memory(h, &m);
         if (r == NVML_SUCCESS) s[kMemUsed] = Reading::of(static_cast<double>(m.used) / kMiB);
         return r;
       }},
      {"memory_total",
       {kMemTotal},
       kStatic,
       [&a, h](DeviceSample& s) -> nvmlReturn_t {
         if (!a.memory) return NVML_ERROR_FUNCTION_NOT_FOUND;
         nvmlMemory_t m{};
         const nvmlReturn_t r = a.memory(h, &m);
         if (r == NVML_SUCCESS) s[kMemTotal] = Reading::of(static_cast<double>(m.total) / kMiB);
         return r;
       }},
      {"pcie_tx",
       {kPcieTx},
       kSample,
       typed(a.pcie_throughput, NVML_PCIE_UTIL_TX_BYTES, kPcieTx, 1.0 / 1024)},
      {"pcie_rx",
       {kPcieRx},
       kSample,
       typed(a.pcie_throughput, NVML_PCIE_UTIL_RX_BYTES, kPcieRx, 1.0 / 1024)},
      {"pcie_gen", {kPcieGen}, kSample, scalar(a.pcie_gen, kPcieGen, 1)},
      {"pcie_gen_max", {kPcieGenMax}, kStatic, scalar(a.pcie_gen_max, kPcieGenMax, 1)},
      {"pcie_width", {kPcieWidth}, kSample, scalar(a.pcie_width, kPcieWidth, 1)},
      {"pcie_width_max", {kPcieWidthMax}, kStatic, scalar(a.pcie_width_max, kPcieWidthMax, 1)},
      {"fan", {kFan}, kSample, scalar(a.fan, kFan, 1)},
      {"encoder_util", {kUtilEnc}, kSample, engine_util(a.encoder_util, kUtilEnc)},
      {"decoder_util", {kUtilDec}, kSample, engine_util(a.decoder_util, kUtilDec)},
      {"pcie_replays", {kPcieReplays}, kSlow, scalar(a.pcie_replay_counter, kPcieReplays, 1)},
      {"remapped_rows",
       {kRemappedRowsCorrected, kRemappedRowsUncorrected, kRemapFailure},
       kSlow,
       [&a, h](DeviceSample& s) -> nvmlReturn_t {
         if (!a.remapped_rows) return NVML_ERROR_FUNCTION_NOT_FOUND;
         unsigned corr = 0, unc = 0, pending = 0, failure = 0;
         const nvmlReturn_t r = a.remapped_rows(h, &corr, &unc, &pending, &failure);
         if (r == NVML_SUCCESS) {
           s[kRemappedRowsCorrected] = Reading::of(corr);
           s[kRemappedRowsUncorrected] = Reading::of(unc);
           s[kRemapFailure] = Reading::of(failure != 0 ? 1 : 0);
         }
         return r;
       }},
      // Licensing exists inside a vGPU guest only: elsewhere the call succeeds with
      // isGridLicenseSupported 0, which is "not supported", not "unlicensed".
      {"vgpu_license",
       {kVgpuLicensed},
       kSlow,
       [&a, h](DeviceSample& s) -> nvmlReturn_t {
         if (!a.grid_licensable_features) return NVML_ERROR_FUNCTION_NOT_FOUND;
         auto lic = std::make_unique<nvmlGridLicensableFeatures_t>();
         std::memset(lic.get(), 0, sizeof(*lic));
         const nvmlReturn_t r = a.grid_licensable_features(h, lic.get());
         if (r != NVML_SUCCESS) return r;
         if (lic->isGridLicenseSupported == 0) return NVML_ERROR_NOT_SUPPORTED;
         const unsigned n =
             std::min(lic->licensableFeaturesCount, NVML_GRID_LICENSE_FEATURE_MAX_COUNT);
         bool enabled = false, licensed = false;
         for (unsigned k = 0; k < n; ++k) {
           const nvmlGridLicensableFeature_t& f = lic->gridLicensableFeatures[k];
           if (f.featureEnabled == 0) continue;
           enabled = true;
           licensed = licensed || f.featureState != 0;
         }
         if (!enabled) return NVML_ERROR_NOT_SUPPORTED;  // no feature of this GPU needs a license
         s[kVgpuLicensed] = Reading::of(licensed ? 1 : 0);
         return r;
       }},
  };
}

// The field values: power (1-second average and instant, r530+), memory temperature and the
// NVLink data counters, in one call. Each field value learns on its own that it is unsupported,
// so losing one never hides another. The average power falls back to nvmlDeviceGetPowerUsage
// (itself the average on Ampere and newer). NVLink: the rate of the transmit plus receive
// counters between this sample and the previous one (none on the first, none when they went back).
nvmlReturn_t NvmlDevice::read_field_values(const NvmlApi& a, nvmlDevice_t h, DeviceSample& s) {
  static_assert(std::size(kFieldValueIds) == kFieldValueCount);
  std::array<std::optional<double>, kFieldValueCount> got{};
  std::array<nvmlReturn_t, kFieldValueCount> code{};
  if (!a.field_values) {
    for (auto& c : fv_caps_)
      if (!c.skip) c = {true, NVML_ERROR_FUNCTION_NOT_FOUND};
  }
  std::array<nvmlFieldValue_t, kFieldValueCount> fv{};
  std::array<size_t, kFieldValueCount> slot{};
  int n = 0;
  for (size_t k = 0; k < kFieldValueCount; ++k) {
    code[k] = fv_caps_[k].code;
    if (fv_caps_[k].skip) continue;
    fv[n].fieldId = kFieldValueIds[k].id;
    fv[n].scopeId = kFieldValueIds[k].scope;
    slot[n++] = k;
  }
  if (n > 0) {
    const nvmlReturn_t r = a.field_values(h, n, fv.data());
    if (r == NVML_ERROR_GPU_IS_LOST) return r;
    for (int i = 0; i < n; ++i) {
      const size_t k = slot[i];
      code[k] = r != NVML_SUCCESS ? r : fv[i].nvmlReturn;
      if (code[k] == NVML_SUCCESS) got[k] = field_value(fv[i]);
      if (!got[k] && code[k] == NVML_SUCCESS) code[k] = NVML_ERROR_NOT_SUPPORTED;  // unknown type
      if (!got[k] && is_permanent(code[k])) fv_caps_[k] = {true, code[k]};
    }
  }
  auto put = [&](size_t k, Field f, double scale) {
    s[f] = got[k] ? Reading::of(*got[k] * scale)
                  : (fv_caps_[k].skip ? Reading::unsupported(fv_caps_[k].code) : failed(code[k]));
  };
  put(kFvPowerInstant, Field::kPowerInstant, 1e-3);
  put(kFvMemTemp, Field::kTempMem, 1);
  if (got[kFvNvlinkTx] && got[kFvNvlinkRx]) {
    // As for GPM: counters closer than kMinRateSpanS give the last rate again (whole KiB over a
    // few microseconds would be noise), and keep the older counters for the next rate.
    const double kib = *got[kFvNvlinkTx] + *got[kFvNvlinkRx];
    if (nvlink_prev_s_ >= 0 && now_s_ >= nvlink_prev_s_ &&
        now_s_ - nvlink_prev_s_ < kMinRateSpanS) {
      s[Field::kNvlink] = nvlink_last_;
    } else {
      nvlink_last_ = Reading::no_data();
      if (nvlink_prev_s_ >= 0 && now_s_ > nvlink_prev_s_ && kib >= nvlink_prev_kib_)
        nvlink_last_ = Reading::of((kib - nvlink_prev_kib_) / 1024.0 / (now_s_ - nvlink_prev_s_));
      s[Field::kNvlink] = nvlink_last_;
      nvlink_prev_kib_ = kib;
      nvlink_prev_s_ = now_s_;
    }
  } else {
    const size_t k = got[kFvNvlinkTx] ? kFvNvlinkRx : kFvNvlinkTx;
    put(k, Field::kNvlink, 1);
    nvlink_prev_s_ = -1;
  }

  if (got[kFvPowerAverage]) {
    s[Field::kPower] = Reading::of(*got[kFvPowerAverage] / 1000.0);
    return NVML_SUCCESS;
  }
  if (!a.power_usage) {
    s[Field::kPower] = Reading::unsupported(NVML_ERROR_FUNCTION_NOT_FOUND);
    return NVML_SUCCESS;  // the reader itself stays: the other field values may still answer
  }
  if (power_usage_.skip) {
    s[Field::kPower] = Reading::unsupported(power_usage_.code);
    return NVML_SUCCESS;
  }
  unsigned mw = 0;
  const nvmlReturn_t r = a.power_usage(h, &mw);
  if (r == NVML_ERROR_GPU_IS_LOST) return r;
  if (is_permanent(r)) power_usage_ = {true, r};
  s[Field::kPower] = r == NVML_SUCCESS ? Reading::of(mw / 1000.0) : failed(r);
  return NVML_SUCCESS;
}

void NvmlDevice::probe() {
  const auto& a = api_;
  nvmlDevice_t h = handle_;
  if (a.name)
    info_.name = read_string([&](char* b, unsigned n) { return a.name(h, b, n); },
                             NVML_DEVICE_NAME_V2_BUFFER_SIZE);
  if (a.uuid)
    info_.uuid = read_string([&](char* b, unsigned n) { return a.uuid(h, b, n); },
                             NVML_DEVICE_UUID_V2_BUFFER_SIZE);
  if (a.serial)
    info_.serial = read_string([&](char* b, unsigned n) { return a.serial(h, b, n); },
                               NVML_DEVICE_SERIAL_BUFFER_SIZE);
  if (a.pci_info) {
    nvmlPciInfo_t pci{};
    if (a.pci_info(h, &pci) == NVML_SUCCESS) {
      pci.busId[sizeof(pci.busId) - 1] = '\0';
      pci.busIdLegacy[sizeof(pci.busIdLegacy) - 1] = '\0';
      // _v2 fills only the legacy (short) field of the older, smaller struct.
      info_.pci_bus_id = pci.busId[0] ? pci.busId : pci.busIdLegacy;
    }
  }
  unsigned v = 0, pending = 0;
  if (a.persistence_mode && a.persistence_mode(h, &v) == NVML_SUCCESS)
    info_.persistence_mode = v == NVML_FEATURE_ENABLED;
  if (a.mig_mode && a.mig_mode(h, &v, &pending) == NVML_SUCCESS)
    info_.mig_mode = v == NVML_FEATURE_ENABLED;
  if (a.architecture && a.architecture(h, &v) == NVML_SUCCESS)
    info_.architecture = static_cast<Architecture>(v <= 10 ? v : 0);
  if (a.gpm_query_support && a.gpm_sample_alloc && a.gpm_sample_get && a.gpm_metrics_get) {
    nvmlGpmSupport_t support{};
    support.version = NVML_GPM_SUPPORT_VERSION;
    info_.gpm_supported =
        a.gpm_query_support(h, &support) == NVML_SUCCESS && support.isSupportedDevice != 0;
  }
  if (info_.gpm_supported) {
    if (a.gpm_sample_alloc(&gpm_prev_) != NVML_SUCCESS ||
        a.gpm_sample_alloc(&gpm_cur_) != NVML_SUCCESS)
      info_.gpm_supported = false;
  }
  if (!info_.gpm_supported)
    gpm_cap_ = {true, a.gpm_metrics_get ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_FUNCTION_NOT_FOUND};
  register_xid_events();  // before the first sample: XIDs from now on are seen

  // Static fields: read now and keep. Dynamic ones are probed by their first sample().
  for (size_t i = 0; i < readers_.size(); ++i)
    if (readers_[i].cadence == Cadence::kStatic) run_reader(i, static_);
  static_live_ = static_;
}

void NvmlDevice::run_reader(size_t i, DeviceSample& out) {
  Reader& rd = readers_[i];
  Capability& cap = caps_[i];
  if (cap.skip) {
    for (Field f : rd.fields) out[f] = Reading::unsupported(cap.code);
    return;
  }
  const nvmlReturn_t r = rd.read(out);
  if (r == NVML_SUCCESS) return;
  if (r == NVML_ERROR_GPU_IS_LOST) lost_ = true;
  if (is_permanent(r)) cap = {true, r};
  for (Field f : rd.fields)
    if (!out[f].has_value()) out[f] = is_permanent(r) ? Reading::unsupported(r) : Reading::error(r);
}

DeviceSample NvmlDevice::placeholder(int32_t code) const {
  DeviceSample s = static_;
  for (const auto& fi : all_fields())
    if (fi.cadence != Cadence::kStatic) s[fi.field] = Reading::error(code);
  s.lost = lost_ || code == NVML_ERROR_GPU_IS_LOST;
  return s;
}

DeviceSample NvmlDevice::sample(double now_s) {
  if (lost_) return placeholder(NVML_ERROR_GPU_IS_LOST);
  DeviceSample s;
  s.time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  // A static field that failed transiently at probe time (not unsupported) is read again.
  for (size_t i = 0; i < readers_.size() && !lost_; ++i)
    if (readers_[i].cadence == Cadence::kStatic && !caps_[i].skip &&
        !static_live_[readers_[i].fields.front()].has_value())
      run_reader(i, static_live_);
  for (Field f : fields_of(Cadence::kStatic)) s[f] = static_live_[f];
  now_s_ = now_s;
  for (size_t i = 0; i < readers_.size() && !lost_; ++i)
    if (readers_[i].cadence == Cadence::kSample) run_reader(i, s);
  // Slow fields: read when kSlowCadenceSeconds have passed, held in the samples between.
  if (slow_read_s_ < 0 || now_s - slow_read_s_ >= kSlowCadenceSeconds || now_s < slow_read_s_) {
    for (size_t i = 0; i < readers_.size() && !lost_; ++i)
      if (readers_[i].cadence == Cadence::kSlow) run_reader(i, slow_);
    slow_read_s_ = now_s;
  }
  for (Field f : fields_of(Cadence::kSlow)) s[f] = slow_[f];
  if (!lost_ && read_xid(s) == NVML_ERROR_GPU_IS_LOST) lost_ = true;
  if (!lost_) read_processes(s);
  if (!lost_ && read_gpm(s, now_s) == NVML_ERROR_GPU_IS_LOST) lost_ = true;
  if (lost_) return placeholder(NVML_ERROR_GPU_IS_LOST);
  return s;
}

DeviceHealth NvmlDevice::read_health() {
  DeviceHealth out;
  out.read = true;
  const auto& a = api_;
  nvmlDevice_t h = handle_;
  // Stores the outcome of one call into its readings: the values on success, else the code.
  auto settle = [this](nvmlReturn_t r, std::initializer_list<std::pair<Reading*, double>> fields) {
    if (r == NVML_ERROR_GPU_IS_LOST) lost_ = true;
    for (const auto& [reading, v] : fields)
      *reading = r == NVML_SUCCESS ? Reading::of(v) : failed(r);
  };
  if (lost_) {
    for (const auto& f : kHealthFields) out.*f.member = Reading::error(NVML_ERROR_GPU_IS_LOST);
    return out;
  }

  {
    unsigned cur = 0, pending = 0;
    const nvmlReturn_t r =
        a.ecc_mode ? a.ecc_mode(h, &cur, &pending) : NVML_ERROR_FUNCTION_NOT_FOUND;
    settle(r, {{&out.ecc_mode_current, cur == NVML_FEATURE_ENABLED ? 1.0 : 0.0},
               {&out.ecc_mode_pending, pending == NVML_FEATURE_ENABLED ? 1.0 : 0.0}});
  }
  {
    unsigned cur = 0, pending = 0;
    const nvmlReturn_t r =
        a.mig_mode ? a.mig_mode(h, &cur, &pending) : NVML_ERROR_FUNCTION_NOT_FOUND;
    settle(r, {{&out.mig_mode_pending, pending == NVML_FEATURE_ENABLED ? 1.0 : 0.0}});
  }
  struct EccCounter {
    Reading* out;
    unsigned type, counter;
  };
  const EccCounter counters[] = {
      {&out.ecc_volatile_corrected, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC},
      {&out.ecc_volatile_uncorrected, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC},
      {&out.ecc_aggregate_corrected, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC},
      {&out.ecc_aggregate_uncorrected, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC},
  };
  for (const auto& c : counters) {
    unsigned long long n = 0;
    const nvmlReturn_t r = a.total_ecc_errors ? a.total_ecc_errors(h, c.type, c.counter, &n)
                                              : NVML_ERROR_FUNCTION_NOT_FOUND;
    settle(r, {{c.out, static_cast<double>(n)}});
  }
  // Count only: pageCount 0 asks for the size. INSUFFICIENT_SIZE means pages exist and the count
  // was filled in; the addresses themselves are not needed.
  const std::pair<Reading*, unsigned> causes[] = {
      {&out.retired_pages_sbe, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS},
      {&out.retired_pages_dbe, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR},
  };
  for (const auto& [reading, cause] : causes) {
    unsigned count = 0;
    unsigned long long unused = 0;
    nvmlReturn_t r = a.retired_pages ? a.retired_pages(h, cause, &count, &unused)
                                     : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) r = NVML_SUCCESS;
    settle(r, {{reading, static_cast<double>(count)}});
  }
  {
    unsigned pending = 0;
    const nvmlReturn_t r = a.retired_pages_pending ? a.retired_pages_pending(h, &pending)
                                                   : NVML_ERROR_FUNCTION_NOT_FOUND;
    settle(r, {{&out.retired_pages_pending, pending == NVML_FEATURE_ENABLED ? 1.0 : 0.0}});
  }
  {
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    const nvmlReturn_t r = a.remapped_rows ? a.remapped_rows(h, &corr, &unc, &pending, &failure)
                                           : NVML_ERROR_FUNCTION_NOT_FOUND;
    settle(r, {{&out.remapped_rows_corrected, static_cast<double>(corr)},
               {&out.remapped_rows_uncorrected, static_cast<double>(unc)},
               {&out.remap_pending, pending != 0 ? 1.0 : 0.0},
               {&out.remap_failure, failure != 0 ? 1.0 : 0.0}});
  }
  const std::pair<Reading*, unsigned> clocks[] = {
      {&out.app_clock_default_sm_mhz, NVML_CLOCK_GRAPHICS},
      {&out.app_clock_default_mem_mhz, NVML_CLOCK_MEM},
  };
  for (const auto& [reading, type] : clocks) {
    unsigned mhz = 0;
    const nvmlReturn_t r =
        a.default_app_clock ? a.default_app_clock(h, type, &mhz) : NVML_ERROR_FUNCTION_NOT_FOUND;
    settle(r, {{reading, static_cast<double>(mhz)}});
  }
  return out;
}

void NvmlDevice::register_xid_events() {
  const auto& a = api_;
  if (xid_cap_.skip || events_) return;
  if (!a.event_set_create || !a.register_events || !a.event_set_wait || !a.event_set_free) {
    xid_cap_ = {true, NVML_ERROR_FUNCTION_NOT_FOUND};
    return;
  }
  nvmlEventSet_t set = nullptr;
  nvmlReturn_t r = a.event_set_create(&set);
  if (r == NVML_SUCCESS) {
    r = a.register_events(handle_, nvmlEventTypeXidCriticalError, set);
    if (r != NVML_SUCCESS) a.event_set_free(set);
  }
  if (r == NVML_SUCCESS) {
    events_ = set;
  } else if (r == NVML_ERROR_GPU_IS_LOST) {
    lost_ = true;
  } else if (is_permanent(r)) {
    xid_cap_ = {true, r};
  } else {
    xid_cap_.code = r;  // transient: tried again by the next sample
  }
}

// The events that arrived since the last sample, without waiting (timeout 0); the reading is
// the last XID seen since gpudoctor started, and no value while there has been none.
nvmlReturn_t NvmlDevice::read_xid(DeviceSample& out) {
  register_xid_events();
  if (lost_) return NVML_ERROR_GPU_IS_LOST;
  if (xid_cap_.skip) {
    out[Field::kXid] = Reading::unsupported(xid_cap_.code);
    return NVML_SUCCESS;
  }
  nvmlReturn_t r = events_ ? NVML_ERROR_TIMEOUT : xid_cap_.code;
  for (int k = 0; events_ && k < kMaxEventsPerSample; ++k) {
    nvmlEventData_t e{};
    r = api_.event_set_wait(events_, &e, 0);
    if (r != NVML_SUCCESS) break;
    if ((e.eventType & nvmlEventTypeXidCriticalError) != 0)
      last_xid_ = static_cast<double>(e.eventData);
  }
  if (r == NVML_ERROR_GPU_IS_LOST) return r;
  if (is_permanent(r)) {
    xid_cap_ = {true, r};
    out[Field::kXid] = Reading::unsupported(r);
  } else if (last_xid_) {
    out[Field::kXid] = Reading::of(*last_xid_);
  } else if (r != NVML_SUCCESS && r != NVML_ERROR_TIMEOUT) {
    out[Field::kXid] = Reading::error(r);  // no value is not "no XID": the wait itself failed
  }
  return NVML_SUCCESS;
}

void NvmlDevice::read_processes(DeviceSample& out) {
  const auto& a = api_;
  if (proc_cap_.skip || !a.compute_processes) {
    if (!a.compute_processes) proc_cap_ = {true, NVML_ERROR_FUNCTION_NOT_FOUND};
    return;
  }
  std::vector<nvmlProcessInfo_t> procs(8);
  unsigned count = static_cast<unsigned>(procs.size());
  nvmlReturn_t r = a.compute_processes(handle_, &count, procs.data());
  for (int tries = 0; r == NVML_ERROR_INSUFFICIENT_SIZE && tries < 3; ++tries) {
    procs.resize(count + 8);  // processes may start between the two calls
    count = static_cast<unsigned>(procs.size());
    r = a.compute_processes(handle_, &count, procs.data());
  }
  if (r == NVML_ERROR_GPU_IS_LOST) lost_ = true;
  if (r != NVML_SUCCESS) {
    if (is_permanent(r)) proc_cap_ = {true, r};
    return;
  }
  out.processes_supported = true;
  procs.resize(count);
  for (const auto& p : procs) {
    ProcessInfo pi;
    pi.pid = p.pid;
    if (p.usedGpuMemory != NVML_VALUE_NOT_AVAILABLE)
      pi.used_memory_mib = static_cast<double>(p.usedGpuMemory) / kMiB;
    auto it = process_names_.find(p.pid);
    if (it == process_names_.end()) {
      std::string name;
      if (a.process_name)
        name = read_string([&](char* b, unsigned n) { return a.process_name(p.pid, b, n); }, 256);
      if (process_names_.size() > 4096) process_names_.clear();  // bound the cache
      it = process_names_.emplace(p.pid, name).first;
    }
    pi.name = it->second;
    out.processes.push_back(std::move(pi));
  }
  if (out.processes.empty() || proc_util_cap_.skip || !a.process_utilization) return;
  // Ask only for samples newer than the last one seen; NOT_FOUND means none arrived since, and
  // then the last known share of each process stands.
  unsigned n = 0;
  r = a.process_utilization(handle_, nullptr, &n, proc_util_last_us_);
  if (r == NVML_ERROR_INSUFFICIENT_SIZE && n > 0) {
    std::vector<nvmlProcessUtilizationSample_t> util(n);
    r = a.process_utilization(handle_, util.data(), &n, proc_util_last_us_);
    if (r == NVML_SUCCESS) {
      util.resize(std::min<size_t>(n, util.size()));
      for (const auto& u : util) {
        auto& known = proc_util_[u.pid];
        if (u.timeStamp >= known.time_us) known = {u.timeStamp, u.smUtil, u.memUtil};
        proc_util_last_us_ = std::max(proc_util_last_us_, u.timeStamp);
      }
    }
  }
  if (is_permanent(r)) proc_util_cap_ = {true, r};
  std::unordered_map<unsigned, ProcUtil> alive;
  for (auto& pi : out.processes) {
    auto it = proc_util_.find(pi.pid);
    if (it == proc_util_.end()) continue;
    pi.sm_util_pct = it->second.sm;
    pi.mem_util_pct = it->second.mem;
    alive.insert(*it);
  }
  proc_util_.swap(alive);  // forget processes that ended
}

nvmlReturn_t NvmlDevice::read_gpm(DeviceSample& out, double now_s) {
  if (gpm_cap_.skip) {
    for (const auto& m : kGpmMetrics) out[m.field] = Reading::unsupported(gpm_cap_.code);
    return NVML_SUCCESS;
  }
  const auto& a = api_;
  auto fill_last = [&] {
    for (const auto& m : kGpmMetrics) out[m.field] = gpm_last_[index_of(m.field)];
  };
  // GPM needs two samples at least 100 ms apart; closer calls reuse the last computed metrics.
  if (gpm_prev_s_ >= 0 && now_s - gpm_prev_s_ < 0.1) {
    fill_last();
    return NVML_SUCCESS;
  }
  const nvmlReturn_t r = a.gpm_sample_get(handle_, gpm_cur_);
  if (r != NVML_SUCCESS) {
    if (is_permanent(r)) gpm_cap_ = {true, r};
    for (const auto& m : kGpmMetrics)
      out[m.field] = is_permanent(r) ? Reading::unsupported(r) : Reading::error(r);
    return r;
  }
  if (gpm_prev_s_ >= 0) {
    auto mg = std::make_unique<nvmlGpmMetricsGet_t>();
    std::memset(mg.get(), 0, sizeof(*mg));
    mg->version = NVML_GPM_METRICS_GET_VERSION;
    mg->numMetrics = kGpmMetrics.size();
    mg->sample1 = gpm_prev_;
    mg->sample2 = gpm_cur_;
    for (size_t k = 0; k < kGpmMetrics.size(); ++k) mg->metrics[k].metricId = kGpmMetrics[k].metric;
    const nvmlReturn_t mr = a.gpm_metrics_get(mg.get());
    for (size_t k = 0; k < kGpmMetrics.size(); ++k) {
      const nvmlGpmMetric_t& m = mg->metrics[k];
      Reading rd;
      if (mr != NVML_SUCCESS)
        rd = Reading::error(mr);
      else if (m.nvmlReturn != NVML_SUCCESS)
        rd = Reading::unsupported(m.nvmlReturn);
      else
        rd = Reading::of(m.value);
      gpm_last_[index_of(kGpmMetrics[k].field)] = rd;
    }
  }
  std::swap(gpm_prev_, gpm_cur_);
  gpm_prev_s_ = now_s;
  fill_last();
  return NVML_SUCCESS;
}

}  // namespace gpudoctor
