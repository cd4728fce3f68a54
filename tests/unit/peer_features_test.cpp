// The communication detector reads what every other GPU did over each window of a GPU from running
// sums (Context::peer_features): the same figures as Context::features, at any window.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "analysis/config.hpp"
#include "analysis/detectors/detector.hpp"
#include "analysis/prepare.hpp"
#include "analysis/workload.hpp"
#include "core/gpu_models.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor::diag {
namespace {

void expect_same(double a, double b, const char* what) {
  if (std::isnan(a) || std::isnan(b)) {
    EXPECT_EQ(std::isnan(a), std::isnan(b)) << what << ": " << a << " vs " << b;
    return;
  }
  EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::fabs(b))) << what;
}

TEST(PeerFeatures, EqualTheWindowFeaturesAtAnyWindow) {
  for (const char* spec : {"straggler,gpus=4,duration=20m,interval=1s",
                           "data_starvation,gpus=2,duration=10m,interval=500ms"}) {
    SCOPED_TRACE(spec);
    Recording rec =
        sim::simulate_recording(sim::parse_sim_spec(spec).value(), *gpu_model_by_key("h100-sxm"));
    // A hole in the data: values missing on some samples must not count.
    auto& p = rec.gpus[1].column_for_write(Field::kPower);
    for (size_t i = 10; i < 40; ++i) p[i] = kNaN;
    const DiagnosisConfig cfg;
    Context ctx{rec, cfg, {}, detect_workload(rec)};
    for (const auto& s : rec.gpus) ctx.gpus.push_back(prepare(s, cfg));
    std::mt19937 rng(7);
    for (size_t g = 0; g < ctx.gpus.size(); ++g) {
      const size_t n = rec.gpus[g].size();
      ASSERT_GT(n, 100u);
      for (int k = 0; k < 200; ++k) {
        size_t i0 = rng() % n, i1 = rng() % (n + 1);
        if (i0 > i1) std::swap(i0, i1);
        const PeerFeatures a = ctx.peer_features(g, i0, i1);
        const Features b = ctx.features(g, i0, i1);
        EXPECT_EQ(a.n, b.n);
        expect_same(a.util, b.util, "util");
        expect_same(a.power_ratio, b.power_ratio, "power_ratio");
        expect_same(a.power_sd_ratio, b.power_sd_ratio, "power_sd_ratio");
        expect_same(a.efficiency, b.efficiency, "efficiency");
        size_t active = 0;
        for (size_t i = i0; i < i1; ++i) active += ctx.gpus[g].active[i];
        EXPECT_EQ(ctx.active_samples(g, i0, i1), active);
      }
    }
  }
}

// The sums are kept at every PrefixSums::kStride-th sample; between marks they are added up from
// the samples: bit for bit the running sum of every sample, at every index, the last included.
TEST(PeerFeatures, SumsBetweenMarksAreTheRunningSumsBitForBit) {
  Recording rec = sim::simulate_recording(
      sim::parse_sim_spec("data_starvation,gpus=1,duration=10m,interval=1s").value(),
      *gpu_model_by_key("h100-sxm"));
  auto& p = rec.gpus[0].column_for_write(Field::kPower);
  for (size_t i = 100; i < 170; ++i) p[i] = kNaN;
  const DiagnosisConfig cfg;
  const GpuData d = prepare(rec.gpus[0], cfg);
  const size_t n = rec.gpus[0].size();
  ASSERT_GT(n, 3 * PrefixSums::kStride);
  PrefixSums::Sums run;
  for (size_t i = 0; i <= n; ++i) {
    const PrefixSums::Sums s = d.sums_before(i);
    ASSERT_EQ(s.util_n, run.util_n) << i;
    ASSERT_EQ(s.pr_n, run.pr_n) << i;
    ASSERT_EQ(s.eff_n, run.eff_n) << i;
    // Exact equality on purpose: the figures must not move by a rounding.
    ASSERT_EQ(s.util, run.util) << i;
    ASSERT_EQ(s.pr, run.pr) << i;
    ASSERT_EQ(s.pr_sq, run.pr_sq) << i;
    ASSERT_EQ(s.eff, run.eff) << i;
    if (i == n) break;
    const double u = (*d.util)[i], r = d.power_ratio[i], e = d.efficiency(i);
    // (Written as the library adds, so that no compiler fuses one side's multiply-add alone.)
    run.util = run.util + (known(u) ? u : 0), run.util_n += known(u);
    run.pr = run.pr + (known(r) ? r : 0), run.pr_n += known(r);
    run.pr_sq = run.pr_sq + (known(r) ? r * r : 0);
    run.eff = run.eff + (known(e) ? e : 0), run.eff_n += known(e);
  }
  EXPECT_GT(run.pr_n, 0u);
  EXPECT_LT(run.pr_n, n);  // the hole left some samples out
  EXPECT_EQ(d.sums.marks.size(), n / PrefixSums::kStride + 1);
}

// What a GPU did over one of its own windows is made once and read from there by the others: the
// same figures, bit for bit, as made anew; a range that is no window of the GPU is made anew,
// whatever window the hint names.
TEST(PeerFeatures, ReadFromAWindowOfTheSameSamplesBitForBit) {
  Recording rec = sim::simulate_recording(
      sim::parse_sim_spec("straggler,gpus=3,duration=30m,interval=1s").value(),
      *gpu_model_by_key("h100-sxm"));
  const DiagnosisConfig cfg;
  Context ctx{rec, cfg, {}, detect_workload(rec)};
  for (const auto& s : rec.gpus) {
    ctx.gpus.push_back(prepare(s, cfg));
    segment(ctx.gpus.back(), cfg);
  }
  auto same = [](const PeerFeatures& a, const PeerFeatures& b) {
    auto eq = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
    return a.n == b.n && eq(a.util, b.util) && eq(a.power_ratio, b.power_ratio) &&
           eq(a.power_sd_ratio, b.power_sd_ratio) && eq(a.efficiency, b.efficiency);
  };
  for (size_t g = 0; g < ctx.gpus.size(); ++g) {
    auto& ws = ctx.gpus[g].windows;
    ASSERT_GT(ws.size(), 3u);
    for (auto& w : ws) w.peer = ctx.peer_features(g, w.i0, w.i1);
    for (size_t k = 0; k < ws.size(); ++k) {
      const PeerFeatures made = ctx.peer_features(g, ws[k].i0, ws[k].i1);
      for (size_t hint : {k, size_t{0}, ws.size() - 1, ws.size() + 5})
        EXPECT_TRUE(same(ctx.peer_features_at(g, ws[k].i0, ws[k].i1, hint), made)) << k;
      // Not a window: one sample short of it.
      if (ws[k].i1 - ws[k].i0 > 2) {
        const PeerFeatures part = ctx.peer_features(g, ws[k].i0, ws[k].i1 - 1);
        EXPECT_TRUE(same(ctx.peer_features_at(g, ws[k].i0, ws[k].i1 - 1, k), part)) << k;
        EXPECT_FALSE(same(part, made)) << k;
      }
    }
    // A window's stored figures are what is read: a changed one shows.
    ws[1].peer.util = -1;
    EXPECT_EQ(ctx.peer_features_at(g, ws[1].i0, ws[1].i1, 0).util, -1);
  }
}

}  // namespace
}  // namespace gpudoctor::diag
