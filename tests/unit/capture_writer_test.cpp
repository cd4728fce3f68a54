#include <gtest/gtest.h>

#include "formats/load.hpp"
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

// The last XID is written when it changes: each sample that has "xid" replays as one event
// (docs/capture-format.md), so a held value must not repeat.
TEST(CaptureWriter, XidOnlyWhenANewOneArrives) {
  CaptureWriter w({}, std::vector<DeviceInfo>(1));
  Frame f;
  f.devices.resize(1);
  for (const auto& [t, xid] :
       std::vector<std::pair<double, double>>{{0, -1}, {1, 31}, {2, 31}, {3, 13}, {4, 13}}) {
    f.time_s = t;
    f.devices[0][Field::kXid] = xid < 0 ? Reading::no_data() : Reading::of(xid);
    f.devices[0][Field::kNvlink] = Reading::of(1000 + t);
    w.add(f);
  }
  const auto j = w.to_json();
  const auto& samples = j["devices"][0]["samples"];
  ASSERT_EQ(samples.size(), 5u);
  std::vector<double> events;
  for (const auto& s : samples)
    if (s["values"].contains("xid")) events.push_back(s["values"]["xid"].get<double>());
  EXPECT_EQ(events, (std::vector<double>{31, 13}));
  EXPECT_FALSE(samples[0]["values"].contains("xid"));  // none yet: nothing, not 0
  EXPECT_EQ(samples[2]["values"]["nvlink_mibs"], 1002);
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

// The writer sorts its keys, so a long capture's "format" key lies far past the head the
// reader is chosen from: it is told by "created_by", which comes first.
TEST(CaptureWriter, ALongCaptureIsReadAsACapture) {
  std::vector<DeviceInfo> devices(1);
  devices[0].name = "NVIDIA H100 80GB HBM3";
  CaptureWriter w({"550.54.15", "12.4", "12.550", "node"}, devices);
  Frame f;
  f.devices.resize(1);
  for (int i = 0; i < 300; ++i) {
    f.time_s = i;
    f.devices[0][Field::kUtilGpu] = Reading::of(50 + i % 50);
    f.devices[0][Field::kPowerInstant] = Reading::of(300 + i % 7);
    w.add(f);
  }
  const std::string text = w.to_json().dump(1);
  ASSERT_GT(text.find("\"format\""), 20000u);
  const auto rec = load_text(text, "sim.json", LoadOptions{});
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  ASSERT_EQ(rec->gpus.size(), 1u);
  EXPECT_EQ(rec->gpus[0].size(), 300u);
  EXPECT_EQ(rec->gpus[0].info.name, "NVIDIA H100 80GB HBM3");
}

}  // namespace
}  // namespace gpudoctor
