// Diagnosis on hand-built series: each cause's signature as DOMAIN.md §2 states it, independent of
// the simulator; phases; lost GPU time; degenerate inputs; configuration.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "analysis/diagnosis.hpp"
#include "report/diagnosis_report.hpp"
#include "report/json_stream.hpp"

namespace gpudoctor {
namespace {

struct Row {
  double util = 100, power = 360, sm = kMissing, enforced = 400, reasons = 0, clock = 1410,
         temp = 60, mem_used = 30000, mem_util = 30;
};

// One GPU (A100 SXM4 80GB: 400 W default, 1410 MHz) sampled every `interval` s for n samples.
GpuSeries make_gpu(unsigned index, size_t n, double interval, const std::function<Row(size_t)>& f,
                   bool with_sm = false, double t0 = 0) {
  GpuSeries g;
  g.info.index = index;
  g.info.name = "NVIDIA A100-SXM4-80GB";
  g.power_limit_source = "log";
  for (size_t i = 0; i < n; ++i) {
    const Row r = f(i);
    const size_t k = g.append_row(t0 + static_cast<double>(i) * interval);
    g.column_for_write(Field::kUtilGpu)[k] = r.util;
    g.column_for_write(Field::kPower)[k] = r.power;
    g.column_for_write(Field::kPowerLimitEnforced)[k] = r.enforced;
    g.column_for_write(Field::kPowerLimitDefault)[k] = 400;
    g.column_for_write(Field::kClockEventReasons)[k] = r.reasons;
    g.column_for_write(Field::kClockSm)[k] = r.clock;
    g.column_for_write(Field::kClockSmMax)[k] = 1410;
    g.column_for_write(Field::kTemp)[k] = r.temp;
    g.column_for_write(Field::kMemUsed)[k] = r.mem_used;
    g.column_for_write(Field::kMemTotal)[k] = 81920;
    g.column_for_write(Field::kUtilMem)[k] = r.mem_util;
    if (with_sm) g.column_for_write(Field::kGpmSmUtil)[k] = r.sm;
  }
  return g;
}

Recording one(GpuSeries g) {
  Recording rec;
  rec.source = "test";
  rec.gpus.push_back(std::move(g));
  return rec;
}

std::string verdict(const Diagnosis& d) {
  return d.verdict ? std::string(cause_code(*d.verdict)) : "none";
}
std::string gpu_verdict(const Diagnosis& d, size_t g) {
  return d.gpus.at(g).verdict ? std::string(cause_code(*d.gpus[g].verdict)) : "none";
}
const Finding* finding(const Diagnosis& d, Cause c) {
  for (const auto& f : d.findings)
    if (f.cause == c) return &f;
  return nullptr;
}
bool has_limitation(const Diagnosis& d, const std::string& words) {
  for (const auto& l : d.limitations)
    if (l.find(words) != std::string::npos) return true;
  return false;
}

TEST(Diagnosis, HealthyGpuHasNoFindings) {
  const auto d = diagnose(one(make_gpu(
      0, 600, 1,
      [](size_t) {
        Row r;
        r.sm = 92;
        return r;
      },
      true)));
  EXPECT_EQ(verdict(d), "healthy");
  EXPECT_TRUE(d.findings.empty());
  ASSERT_TRUE(d.gpus[0].efficiency);
  EXPECT_NEAR(*d.gpus[0].efficiency, 0.9 * 0.92, 0.01);
  EXPECT_EQ(d.gpus[0].power_limit_source, "log");
  EXPECT_EQ(d.gpus[0].metrics["busy_idle_fraction"].get<double>(), 0);
}

TEST(Diagnosis, BusyButIdleWithLowSmActivityIsLaunchOverhead) {
  const auto d = diagnose(one(make_gpu(
      0, 600, 1,
      [](size_t) {
        Row r;
        r.power = 130, r.sm = 25, r.mem_util = 10;
        return r;
      },
      true)));
  EXPECT_EQ(verdict(d), "launch_overhead");
  const Finding* f = finding(d, Cause::kLaunchOverhead);
  ASSERT_NE(f, nullptr);
  EXPECT_GE(f->confidence, 0.7);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_NEAR(f->evidence["power_ratio"].get<double>(), 130.0 / 400, 0.01);
  EXPECT_NE(f->summary.find("GPU-Util 100 %"), std::string::npos) << f->summary;
  EXPECT_NEAR(d.gpus[0].metrics["busy_idle_fraction"].get<double>(), 1.0, 1e-9);
}

TEST(Diagnosis, WithoutSmActivityConfidenceIsLowerAndSaid) {
  const auto d = diagnose(one(make_gpu(0, 600, 1, [](size_t) {
    Row r;
    r.power = 130, r.mem_util = 10;
    return r;
  })));
  EXPECT_EQ(verdict(d), "launch_overhead");
  EXPECT_LT(finding(d, Cause::kLaunchOverhead)->confidence, 0.7);
  EXPECT_TRUE(has_limitation(d, "no SM activity"));
}

TEST(Diagnosis, DutyCycleIsDataStarvationWithItsPeriod) {
  // Busy 2 s, waiting 2 s: a batch every 4 s.
  const auto d = diagnose(one(make_gpu(0, 600, 1, [](size_t i) {
    Row r;
    const bool busy = i % 4 < 2;
    r.util = busy ? 100 : 0, r.power = busy ? 330 : 90;
    return r;
  })));
  EXPECT_EQ(verdict(d), "data_starvation");
  const Finding* f = finding(d, Cause::kDataStarvation);
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->evidence["period_s"].get<double>(), 4, 0.5);
  EXPECT_NEAR(f->evidence["dip_fraction"].get<double>(), 0.5, 0.05);
  // The 2-s gaps are the duty cycle, not pauses: one steady phase over the run (the last gap,
  // cut by the end of the log, may stand as a shutdown).
  int steady = 0;
  for (const auto& p : d.gpus[0].phases) {
    EXPECT_NE(p.kind, "pause");
    if (p.kind != "steady") continue;
    ++steady;
    EXPECT_GE(p.end_s - p.start_s, 590);
  }
  EXPECT_EQ(steady, 1);
}

// The JSON written finding by finding (diagnose --format json) is the document's dump, byte for
// byte: with findings, with none, with a key after them; other documents written whole the same.
TEST(Diagnosis, JsonWrittenFindingByFindingIsTheDump) {
  auto written = [](auto&& write) {
    std::FILE* f = std::tmpfile();
    write(f);
    std::fflush(f);
    std::string out(static_cast<size_t>(std::ftell(f)), '\0');
    std::rewind(f);
    const size_t n = std::fread(out.data(), 1, out.size(), f);
    std::fclose(f);
    out.resize(n);
    return out;
  };
  const auto starved = diagnose(one(make_gpu(0, 3600, 1, [](size_t i) {
    Row r;
    const bool busy = i % 4 < 2 || (i > 1200 && i < 2400);
    r.util = busy ? 100 : 0, r.power = busy ? 330 : 90;
    return r;
  })));
  const auto healthy = diagnose(one(make_gpu(0, 600, 1, [](size_t i) {
    Row r;
    r.util = 100, r.power = 380 + static_cast<double>(i % 3);
    return r;
  })));
  ASSERT_GE(starved.findings.size(), 2U);
  ASSERT_TRUE(healthy.findings.empty());
  for (const Diagnosis* d : {&starved, &healthy})
    for (const bool baseline : {false, true}) {
      nlohmann::ordered_json whole = diagnosis_json(*d);
      nlohmann::ordered_json place = diagnosis_json(*d, FindingsJson::kPlace);
      EXPECT_TRUE(place["findings"].empty());
      if (baseline) whole["baseline"] = place["baseline"] = {{"runs", 3}, {"note", "ü \"x\""}};
      const std::string streamed = written([&](std::FILE* f) {
        write_json(f, place, "findings", d->findings.size(),
                   [&](size_t i) { return finding_json(d->findings[i]); });
      });
      EXPECT_EQ(streamed, whole.dump(2) + "\n") << d->findings.size() << " findings";
    }
  // Written whole: a plain document; bytes that are not UTF-8 as U+FFFD, not an exception.
  nlohmann::json plain = {{"a", {1, 2.5, nullptr}}, {"b", nlohmann::json::object()}, {"c", "é"}};
  EXPECT_EQ(written([&](std::FILE* f) { write_json(f, plain); }), plain.dump(2) + "\n");
  nlohmann::ordered_json bad = {{"name", std::string("GPU\xff")}};
  EXPECT_EQ(written([&](std::FILE* f) { write_json(f, bad); }),
            "{\n  \"name\": \"GPU\xef\xbf\xbd\"\n}\n");
}

TEST(Diagnosis, StragglerMakesTheOthersWait) {
  Recording rec;
  for (unsigned g = 0; g < 4; ++g)
    rec.gpus.push_back(make_gpu(g, 300, 1, [g](size_t) {
      Row r;
      r.power = g == 2 ? 370 : 120;
      return r;
    }));
  const auto d = diagnose(rec);
  EXPECT_EQ(verdict(d), "communication_wait");
  const Finding* f = finding(d, Cause::kCommunicationWait);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence["pattern"], "straggler");
  EXPECT_EQ(f->evidence["straggler_gpu"], 2);
  EXPECT_EQ(f->gpus.size(), 4u);
  for (size_t g = 0; g < 4; ++g) EXPECT_EQ(gpu_verdict(d, g), "communication_wait");
}

TEST(Diagnosis, AntiPhasePowerIsSeeSaw) {
  Recording rec;
  for (unsigned g = 0; g < 2; ++g)
    rec.gpus.push_back(make_gpu(g, 300, 1, [g](size_t i) {
      Row r;
      const bool high = ((i / 5) % 2) == g;
      r.power = high ? 340 : 150;
      return r;
    }));
  const auto d = diagnose(rec);
  EXPECT_EQ(verdict(d), "communication_wait");
  const Finding* f = finding(d, Cause::kCommunicationWait);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence["pattern"], "seesaw");
  EXPECT_LT(f->evidence["power_correlation"].get<double>(), -0.9);
}

TEST(Diagnosis, InPhaseGpusAreNotSeeSaw) {
  Recording rec;
  for (unsigned g = 0; g < 2; ++g)
    rec.gpus.push_back(make_gpu(
        g, 300, 1,
        [](size_t i) {
          Row r;
          r.power = ((i / 5) % 2) ? 390 : 330;
          r.sm = 90;
          return r;
        },
        true));
  EXPECT_EQ(verdict(diagnose(rec)), "healthy");
}

TEST(Diagnosis, LoweredCapHeldAtItIsPowerCapped) {
  const auto d = diagnose(one(make_gpu(0, 300, 1, [](size_t) {
    Row r;
    r.enforced = 250, r.power = 248, r.reasons = 0x4, r.clock = 1100;
    return r;
  })));
  EXPECT_EQ(verdict(d), "power_capped");
  const Finding* f = finding(d, Cause::kPowerCapped);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence["enforced_limit_w"], 250);
  EXPECT_EQ(f->evidence["default_limit_w"], 400);
}

TEST(Diagnosis, PowerCapAtTheDefaultLimitIsHealthy) {
  const auto d = diagnose(one(make_gpu(0, 300, 1, [](size_t) {
    Row r;
    r.power = 398, r.reasons = 0x4, r.clock = 1300;
    return r;
  })));
  EXPECT_EQ(verdict(d), "healthy");
}

TEST(Diagnosis, ThermalReasonsAreThermalThrottle) {
  const auto d = diagnose(one(make_gpu(0, 300, 1, [](size_t i) {
    Row r;
    r.temp = 88, r.reasons = i % 2 ? 0x20 : 0, r.clock = 1000, r.power = 250;
    return r;
  })));
  EXPECT_EQ(verdict(d), "thermal_throttle");
  EXPECT_NEAR(
      finding(d, Cause::kThermalThrottle)->evidence["thermal_reason_fraction"].get<double>(), 0.5,
      0.02);
}

TEST(Diagnosis, HotButFullClocksIsNotThrottled) {
  const auto d = diagnose(one(make_gpu(0, 300, 1, [](size_t) {
    Row r;
    r.temp = 86;
    return r;
  })));
  EXPECT_EQ(verdict(d), "healthy");
}

TEST(Diagnosis, ApplicationClocksAreClocksLimited) {
  const auto d = diagnose(one(make_gpu(0, 300, 1, [](size_t) {
    Row r;
    r.reasons = 0x2, r.clock = 800, r.power = 200;
    return r;
  })));
  EXPECT_EQ(verdict(d), "clocks_limited");
  EXPECT_EQ(finding(d, Cause::kClocksLimited)->evidence["reason"], "applications_clocks_setting");
}

TEST(Diagnosis, TwoProcessesAreContention) {
  auto g = make_gpu(0, 300, 1, [](size_t) { return Row{}; });
  g.processes_recorded = true;
  g.processes.push_back({100, "python train.py", 0, 299, 20000});
  g.processes.push_back({200, "python other.py", 0, 299, 10000});
  const auto d = diagnose(one(std::move(g)));
  EXPECT_EQ(verdict(d), "contention");
  EXPECT_EQ(finding(d, Cause::kContention)->evidence["processes"], 2);
  EXPECT_FALSE(has_limitation(d, "no process list"));
}

TEST(Diagnosis, IdleHeldAndFreeGpusAreSeparateFindings) {
  Recording rec;
  rec.gpus.push_back(make_gpu(0, 3600, 1, [](size_t) { return Row{}; }));
  rec.gpus.push_back(make_gpu(1, 3600, 1, [](size_t) {
    Row r;
    r.util = 0, r.power = 60, r.mem_used = 40000;
    return r;
  }));
  rec.gpus.push_back(make_gpu(2, 3600, 1, [](size_t) {
    Row r;
    r.util = 0, r.power = 50, r.mem_used = 4;
    return r;
  }));
  const auto d = diagnose(rec);
  EXPECT_EQ(verdict(d), "idle");
  EXPECT_EQ(gpu_verdict(d, 0), "healthy");
  EXPECT_EQ(gpu_verdict(d, 1), "idle");
  EXPECT_EQ(gpu_verdict(d, 2), "idle");
  int idle_findings = 0;
  for (const auto& f : d.findings) {
    if (f.cause != Cause::kIdle) continue;
    ++idle_findings;
    ASSERT_EQ(f.gpus.size(), 1u);
    if (f.gpus[0] == 1) {
      EXPECT_EQ(f.evidence["held"], 1);
      EXPECT_NE(f.severity, Severity::kInfo);
    } else {
      EXPECT_EQ(f.evidence["held"], 0);
      EXPECT_EQ(f.severity, Severity::kInfo);  // a free GPU is capacity, not a job's problem
    }
    // An hour with nothing running: an hour lost.
    ASSERT_TRUE(f.lost_gpu_hours);
    EXPECT_NEAR(*f.lost_gpu_hours, 1.0, 0.01);
  }
  EXPECT_EQ(idle_findings, 2);
}

// A GPU a job holds with nothing running and no memory in use (the kubelet gave it to a pod, an
// allocation file names the job): held, not free.
TEST(Diagnosis, IdleGpuAnOwnerHoldsIsHeld) {
  GpuSeries g = make_gpu(0, 3600, 1, [](size_t) {
    Row r;
    r.util = 0, r.power = 50, r.mem_used = 4;
    return r;
  });
  Owner o;
  o.kind = OwnerKind::kK8sPod;
  o.id = "ml/notebook-0";
  o.pod = "notebook-0";
  o.pod_namespace = "ml";
  g.owners.push_back({o, 0, 3599});
  const auto d = diagnose(one(std::move(g)));
  const Finding* f = finding(d, Cause::kIdle);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence["held"], 1);
  EXPECT_EQ(f->evidence["owned"], 1);
  EXPECT_NE(f->severity, Severity::kInfo);
  ASSERT_EQ(f->owners.size(), 1u);
  EXPECT_EQ(f->owners[0], "pod ml/notebook-0");
}

TEST(Diagnosis, StartupPauseAndShutdownArePhasesNotBlame) {
  // 60 s loading, 600 s work, 45 s evaluation pause, 600 s work, 40 s shutdown.
  const auto d = diagnose(one(make_gpu(0, 1345, 1, [](size_t i) {
    Row r;
    const bool idle = i < 60 || (i >= 660 && i < 705) || i >= 1305;
    if (idle) r.util = 0, r.power = 70;
    return r;
  })));
  EXPECT_EQ(verdict(d), "healthy");
  EXPECT_TRUE(d.findings.empty());
  std::vector<std::string> kinds;
  for (const auto& p : d.gpus[0].phases) kinds.push_back(p.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"startup", "steady", "pause", "steady", "shutdown"}));
  EXPECT_NEAR(d.gpus[0].phases[2].start_s, 660, 1);
  EXPECT_NEAR(d.gpus[0].phases[2].end_s, 705, 1);
}

TEST(Diagnosis, DegradingRunIsJudgedByWhatCostMost) {
  // Healthy for 10 minutes, then starving for 20.
  const auto d = diagnose(one(make_gpu(0, 1800, 1, [](size_t i) {
    Row r;
    if (i >= 600 && i % 4 >= 2) r.util = 0, r.power = 80;
    return r;
  })));
  EXPECT_EQ(verdict(d), "data_starvation");
  const Finding* f = finding(d, Cause::kDataStarvation);
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->start_s, 600, 60);
  EXPECT_NEAR(f->end_s, 1800, 5);
}

TEST(Diagnosis, EmptyAndTinyInputsStateTheirLimits) {
  Recording empty;
  auto d = diagnose(empty);
  EXPECT_FALSE(d.verdict);
  EXPECT_TRUE(has_limitation(d, "fewer than two samples"));
  EXPECT_EQ(diagnosis_json(d)["verdict"], nullptr);

  d = diagnose(one(make_gpu(0, 1, 1, [](size_t) { return Row{}; })));
  EXPECT_TRUE(has_limitation(d, "fewer than two samples"));
  EXPECT_FALSE(d.gpus[0].verdict);

  d = diagnose(one(make_gpu(0, 3, 1, [](size_t) { return Row{}; })));
  EXPECT_TRUE(has_limitation(d, "too few to judge"));
}

TEST(Diagnosis, NoPowerAndNoSmCannotTellBusyFromWorking) {
  auto g = make_gpu(0, 300, 1, [](size_t) { return Row{}; });
  g.columns[index_of(Field::kPower)].reset();
  const auto d = diagnose(one(std::move(g)));
  EXPECT_FALSE(d.verdict);
  EXPECT_FALSE(d.gpus[0].verdict);
  EXPECT_TRUE(has_limitation(d, "no power draw"));
  EXPECT_TRUE(has_limitation(d, "neither power nor SM activity"));
}

TEST(Diagnosis, UnknownModelWithoutLimitSaysSo) {
  auto g = make_gpu(0, 300, 1, [](size_t) { return Row{}; });
  g.info.name = "Mystery Accelerator";
  g.columns[index_of(Field::kPowerLimitDefault)].reset();
  g.columns[index_of(Field::kPowerLimitEnforced)].reset();
  const auto d = diagnose(one(std::move(g)));
  EXPECT_TRUE(has_limitation(d, "--power-limit"));
  EXPECT_FALSE(d.gpus[0].efficiency);
}

TEST(Diagnosis, LimitFromTheModelTableWhenTheLogHasNone) {
  auto g = make_gpu(0, 300, 1, [](size_t) { return Row{}; });
  g.columns[index_of(Field::kPowerLimitDefault)].reset();
  g.columns[index_of(Field::kPowerLimitEnforced)].reset();
  const auto d = diagnose(one(std::move(g)));
  EXPECT_EQ(d.gpus[0].power_limit_source, "model-table");
  EXPECT_EQ(d.gpus[0].power_limit_w, 400);
}

TEST(Diagnosis, GapsOfHoursAndLateGpusAreHandled) {
  Recording rec;
  // GPU 0: 10 minutes, a 3-hour gap (recorder stopped), 10 minutes.
  auto g0 = make_gpu(0, 1200, 1, [](size_t) { return Row{}; });
  auto t0 = g0.time_s.to_vector();
  for (size_t i = 600; i < 1200; ++i) t0[i] += 3 * 3600;
  g0.time_s = t0;
  rec.gpus.push_back(std::move(g0));
  // GPU 1 appears two hours in.
  rec.gpus.push_back(make_gpu(
      1, 600, 1, [](size_t) { return Row{}; }, false, 7200));
  const auto d = diagnose(rec);
  EXPECT_EQ(verdict(d), "healthy");
  // The gap is not counted as observed time.
  EXPECT_LT(d.gpus[0].metrics["observed_s"].get<double>(), 1300);
  EXPECT_EQ(gpu_verdict(d, 1), "healthy");
}

TEST(Diagnosis, TimeGoingBackwardsIsLeftOutAndSaid) {
  auto g = make_gpu(0, 600, 1, [](size_t) { return Row{}; });
  auto t = g.time_s.to_vector();
  for (size_t i = 300; i < 310; ++i) t[i] = 100;  // a clock jump back, then forward again
  g.time_s = t;
  const auto d = diagnose(one(std::move(g)));
  EXPECT_EQ(verdict(d), "healthy");
  EXPECT_TRUE(has_limitation(d, "GPU 0: 10 sample(s) whose time did not move forward"));
}

TEST(Diagnosis, TrimKeepsTheAskedRange) {
  auto rec = one(make_gpu(0, 600, 1, [](size_t i) {
    Row r;
    if (i >= 300) r.power = 120;
    return r;
  }));
  trim_recording(rec, 0, 300);
  EXPECT_EQ(rec.gpus[0].size(), 300u);
  EXPECT_EQ(verdict(diagnose(rec)), "healthy");
}

TEST(DiagnosisConfig, OverridesAndRejectsUnknownNames) {
  const std::string path = ::testing::TempDir() + "/diag-config.json";
  {
    std::ofstream(path) << "{ // stricter\n \"low_efficiency\": 0.95, \"low_power_ratio\": 0.95 }";
  }
  auto c = load_diagnosis_config(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->low_efficiency, 0.95);
  EXPECT_EQ(c->busy_util_pct, 90);  // untouched default
  // The same healthy GPU is not efficient enough under the stricter thresholds (and its power,
  // 90 % of the limit, is low under them: positive evidence of little work).
  const auto d = diagnose(one(make_gpu(0, 300, 1, [](size_t) { return Row{}; })), c.value());
  EXPECT_NE(verdict(d), "healthy");

  { std::ofstream(path) << "{\"low_efficency\": 0.5}"; }
  auto bad = load_diagnosis_config(path);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown threshold \"low_efficency\""), std::string::npos);
  { std::ofstream(path) << "{\"low_efficiency\": \"high\"}"; }
  EXPECT_FALSE(load_diagnosis_config(path));
  EXPECT_FALSE(load_diagnosis_config(path + ".missing"));
  std::remove(path.c_str());
}

TEST(Causes, TableIsCompleteAndCodesRoundTrip) {
  EXPECT_EQ(causes().size(), kCauseCount);
  for (const auto& c : causes()) {
    EXPECT_EQ(cause_from_code(c.code), c.cause);
    EXPECT_FALSE(c.title.empty());
    EXPECT_FALSE(c.what.empty());
    if (c.cause != Cause::kHealthy) {
      EXPECT_FALSE(c.fixes.empty()) << c.code;
    }
  }
  EXPECT_FALSE(cause_from_code("loafing"));
}

// GPUDOCTOR_THREADS=n while it lives (the diagnosis' steps spread over that many threads).
struct Threads {
  explicit Threads(const char* n) { ::setenv("GPUDOCTOR_THREADS", n, 1); }
  ~Threads() { ::unsetenv("GPUDOCTOR_THREADS"); }
};

// The diagnosis is the same on one thread and on several, to the bit: a lone GPU of a day at 1 s
// (1,440 windows: their features and judging in three blocks, on different threads) and four GPUs,
// one a straggler the others wait for (their windows read its windows).
TEST(Diagnosis, SameOnOneThreadAndOnSeveral) {
  const Recording lone = one(make_gpu(0, 86400, 1.0, [](size_t i) {
    Row r;
    const bool busy = i % 4 < 2;  // a batch every 4 s: starved
    r.util = busy ? 100 : 0, r.power = busy ? 320 + static_cast<double>(i % 11) : 90;
    return r;
  }));
  Recording fleet;
  fleet.source = "test";
  for (unsigned g = 0; g < 4; ++g)
    fleet.gpus.push_back(make_gpu(g, 3 * 3600, 1.0, [g](size_t i) {
      Row r;
      r.power = g == 2 ? 370 - static_cast<double>(i % 7) : 120 + static_cast<double>(i % 5);
      return r;
    }));
  for (const Recording* rec : std::vector<const Recording*>{&lone, &fleet}) {
    Diagnosis a, b;
    {
      const Threads t("1");
      a = diagnose(*rec, DiagnosisConfig{}, JudgedSamples::kEach);
    }
    {
      const Threads t("3");
      b = diagnose(*rec, DiagnosisConfig{}, JudgedSamples::kEach);
    }
    EXPECT_EQ(verdict(a), rec == &lone ? "data_starvation" : "communication_wait");
    EXPECT_EQ(diagnosis_json(a).dump(), diagnosis_json(b).dump()) << rec->gpus.size() << " GPU(s)";
    ASSERT_EQ(a.gpus.size(), b.gpus.size());
    for (size_t g = 0; g < a.gpus.size(); ++g) {
      const auto& x = a.gpus[g].judged;
      const auto& y = b.gpus[g].judged;
      ASSERT_EQ(x.size(), y.size());
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_TRUE(same_bits(x[i].t_s, y[i].t_s) && same_bits(x[i].dt_s, y[i].dt_s) &&
                    x[i].cause == y[i].cause && same_bits(x[i].lost_s, y[i].lost_s))
            << "GPU " << g << ", sample " << i;
    }
  }
}

}  // namespace
}  // namespace gpudoctor
