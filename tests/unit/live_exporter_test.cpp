// The live window behind `serve`: frames in, a trimmed window, the live diagnosis' findings as
// metrics, /diagnosis as the JSON contract, memory churn.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "export/live_exporter.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor {
namespace {

std::unique_ptr<sim::SimSource> sim_source(const std::string& spec) {
  auto s = sim::open_sim_source(spec, {});
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  auto* raw = dynamic_cast<sim::SimSource*>(s.value().release());
  raw->set_start_unix_ms(sim::kSimEpochUnixMs);
  return std::unique_ptr<sim::SimSource>(raw);
}

TEST(LiveExporter, FindingsOfTheWindowBecomeMetrics) {
  auto src = sim_source("launch_overhead");
  ExportOptions eo;
  eo.hostname = "node1";
  eo.source_name = "sim";
  LiveOptions lo;
  lo.window_s = 120;
  lo.source = "sim:launch_overhead";
  LiveExporter ex(src->system(), src->devices(), eo, lo);
  EXPECT_EQ(ex.latest(), nullptr);
  for (int t = 0; t <= 300; ++t) ex.add_frame(src->sample_at(t), 0.001, true);
  const auto pub = ex.latest();
  ASSERT_NE(pub, nullptr);
  EXPECT_EQ(pub->frames, 301u);
  // The window keeps about --window of samples (trimmed in steps of a tenth), starting at 0.
  const GpuSeries& g = ex.window().gpus[0];
  EXPECT_GE(g.size(), 121u);
  EXPECT_LE(g.size(), 134u);
  EXPECT_EQ(g.time_s.front(), 0);
  EXPECT_EQ(ex.window().start_unix_ms,
            sim::kSimEpochUnixMs + (301 - static_cast<int64_t>(g.size())) * 1000);

  const std::string& m = *pub->metrics_text;
  EXPECT_NE(m.find("gpudoctor_busy_idle{gpu=\"0\""), std::string::npos);
  EXPECT_NE(m.find("} 1\n", m.find("gpudoctor_busy_idle{gpu=\"0\"")), std::string::npos);
  EXPECT_NE(m.find("gpudoctor_verdict{gpu=\"0\",UUID="), std::string::npos) << m;
  EXPECT_NE(m.find("cause=\"launch_overhead\"} 1\n"), std::string::npos);
  EXPECT_NE(m.find("gpudoctor_finding{gpu=\"0\""), std::string::npos);
  EXPECT_NE(m.find("gpudoctor_scrape_success{source=\"sim\"} 1\n"), std::string::npos);
  EXPECT_NE(m.find("gpudoctor_scrape_success{source=\"diagnosis\"} 1\n"), std::string::npos);
  EXPECT_EQ(pub->metrics_openmetrics->substr(pub->metrics_openmetrics->size() - 6), "# EOF\n");

  const auto j = nlohmann::json::parse(*pub->diagnosis_json);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["verdict"], "launch_overhead");
  EXPECT_EQ(j["source"], "live: sim:launch_overhead");
  EXPECT_LE(j["duration_s"].get<double>(), 135);
}

TEST(LiveExporter, HealthyHasNoFindingAndDiagnosesEveryFewSeconds) {
  auto src = sim_source("healthy");
  LiveOptions lo;
  lo.diagnosis_interval_s = 30;
  LiveExporter ex(src->system(), src->devices(), {}, lo);
  for (int t = 0; t <= 200; ++t) ex.add_frame(src->sample_at(t), 0.001, true);
  const auto first = ex.latest()->diagnosis_json;
  ex.add_frame(src->sample_at(201), 0.001, true);
  EXPECT_EQ(ex.latest()->diagnosis_json, first);  // not re-run within the interval
  const std::string& m = *ex.latest()->metrics_text;
  EXPECT_EQ(m.find("gpudoctor_finding{"), std::string::npos);
  EXPECT_NE(m.find("cause=\"healthy\"} 1\n"), std::string::npos);
  ex.add_frame(src->sample_at(240), 0.001, false);
  EXPECT_NE(ex.latest()->diagnosis_json, first);
  EXPECT_NE(ex.latest()->metrics_text->find("gpudoctor_scrape_success{source=\"nvml\"} 0\n"),
            std::string::npos);
}

TEST(LiveExporter, MemoryChurn) {
  SystemInfo sys;
  DeviceInfo d;
  d.name = "test";
  LiveExporter ex(sys, {d}, {}, {});
  auto frame = [](int64_t ms, double used) {
    Frame f;
    f.time_unix_ms = ms;
    f.time_s = static_cast<double>(ms) / 1000;
    DeviceSample s;
    s[Field::kMemUsed] = Reading::of(used);
    s[Field::kMemTotal] = Reading::of(1000);
    f.devices = {s};
    return f;
  };
  ex.add_frame(frame(1000, 100), 0, true);
  ex.add_frame(frame(2000, 600), 0, true);  // half of the memory in one second
  ex.add_frame(frame(4000, 500), 0, true);
  EXPECT_NE(ex.latest()->metrics_text->find("gpudoctor_memory_churn_ratio{gpu=\"0\""),
            std::string::npos);
  EXPECT_NE(ex.latest()->metrics_text->find("} 0.5\n",
                                            ex.latest()->metrics_text->find("memory_churn_ratio{")),
            std::string::npos);
  // 15 s later the burst has left the churn window.
  ex.add_frame(frame(20000, 500), 0, true);
  ex.add_frame(frame(21000, 510), 0, true);
  const std::string& m = *ex.latest()->metrics_text;
  EXPECT_NE(m.find("} 0.01\n", m.find("memory_churn_ratio{")), std::string::npos) << m;
}

TEST(LiveExporter, ShiftRecording) {
  Recording rec;
  rec.start_unix_ms = 1000;
  GpuSeries g;
  g.time_s = {10, 11};
  g.processes.push_back({1, "p", 10, 11, std::nullopt});
  g.lost_at_s = 12;
  rec.gpus.push_back(std::move(g));
  shift_recording(rec, 10);
  EXPECT_EQ(rec.start_unix_ms, 11000);
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 1}));
  EXPECT_EQ(rec.gpus[0].processes[0].first_s, 0);
  EXPECT_EQ(*rec.gpus[0].lost_at_s, 2);
}

}  // namespace
}  // namespace gpudoctor
