// NvmlDevice against a hand-made NVML function table: probing, skipping what is unsupported,
// errors, lost GPUs and GPM pairing, without any library.
#include <gtest/gtest.h>

#include <map>

#include "sources/nvml/nvml_device.hpp"

namespace gpudoctor {
namespace {

struct FakeState {
  std::map<std::string, int> calls;
  nvmlReturn_t util_ret = NVML_SUCCESS;
  nvmlReturn_t fan_ret = NVML_ERROR_NOT_SUPPORTED;
  nvmlReturn_t instant_ret = NVML_ERROR_NO_PERMISSION;
  nvmlReturn_t average_ret = NVML_SUCCESS;
  nvmlReturn_t default_limit_ret = NVML_SUCCESS;
  int gpm_tick = 0;
} g;

struct FakeGpmSample {
  int tick;
};

NvmlApi make_api() {
  g = FakeState{};
  NvmlApi a;
  a.utilization = [](nvmlDevice_t, nvmlUtilization_t* u) -> nvmlReturn_t {
    ++g.calls["util"];
    u->gpu = 97;
    u->memory = 40;
    return g.util_ret;
  };
  a.fan = [](nvmlDevice_t, unsigned* v) -> nvmlReturn_t {
    ++g.calls["fan"];
    *v = 50;
    return g.fan_ret;
  };
  a.field_values = [](nvmlDevice_t, int n, nvmlFieldValue_t* fv) -> nvmlReturn_t {
    ++g.calls["fv"];
    for (int i = 0; i < n; ++i) {
      fv[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      fv[i].nvmlReturn = fv[i].fieldId == NVML_FI_DEV_POWER_INSTANT ? g.instant_ret : g.average_ret;
      fv[i].value.uiVal = 250500;
    }
    return NVML_SUCCESS;
  };
  a.power_usage = [](nvmlDevice_t, unsigned* mw) -> nvmlReturn_t {
    ++g.calls["power_usage"];
    *mw = 1;
    return NVML_SUCCESS;
  };
  a.gpm_query_support = [](nvmlDevice_t, nvmlGpmSupport_t* s) -> nvmlReturn_t {
    s->isSupportedDevice = s->version == NVML_GPM_SUPPORT_VERSION ? 1 : 0;
    return NVML_SUCCESS;
  };
  a.gpm_sample_alloc = [](nvmlGpmSample_t* s) -> nvmlReturn_t {
    *s = reinterpret_cast<nvmlGpmSample_t>(new FakeGpmSample{0});
    return NVML_SUCCESS;
  };
  a.gpm_sample_free = [](nvmlGpmSample_t s) -> nvmlReturn_t {
    delete reinterpret_cast<FakeGpmSample*>(s);
    return NVML_SUCCESS;
  };
  a.gpm_sample_get = [](nvmlDevice_t, nvmlGpmSample_t s) -> nvmlReturn_t {
    ++g.calls["gpm_get"];
    reinterpret_cast<FakeGpmSample*>(s)->tick = ++g.gpm_tick;
    return NVML_SUCCESS;
  };
  a.gpm_metrics_get = [](nvmlGpmMetricsGet_t* m) -> nvmlReturn_t {
    const int t1 = reinterpret_cast<FakeGpmSample*>(m->sample1)->tick;
    const int t2 = reinterpret_cast<FakeGpmSample*>(m->sample2)->tick;
    for (unsigned i = 0; i < m->numMetrics; ++i) {
      // SM util encodes the pair so the test can see which samples were used.
      m->metrics[i].nvmlReturn = m->metrics[i].metricId == NVML_GPM_METRIC_SM_UTIL
                                     ? NVML_SUCCESS
                                     : NVML_ERROR_NOT_SUPPORTED;
      m->metrics[i].value = t1 * 10 + t2;
    }
    return NVML_SUCCESS;
  };
  return a;
}

TEST(NvmlDevice, UnsupportedCallsAreProbedOnceThenSkipped) {
  NvmlApi api = make_api();
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  for (int i = 0; i < 3; ++i) {
    const DeviceSample s = dev.sample(i * 1.0);
    EXPECT_EQ(s[Field::kFan].state(), Reading::State::kUnsupported);
    EXPECT_EQ(s[Field::kFan].code(), NVML_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(s[Field::kUtilGpu].value(), 97);
  }
  EXPECT_EQ(g.calls["fan"], 1);
  EXPECT_EQ(g.calls["util"], 3);
}

TEST(NvmlDevice, MissingSymbolsReadAsUnsupportedNotZero) {
  NvmlApi api = make_api();
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  const DeviceSample s = dev.sample(0);
  EXPECT_EQ(s[Field::kTemp].state(), Reading::State::kUnsupported);
  EXPECT_EQ(s[Field::kTemp].code(), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(s[Field::kPowerLimitDefault].code(), NVML_ERROR_FUNCTION_NOT_FOUND);
}

TEST(NvmlDevice, PowerFromFieldValuesWithPerFieldPermission) {
  NvmlApi api = make_api();
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  const DeviceSample s = dev.sample(0);
  EXPECT_DOUBLE_EQ(s[Field::kPower].value(), 250.5);
  EXPECT_EQ(s[Field::kPowerInstant].state(), Reading::State::kUnsupported);
  EXPECT_EQ(s[Field::kPowerInstant].code(), NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(g.calls["power_usage"], 0);  // the average field answered
}

TEST(NvmlDevice, UnsupportedAveragePowerFallsBackWithoutHidingInstant) {
  NvmlApi api = make_api();
  g.average_ret = NVML_ERROR_NOT_SUPPORTED;
  g.instant_ret = NVML_SUCCESS;
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  for (int i = 0; i < 2; ++i) {
    const DeviceSample s = dev.sample(i);
    EXPECT_DOUBLE_EQ(s[Field::kPower].value(), 0.001);  // from nvmlDeviceGetPowerUsage
    EXPECT_DOUBLE_EQ(s[Field::kPowerInstant].value(), 250.5);
  }
  EXPECT_EQ(g.calls["power_usage"], 2);
}

TEST(NvmlDevice, StaticFieldFailingTransientlyAtProbeIsReadAgain) {
  NvmlApi api = make_api();
  api.power_default_limit = [](nvmlDevice_t, unsigned* mw) -> nvmlReturn_t {
    ++g.calls["default_limit"];
    *mw = 700000;
    return g.default_limit_ret;
  };
  g.default_limit_ret = NVML_ERROR_UNKNOWN;
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  EXPECT_EQ(dev.sample(0)[Field::kPowerLimitDefault].state(), Reading::State::kError);
  g.default_limit_ret = NVML_SUCCESS;
  EXPECT_DOUBLE_EQ(dev.sample(1)[Field::kPowerLimitDefault].value(), 700);
  EXPECT_DOUBLE_EQ(dev.sample(2)[Field::kPowerLimitDefault].value(), 700);
  EXPECT_EQ(g.calls["default_limit"], 3);  // probe, the failed retry, the good one; then cached
}

TEST(NvmlDevice, TransientErrorsAreRetried) {
  NvmlApi api = make_api();
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  g.util_ret = NVML_ERROR_UNKNOWN;
  DeviceSample s = dev.sample(0);
  EXPECT_EQ(s[Field::kUtilGpu].state(), Reading::State::kError);
  EXPECT_EQ(s[Field::kUtilGpu].code(), NVML_ERROR_UNKNOWN);
  g.util_ret = NVML_SUCCESS;
  s = dev.sample(1);
  EXPECT_EQ(s[Field::kUtilGpu].value(), 97);
}

TEST(NvmlDevice, LostGpuStopsCallingAndSaysSo) {
  NvmlApi api = make_api();
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  g.util_ret = NVML_ERROR_GPU_IS_LOST;
  DeviceSample s = dev.sample(0);
  EXPECT_TRUE(s.lost);
  EXPECT_EQ(s[Field::kUtilGpu].code(), NVML_ERROR_GPU_IS_LOST);
  const int calls = g.calls["util"];
  s = dev.sample(1);
  EXPECT_TRUE(s.lost);
  EXPECT_EQ(g.calls["util"], calls);
}

TEST(NvmlDevice, GpmComputesFromPairsAtLeast100msApart) {
  NvmlApi api = make_api();
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  ASSERT_TRUE(dev.info().gpm_supported);
  DeviceSample s = dev.sample(0.0);  // first sample: no pair yet
  EXPECT_EQ(s[Field::kGpmSmUtil].state(), Reading::State::kNoData);
  s = dev.sample(0.05);  // too close: no new GPM sample taken
  EXPECT_EQ(g.calls["gpm_get"], 1);
  EXPECT_EQ(s[Field::kGpmSmUtil].state(), Reading::State::kNoData);
  s = dev.sample(0.15);  // pair (tick 1, tick 2)
  EXPECT_DOUBLE_EQ(s[Field::kGpmSmUtil].value(), 12);
  EXPECT_EQ(s[Field::kGpmTensorAny].state(), Reading::State::kUnsupported);
  s = dev.sample(0.20);  // too close to 0.15: last metrics repeated
  EXPECT_DOUBLE_EQ(s[Field::kGpmSmUtil].value(), 12);
  s = dev.sample(0.30);  // pair (2, 3)
  EXPECT_DOUBLE_EQ(s[Field::kGpmSmUtil].value(), 23);
  EXPECT_EQ(g.calls["gpm_get"], 3);
}

TEST(NvmlDevice, NoGpmOnOlderGpusIsUnsupported) {
  NvmlApi api = make_api();
  api.gpm_query_support = [](nvmlDevice_t, nvmlGpmSupport_t* s) -> nvmlReturn_t {
    s->isSupportedDevice = 0;
    return NVML_SUCCESS;
  };
  NvmlDevice dev(api, nullptr, 0);
  dev.probe();
  EXPECT_FALSE(dev.info().gpm_supported);
  const DeviceSample s = dev.sample(0);
  EXPECT_EQ(s[Field::kGpmSmUtil].state(), Reading::State::kUnsupported);
  EXPECT_EQ(g.calls["gpm_get"], 0);
}

}  // namespace
}  // namespace gpudoctor
