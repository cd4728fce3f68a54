// serve's ledger rule (analysis/ledger): each sample counted once, by the cause of the diagnosis
// that judged it; unjudged samples as working or free once they can no longer be judged.
#include <gtest/gtest.h>

#include "analysis/ledger.hpp"

namespace gpudoctor {
namespace {

constexpr int64_t kT0 = 1'767'225'600'000;

using Judged = GpuDiagnosis::JudgedSample;

double sum_states(const GpuLedger& l) {
  return l.working_s + l.lost_total_s + l.idle_allocated_s + l.free_s;
}

TEST(LedgerBook, CountsEachJudgedSampleOnceByItsCause) {
  LedgerBook b;
  for (int k = 1; k <= 10; ++k) b.add_sample(kT0 + k * 1000, 1, true);
  std::vector<Judged> judged;
  for (int k = 1; k <= 6; ++k) judged.push_back({double(k), 1, Cause::kDataStarvation, 0.25});
  std::vector<CountedSample> counted;
  b.judge(judged, kT0, kT0 + 10'000, 300'000, &counted);
  EXPECT_EQ(counted.size(), 6u);  // samples 7-10 wait: a later diagnosis may judge them
  EXPECT_EQ(b.pending(), 4u);
  EXPECT_DOUBLE_EQ(b.totals().lost_s[size_t(Cause::kDataStarvation)], 1.5);
  EXPECT_DOUBLE_EQ(b.totals().lost_total_s, 1.5);
  EXPECT_DOUBLE_EQ(b.totals().working_s, 4.5);
  // The same samples judged again (overlapping windows) count nothing more.
  b.judge(judged, kT0, kT0 + 10'000, 300'000, &counted);
  EXPECT_EQ(counted.size(), 6u);
  EXPECT_DOUBLE_EQ(sum_states(b.totals()), 6);
  // The counted samples carry their own times, and add up to the totals.
  EXPECT_EQ(counted.front().unix_ms, kT0 + 1000);
  EXPECT_EQ(counted.back().unix_ms, kT0 + 6000);
  double lost = 0;
  for (const auto& c : counted) lost += c.delta.lost_total_s;
  EXPECT_DOUBLE_EQ(lost, b.totals().lost_total_s);
}

TEST(LedgerBook, IdleIsAllocatedOnlyWhenSomethingHeldTheGpu) {
  LedgerBook held, free_gpu;
  for (int k = 1; k <= 4; ++k) {
    held.add_sample(kT0 + k * 1000, 1, true);
    free_gpu.add_sample(kT0 + k * 1000, 1, false);
  }
  std::vector<Judged> judged;
  for (int k = 1; k <= 4; ++k) judged.push_back({double(k), 1, Cause::kIdle, 1});
  held.judge(judged, kT0, kT0 + 4000, 300'000);
  free_gpu.judge(judged, kT0, kT0 + 4000, 300'000);
  EXPECT_DOUBLE_EQ(held.totals().idle_allocated_s, 4);
  EXPECT_DOUBLE_EQ(held.totals().lost_s[size_t(Cause::kIdle)], 4);
  EXPECT_DOUBLE_EQ(held.totals().lost_total_s, 0);  // idle is its own state, not "lost"
  EXPECT_DOUBLE_EQ(free_gpu.totals().free_s, 4);
  EXPECT_DOUBLE_EQ(free_gpu.totals().lost_s[size_t(Cause::kIdle)], 0);
}

TEST(LedgerBook, UnjudgedSamplesCountOnceTheyCanNoLongerBeJudged) {
  LedgerBook b;
  for (int k = 1; k <= 10; ++k) b.add_sample(kT0 + k * 1000, 1, k > 5);
  // Start-up (1-5, nothing held) is never judged; 6-8 are; 9-10 are newer than the last judged.
  std::vector<Judged> judged;
  for (int k = 6; k <= 8; ++k) judged.push_back({double(k), 1, Cause::kHealthy, 0});
  b.judge(judged, kT0, kT0 + 10'000, 300'000);
  EXPECT_DOUBLE_EQ(b.totals().free_s, 5);
  EXPECT_DOUBLE_EQ(b.totals().working_s, 3);
  EXPECT_EQ(b.pending(), 2u);
  // Out of the window (older than now - keep): counted as never judged.
  b.judge({}, kT0, kT0 + 20'000, 10'500);
  EXPECT_DOUBLE_EQ(b.totals().working_s, 4);
  std::vector<CountedSample> counted;
  b.flush(&counted);
  ASSERT_EQ(counted.size(), 1u);
  EXPECT_EQ(counted[0].unix_ms, kT0 + 10'000);
  EXPECT_DOUBLE_EQ(sum_states(b.totals()), 10);
  EXPECT_EQ(b.pending(), 0u);
}

}  // namespace
}  // namespace gpudoctor
