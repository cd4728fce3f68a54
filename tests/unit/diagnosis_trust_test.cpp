// The diagnosis on logs with the numbers that misled it (issue 14's four behaviours) and on rows
// that cannot be trusted (data quality): each test builds its log here, with the described
// numbers and a little noise, so none depends on the simulator.
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "analysis/diagnosis.hpp"
#include "analysis/prepare.hpp"
#include "report/diagnosis_report.hpp"

namespace gpudoctor {
namespace {

struct Row {
  double util = 100, power = 560, sm = kMissing, mem_util = 40, temp = 60, mem_used = 40000;
};

// One H100 SXM (700 W default limit, read from the log) sampled every `interval` s.
GpuSeries make_gpu(unsigned index, size_t n, double interval, const std::function<Row(size_t)>& f,
                   bool with_sm, bool with_mem_util = true) {
  GpuSeries g;
  g.info.index = index;
  g.info.name = "NVIDIA H100 80GB HBM3";
  g.power_limit_source = "log";
  for (size_t i = 0; i < n; ++i) {
    const Row r = f(i);
    const size_t k = g.append_row(static_cast<double>(i) * interval);
    g.column_for_write(Field::kUtilGpu)[k] = r.util;
    g.column_for_write(Field::kPower)[k] = r.power;
    g.column_for_write(Field::kPowerLimitDefault)[k] = 700;
    g.column_for_write(Field::kPowerLimitEnforced)[k] = 700;
    g.column_for_write(Field::kTemp)[k] = r.temp;
    g.column_for_write(Field::kMemUsed)[k] = r.mem_used;
    g.column_for_write(Field::kMemTotal)[k] = 81559;
    if (with_mem_util) g.column_for_write(Field::kUtilMem)[k] = r.mem_util;
    if (with_sm) g.column_for_write(Field::kGpmSmUtil)[k] = r.sm;
  }
  return g;
}

std::string code(const std::optional<Cause>& c) {
  return c ? std::string(cause_code(*c)) : "none";
}
const Finding* finding(const Diagnosis& d, Cause c) {
  for (const auto& f : d.findings)
    if (f.cause == c) return &f;
  return nullptr;
}

// 1. A well-fed data-parallel job at GPU-Util ~83 %, power ~77 % of the limit, SM activity
//    ~63 %, fewer than 3 % of samples below 60 %: not starving, nothing critical.
TEST(DiagnosisTrust, WellFedJobBelowFullUtilIsNotStarving) {
  Recording rec;
  for (unsigned g = 0; g < 4; ++g) {
    std::mt19937 rng(g + 1);
    std::normal_distribution<double> noise(0, 1);
    rec.gpus.push_back(make_gpu(
        g, 1800, 0.5,
        [&](size_t i) {
          Row r;
          r.util = std::clamp(83 + 5 * noise(rng), 61.0, 100.0);
          if (i % 50 == 7) r.util = 45;  // 2 % of samples dip
          r.power = 0.77 * 700 + 20 * noise(rng);
          r.sm = 63 + 4 * noise(rng);
          return r;
        },
        true));
  }
  const auto d = diagnose(rec);
  EXPECT_EQ(code(d.verdict), "healthy");
  EXPECT_EQ(finding(d, Cause::kDataStarvation), nullptr);
  for (const auto& f : d.findings) EXPECT_NE(f.severity, Severity::kCritical) << f.summary;
  for (const auto& g : d.gpus) EXPECT_EQ(code(g.verdict), "healthy");
}

// 1b. The same GPU with a real duty cycle (a third of the samples waiting) is starving.
TEST(DiagnosisTrust, DipsAreTheEvidenceOfStarvation) {
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 1);
  Recording rec;
  rec.gpus.push_back(make_gpu(
      0, 1800, 0.5,
      [&](size_t i) {
        Row r;
        const bool waiting = i % 6 < 2;
        r.util = waiting ? 5 + 3 * std::abs(noise(rng)) : 97 + 2 * noise(rng);
        r.power = waiting ? 150 : 600 + 10 * noise(rng);
        r.sm = waiting ? 2 : 80;
        return r;
      },
      true));
  const auto s = diagnose(rec);
  EXPECT_EQ(code(s.verdict), "data_starvation");
}

// A finding is critical only when it is sure: a low-confidence cause stays a warning however
// much time it seems to cost.
TEST(DiagnosisTrust, SeverityFollowsConfidence) {
  Recording rec;
  for (unsigned g = 0; g < 2; ++g)
    rec.gpus.push_back(make_gpu(
        g, 1200, 1,
        [](size_t i) {
          Row r;
          r.util = i % 3 ? 100 : 99.5;
          r.power = 0.3 * 700;
          r.mem_util = 10;
          return r;
        },
        false));
  const auto d = diagnose(rec);
  ASSERT_FALSE(d.findings.empty());
  for (const auto& f : d.findings)
    if (f.confidence < 0.7) {
      EXPECT_NE(f.severity, Severity::kCritical) << f.summary;
    }
}

// 2. Memory bound from nvidia-smi's fields alone: GPU-Util ~99 %, utilization.memory 75-95 %,
//    power 50-70 % of the limit, no SM or DRAM columns.
TEST(DiagnosisTrust, MemoryControllerBusyIsMemoryBoundWithoutSmOrDram) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u01(0, 1);
  Recording rec;
  rec.gpus.push_back(make_gpu(
      0, 900, 1,
      [&](size_t) {
        Row r;
        r.util = 98 + 2 * u01(rng);
        r.mem_util = 75 + 20 * u01(rng);
        r.power = (0.5 + 0.2 * u01(rng)) * 700;
        return r;
      },
      false));
  const auto d = diagnose(rec);
  EXPECT_EQ(code(d.verdict), "memory_bound");
  const Finding* f = finding(d, Cause::kMemoryBound);
  ASSERT_NE(f, nullptr);
  EXPECT_GE(f->evidence["mem_util_pct"].get<double>(), 75);
}

// ... and a compute-bound job whose controller is moderately busy stays healthy.
TEST(DiagnosisTrust, ModerateMemoryControllerIsNotMemoryBound) {
  Recording rec;
  rec.gpus.push_back(make_gpu(
      0, 900, 1,
      [](size_t) {
        Row r;
        r.util = 100, r.mem_util = 48, r.power = 490;  // 70 % of the limit
        return r;
      },
      false));
  EXPECT_EQ(code(diagnose(rec).verdict), "healthy");
}

Recording busy_idle_gpus(unsigned n, bool flat, unsigned seed) {
  Recording rec;
  for (unsigned g = 0; g < n; ++g) {
    std::mt19937 rng(seed + g);
    std::uniform_real_distribution<double> u01(0, 1);
    rec.gpus.push_back(make_gpu(
        g, 900, 1,
        [&](size_t) {
          Row r;
          r.util = flat ? 100 : 90 + 8 * u01(rng);
          r.power = (0.2 + 0.2 * u01(rng)) * 700;
          r.mem_util = 15;
          return r;
        },
        false));
  }
  return rec;
}

// 3. Two to eight GPUs, GPU-Util 90-98 % and jittering, power 20-40 %, no interconnect columns:
//    launch gaps, with communication wait named as the alternative and how to tell them apart.
TEST(DiagnosisTrust, JitteringBusyIdleGpusAreLaunchBoundWithCommunicationAsAlternative) {
  for (unsigned n : {2u, 4u, 8u}) {
    const auto d = diagnose(busy_idle_gpus(n, false, 10 * n));
    EXPECT_EQ(code(d.verdict), "launch_overhead") << n << " GPUs";
    const Finding* f = finding(d, Cause::kLaunchOverhead);
    ASSERT_NE(f, nullptr);
    ASSERT_FALSE(f->alternatives.empty());
    EXPECT_EQ(f->alternatives[0].cause, Cause::kCommunicationWait);
    EXPECT_LT(f->alternatives[0].confidence, f->confidence);
    EXPECT_NE(f->alternatives[0].tell_apart.find("NVLink"), std::string::npos);
    const auto j = diagnosis_json(d);
    EXPECT_EQ(j["findings"][0]["alternatives"][0]["cause"], "communication_wait");
    EXPECT_NE(diagnosis_text(d).find("or communication_wait"), std::string::npos);
  }
}

// GPU-Util pinned at 100 % (NCCL spinning) on several GPUs: communication wait, launch overhead
// the alternative.
TEST(DiagnosisTrust, FlatBusyIdleGpusAreCommunicationWaitWithLaunchAsAlternative) {
  const auto d = diagnose(busy_idle_gpus(4, true, 1));
  EXPECT_EQ(code(d.verdict), "communication_wait");
  const Finding* f = finding(d, Cause::kCommunicationWait);
  ASSERT_NE(f, nullptr);
  ASSERT_FALSE(f->alternatives.empty());
  EXPECT_EQ(f->alternatives[0].cause, Cause::kLaunchOverhead);
}

// 4. Light inference traffic on a vLLM server: serving fixes, not DataLoader advice.
Recording light_traffic(const std::string& process) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u01(0, 1);
  Recording rec;
  auto g = make_gpu(
      0, 900, 1,
      [&](size_t) {
        Row r;
        const bool request = u01(rng) < 0.4;
        r.util = request ? 60 + 40 * u01(rng) : 0;
        r.power = request ? 300 : 120;
        return r;
      },
      false);
  if (!process.empty()) {
    g.processes_recorded = true;
    g.processes.push_back({4242, process, 0, 899, 70000});
  }
  rec.gpus.push_back(std::move(g));
  return rec;
}

bool any_contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x.find(s) != std::string::npos) return true;
  return false;
}

TEST(DiagnosisTrust, ServingWorkloadGetsServingFixes) {
  for (const char* name : {"python3 -m vllm.entrypoints.openai.api_server",
                           "text-generation-launcher", "tritonserver", "sglang.launch_server"}) {
    const auto d = diagnose(light_traffic(name));
    EXPECT_EQ(d.workload.kind, "serving") << name;
    ASSERT_FALSE(d.findings.empty()) << name;
    const Finding& f = d.findings[0];
    EXPECT_FALSE(any_contains(f.fixes, "DataLoader")) << name;
    EXPECT_TRUE(any_contains(f.fixes, "batching") || any_contains(f.fixes, "MIG") ||
                any_contains(f.fixes, "CUDA graphs"))
        << name;
    if (f.cause == Cause::kDataStarvation) {
      EXPECT_NE(f.summary.find("requests"), std::string::npos) << f.summary;
    }
    EXPECT_EQ(diagnosis_json(d)["workload"]["kind"], "serving");
  }
}

TEST(DiagnosisTrust, TrainingAndUnknownWorkloadsGetTheirFixes) {
  const auto t = diagnose(light_traffic("python train.py --epochs 3"));
  EXPECT_EQ(t.workload.kind, "training");
  ASSERT_FALSE(t.findings.empty());
  EXPECT_FALSE(any_contains(t.findings[0].fixes, "Serving:"));
  const auto u = diagnose(light_traffic(""));
  EXPECT_EQ(u.workload.kind, "unknown");
  ASSERT_FALSE(u.findings.empty());
  EXPECT_TRUE(any_contains(u.findings[0].fixes, "Training: "));
  EXPECT_TRUE(any_contains(u.findings[0].fixes, "Serving: "));
}

// Absence is not evidence (issue 13): no GPU-Util and no GPU name or limit, but power at 127 W
// with the SW power cap reason set in most samples (a power-limit sweep) is work, not idleness;
// the plateau it holds under the cap stands in for the limit.
TEST(DiagnosisTrust, NoUtilWithPowerCapReasonIsNotIdle) {
  GpuSeries g;
  g.info.index = 0;
  for (size_t i = 0; i < 600; ++i) {
    const size_t k = g.append_row(static_cast<double>(i));
    const bool capped = i % 10 < 8;
    g.column_for_write(Field::kPower)[k] = capped ? 127.3 + 0.01 * static_cast<double>(i % 7)
                                                  : 95.5 + 0.01 * static_cast<double>(i % 5);
    g.column_for_write(Field::kClockSm)[k] = capped ? 1350 : 1500;
    g.column_for_write(Field::kClockEventReasons)[k] = capped ? 4 : 0;
  }
  Recording rec;
  rec.gpus.push_back(std::move(g));
  const auto d = diagnose(rec);
  EXPECT_NE(code(d.verdict), "idle");
  EXPECT_EQ(d.gpus[0].power_limit_source, "power-cap plateau");
  EXPECT_NEAR(d.gpus[0].power_limit_w.value_or(0), 127.3, 0.2);
  for (const auto& p : d.gpus[0].phases) EXPECT_NE(p.kind, "idle");
}

// Nothing at all says whether the GPU worked (power at a laptop's draw, no util, no reasons): not
// idle either, "cannot tell".
TEST(DiagnosisTrust, NoSignOfActivityIsNotIdle) {
  GpuSeries g;
  g.info.index = 0;
  for (size_t i = 0; i < 300; ++i) {
    const size_t k = g.append_row(static_cast<double>(i));
    g.column_for_write(Field::kPower)[k] = 40.25 + static_cast<double>(i % 9);
    g.column_for_write(Field::kTemp)[k] = 60;
  }
  Recording rec;
  rec.gpus.push_back(std::move(g));
  const auto d = diagnose(rec);
  EXPECT_EQ(code(d.verdict), "none");
  EXPECT_FALSE(d.limitations.empty());
}

// A GPU whose log has only the instantaneous power reading, no name and no limit: its power
// limit is the plateau of that reading, as it is where the same values are the power draw, and
// the whole diagnosis is the one the power draw gives (the detectors read the reading in its place,
// power_draw; no copy of the input is made), but for the limitation that says so.
TEST(DiagnosisTrust, InstantPowerAloneGivesTheLimitThePowerDrawWould) {
  auto make = [](Field power_field) {
    GpuSeries g;
    for (size_t i = 0; i < 1800; ++i) {
      const size_t k = g.append_row(static_cast<double>(i));
      g.column_for_write(Field::kUtilGpu)[k] = 100;
      g.column_for_write(power_field)[k] = i % 5 == 0 ? 150 : 249 + static_cast<double>(i % 3) / 2;
      g.column_for_write(Field::kTemp)[k] = 60;
    }
    Recording rec;
    rec.gpus.push_back(std::move(g));
    return rec;
  };
  const Diagnosis instant = diagnose(make(Field::kPowerInstant));
  const Diagnosis drawn = diagnose(make(Field::kPower));
  ASSERT_EQ(instant.gpus.size(), 1u);
  ASSERT_EQ(drawn.gpus.size(), 1u);
  ASSERT_TRUE(drawn.gpus[0].power_limit_w.has_value());
  EXPECT_NEAR(*drawn.gpus[0].power_limit_w, 249.5, 0.6);
  EXPECT_EQ(drawn.gpus[0].power_limit_source, "power plateau");
  EXPECT_EQ(instant.gpus[0].power_limit_w, drawn.gpus[0].power_limit_w);
  EXPECT_EQ(instant.gpus[0].power_limit_source, drawn.gpus[0].power_limit_source);
  EXPECT_EQ(instant.gpus[0].efficiency, drawn.gpus[0].efficiency);
  EXPECT_EQ(code(instant.verdict), code(drawn.verdict));
  auto json = diagnosis_json(instant), drawn_json = diagnosis_json(drawn);
  EXPECT_EQ(json["gpus"], drawn_json["gpus"]);
  EXPECT_EQ(json["findings"], drawn_json["findings"]);
  auto& said = json["limitations"];
  ASSERT_FALSE(said.empty());
  EXPECT_NE(said[0].get<std::string>().find("instantaneous reading"), std::string::npos);
  said.erase(said.begin());
  EXPECT_EQ(said, drawn_json["limitations"]);
}

// Data quality: a hung logger's frozen rows are left out and said; gaps are said.
TEST(DiagnosisTrust, FrozenRowsAreLeftOutAndSaid) {
  Recording rec;
  std::mt19937 rng(9);
  std::normal_distribution<double> noise(0, 1);
  // 10 minutes of healthy work, then 50 minutes of the same busy-but-idle row repeated.
  rec.gpus.push_back(make_gpu(
      0, 3600, 1,
      [&](size_t i) {
        Row r;
        if (i < 600) {
          r.power = 620 + 10 * noise(rng), r.util = 100, r.sm = 90 + noise(rng);
        } else {
          r.power = 123.45, r.util = 100, r.sm = 12;
        }
        return r;
      },
      true));
  const auto d = diagnose(rec);
  EXPECT_EQ(code(d.verdict), "healthy");
  bool frozen = false;
  for (const auto& q : d.data_quality)
    if (q.kind == "frozen") {
      frozen = true;
      EXPECT_GE(q.samples, 2990u);
      EXPECT_NEAR(q.start_s, 601, 1);
    }
  EXPECT_TRUE(frozen);
  bool said = false;
  for (const auto& l : d.limitations) said = said || l.find("frozen rows") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(diagnosis_json(d)["data_quality"][0]["kind"], "frozen");
}

// A logger sampling every 10 ms faster than the driver refreshes repeats rows for a few tens of
// milliseconds: not frozen.
TEST(DiagnosisTrust, FastLoggerRepeatsAreNotFrozen) {
  Recording rec;
  rec.gpus.push_back(make_gpu(
      0, 6000, 0.01,
      [](size_t i) {
        Row r;
        r.power = 600.25 + static_cast<double>(i / 10 % 7);  // a new reading every 100 ms
        return r;
      },
      false));
  const auto d = diagnose(rec);
  for (const auto& q : d.data_quality) EXPECT_NE(q.kind, "frozen") << q.detail;
  EXPECT_EQ(code(d.verdict), "healthy");
}

TEST(DiagnosisTrust, GapsAreReported) {
  Recording rec;
  auto g = make_gpu(
      0, 600, 1, [](size_t) { return Row{}; }, false);
  auto t = g.time_s.to_vector();
  for (size_t i = 300; i < t.size(); ++i) t[i] += 3600;
  g.time_s = t;
  rec.gpus.push_back(std::move(g));
  const auto d = diagnose(rec);
  ASSERT_EQ(d.data_quality.size(), 1u);
  EXPECT_EQ(d.data_quality[0].kind, "gap");
  EXPECT_NEAR(d.data_quality[0].end_s - d.data_quality[0].start_s, 3601, 1);
}

// Two GPUs logged on alternate rows with no index column, read as one: said.
TEST(DiagnosisTrust, InterleavedGpusAreSaid) {
  Recording rec;
  rec.gpus.push_back(make_gpu(
      0, 1200, 0.5,
      [](size_t i) {
        Row r;
        r.mem_used = i % 2 ? 12000 + static_cast<double>(i % 7) : 61000;
        r.temp = i % 2 ? 45 : 71;
        return r;
      },
      false));
  const auto d = diagnose(rec);
  bool interleaved = false;
  for (const auto& q : d.data_quality) interleaved = interleaved || q.kind == "interleaved";
  EXPECT_TRUE(interleaved);
  // One GPU alone, with smooth memory and temperature: nothing said.
  Recording calm;
  calm.gpus.push_back(make_gpu(
      0, 1200, 0.5,
      [](size_t i) {
        Row r;
        r.mem_used = 30000 + static_cast<double>(i);
        r.temp = 60 + static_cast<double>(i % 3);
        return r;
      },
      false));
  EXPECT_TRUE(diagnose(calm).data_quality.empty());
}

// The row-to-row jump that matters (256 MiB of memory) is a bound on the median jump: at it, the
// rows are read as interleaved GPUs; a little under it, they are not.
TEST(DiagnosisTrust, InterleavedGpusFromAMedianJumpOfExactlyWhatMatters) {
  for (const double jump : {256.0, 255.5}) {
    Recording rec;
    rec.gpus.push_back(make_gpu(
        0, 1200, 0.5,
        [&](size_t i) {
          Row r;
          // A GPU every other row: 600 of the 1199 jumps are `jump` (the median's rank, 599,
          // is the last of them), the others 1000 more.
          r.mem_used = i % 2 ? 20000 + jump + (i % 4 == 1 ? 0 : 1000) : 20000;
          return r;
        },
        false));
    const auto d = diagnose(rec);
    bool interleaved = false;
    for (const auto& q : d.data_quality) interleaved = interleaved || q.kind == "interleaved";
    EXPECT_EQ(interleaved, jump >= 256) << jump;
  }
}

// The median of the diagnosis' time steps, with and without a value most of them share: what
// nth_element puts at rank n / 2, every time.
TEST(DiagnosisTrust, MedianByIsTheValueAtTheMiddleRank) {
  std::mt19937 rng(7);
  for (size_t n = 0; n < 60; ++n) {
    for (const int kind : {0, 1, 2}) {
      std::vector<double> v(n);
      for (size_t i = 0; i < n; ++i) {
        const double noise = std::uniform_real_distribution<double>(0.5, 1.5)(rng);
        // 0: all different; 1: exactly half one value (no majority); 2: more than half.
        const size_t same = kind == 0 ? 0 : kind == 1 ? n / 2 : n / 2 + 1;
        v[i] = i < same ? 1.0 : noise;
      }
      std::shuffle(v.begin(), v.end(), rng);
      const double got = diag::median_by(n, [&](size_t i) { return v[i]; });
      if (n == 0) {
        EXPECT_TRUE(std::isnan(got));
        continue;
      }
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(got, sorted[n / 2]) << "n " << n << " kind " << kind;
    }
  }
}

}  // namespace
}  // namespace gpudoctor
