// What the readers take from a log besides the samples themselves (issue 24): percent-of-limit
// columns (power_pct) of every tool that writes one, the GPU's name wherever the log keeps it,
// the layouts of whole machines and fleets (HWiNFO's hundreds of sensors, GPUtil blocks of one
// GPU, a dcgm-exporter scrape of several hosts), W&B run files of every SDK generation, and a
// file without any GPU metric said as such. Fixtures: tests/data/logs/tools/ (written for these
// tests; make_machine_logs.py writes the HWiNFO ones), tests/data/logs/wandb/ (make_wandb_logs.py)
// and tests/data/no-gpu-metric/.
#include <gtest/gtest.h>

#include "analysis/diagnosis.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/clock_reasons.hpp"
#include "formats/load.hpp"
#include "test_helpers.hpp"

namespace gpudoctor {
namespace {

using namespace test_util;

std::string data(const std::string& rel) {
  return std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/logs/" + rel;
}

// Files without any GPU metric: errors, so not among the fixtures every reader must read.
std::string no_gpu(const std::string& name) {
  return std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/no-gpu-metric/" + name;
}

std::string notes_of(const Recording& rec) {
  std::string s;
  for (const auto& n : rec.notes) s += "  " + n + "\n";
  return s;
}

Recording load_ok(const std::string& rel) {
  auto r = load_telemetry(data(rel), LoadOptions{});
  EXPECT_TRUE(r.ok()) << rel << ": " << (r.ok() ? std::string() : r.error().message);
  if (!r.ok()) return {};
  return std::move(r).value();
}

double at(const GpuSeries& g, Field f, size_t row) {
  const auto c = g.column(f);
  EXPECT_NE(c, nullptr) << info(f).id;
  if (c == nullptr || row >= c->size()) return -1;
  return (*c)[row];
}

uint64_t bit(std::string_view code) {
  for (const auto& r : clock_reasons())
    if (r.code == code) return r.bit;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Percent of the power limit, and the limit it implies

TEST(PowerPercent, GpuzPowerConsumptionPercentOfTdp) {
  const Recording rec = load_ok("tools/gpuz_power_percent.txt");
  ASSERT_EQ(rec.gpus.size(), 1u) << notes_of(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_NEAR(at(g, Field::kPower, 0), 104.4, 1e-9);
  EXPECT_NEAR(at(g, Field::kPowerPercent, 0), 90.8, 1e-9);
  // No name, no limit column: the log is kept as it is, and the diagnosis takes the limit the two
  // columns imply (104.4 / 0.908 = 115 W).
  EXPECT_EQ(g.column(Field::kPowerLimitEnforced), nullptr);
  EXPECT_TRUE(has_note(rec, "from the log's power and its percent")) << notes_of(rec);
  const Diagnosis d = diagnose(rec);
  EXPECT_EQ(d.gpus[0].power_limit_source, "percent-of-limit column");
  ASSERT_TRUE(d.gpus[0].power_limit_w);
  EXPECT_NEAR(*d.gpus[0].power_limit_w, 115, 0.5);
}

TEST(PowerPercent, WandbAndMlflowExports) {
  const Recording wb = load_ok("tools/wandb_system_export.csv");
  ASSERT_GE(wb.gpus.size(), 2u) << notes_of(wb);
  EXPECT_NEAR(at(wb.gpus[0], Field::kPowerPercent, 0), 57.30, 1e-9);
  EXPECT_NEAR(at(wb.gpus[1], Field::kPowerPercent, 0), 57.60, 1e-9);
  EXPECT_NEAR(at(wb.gpus[0], Field::kPower, 0), 401.30, 1e-9);
  // The log's own limit column wins over the one the percent implies.
  EXPECT_NEAR(at(wb.gpus[0], Field::kPowerLimitEnforced, 0), 700, 1e-9);
  EXPECT_FALSE(has_note(wb, "worked out from")) << notes_of(wb);

  const Recording ml = load_ok("tools/mlflow_system_metrics.csv");
  ASSERT_EQ(ml.gpus.size(), 1u) << notes_of(ml);
  EXPECT_NEAR(at(ml.gpus[0], Field::kPowerPercent, 0), 62.9, 1e-9);
  EXPECT_NEAR(at(ml.gpus[0], Field::kPower, 0), 251.5, 1e-9);
}

TEST(PowerPercent, AfterburnerUnitsByGraphIndexAndTheName) {
  // 03 lines as Afterburner writes them ("03, DATE, INDEX, UNIT, ..."): "Power percent" in %,
  // "Power" in W, "Power limit" a flag; the 01 line names the card.
  const Recording rec = load_ok("tools/afterburner_power_percent.hml");
  ASSERT_EQ(rec.gpus.size(), 1u) << notes_of(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(g.info.name, "NVIDIA GeForce RTX 3070");
  EXPECT_NEAR(at(g, Field::kPowerPercent, 0), 100.0, 1e-9);
  EXPECT_NEAR(at(g, Field::kPower, 0), 220.0, 1e-9);
  EXPECT_NEAR(at(g, Field::kUtilGpu, 0), 99.0, 1e-9);
  EXPECT_NE(static_cast<uint64_t>(at(g, Field::kClockEventReasons, 0)) & bit("sw_power_cap"), 0u);
}

TEST(PowerPercent, AfterburnerGpu1PowerInPercent) {
  // "GPU1 power" whose unit is % is the power percent, not watts; GPU1 is the 01 line's first.
  const Recording rec = load_ok("tools/afterburner_gpu1.hml");
  ASSERT_EQ(rec.gpus.size(), 1u) << notes_of(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(g.info.name, "NVIDIA GeForce GTX 1650");
  EXPECT_NEAR(at(g, Field::kPowerPercent, 0), 98.5, 1e-9);
  EXPECT_FALSE(g.has(Field::kPower));
  EXPECT_NEAR(at(g, Field::kUtilGpu, 0), 95.0, 1e-9);
}

// ---------------------------------------------------------------------------------------------
// Layouts of whole machines and fleets

TEST(MachineLogs, GputilBlocksOfOneGpu) {
  const Recording rec = load_ok("tools/gputil_single_gpu.log");
  ASSERT_EQ(rec.gpus.size(), 1u) << notes_of(rec);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 8u) << notes_of(rec);
  EXPECT_NEAR(g.time_s[1] - g.time_s[0], 30.0, 1e-9);
  EXPECT_NEAR(at(g, Field::kUtilGpu, 0), 0.0, 1e-9);
  EXPECT_NEAR(at(g, Field::kUtilGpu, 2), 87.5, 1e-9);
  EXPECT_NEAR(at(g, Field::kMemUsed, 2), 4120.0, 1e-9);
  EXPECT_NEAR(at(g, Field::kMemTotal, 2), 6144.0, 1e-9);
  EXPECT_NEAR(at(g, Field::kTemp, 2), 50.0, 1e-9);
}

TEST(MachineLogs, HwinfoOfAWholeMachineWithoutFooter) {
  // The header is longer than the bytes format detection sees; the GPU's columns come after 240
  // of the CPU's, board's and drives'; latin-1; the RAM's Memory Clock before the GPU's.
  const Recording rec = load_ok("tools/hwinfo_machine.csv");
  ASSERT_EQ(rec.gpus.size(), 1u) << notes_of(rec);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 20u) << notes_of(rec);
  EXPECT_NEAR(at(g, Field::kPower, 0), 170.2, 1e-9);
  EXPECT_NEAR(at(g, Field::kUtilGpu, 0), 99.0, 1e-9);
  EXPECT_NEAR(at(g, Field::kUtilGpu, 19), 0.0, 1e-9);
  EXPECT_NEAR(at(g, Field::kClockMem, 0), 7501.0, 1e-9) << notes_of(rec);
  EXPECT_NEAR(at(g, Field::kTemp, 0), 66.0, 1e-9);
  EXPECT_NEAR(at(g, Field::kPowerPercent, 0), 100.1, 1e-9);
  EXPECT_NEAR(at(g, Field::kPowerPercent, 19), 10.0, 1e-9);
  EXPECT_NE(static_cast<uint64_t>(at(g, Field::kClockEventReasons, 0)) & bit("sw_power_cap"), 0u);
  EXPECT_TRUE(has_note(rec, "Memory Clock")) << notes_of(rec);
}

TEST(MachineLogs, HwinfoFooterNamesTheGpu) {
  const Recording rec = load_ok("tools/hwinfo_machine_footer.csv");
  ASSERT_EQ(rec.gpus.size(), 1u) << notes_of(rec);
  EXPECT_EQ(rec.gpus[0].info.name, "NVIDIA GeForce RTX 3060") << notes_of(rec);
  EXPECT_EQ(rec.gpus[0].size(), 20u) << notes_of(rec);
  EXPECT_NEAR(at(rec.gpus[0], Field::kPowerPercent, 0), 100.1, 1e-9);
}

TEST(MachineLogs, DcgmExporterScrapeOfSeveralHosts) {
  const Recording rec = load_ok("tools/dcgm_exporter_scrape.csv");
  ASSERT_EQ(rec.gpus.size(), 4u) << notes_of(rec);
  EXPECT_TRUE(has_note(rec, "one instant")) << notes_of(rec);
  EXPECT_TRUE(has_note(rec, "no verdict over time")) << notes_of(rec);
  for (const auto& g : rec.gpus) {
    EXPECT_EQ(g.size(), 1u);
    EXPECT_EQ(g.info.name, "NVIDIA H100 80GB HBM3");
    EXPECT_FALSE(g.info.uuid.empty());
  }
  // Host order, then GPU index: node-a's GPU 1 is busy, node-b's GPU 0 idle.
  EXPECT_NEAR(at(rec.gpus[1], Field::kUtilGpu, 0), 100.0, 1e-9);
  EXPECT_NEAR(at(rec.gpus[1], Field::kPower, 0), 650.2, 1e-9);
  EXPECT_NEAR(at(rec.gpus[1], Field::kClockSm, 0), 1980.0, 1e-9);
  EXPECT_NEAR(at(rec.gpus[2], Field::kUtilGpu, 0), 0.0, 1e-9);
  EXPECT_NE(rec.gpus[0].host, rec.gpus[2].host);
}

TEST(MachineLogs, GpuColumnsWithoutAnyValueAreAnError) {
  auto r = load_telemetry(no_gpu("no_gpu_values.csv"), LoadOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Error::Kind::kFailure);
  EXPECT_NE(r.error().message.find("no GPU metric"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("power_w"), std::string::npos) << r.error().message;
}

// ---------------------------------------------------------------------------------------------
// W&B run files of every SDK generation

TEST(WandbGenerations, SplitRecordsAndTheEnvironmentRecord) {
  // SDK 2024+: a record of GPU figures, then CPU, disk, network and memory records ms apart.
  const Recording rec = load_ok("wandb/run-2025-split.wandb");
  ASSERT_EQ(rec.gpus.size(), 2u) << notes_of(rec);
  for (const auto& g : rec.gpus) {
    ASSERT_EQ(g.size(), 20u) << notes_of(rec);  // a row per round, not per record
    EXPECT_NEAR(g.time_s[1] - g.time_s[0], 15.0, 1e-6);
    EXPECT_EQ(g.info.name, "NVIDIA GeForce RTX 4090");
  }
  EXPECT_NEAR(at(rec.gpus[0], Field::kUtilGpu, 0), 97.0, 1e-9);
  EXPECT_NEAR(at(rec.gpus[0], Field::kPowerPercent, 0), 88.89, 1e-9);
  EXPECT_NEAR(at(rec.gpus[1], Field::kPower, 0), 21.5, 1e-9);
  EXPECT_EQ(rec.gpus[1].info.uuid, "GPU-40900001-0000-0000-0000-000000000000");
  EXPECT_EQ(rec.system.hostname, "ws-4090");
  EXPECT_TRUE(has_note(rec, "20 system-metrics record(s) with GPU figures")) << notes_of(rec);
  EXPECT_TRUE(has_note(rec, "80 system-metrics record(s) without GPU figures")) << notes_of(rec);
  EXPECT_TRUE(has_note(rec, "environment record")) << notes_of(rec);
}

TEST(WandbGenerations, PercentGivesTheLimitWhereNothingElseDoes) {
  // SDK 2023: no limit key, no name in the run file; 300 W at 66.67 % -> a 450 W limit.
  const Recording rec = load_ok("wandb/run-2023-percent.wandb");
  ASSERT_EQ(rec.gpus.size(), 1u) << notes_of(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_NEAR(at(g, Field::kPowerPercent, 0), 66.67, 1e-9);
  EXPECT_TRUE(has_note(rec, "from the log's power and its percent")) << notes_of(rec);
  const Diagnosis d = diagnose(rec);
  EXPECT_EQ(d.gpus[0].power_limit_source, "percent-of-limit column");
  EXPECT_EQ(d.gpus[0].power_limit_w, 450.0);
}

TEST(WandbGenerations, NoGpuMetricIsAnErrorNamingTheKeys) {
  auto r = load_telemetry(no_gpu("run-no-gpu.wandb"), LoadOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Error::Kind::kFailure);
  const std::string& m = r.error().message;
  EXPECT_NE(m.find("no GPU metric"), std::string::npos) << m;
  EXPECT_NE(m.find("cpu"), std::string::npos) << m;
  EXPECT_NE(m.find("network.sent"), std::string::npos) << m;
}

}  // namespace
}  // namespace gpudoctor
