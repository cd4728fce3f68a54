// NvmlDevice's readers for dcgm-exporter's default counters, against a hand-made NVML function
// table: video engine utilization, memory temperature and NVLink throughput (field values), the
// slow cadence (PCIe replays, remapped rows, vGPU license) and XID events.
#include <gtest/gtest.h>

#include <deque>
#include <map>

#include "sources/nvml/nvml_device.hpp"

namespace gpudoctor {
namespace {

struct FieldAnswer {
  nvmlReturn_t ret = NVML_SUCCESS;
  unsigned long long value = 0;
};

struct FakeState {
  std::map<std::string, int> calls;
  std::map<unsigned, FieldAnswer> fields;  // by field id; others NOT_SUPPORTED
  std::map<unsigned, unsigned> scopes;     // the scopeId each field id was asked with
  nvmlReturn_t enc_ret = NVML_SUCCESS, dec_ret = NVML_SUCCESS;
  unsigned replays = 0;
  nvmlReturn_t rows_ret = NVML_SUCCESS;
  unsigned rows_corrected = 0, rows_uncorrected = 0, rows_failure = 0;
  nvmlGridLicensableFeatures_t license{};
  nvmlReturn_t register_ret = NVML_SUCCESS;
  std::deque<unsigned long long> xids;         // events waiting in the set
  nvmlReturn_t wait_ret = NVML_ERROR_TIMEOUT;  // once the events are gone
  unsigned last_timeout = 12345;
  int sets_alive = 0;
} g;

int dummy_set = 0;

NvmlApi make_api() {
  g = FakeState{};
  NvmlApi a;
  a.field_values = [](nvmlDevice_t, int n, nvmlFieldValue_t* fv) -> nvmlReturn_t {
    ++g.calls["fv"];
    for (int i = 0; i < n; ++i) {
      g.scopes[fv[i].fieldId] = fv[i].scopeId;
      const auto it = g.fields.find(fv[i].fieldId);
      fv[i].nvmlReturn = it == g.fields.end() ? NVML_ERROR_NOT_SUPPORTED : it->second.ret;
      fv[i].valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
      fv[i].value.ullVal = it == g.fields.end() ? 0 : it->second.value;
    }
    return NVML_SUCCESS;
  };
  a.encoder_util = [](nvmlDevice_t, unsigned* pct, unsigned* period) -> nvmlReturn_t {
    ++g.calls["enc"];
    *pct = 7;
    *period = 167000;
    return g.enc_ret;
  };
  a.decoder_util = [](nvmlDevice_t, unsigned* pct, unsigned* period) -> nvmlReturn_t {
    ++g.calls["dec"];
    *pct = 55;
    *period = 167000;
    return g.dec_ret;
  };
  a.pcie_replay_counter = [](nvmlDevice_t, unsigned* n) -> nvmlReturn_t {
    ++g.calls["replays"];
    *n = g.replays;
    return NVML_SUCCESS;
  };
  a.remapped_rows = [](nvmlDevice_t, unsigned* corr, unsigned* unc, unsigned* pending,
                       unsigned* failure) -> nvmlReturn_t {
    ++g.calls["rows"];
    *corr = g.rows_corrected;
    *unc = g.rows_uncorrected;
    *pending = 0;
    *failure = g.rows_failure;
    return g.rows_ret;
  };
  a.grid_licensable_features = [](nvmlDevice_t, nvmlGridLicensableFeatures_t* f) -> nvmlReturn_t {
    ++g.calls["license"];
    *f = g.license;
    return NVML_SUCCESS;
  };
  a.event_set_create = [](nvmlEventSet_t* set) -> nvmlReturn_t {
    *set = reinterpret_cast<nvmlEventSet_t>(&dummy_set);
    ++g.sets_alive;
    return NVML_SUCCESS;
  };
  a.register_events = [](nvmlDevice_t, unsigned long long types, nvmlEventSet_t) -> nvmlReturn_t {
    ++g.calls["register"];
    EXPECT_EQ(types, nvmlEventTypeXidCriticalError);
    return g.register_ret;
  };
  a.event_set_wait = [](nvmlEventSet_t, nvmlEventData_t* e, unsigned timeout) -> nvmlReturn_t {
    ++g.calls["wait"];
    g.last_timeout = timeout;
    if (g.xids.empty()) return g.wait_ret;
    e->eventType = nvmlEventTypeXidCriticalError;
    e->eventData = g.xids.front();
    g.xids.pop_front();
    return NVML_SUCCESS;
  };
  a.event_set_free = [](nvmlEventSet_t) -> nvmlReturn_t {
    --g.sets_alive;
    return NVML_SUCCESS;
  };
  return a;
}

TEST(NvmlCounters, VideoEngineUtilizationEachOnItsOwn) {
  NvmlApi api = make_api();
  g.enc_ret = NVML_ERROR_NOT_SUPPORTED;  // a GPU without NVENC (A100, H100)
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  for (int i = 0; i < 3; ++i) {
    const DeviceSample s = dev.sample(i);
    EXPECT_EQ(s[Field::kUtilEnc].state(), Reading::State::kUnsupported);
    EXPECT_EQ(s[Field::kUtilEnc].code(), NVML_ERROR_NOT_SUPPORTED);
    EXPECT_DOUBLE_EQ(s[Field::kUtilDec].value(), 55);
  }
  EXPECT_EQ(g.calls["enc"], 1);  // probed once, then skipped
  EXPECT_EQ(g.calls["dec"], 3);
}

TEST(NvmlCounters, MissingEntryPointsAreFunctionNotFound) {
  NvmlApi api;  // a driver with none of them
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  const DeviceSample s = dev.sample(0);
  for (Field f :
       {Field::kUtilEnc, Field::kUtilDec, Field::kTempMem, Field::kNvlink, Field::kPcieReplays,
        Field::kRemappedRowsCorrected, Field::kRemapFailure, Field::kVgpuLicensed, Field::kXid}) {
    EXPECT_EQ(s[f].state(), Reading::State::kUnsupported) << info(f).id;
    EXPECT_EQ(s[f].code(), NVML_ERROR_FUNCTION_NOT_FOUND) << info(f).id;
  }
}

TEST(NvmlCounters, MemoryTemperatureRidesTheFieldValueCall) {
  NvmlApi api = make_api();
  g.fields[NVML_FI_DEV_POWER_AVERAGE] = {NVML_SUCCESS, 300000};
  g.fields[NVML_FI_DEV_MEMORY_TEMP] = {NVML_SUCCESS, 71};
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  DeviceSample s = dev.sample(0);
  EXPECT_DOUBLE_EQ(s[Field::kTempMem].value(), 71);
  EXPECT_DOUBLE_EQ(s[Field::kPower].value(), 300);
  EXPECT_EQ(g.calls["fv"], 1);  // one call for power, memory temperature and NVLink
  // A GDDR board: not supported, learned once; the other field values go on.
  g.fields[NVML_FI_DEV_MEMORY_TEMP] = {NVML_ERROR_NOT_SUPPORTED, 0};
  s = dev.sample(1);
  EXPECT_EQ(s[Field::kTempMem].code(), NVML_ERROR_NOT_SUPPORTED);
  g.fields[NVML_FI_DEV_MEMORY_TEMP] = {NVML_SUCCESS, 80};
  s = dev.sample(2);
  EXPECT_EQ(s[Field::kTempMem].state(), Reading::State::kUnsupported);  // not asked again
  EXPECT_DOUBLE_EQ(s[Field::kPower].value(), 300);
}

TEST(NvmlCounters, NvlinkIsTheRateOfTheDataCountersOverAllLinks) {
  NvmlApi api = make_api();
  g.fields[NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX] = {NVML_SUCCESS, 5'000'000};
  g.fields[NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX] = {NVML_SUCCESS, 7'000'000};
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  DeviceSample s = dev.sample(10.0);  // first counters: no rate yet, and no false zero
  EXPECT_EQ(s[Field::kNvlink].state(), Reading::State::kNoData);
  EXPECT_EQ(g.scopes[NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX], 0xffffffffU);
  EXPECT_EQ(g.scopes[NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX], 0xffffffffU);
  g.fields[NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX].value += 512 * 1024;  // KiB
  g.fields[NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX].value += 1536 * 1024;
  s = dev.sample(10.5);
  EXPECT_DOUBLE_EQ(s[Field::kNvlink].value(), 2048 / 0.5);  // MiB/s, both directions
  s = dev.sample(11.5);                                     // nothing moved
  EXPECT_DOUBLE_EQ(s[Field::kNvlink].value(), 0);
  g.fields[NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX].value = 10;  // the driver was reloaded
  s = dev.sample(12.5);
  EXPECT_EQ(s[Field::kNvlink].state(), Reading::State::kNoData);
  g.fields[NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX].value += 1024;
  s = dev.sample(13.5);
  EXPECT_DOUBLE_EQ(s[Field::kNvlink].value(), 1);
  // Reads closer than 100 ms repeat the last rate and keep the older counters.
  g.fields[NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX].value += 1024;
  s = dev.sample(13.55);
  EXPECT_DOUBLE_EQ(s[Field::kNvlink].value(), 1);
  s = dev.sample(14.5);
  EXPECT_DOUBLE_EQ(s[Field::kNvlink].value(), 1);  // 1 MiB over the second since 13.5
}

TEST(NvmlCounters, NoNvlinkIsUnsupportedNotZero) {
  NvmlApi api = make_api();
  g.fields[NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX] = {NVML_SUCCESS, 5};
  // RX answers NOT_SUPPORTED (absent from the fake's answers)
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  for (int i = 0; i < 2; ++i) {
    const DeviceSample s = dev.sample(i);
    EXPECT_EQ(s[Field::kNvlink].state(), Reading::State::kUnsupported);
    EXPECT_EQ(s[Field::kNvlink].code(), NVML_ERROR_NOT_SUPPORTED);
  }
}

TEST(NvmlCounters, SlowFieldsAreReadEveryTenSecondsAndHeldBetween) {
  NvmlApi api = make_api();
  g.replays = 3;
  g.rows_corrected = 2;
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  DeviceSample s = dev.sample(100.0);
  EXPECT_DOUBLE_EQ(s[Field::kPcieReplays].value(), 3);
  EXPECT_DOUBLE_EQ(s[Field::kRemappedRowsCorrected].value(), 2);
  EXPECT_DOUBLE_EQ(s[Field::kRemappedRowsUncorrected].value(), 0);
  EXPECT_DOUBLE_EQ(s[Field::kRemapFailure].value(), 0);
  g.replays = 9;
  g.rows_failure = 1;
  for (double t = 101; t < 110; t += 1) {
    s = dev.sample(t);
    EXPECT_DOUBLE_EQ(s[Field::kPcieReplays].value(), 3) << t;  // held
  }
  EXPECT_EQ(g.calls["replays"], 1);
  EXPECT_EQ(g.calls["rows"], 1);
  s = dev.sample(110.0);
  EXPECT_DOUBLE_EQ(s[Field::kPcieReplays].value(), 9);
  EXPECT_DOUBLE_EQ(s[Field::kRemapFailure].value(), 1);
  EXPECT_EQ(g.calls["replays"], 2);
}

TEST(NvmlCounters, RowRemappingBeforeAmpereIsUnsupported) {
  NvmlApi api = make_api();
  g.rows_ret = NVML_ERROR_NOT_SUPPORTED;
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  dev.sample(0);
  const DeviceSample s = dev.sample(20);
  for (Field f :
       {Field::kRemappedRowsCorrected, Field::kRemappedRowsUncorrected, Field::kRemapFailure})
    EXPECT_EQ(s[f].code(), NVML_ERROR_NOT_SUPPORTED) << info(f).id;
  EXPECT_EQ(g.calls["rows"], 1);
}

TEST(NvmlCounters, VgpuLicenseOnlyInsideAVgpuGuest) {
  NvmlApi api = make_api();
  NvmlDevice bare(api, nullptr, 0);  // isGridLicenseSupported 0: bare metal
  bare.probe();
  EXPECT_EQ(bare.sample(0)[Field::kVgpuLicensed].code(), NVML_ERROR_NOT_SUPPORTED);

  g.license.isGridLicenseSupported = 1;
  g.license.licensableFeaturesCount = 2;
  g.license.gridLicensableFeatures[0].featureCode = 2;  // enabled elsewhere, not on this vGPU
  g.license.gridLicensableFeatures[0].featureState = 1;
  g.license.gridLicensableFeatures[1].featureCode = 4;
  g.license.gridLicensableFeatures[1].featureEnabled = 1;
  g.license.gridLicensableFeatures[1].featureState = 0;
  NvmlDevice guest(api, nullptr, 1);
  guest.probe();
  EXPECT_DOUBLE_EQ(guest.sample(0)[Field::kVgpuLicensed].value(), 0);  // not licensed: 0
  g.license.gridLicensableFeatures[1].featureState = 1;
  EXPECT_DOUBLE_EQ(guest.sample(10)[Field::kVgpuLicensed].value(), 1);
}

TEST(NvmlCounters, XidEventShowsUpOnceAndStaysTheLastValue) {
  NvmlApi api = make_api();
  {
    NvmlDevice dev(api, nullptr, 0);
    dev.probe();
    EXPECT_EQ(g.calls["register"], 1);
    DeviceSample s = dev.sample(0);
    EXPECT_EQ(s[Field::kXid].state(), Reading::State::kNoData);  // no events: no value
    EXPECT_EQ(g.last_timeout, 0u);                               // never waits
    g.xids = {31, 79};  // two events before the next sample: the last one is the value
    s = dev.sample(1);
    EXPECT_DOUBLE_EQ(s[Field::kXid].value(), 79);
    EXPECT_EQ(g.calls["wait"], 1 + 3);  // drained: two events, then TIMEOUT
    s = dev.sample(2);
    EXPECT_DOUBLE_EQ(s[Field::kXid].value(), 79);  // held, as dcgm-exporter's gauge
    EXPECT_EQ(g.calls["wait"], 1 + 3 + 1);
    g.xids = {13};
    EXPECT_DOUBLE_EQ(dev.sample(3)[Field::kXid].value(), 13);
    EXPECT_EQ(g.sets_alive, 1);
  }
  EXPECT_EQ(g.sets_alive, 0);  // the device frees its event set
}

TEST(NvmlCounters, XidStormIsTakenAFewDozenPerSample) {
  NvmlApi api = make_api();
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  for (unsigned k = 0; k < 100; ++k) g.xids.push_back(k);
  EXPECT_DOUBLE_EQ(dev.sample(0)[Field::kXid].value(), 63);  // 64 taken
  EXPECT_DOUBLE_EQ(dev.sample(1)[Field::kXid].value(), 99);  // the rest
}

TEST(NvmlCounters, XidEventsNotSupportedOrFailing) {
  NvmlApi api = make_api();
  g.register_ret = NVML_ERROR_NOT_SUPPORTED;
  {
    NvmlDevice dev(api, nullptr, 0);
    dev.probe();
    EXPECT_EQ(g.sets_alive, 0);  // the unused set is freed at once
    for (int i = 0; i < 2; ++i)
      EXPECT_EQ(dev.sample(i)[Field::kXid].code(), NVML_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(g.calls["register"], 1);
    EXPECT_EQ(g.calls["wait"], 0);
  }
  g.register_ret = NVML_SUCCESS;
  g.wait_ret = NVML_ERROR_UNKNOWN;
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  DeviceSample s = dev.sample(0);
  EXPECT_EQ(s[Field::kXid].state(), Reading::State::kError);  // a failed wait is not "no XID"
  g.wait_ret = NVML_ERROR_GPU_IS_LOST;
  s = dev.sample(1);
  EXPECT_TRUE(s.lost);
}

}  // namespace
}  // namespace gpudoctor
