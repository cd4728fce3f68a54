#include <gtest/gtest.h>

#include "sources/nvml/capture_writer.hpp"

namespace gpudoctor {
namespace {

TEST(CaptureWriter, WritesValuesErrorsAndHoldsRepeats) {
  std::vector<DeviceInfo> devices(1);
  devices[0].name = "NVIDIA H100 80GB HBM3";
  devices[0].architecture = Architecture::kHopper;
  CaptureWriter w({"550.54.15", "12.4", "12.550", "node"}, devices);
  Frame f;
  f.time_s = 10;
  f.devices.resize(1);
  f.devices[0][Field::kUtilGpu] = Reading::of(99);
  f.devices[0][Field::kPowerInstant] = Reading::unsupported(nvml_code::kNoPermission);
  f.devices[0][Field::kFan] = Reading::unsupported(nvml_code::kNotSupported);
  w.add(f);
  f.time_s = 10.5;
  w.add(f);
  f.time_s = 10.5;  // same time again: dropped, the replay needs increasing times
  w.add(f);
  const auto j = w.to_json();
  EXPECT_EQ(j["system"]["cuda_driver_version"], 12040);
  const auto& d = j["devices"][0];
  EXPECT_EQ(d["architecture"], "hopper");
  EXPECT_EQ(d["errors"]["power_instant_w"], "NO_PERMISSION");
  EXPECT_FALSE(d["errors"].contains("fan_pct"));  // absent already replays as NOT_SUPPORTED
  ASSERT_EQ(d["samples"].size(), 2u);
  EXPECT_EQ(d["samples"][0]["values"]["util_gpu_pct"], 99);
  EXPECT_FALSE(d["samples"][1]["values"].contains("util_gpu_pct"));  // held, not repeated
  EXPECT_EQ(d["samples"][1]["t_s"], 0.5);
}

TEST(CaptureWriter, GpuLostFromTheStartStillHasASample) {
  CaptureWriter w({}, std::vector<DeviceInfo>(1));
  Frame f;
  f.devices.resize(1);
  f.devices[0].lost = true;
  w.add(f);
  const auto j = w.to_json();
  EXPECT_EQ(j["devices"][0]["lost_at_s"], 0.0);
  EXPECT_EQ(j["devices"][0]["samples"].size(), 1u);
}

}  // namespace
}  // namespace gpudoctor
