// The communication detector reads what every other GPU did over each window of a GPU from running
// sums (Context::peer_features): the same figures as Context::features, at any window.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

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
    for (const auto& s : rec.gpus) {
      ctx.gpus.push_back(prepare(s, cfg));
      running_sums(ctx.gpus.back());
    }
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
  GpuData d = prepare(rec.gpus[0], cfg);
  running_sums(d);
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

// What a GPU did over the times of one of its windows is made once (its peer windows) and read by
// every other GPU whose window has the same times: the same samples, activity and figures, bit for
// bit, as range(), active_samples() and peer_features() give anew; over other times (GPUs sampled
// apart), made anew, the figures of a window over the same samples read from it.
TEST(PeerFeatures, PeerWindowsAreWhatIsMadeAnewBitForBit) {
  Recording rec = sim::simulate_recording(
      sim::parse_sim_spec("straggler,gpus=3,duration=30m,interval=1s").value(),
      *gpu_model_by_key("h100-sxm"));
  // GPU 2 sampled a quarter second after the others: no window of it has their times.
  rec.gpus[2].time_s.shift(0.25);
  const DiagnosisConfig cfg;
  Context ctx{rec, cfg, {}, detect_workload(rec)};
  for (size_t g = 0; g < rec.gpus.size(); ++g) {
    ctx.gpus.push_back(prepare(rec.gpus[g], cfg));
    running_sums(ctx.gpus.back());
    segment(ctx.gpus.back(), cfg);
  }
  for (size_t g = 0; g < ctx.gpus.size(); ++g) ctx.make_peer_windows(g);
  auto same = [](const PeerWindow& a, const PeerWindow& b) {
    auto eq = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
    return a.i0 == b.i0 && a.i1 == b.i1 && a.active == b.active && a.f.n == b.f.n &&
           eq(a.f.util, b.f.util) && eq(a.f.power_ratio, b.f.power_ratio) &&
           eq(a.f.power_sd_ratio, b.f.power_sd_ratio) && eq(a.f.efficiency, b.f.efficiency);
  };
  size_t from_table = 0, made = 0;
  for (size_t g = 0; g < ctx.gpus.size(); ++g) {
    const auto& ws = ctx.gpus[g].windows;
    ASSERT_GT(ws.size(), 3u);
    ASSERT_EQ(ctx.gpus[g].peer_windows.size(), ws.size());
    for (size_t h = 0; h < ctx.gpus.size(); ++h) {
      if (h == g) continue;
      for (size_t k = 0; k < ws.size(); ++k) {
        PeerWindow want;
        std::tie(want.i0, want.i1) = ctx.range(h, ws[k].t0, ws[k].t1);
        want.active = ctx.active_samples(h, want.i0, want.i1);
        want.f = ctx.peer_features(h, want.i0, want.i1);
        EXPECT_TRUE(same(ctx.peer_over(h, ws[k], k), want)) << g << " " << h << " " << k;
        const auto& pw = ctx.gpus[h].peer_windows;
        const bool aligned = k < pw.size() && pw[k].t0 == ws[k].t0 && pw[k].t1 == ws[k].t1;
        (aligned ? from_table : made) += 1;
      }
    }
  }
  EXPECT_GT(from_table, 0u);
  EXPECT_GT(made, 0u);
  // What is read where the times are the same is the table's: a changed entry shows.
  ctx.gpus[1].peer_windows[2].f.util = -1;
  EXPECT_EQ(ctx.peer_over(1, ctx.gpus[0].windows[2], 2).f.util, -1);
}

}  // namespace
}  // namespace gpudoctor::diag
