// Where the GPU time went (analysis/time_breakdown): the parts add up to the observed GPU time,
// idle GPUs of a node are their share of it, a healthy run is nearly all working.
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "analysis/diagnosis.hpp"
#include "analysis/time_breakdown.hpp"
#include "core/gpu_models.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor {
namespace {

double sum_of_parts(const GpuTimeBreakdown& b) {
  return b.working_s + b.lost_total_s() + b.unknown_s;
}

// An A100 SXM4 80GB (400 W default limit) sampled every second: busy at `power` W, or idle.
GpuSeries make_gpu(unsigned index, size_t n, bool idle, double power = 360) {
  GpuSeries g;
  g.info.index = index;
  g.info.name = "NVIDIA A100-SXM4-80GB";
  g.power_limit_source = "log";
  for (size_t i = 0; i < n; ++i) {
    const size_t k = g.append_row(static_cast<double>(i));
    g.column_for_write(Field::kUtilGpu)[k] = idle ? 0 : 100;
    g.column_for_write(Field::kPower)[k] = idle ? 60 : power;
    g.column_for_write(Field::kPowerLimitEnforced)[k] = 400;
    g.column_for_write(Field::kPowerLimitDefault)[k] = 400;
    g.column_for_write(Field::kClockEventReasons)[k] = 0;
    g.column_for_write(Field::kClockSm)[k] = 1410;
    g.column_for_write(Field::kClockSmMax)[k] = 1410;
    g.column_for_write(Field::kTemp)[k] = 60;
    g.column_for_write(Field::kMemUsed)[k] = idle ? 4 : 30000;
    g.column_for_write(Field::kMemTotal)[k] = 81920;
    g.column_for_write(Field::kUtilMem)[k] = idle ? 0 : 30;
  }
  return g;
}

TEST(TimeBreakdown, CountsEachJudgedSampleOnceAndTheRestAsUnknown) {
  GpuDiagnosis g;
  g.metrics["observed_s"] = 10.0;
  // 4 s healthy, 2 s starved losing half, 2 s idle (all lost); 2 s never judged.
  for (int i = 0; i < 4; ++i) g.judged_time.count({double(i), 1, Cause::kHealthy, 0});
  for (int i = 4; i < 6; ++i) g.judged_time.count({double(i), 1, Cause::kDataStarvation, 0.5});
  for (int i = 6; i < 8; ++i) g.judged_time.count({double(i), 1, Cause::kIdle, 1});
  // (A loss beyond the sample's interval, or below zero, counts as the interval, or nothing.)
  g.judged_time.count({8, -1, Cause::kIdle, 1});
  g.judged_time.count({8, 0, Cause::kDataStarvation, -2});
  const GpuTimeBreakdown b = gpu_time_breakdown(g);
  EXPECT_DOUBLE_EQ(b.observed_s, 10);
  EXPECT_DOUBLE_EQ(b.working_s, 5);  // 4 healthy + the 1 s the starved samples still worked
  EXPECT_DOUBLE_EQ(b.lost_s.at(Cause::kDataStarvation), 1);
  EXPECT_DOUBLE_EQ(b.idle_s(), 2);
  EXPECT_DOUBLE_EQ(b.lost_total_s(), 3);
  EXPECT_DOUBLE_EQ(b.unknown_s, 2);
  EXPECT_DOUBLE_EQ(b.share(b.working_s), 0.5);
  EXPECT_EQ(b.lost_s.count(Cause::kHealthy), 0u);

  // Two such GPUs: every part doubles, the shares stay.
  Diagnosis d;
  d.gpus = {g, g};
  const GpuTimeBreakdown run = gpu_time_breakdown(d);
  EXPECT_DOUBLE_EQ(run.observed_s, 20);
  EXPECT_DOUBLE_EQ(run.working_s, 10);
  EXPECT_DOUBLE_EQ(run.idle_s(), 4);
  EXPECT_DOUBLE_EQ(run.share(run.idle_s()), 0.2);
}

TEST(TimeBreakdown, NothingObservedIsAllZero) {
  const GpuTimeBreakdown b = gpu_time_breakdown(Diagnosis{});
  EXPECT_EQ(b.observed_s, 0);
  EXPECT_EQ(b.share(b.working_s), 0);
  EXPECT_TRUE(b.lost_s.empty());
  // observed_s missing or rounded below the judged time: never a negative unknown.
  GpuDiagnosis g;
  g.judged_time.count({0, 1.04, Cause::kHealthy, 0});
  g.metrics["observed_s"] = 1.0;
  const GpuTimeBreakdown r = gpu_time_breakdown(g);
  EXPECT_DOUBLE_EQ(r.observed_s, 1.04);
  EXPECT_DOUBLE_EQ(r.unknown_s, 0);
}

TEST(TimeBreakdown, TwoOfEightGpusIdleIsAQuarterIdle) {
  Recording rec;
  rec.source = "test";
  for (unsigned i = 0; i < 8; ++i) rec.gpus.push_back(make_gpu(i, 1800, /*idle=*/i >= 6));
  const Diagnosis d = diagnose(rec);
  const GpuTimeBreakdown b = gpu_time_breakdown(d);
  EXPECT_NEAR(b.observed_s, 8 * 1800, 8 * 2);
  EXPECT_NEAR(sum_of_parts(b), b.observed_s, 1e-6);
  EXPECT_NEAR(b.share(b.idle_s()), 0.25, 0.01);
  EXPECT_NEAR(b.idle_free_s, b.idle_s(), 1e-9);  // nothing holds them: no process, no memory
  EXPECT_NEAR(b.share(b.working_s), 0.75, 0.02);
  // Per GPU: a busy one nearly all working, an idle one all idle.
  EXPECT_GT(gpu_time_breakdown(d.gpus[0]).share(gpu_time_breakdown(d.gpus[0]).working_s), 0.97);
  const GpuTimeBreakdown idle = gpu_time_breakdown(d.gpus[7]);
  EXPECT_NEAR(idle.share(idle.idle_s()), 1.0, 0.01);
}

// The time is counted whether or not each judged sample is kept (only `serve` keeps them), and
// it is what counting the kept samples gives.
TEST(TimeBreakdown, TheSameWithOrWithoutEachJudgedSample) {
  Recording rec;
  rec.source = "test";
  for (unsigned i = 0; i < 4; ++i) rec.gpus.push_back(make_gpu(i, 900, /*idle=*/i == 3, 150));
  const Diagnosis time_only = diagnose(rec);
  const Diagnosis each = diagnose(rec, {}, JudgedSamples::kEach);
  ASSERT_EQ(time_only.gpus.size(), 4u);
  ASSERT_EQ(each.gpus.size(), 4u);
  for (size_t g = 0; g < 4; ++g) {
    SCOPED_TRACE(g);
    EXPECT_TRUE(time_only.gpus[g].judged.empty());
    ASSERT_FALSE(each.gpus[g].judged.empty());
    GpuDiagnosis::JudgedTime counted;
    for (const auto& j : each.gpus[g].judged) counted.count(j);
    for (const auto* t : {&time_only.gpus[g].judged_time, &each.gpus[g].judged_time}) {
      EXPECT_EQ(t->judged_s, counted.judged_s);
      EXPECT_EQ(t->lost_total_s, counted.lost_total_s);
      EXPECT_EQ(t->lost_s, counted.lost_s);
    }
    EXPECT_GT(counted.judged_s, 0);
  }
  EXPECT_GT(time_only.gpus[0].judged_time.lost_total_s, 0);  // 150 W of 400: starved or the like
  EXPECT_GT(time_only.gpus[3].judged_time.lost_s[static_cast<size_t>(Cause::kIdle)], 0);
}

TEST(TimeBreakdown, HealthyRunIsNearlyAllWorking) {
  Recording rec;
  rec.source = "test";
  for (unsigned i = 0; i < 2; ++i) rec.gpus.push_back(make_gpu(i, 1200, false));
  const GpuTimeBreakdown b = gpu_time_breakdown(diagnose(rec));
  EXPECT_NEAR(sum_of_parts(b), b.observed_s, 1e-6);
  EXPECT_GT(b.share(b.working_s), 0.95);
  EXPECT_LT(b.share(b.lost_total_s()), 0.03);
}

// The simulator's runs, each with its start-up: the parts still add up, and the cause of the run
// holds the lost time.
TEST(TimeBreakdown, SimulatedRunsAddUp) {
  struct Case {
    std::string spec;
    Cause cause;
    double min_share, max_share;
  };
  for (const Case& c :
       {Case{"healthy,duration=300s,interval=1s", Cause::kHealthy, 0, 0.05},
        Case{"mixed,duration=300s,interval=1s", Cause::kIdle, 0.4, 0.55},
        Case{"straggler,duration=300s,interval=1s", Cause::kCommunicationWait, 0.1, 0.9}}) {
    SCOPED_TRACE(c.spec);
    const auto spec = sim::parse_sim_spec(c.spec);
    ASSERT_TRUE(spec.ok());
    const auto model = gpu_model_by_key(spec->scenario.model);
    ASSERT_TRUE(model.has_value());
    const Diagnosis d = diagnose(sim::simulate_recording(spec.value(), *model));
    const GpuTimeBreakdown b = gpu_time_breakdown(d);
    EXPECT_GT(b.observed_s, 0);
    EXPECT_NEAR(sum_of_parts(b), b.observed_s, 1e-6);
    const double lost = c.cause == Cause::kHealthy ? b.lost_total_s()
                        : b.lost_s.count(c.cause)  ? b.lost_s.at(c.cause)
                                                   : 0;
    EXPECT_GE(b.share(lost), c.min_share);
    EXPECT_LE(b.share(lost), c.max_share);
    if (c.cause == Cause::kIdle) {  // mixed: two of the four idle GPUs are held, two are free
      EXPECT_NEAR(b.idle_free_s, b.idle_s() / 2, b.idle_s() * 0.05);
    }
  }
}

}  // namespace
}  // namespace gpudoctor
