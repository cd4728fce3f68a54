// The simulator's physics: properties that must hold whatever the scenario numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/gpu_models.hpp"
#include "sources/sim/builtin_scenarios.hpp"
#include "sources/sim/engine.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor::sim {
namespace {

struct Series {
  std::vector<std::vector<DeviceSample>> gpu;  // [gpu][sample]
};

Series run(const std::string& spec, double seconds, double interval) {
  auto parsed = parse_sim_spec(spec);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  const auto model = gpu_model_by_key(parsed->scenario.model);
  EXPECT_TRUE(model.has_value()) << parsed->scenario.model;
  SimSource src(std::move(parsed.value()), *model, {});
  Series s;
  s.gpu.resize(src.devices().size());
  for (double t = interval; t <= seconds + 1e-9; t += interval) {
    Frame f = src.sample_at(t);
    for (size_t g = 0; g < f.devices.size(); ++g) s.gpu[g].push_back(std::move(f.devices[g]));
  }
  return s;
}

double mean(const std::vector<DeviceSample>& v, Field f, size_t from = 0) {
  double sum = 0;
  size_t n = 0;
  for (size_t i = from; i < v.size(); ++i)
    if (v[i][f].has_value()) sum += v[i][f].value(), ++n;
  return n ? sum / n : -1;
}

TEST(Sim, EveryBuiltinScenarioParsesAndRuns) {
  for (const auto& b : builtin_scenarios()) {
    const Series s = run(std::string(b.name), 5, 1);
    ASSERT_FALSE(s.gpu.empty()) << b.name;
    EXPECT_EQ(s.gpu[0].size(), 5u) << b.name;
  }
}

TEST(Sim, SameSeedSameOutputOtherSeedOther) {
  const Series a = run("straggler,seed=7", 20, 0.5), b = run("straggler,seed=7", 20, 0.5);
  const Series c = run("straggler,seed=8", 20, 0.5);
  bool differs = false;
  for (size_t g = 0; g < a.gpu.size(); ++g)
    for (size_t i = 0; i < a.gpu[g].size(); ++i) {
      EXPECT_EQ(a.gpu[g][i].readings, b.gpu[g][i].readings);
      differs = differs || !(a.gpu[g][i].readings == c.gpu[g][i].readings);
    }
  EXPECT_TRUE(differs);
}

TEST(Sim, PowerStaysUnderTheEnforcedLimitBeyondTheAveragingWindow) {
  for (const char* spec : {"power_capped", "healthy_default_cap", "thermal_throttle"}) {
    const Series s = run(spec, 60, 0.1);
    for (const auto& gpu : s.gpu)
      for (size_t i = 20; i < gpu.size(); ++i)  // after the first 2 s
        EXPECT_LE(gpu[i][Field::kPower].value(), gpu[i][Field::kPowerLimitEnforced].value() * 1.02)
            << spec << " sample " << i;
  }
}

TEST(Sim, LoweredLimitLowersClocksAndSaysWhy) {
  const Series capped = run("power_capped", 30, 1);
  const Series free = run("power_capped,power_limit=400", 30, 1);
  const double clock_capped = mean(capped.gpu[0], Field::kClockSm, 5);
  const double clock_free = mean(free.gpu[0], Field::kClockSm, 5);
  EXPECT_LT(clock_capped, clock_free * 0.9);
  EXPECT_NE(static_cast<uint64_t>(capped.gpu[0].back()[Field::kClockEventReasons].value()) & 0x4,
            0u);
  EXPECT_NEAR(mean(capped.gpu[0], Field::kPower, 5), 250, 15);
}

TEST(Sim, HotRoomThrottlesAtTheSlowdownTemperature) {
  const Series s = run("thermal_throttle", 400, 1);
  const auto& last = s.gpu[0].back();
  EXPECT_GE(last[Field::kTemp].value(), last[Field::kTempSlowdown].value() - 3);
  EXPECT_NE(static_cast<uint64_t>(last[Field::kClockEventReasons].value()) & 0x60, 0u);
  EXPECT_LT(last[Field::kClockSm].value(), last[Field::kClockSmMax].value());
}

TEST(Sim, CollectiveWaitIsBusyForGpuUtilButIdleForTheSms) {
  const Series s = run("straggler", 60, 1);
  for (size_t g : {0u, 1u, 3u}) {  // the ranks that wait for rank 2
    EXPECT_GE(mean(s.gpu[g], Field::kUtilGpu, 5), 95) << g;
    EXPECT_LT(mean(s.gpu[g], Field::kGpmSmUtil, 5), 50) << g;
    EXPECT_LT(mean(s.gpu[g], Field::kPower, 5), mean(s.gpu[2], Field::kPower, 5)) << g;
  }
}

TEST(Sim, SeesawRanksSwingInAntiPhase) {
  const Series s = run("seesaw", 120, 1);
  std::vector<double> a, b;
  for (size_t i = 5; i < s.gpu[0].size(); ++i) {
    a.push_back(s.gpu[0][i][Field::kPower].value());
    b.push_back(s.gpu[1][i][Field::kPower].value());
  }
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / a.size();
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / b.size();
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    cov += (a[i] - ma) * (b[i] - mb);
    va += (a[i] - ma) * (a[i] - ma);
    vb += (b[i] - mb) * (b[i] - mb);
  }
  EXPECT_LT(cov / std::sqrt(va * vb), -0.7);  // one works while the other waits, in turns
  EXPECT_GT(*std::max_element(a.begin(), a.end()) - *std::min_element(a.begin(), a.end()), 100);
}

TEST(Sim, TinyKernelsReadFullUtilAtLowSmActivityAndPower) {
  const Series s = run("launch_overhead", 30, 1);
  EXPECT_GE(mean(s.gpu[0], Field::kUtilGpu, 2), 95);
  EXPECT_LT(mean(s.gpu[0], Field::kGpmSmUtil, 2), 30);
  EXPECT_LT(mean(s.gpu[0], Field::kPower, 2), 0.4 * 700);
}

TEST(Sim, StarvedGpuWaitsForData) {
  const Series s = run("data_starvation", 60, 0.2);
  EXPECT_LT(mean(s.gpu[0], Field::kUtilGpu, 10), 70);
  double lo = 100, hi = 0;
  for (size_t i = 10; i < s.gpu[0].size(); ++i) {
    lo = std::min(lo, s.gpu[0][i][Field::kUtilGpu].value());
    hi = std::max(hi, s.gpu[0][i][Field::kUtilGpu].value());
  }
  EXPECT_LT(lo, 20);  // periods of waiting ...
  EXPECT_GT(hi, 80);  // ... and of work
}

TEST(Sim, EnergyCounterIntegratesPower) {
  const Series s = run("healthy", 30, 1);
  const auto& g = s.gpu[0];
  for (size_t i = 25; i < g.size(); ++i) {
    const double mean_w =
        (g[i][Field::kEnergy].value() - g[i - 1][Field::kEnergy].value()) / 1000.0;
    EXPECT_NEAR(mean_w, g[i][Field::kPower].value(), 0.02 * mean_w + 2);
  }
}

// dcgm-exporter's default counters the hardware model has: HBM temperature a little above the
// die's, NVLink traffic both ways on NVLink boards, a healthy board's zero error counters; none
// of these on boards without the feature (not supported, never 0).
TEST(Sim, MemoryTemperatureNvlinkAndHealthyCounters) {
  const Series h100 = run("healthy", 40, 1);  // 4 x H100 SXM, NVLink all-reduce after 20 s
  const auto& g = h100.gpu[0];
  for (size_t i = 25; i < g.size(); ++i) {
    EXPECT_GE(g[i][Field::kTempMem].value(), g[i][Field::kTemp].value() + 1);
    EXPECT_LE(g[i][Field::kTempMem].value(), g[i][Field::kTemp].value() + 9);
    EXPECT_EQ(g[i][Field::kPcieReplays].value(), 0);
    EXPECT_EQ(g[i][Field::kRemappedRowsUncorrected].value(), 0);
    EXPECT_EQ(g[i][Field::kRemapFailure].value(), 0);
  }
  EXPECT_GT(mean(g, Field::kNvlink, 25), 0);
  // Both directions of the GPM NVLink counters, together.
  EXPECT_NEAR(mean(g, Field::kNvlink, 25),
              mean(g, Field::kGpmNvlinkRx, 25) + mean(g, Field::kGpmNvlinkTx, 25),
              0.01 * mean(g, Field::kNvlink, 25) + 1);
  const Series l40s = run("slow_interconnect", 5, 1);  // GDDR, PCIe only
  const DeviceSample& l = l40s.gpu[0].back();
  for (Field f : {Field::kTempMem, Field::kNvlink, Field::kRemappedRowsCorrected})
    EXPECT_EQ(l[f].state(), Reading::State::kUnsupported) << info(f).id;
  EXPECT_EQ(l[Field::kPcieReplays].value(), 0);
  EXPECT_EQ(l[Field::kXid].state(), Reading::State::kNoData);  // not simulated
}

TEST(Sim, IdleAndFreeGpus) {
  const Series s = run("mixed", 10, 1);
  EXPECT_GE(mean(s.gpu[0], Field::kUtilGpu, 3), 90);
  EXPECT_EQ(mean(s.gpu[4], Field::kUtilGpu, 3), 0);
  EXPECT_GT(s.gpu[4].back()[Field::kMemUsed].value(), 1000);
  EXPECT_EQ(s.gpu[4].back().processes.size(), 1u);
  EXPECT_TRUE(s.gpu[6].back().processes.empty());
  EXPECT_EQ(s.gpu[6].back()[Field::kPstate].value(), 8);
}

TEST(Sim, BadSpecsAreClearErrors) {
  EXPECT_FALSE(parse_sim_spec("nonexistent").ok());
  EXPECT_FALSE(parse_sim_spec("healthy,gpus=0").ok());
  EXPECT_FALSE(parse_sim_spec("healthy,model=voodoo5").ok());
  EXPECT_FALSE(parse_sim_spec("healthy,speed=-1").ok());
  EXPECT_FALSE(parse_sim_spec("healthy,colour=blue").ok());
  EXPECT_FALSE(parse_scenario(R"({"gpus": 2, "workload": {"sm": 3}})", "t").ok());
  EXPECT_FALSE(parse_scenario(R"({"gpus": 2, "wrkload": {}})", "t").ok());
  EXPECT_TRUE(parse_scenario(R"({"gpus": 2 /* comments allowed */})", "t").ok());
  // Inputs that would stop simulated time or loop forever are refused.
  EXPECT_FALSE(parse_scenario(R"({"ranks": {"0": {"processes": 0}}})", "t").ok());
  EXPECT_FALSE(parse_scenario(R"({"ranks": {"0": {"slowdown": 0}}})", "t").ok());
  EXPECT_FALSE(parse_scenario(R"({"gpus": 2, "ranks": {"1x": {}}})", "t").ok());
  EXPECT_FALSE(parse_scenario(R"({"duration_s": 1e400})", "t").ok());
  EXPECT_FALSE(parse_scenario(R"({"changes": {"at_s": 1}})", "t").ok());
  EXPECT_FALSE(parse_scenario(R"({"changes": [{"at": 1, "workload": {}}]})", "t").ok());
  EXPECT_FALSE(parse_sim_spec("healthy,interval=0").ok());
  EXPECT_FALSE(parse_sim_spec("healthy,power_limit=nan").ok());
  EXPECT_FALSE(parse_sim_spec("healthy,gpus=nan").ok());
  EXPECT_FALSE(parse_sim_spec("healthy,seed=-1").ok());
}

TEST(Sim, HowOftenOneReadsNeverChangesTheJob) {
  const Series a = run("healthy,seed=3", 40, 0.5), b = run("healthy,seed=3", 40, 2);
  // Energy is what the job did; the two read schedules meet at t = 2, 4, ... 40.
  for (size_t i = 0; i < b.gpu[0].size(); ++i)
    EXPECT_EQ(a.gpu[0][4 * i + 3][Field::kEnergy], b.gpu[0][i][Field::kEnergy]) << i;
}

TEST(Sim, AJobThatStopsAllReducingReleasesWaitingRanks) {
  auto sc = parse_scenario(R"({"gpus": 2, "workload": {"allreduce_mib": 200},
      "ranks": {"1": {"slowdown": 3}},
      "changes": [{"at_s": 10, "workload": {"allreduce_mib": 0}}]})",
                           "t");
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  SimSource src({sc.value(), 1.0}, *gpu_model_by_key(sc->model), {});
  (void)src.sample_at(20);
  const Frame f = src.sample_at(30);
  EXPECT_GT(f.devices[0][Field::kGpmSmUtil].value(), 80);  // computing, not spinning at a barrier
}

}  // namespace
}  // namespace gpudoctor::sim

namespace gpudoctor::sim {
namespace {

TEST(Sim, SimulatedRecordingIsDeterministicAndComplete) {
  auto a = simulate_recording(parse_sim_spec("seesaw,duration=60s,interval=500ms").value(),
                              *gpu_model_by_key("a100-sxm4-80gb"));
  auto b = simulate_recording(parse_sim_spec("seesaw,duration=60s,interval=500ms").value(),
                              *gpu_model_by_key("a100-sxm4-80gb"));
  EXPECT_EQ(a.start_unix_ms, kSimEpochUnixMs);
  EXPECT_EQ(a.source, "sim:seesaw");
  ASSERT_EQ(a.gpus.size(), 2u);
  ASSERT_EQ(a.gpus[0].size(), 120u);
  EXPECT_DOUBLE_EQ(a.gpus[0].time_s.front(), 0.5);
  for (const auto& fi : all_fields()) {
    ASSERT_EQ(a.gpus[1].has(fi.field), b.gpus[1].has(fi.field)) << fi.id;
    if (!a.gpus[1].has(fi.field)) continue;
    const auto& ca = *a.gpus[1].column(fi.field);
    const auto& cb = *b.gpus[1].column(fi.field);
    for (size_t i = 0; i < ca.size(); ++i)
      EXPECT_TRUE(ca[i] == cb[i] || (std::isnan(ca[i]) && std::isnan(cb[i]))) << fi.id << i;
  }
  EXPECT_EQ(a.gpus[0].unsupported.count(Field::kGpmSmUtil), 1u);  // A100: no GPM
  ASSERT_EQ(a.gpus[0].processes.size(), 1u);
  EXPECT_DOUBLE_EQ(a.gpus[0].processes[0].last_s, 60);
}

}  // namespace
}  // namespace gpudoctor::sim
