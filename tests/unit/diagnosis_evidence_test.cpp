// The diagnosis on all the evidence a log holds (issue 24): the limit from a percent column, a cap
// column that moves, the power-cap reason's levels or a plateau; the verdict where the GPU time
// went; signals that do not mean a cause (a busy memory controller near the limit, GRACT against
// SMACT, Windows desktop processes). Each built from series with the numbers described, with only
// the columns such a log has.
#include <cmath>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "analysis/diagnosis.hpp"
#include "formats/smi_table.hpp"

namespace gpudoctor {
namespace {

// Only the columns a row sets (NaN elsewhere is "not in the log"): a map of field to value.
using Cells = std::vector<std::pair<Field, double>>;

GpuSeries bare_gpu(unsigned index, size_t n, double interval, const std::function<Cells(size_t)>& f,
                   const std::string& name = "") {
  GpuSeries g;
  g.info.index = index;
  g.info.name = name;
  for (size_t i = 0; i < n; ++i) {
    const size_t k = g.append_row(static_cast<double>(i) * interval);
    for (const auto& [field, v] : f(i)) g.column_for_write(field)[k] = v;
  }
  return g;
}

Recording run_of(GpuSeries g) {
  Recording rec;
  rec.source = "test";
  rec.gpus.push_back(std::move(g));
  return rec;
}

Recording run_of(std::vector<GpuSeries> gpus) {
  Recording rec;
  rec.source = "test";
  rec.gpus = std::move(gpus);
  return rec;
}

std::string code(const std::optional<Cause>& c) {
  return c ? std::string(cause_code(*c)) : "none";
}

bool noted(const Diagnosis& d, const std::string& words) {
  for (const auto& n : d.input_notes)
    if (n.find(words) != std::string::npos) return true;
  return false;
}

// A deterministic wobble in [-1, 1].
double wobble(size_t i) {
  return std::sin(static_cast<double>(i) * 1.7) * std::cos(static_cast<double>(i) * 0.31);
}

TEST(DiagnosisEvidence, CapSweepAtThreeLevelsWithTheCapReasonIsPowerCapped) {
  // A 3070-like card swept through caps of 155, 165 and 175 W (10 minutes each at 2 s) with the
  // SW power-cap reason active, as a power-limit benchmark logs it: no name, no limit column.
  auto g = bare_gpu(0, 900, 2, [](size_t i) {
    const double cap = i < 300 ? 155 : (i < 600 ? 165 : 175);
    return Cells{{Field::kPower, cap - 1 + wobble(i)},
                 {Field::kClockSm, 1700 + 40 * wobble(i + 3)},
                 {Field::kClockEventReasons, 0x4}};
  });
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(code(d.verdict), "power_capped");
  EXPECT_EQ(d.gpus[0].power_limit_source, "highest power-cap plateau");
  ASSERT_TRUE(d.gpus[0].power_limit_w);
  EXPECT_NEAR(*d.gpus[0].power_limit_w, 174, 2);
  EXPECT_TRUE(noted(d, "several levels")) << d.input_notes.size();
}

TEST(DiagnosisEvidence, OneCapLevelIsTheLimitNotALoweredCap) {
  // Held at one level by the cap the whole time: the GPU at its limit, not a lowered cap.
  auto g = bare_gpu(0, 600, 1, [](size_t i) {
    return Cells{
        {Field::kPower, 219 + wobble(i)}, {Field::kUtilGpu, 100}, {Field::kClockEventReasons, 0x4}};
  });
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(code(d.verdict), "healthy");
  EXPECT_EQ(d.gpus[0].power_limit_source, "power-cap plateau");
}

TEST(DiagnosisEvidence, CapColumnThatMovesIsPowerCapped) {
  // A power-capping logger: a per-row cap stepping from 130 W down to 30 W, the GPU drawing its
  // cap while busy.
  auto g = bare_gpu(0, 1100, 1, [](size_t i) {
    const double cap = 130 - 10 * static_cast<double>(i / 100);
    return Cells{{Field::kPowerLimitEnforced, cap},
                 {Field::kPower, cap * 0.97 + wobble(i)},
                 {Field::kUtilGpu, 100}};
  });
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(code(d.verdict), "power_capped");
  EXPECT_EQ(d.gpus[0].power_limit_source, "highest cap in the log");
  EXPECT_EQ(d.gpus[0].power_limit_w, 130);
}

TEST(DiagnosisEvidence, FlatPlateauWithoutALimitIsTheLimit) {
  // Only time, power and util: 70 % of the busy samples sit at 240 W (never above), the others
  // lower (the work's lighter steps). The plateau is the limit; the GPU works at it.
  auto g = bare_gpu(0, 1200, 1, [](size_t i) {
    const bool light = i % 10 >= 7;
    return Cells{{Field::kPower, light ? 170 + 30 * std::abs(wobble(i)) : 239.5 + 0.5 * wobble(i)},
                 {Field::kUtilGpu, 99}};
  });
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(d.gpus[0].power_limit_source, "power plateau");
  ASSERT_TRUE(d.gpus[0].power_limit_w);
  EXPECT_NEAR(*d.gpus[0].power_limit_w, 240, 1.5);
  EXPECT_EQ(code(d.verdict), "healthy");
  EXPECT_TRUE(noted(d, "plateau"));
}

TEST(DiagnosisEvidence, SteadyDrawIsNoPlateauAndTheMissingLimitIsNamed) {
  // Power steady at 200 W with noise both ways: a steady load, not a ceiling. Nothing gives the
  // limit, so no efficiency verdict; the limitation names the flag that would.
  auto g = bare_gpu(0, 1200, 1, [](size_t i) {
    return Cells{{Field::kPower, 200 + 8 * wobble(i)}, {Field::kUtilGpu, 100}};
  });
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(d.gpus[0].power_limit_source, "");
  EXPECT_EQ(code(d.gpus[0].verdict), "none");
  bool named = false;
  for (const auto& l : d.limitations) named = named || l.find("--power-limit") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(DiagnosisEvidence, PercentOfLimitBesideWattsGivesTheLimit) {
  auto g = bare_gpu(0, 600, 1, [](size_t i) {
    const double w = 285 + 3 * wobble(i);
    return Cells{{Field::kPower, w}, {Field::kPowerPercent, w / 3}, {Field::kUtilGpu, 100}};
  });
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(d.gpus[0].power_limit_source, "percent-of-limit column");
  EXPECT_EQ(d.gpus[0].power_limit_w, 300);
  EXPECT_EQ(code(d.verdict), "healthy");
}

TEST(DiagnosisEvidence, PercentWithoutWattsIsThePowerRatio) {
  // GPU-Util pinned while the board draws a quarter of its limit: busy but idle, judged from the
  // percent column alone.
  auto g = bare_gpu(0, 600, 1, [](size_t i) {
    return Cells{{Field::kPowerPercent, 25 + wobble(i)}, {Field::kUtilGpu, 100}};
  });
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(d.gpus[0].power_limit_source, "percent-of-limit column");
  ASSERT_TRUE(d.gpus[0].efficiency);
  EXPECT_NEAR(*d.gpus[0].efficiency, 0.25, 0.02);
  EXPECT_TRUE(d.verdict == Cause::kLaunchOverhead || d.verdict == Cause::kCommunicationWait)
      << code(d.verdict);
}

// One A100 (400 W) sample row.
Cells a100(double util, double power) {
  return {{Field::kUtilGpu, util},
          {Field::kPower, power},
          {Field::kPowerLimitDefault, 400},
          {Field::kMemUsed, util > 0 ? 30000 : 0},
          {Field::kMemTotal, 81920}};
}

TEST(DiagnosisEvidence, HealthyHourThenALightTailIsHealthy) {
  // An hour of full work, then eight minutes of light evaluation at 30 % util: the tail is a
  // finding with its share, not the run's verdict.
  auto g = bare_gpu(
      0, 4080, 1,
      [](size_t i) {
        return i < 3600 ? a100(99, 360 + 5 * wobble(i)) : a100(30 + 20 * wobble(i), 110);
      },
      "NVIDIA A100-SXM4-80GB");
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(code(d.verdict), "healthy");
  EXPECT_EQ(code(d.gpus[0].verdict), "healthy");
  ASSERT_FALSE(d.findings.empty());
  for (const auto& f : d.findings) EXPECT_LT(f.share, 0.15) << cause_code(f.cause);
}

TEST(DiagnosisEvidence, TwoOfEightGpusUnusedAreSaidAndCounted) {
  std::vector<GpuSeries> gpus;
  for (unsigned g = 0; g < 8; ++g)
    gpus.push_back(bare_gpu(
        g, 1800, 1,
        [g](size_t i) { return g < 6 ? a100(99, 360 + 5 * wobble(i + g)) : a100(0, 60); },
        "NVIDIA A100-SXM4-80GB"));
  const auto d = diagnose(run_of(std::move(gpus)));
  // A quarter of the GPU time idle is not "mostly working": idleness is the verdict, in words.
  EXPECT_EQ(code(d.verdict), "idle");
  EXPECT_EQ(d.headline, "2 of 8 GPUs idle: 25 % of the GPU time");
  ASSERT_TRUE(d.gpus[7].lost_gpu_hours);
  EXPECT_NEAR(*d.gpus[7].lost_gpu_hours, 0.5, 0.01);
  EXPECT_NEAR(d.gpu_hours, 4.0, 0.01);
  ASSERT_TRUE(d.lost_gpu_hours);
  EXPECT_GE(*d.lost_gpu_hours, 1.0);
}

TEST(DiagnosisEvidence, FourOfEightGpusIdleIsTheVerdict) {
  std::vector<GpuSeries> gpus;
  for (unsigned g = 0; g < 8; ++g)
    gpus.push_back(bare_gpu(
        g, 1800, 1,
        [g](size_t i) { return g < 4 ? a100(99, 360 + 5 * wobble(i + g)) : a100(0, 60); },
        "NVIDIA A100-SXM4-80GB"));
  const auto d = diagnose(run_of(std::move(gpus)));
  EXPECT_EQ(code(d.verdict), "idle");
  EXPECT_EQ(d.headline, "4 of 8 GPUs idle: 50 % of the GPU time");
  double idle_share = 0;
  for (const auto& f : d.findings)
    if (f.cause == Cause::kIdle) idle_share += f.share;
  EXPECT_NEAR(idle_share, 0.5, 0.01);
}

TEST(DiagnosisEvidence, ShortFindingIsListedNeverTheVerdict) {
  // Five minutes of starvation dips in a 2-hour run with no limit (no efficiency): under 10 % of
  // the GPU time, so no verdict comes from it.
  auto g = bare_gpu(0, 7200, 1, [](size_t i) {
    const bool dips = i < 300 && i % 3 == 0;
    return Cells{{Field::kUtilGpu, dips ? 10.0 : 98.0}, {Field::kPower, 150 + 20 * wobble(i)}};
  });
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_NE(code(d.verdict), "data_starvation");
}

TEST(DiagnosisEvidence, GraphicsEngineBusyWithEmptySmsIsLaunchBound) {
  // DCGM GRACT 95 % (no GPU-Util column), SMACT 12 %, power a third of the limit: the engine has
  // work queued all the time but the SMs are empty, which is launch-bound, not starving.
  auto g = bare_gpu(
      0, 600, 1,
      [](size_t i) {
        return Cells{{Field::kGpmGraphicsUtil, 95 + 3 * wobble(i)},
                     {Field::kGpmSmUtil, 12 + 2 * wobble(i + 1)},
                     {Field::kPower, 130 + 5 * wobble(i + 2)},
                     {Field::kPowerLimitDefault, 400}};
      },
      "NVIDIA A100-SXM4-80GB");
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(code(d.verdict), "launch_overhead");
}

TEST(DiagnosisEvidence, BusyMemoryControllerNearTheLimitIsWorking) {
  auto g = bare_gpu(
      0, 600, 1,
      [](size_t i) {
        Cells c = a100(100, 355 + 4 * wobble(i));
        c.push_back({Field::kUtilMem, 88});
        return c;
      },
      "NVIDIA A100-SXM4-80GB");
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(code(d.verdict), "healthy");
}

TEST(DiagnosisEvidence, WindowsDesktopProcessesAreNotContention) {
  // nvidia-smi on Windows (WDDM): every program with a window is C+G, memory N/A. One real
  // compute process (C) beside them: no contention.
  const std::string snapshot = R"(Tue Mar  4 10:00:00 2025
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 572.16                 Driver Version: 572.16         CUDA Version: 12.8     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                  Driver-Model | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4070      WDDM  |   00000000:01:00.0  On |                  N/A |
|  0%   45C    P2            180W /  200W |    8000MiB /  12282MiB |     98%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|    0   N/A  N/A            1234    C+G   C:\Windows\explorer.exe                 N/A      |
|    0   N/A  N/A            2345    C+G   ...crosoft\Edge\Application\msedge.exe  N/A      |
|    0   N/A  N/A            3456    C+G   ...8wekyb3d8bbwe\WindowsTerminal.exe    N/A      |
|    0   N/A  N/A            4567      C   ...\Python311\python.exe                N/A      |
+-----------------------------------------------------------------------------------------+
)";
  std::string text;
  for (int k = 0; k < 120; ++k) {
    std::string s = snapshot;
    const int sec = k % 60, min = k / 60;
    s.replace(s.find("10:00:00"), 8,
              std::string("10:0") + std::to_string(min) + ":" + (sec < 10 ? "0" : "") +
                  std::to_string(sec));
    text += s;
  }
  auto rec = read_smi_table(text, "windows.txt", {});
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  ASSERT_EQ(rec.value().gpus.size(), 1u);
  EXPECT_EQ(rec.value().gpus[0].processes.size(), 1u);  // python.exe only
  const auto d = diagnose(rec.value());
  EXPECT_NE(code(d.verdict), "contention");
}

TEST(DiagnosisEvidence, ShortWorkBetweenIdleStartAndEndIsJudged) {
  // 9 minutes idle start-up, 90 s of starved work, 9.5 minutes idle after it: the phases are not
  // causes, so the work is what the verdict is about.
  auto g = bare_gpu(
      0, 1200, 1,
      [](size_t i) {
        if (i < 540 || i >= 630) return a100(0, 55);
        return a100(i % 4 == 0 ? 10 : 97, 150 + 20 * wobble(i));
      },
      "NVIDIA A100-SXM4-80GB");
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(code(d.verdict), "data_starvation");
  for (const auto& l : d.limitations) EXPECT_EQ(l.find("no power limit"), std::string::npos) << l;
}

TEST(DiagnosisEvidence, PercentOfAnEnforcedLimitDoesNotHideALoweredCap) {
  // A W&B-like log: an A100 (400 W) capped at 250 W, its percent of that enforced limit: the cap
  // is seen against the model table's default, not taken as the default.
  auto g = bare_gpu(
      0, 600, 1,
      [](size_t i) {
        const double w = 246 + 2 * wobble(i);
        return Cells{{Field::kPower, w},
                     {Field::kPowerPercent, 100 * w / 250},
                     {Field::kPowerLimitEnforced, 250},
                     {Field::kUtilGpu, 100}};
      },
      "NVIDIA A100-SXM4-80GB");
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_EQ(code(d.verdict), "power_capped");
  EXPECT_EQ(d.gpus[0].power_limit_source, "model-table");
  ASSERT_TRUE(d.gpus[0].power_limit_confidence);
  EXPECT_NEAR(*d.gpus[0].power_limit_confidence, 0.9, 1e-9);
}

TEST(DiagnosisEvidence, ZeroCapsAreNoCaps) {
  // A cap column with N/A read as 0 now and then does not "move" from 0 to 130 W.
  auto g = bare_gpu(0, 600, 1, [](size_t i) {
    return Cells{{Field::kPowerLimitEnforced, i % 50 == 0 ? 0.0 : 130.0},
                 {Field::kPower, 124 + wobble(i)},
                 {Field::kUtilGpu, 100}};
  });
  const auto d = diagnose(run_of(std::move(g)));
  EXPECT_NE(code(d.verdict), "power_capped");
  EXPECT_NE(d.gpus[0].power_limit_source, "highest cap in the log");
}

}  // namespace
}  // namespace gpudoctor
