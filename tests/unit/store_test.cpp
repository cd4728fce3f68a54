#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include <sqlite3.h>

#include <fmt/format.h>
#include <unistd.h>

#include "store/sqlite_store.hpp"

namespace gpudoctor {
namespace {

namespace fs = std::filesystem;

fs::path temp_db(const char* name) {
  return fs::temp_directory_path() / fmt::format("gpudoctor-store-{}-{}.db", name, getpid());
}

Frame frame(int64_t unix_ms, double util, bool lost = false) {
  Frame f;
  f.time_unix_ms = unix_ms;
  f.devices.resize(2);
  f.devices[0][Field::kUtilGpu] = Reading::of(util);
  f.devices[0][Field::kPower] = Reading::of(250.5);
  f.devices[0][Field::kFan] = Reading::unsupported(nvml_code::kNoPermission);
  f.devices[0].processes.push_back({42, "python", 1000, std::nullopt, std::nullopt});
  f.devices[1][Field::kUtilGpu] = Reading::error(nvml_code::kTimeout);  // stored as NULL
  f.devices[1].lost = lost;
  return f;
}

TEST(Store, RoundTripsFramesStatusProcessesAndEvents) {
  const fs::path path = temp_db("rt");
  std::vector<DeviceInfo> devices(2);
  devices[0].name = "NVIDIA H100 80GB HBM3";
  devices[0].architecture = Architecture::kHopper;
  devices[1].index = 1;
  {
    auto w = RecordingWriter::create(path.string(), {"550", "12.4", "12.550", "node"}, devices,
                                     "nvml", 1'700'000'000'000);
    ASSERT_TRUE(w.ok()) << w.error().message;
    ASSERT_TRUE(w.value()->add(frame(1'700'000'000'000, 99)).ok());
    ASSERT_TRUE(w.value()->add(frame(1'700'000'000'500, 50, true)).ok());
    ASSERT_TRUE(w.value()->close().ok());
  }
  auto rec = read_recording(path.string());
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  EXPECT_EQ(rec->start_unix_ms, 1'700'000'000'000);
  EXPECT_EQ(rec->system.hostname, "node");
  ASSERT_EQ(rec->gpus.size(), 2u);
  const GpuSeries& g0 = rec->gpus[0];
  EXPECT_EQ(g0.info.architecture, Architecture::kHopper);
  ASSERT_EQ(g0.size(), 2u);
  EXPECT_DOUBLE_EQ(g0.time_s[1], 0.5);
  EXPECT_EQ((*g0.column(Field::kUtilGpu))[1], 50);
  EXPECT_FALSE(g0.has(Field::kTemp));  // never had a value: no column, not zeros
  EXPECT_EQ(g0.unsupported.at(Field::kFan), nvml_code::kNoPermission);
  ASSERT_EQ(g0.processes.size(), 1u);
  EXPECT_EQ(g0.processes[0].pid, 42u);
  EXPECT_DOUBLE_EQ(g0.processes[0].last_s, 0.5);
  const GpuSeries& g1 = rec->gpus[1];
  EXPECT_EQ(g1.size(), 1u);               // the lost frame has no row
  EXPECT_FALSE(g1.has(Field::kUtilGpu));  // the only util reading was an error: no value
  EXPECT_DOUBLE_EQ(g1.lost_at_s.value(), 0.5);
  fs::remove(path);
}

TEST(Store, ClearErrors) {
  auto w = RecordingWriter::create("/nonexistent/dir/run.db", {}, {}, "nvml", 0);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("/nonexistent/dir/run.db"), std::string::npos);
  const fs::path junk = temp_db("junk");
  {
    std::FILE* f = std::fopen(junk.c_str(), "w");
    std::fputs("not a database", f);
    std::fclose(f);
  }
  auto r = read_recording(junk.string());
  EXPECT_FALSE(r.ok());
  fs::remove(junk);
}

}  // namespace
}  // namespace gpudoctor
