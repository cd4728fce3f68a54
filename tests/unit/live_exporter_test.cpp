// The live window behind `serve`: frames in, a trimmed window, the live diagnosis' findings as
// metrics, /diagnosis as the JSON contract, memory churn.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exporter/live_exporter.hpp"
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

namespace gpudoctor {
namespace {

double lost_of(const Diagnosis& d, Cause c, bool held_only) {
  double h = 0;
  for (const auto& f : d.findings) {
    if (f.cause != c) continue;
    if (held_only && f.evidence.contains("held") && f.evidence["held"].get<double>() < 0.5)
      continue;
    h += f.lost_gpu_hours.value_or(0);
  }
  return h * 3600;
}

TEST(LiveExporter, OwnerInfoIsOneJoinSeriesPerGpuAndOwner) {
  auto src = sim_source("mixed");
  ExportOptions eo;
  eo.hostname = "node1";
  LiveOptions lo;
  LiveExporter ex(src->system(), src->devices(), eo, lo);
  for (int t = 0; t <= 30; ++t) ex.add_frame(src->sample_at(t), 0.001, true);
  const std::string& m = *ex.latest()->metrics_text;
  const std::string uuid0 = src->devices()[0].uuid;
  EXPECT_NE(m.find("gpudoctor_gpu_owner_info{gpu=\"0\",UUID=\"" + uuid0 +
                   "\",Hostname=\"node1\",owner_kind=\"slurm_job\",job=\"41877\",step=\"0\","
                   "pod=\"\",namespace=\"\",container=\"\",user=\"alice\"} 1\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("owner_kind=\"k8s_pod\",job=\"\",step=\"\",pod=\"notebook-bob-0\","
                   "namespace=\"research\",container=\"notebook\",user=\"bob\"} 1\n"),
            std::string::npos);
  size_t series = 0;
  for (size_t at = m.find("\ngpudoctor_gpu_owner_info{"); at != std::string::npos;
       at = m.find("\ngpudoctor_gpu_owner_info{", at + 1))
    ++series;
  EXPECT_EQ(series, 6u);  // 4 GPUs of the job, 2 of the notebook, none for the free ones
  // Nothing else carries an owner label.
  for (const char* l : {"job=", "user=", "pod="}) {
    size_t n = 0;
    for (size_t at = m.find(l); at != std::string::npos; at = m.find(l, at + 1)) ++n;
    EXPECT_EQ(n, 6u) << l;
  }

  eo.owner_labels = parse_owner_labels("job,namespace").value();
  LiveExporter ex2(src->system(), src->devices(), eo, lo);
  ex2.add_frame(src->sample_at(31), 0.001, true);
  const std::string& m2 = *ex2.latest()->metrics_text;
  EXPECT_NE(m2.find("owner_kind=\"slurm_job\",job=\"41877\",namespace=\"\"} 1\n"),
            std::string::npos)
      << m2;
  EXPECT_EQ(m2.find("alice"), std::string::npos);
  EXPECT_FALSE(parse_owner_labels("job,password"));
  EXPECT_TRUE(parse_owner_labels("none").value().empty());
}

// The ledger counts each sample once, and equals the diagnosis' lost time on the same window.
TEST(LiveExporter, LedgerEqualsTheDiagnosisLostTime) {
  for (const char* scenario : {"mixed", "data_starvation"}) {
    SCOPED_TRACE(scenario);
    auto src = sim_source(scenario);
    ExportOptions eo;
    LiveOptions lo;
    lo.window_s = 1000;  // the whole run stays in the window
    LiveExporter ex(src->system(), src->devices(), eo, lo);
    const int n = 300;
    for (int t = 1; t <= n; ++t) ex.add_frame(src->sample_at(t), 0.001, true);
    const Diagnosis d = diagnose(ex.window(), lo.config);
    double ledger_total = 0;
    for (size_t c = 0; c < kCauseCount; ++c) {
      const auto cause = static_cast<Cause>(c);
      if (cause == Cause::kHealthy) continue;
      double ledger = 0;
      for (const auto& l : ex.ledger()) ledger += l.lost_s[c];
      ledger_total += ledger;
      const double diag = lost_of(d, cause, cause == Cause::kIdle);
      // The ledger lags the last diagnosis by at most its interval (10 s) per GPU.
      EXPECT_NEAR(ledger, diag, 0.02 * diag + 10.0 * static_cast<double>(ex.ledger().size()))
          << cause_code(cause);
    }
    EXPECT_GT(ledger_total, 100);
    for (const auto& l : ex.ledger()) {
      const double sum = l.working_s + l.lost_total_s + l.idle_allocated_s + l.free_s;
      EXPECT_LE(sum, n + 1e-6);  // never a second twice
      EXPECT_GE(sum, n - 15);
    }
    const std::string& m = *ex.latest()->metrics_text;
    EXPECT_NE(m.find("gpudoctor_lost_gpu_seconds_total{gpu=\"0\""), std::string::npos);
    EXPECT_NE(m.find("gpudoctor_gpu_seconds_total{gpu=\"0\""), std::string::npos);
    EXPECT_NE(m.find("state=\"idle_allocated\"}"), std::string::npos);
  }
}

TEST(LiveExporter, LedgerKeepsCountingAcrossWindows) {
  auto src = sim_source("idle");
  ExportOptions eo;
  LiveOptions lo;
  lo.window_s = 60;  // many windows over the run
  LiveExporter ex(src->system(), src->devices(), eo, lo);
  for (int t = 1; t <= 400; ++t) ex.add_frame(src->sample_at(t), 0.001, true);
  for (const auto& l : ex.ledger()) {
    EXPECT_GT(l.idle_allocated_s, 300);  // far more than one window
    EXPECT_LE(l.working_s + l.lost_total_s + l.idle_allocated_s + l.free_s, 400 + 1e-6);
    EXPECT_NEAR(l.lost_s[static_cast<size_t>(Cause::kIdle)], l.idle_allocated_s, 1e-6);
  }
}

TEST(SimOwners, HostsNeverShareUuidsAndScenariosCarryOwners) {
  auto a = sim::open_sim_source("healthy,host=node-a", {});
  auto b = sim::open_sim_source("healthy,host=node-b", {});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a.value()->system().hostname, "node-a");
  for (size_t i = 0; i < a.value()->devices().size(); ++i)
    EXPECT_NE(a.value()->devices()[i].uuid, b.value()->devices()[i].uuid);
  auto m = sim_source("mixed");
  const Frame f = m->sample_at(5);
  ASSERT_EQ(f.devices.size(), 8u);
  EXPECT_EQ(owner_label(f.devices[0].owners.at(0)), "job 41877.0 (alice)");
  EXPECT_EQ(owner_label(f.devices[4].owners.at(0)), "pod research/notebook-bob-0 (bob)");
  EXPECT_TRUE(f.devices[6].owners.empty());
  ASSERT_FALSE(f.devices[0].processes.empty());
  EXPECT_TRUE(f.devices[0].processes[0].owner);
  EXPECT_FALSE(sim::open_sim_source("healthy,host=bad name", {}));
}

}  // namespace
}  // namespace gpudoctor
