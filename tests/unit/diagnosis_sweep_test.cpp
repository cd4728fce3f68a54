// Robustness of the verdict to how a log was taken (issue 14): the same simulated job sampled at
// 100 ms, 1 s, 5 s and 15 s, trimmed to 2 minutes of its steady state, and then with each of its
// columns removed in turn, keeps its verdict, or falls back to a weaker one (no verdict, or a
// cause the smaller input still shows) with a new limitation saying what is missing. A healthy
// job is never called unhealthy by losing a column.
#include <set>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analysis/diagnosis.hpp"
#include "core/gpu_models.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor {
namespace {

struct Case {
  const char* scenario;
  const char* verdict;
};

// One scenario per cause the sampled fields can show (contention needs a process list).
constexpr Case kCases[] = {
    {"healthy", "healthy"},
    {"data_starvation", "data_starvation"},
    {"launch_overhead", "launch_overhead"},
    {"straggler", "communication_wait"},
    {"memory_bound", "memory_bound"},
    {"power_capped", "power_capped"},
    {"thermal_throttle", "thermal_throttle"},
    {"clocks_locked", "clocks_limited"},
    {"idle", "idle"},
};

std::string code(const Diagnosis& d) {
  return d.verdict ? std::string(cause_code(*d.verdict)) : "none";
}

Recording job(const Case& c, double interval_s) {
  // Long enough to be past any start-up, then the two minutes after minute 5.
  const auto spec = sim::parse_sim_spec(fmt::format(
      "{},duration=480s,interval={}ms,seed=3", c.scenario, static_cast<int>(interval_s * 1000)));
  EXPECT_TRUE(spec) << c.scenario;
  const auto model = gpu_model_by_key(spec->scenario.model);
  EXPECT_TRUE(model) << c.scenario;
  Recording rec = sim::simulate_recording(spec.value(), *model);
  trim_recording(rec, 300, 420);
  return rec;
}

Recording without(const Recording& rec, Field f) {
  Recording out = rec;
  for (auto& s : out.gpus) s.columns[index_of(f)].reset();
  return out;
}

// Said in `reduced` and not in `full`.
bool new_limitation(const Diagnosis& full, const Diagnosis& reduced) {
  const std::set<std::string> before(full.limitations.begin(), full.limitations.end());
  for (const auto& l : reduced.limitations)
    if (!before.count(l)) return true;
  return false;
}

TEST(DiagnosisSweep, VerdictSurvivesIntervalsTrimmingAndMissingColumns) {
  int runs = 0, kept = 0, weaker = 0;
  std::string report;
  for (const Case& c : kCases) {
    for (double interval : {0.1, 1.0, 5.0, 15.0}) {
      const Recording rec = job(c, interval);
      const Diagnosis full = diagnose(rec);
      // Every interval keeps the verdict, except that sampling coarser than the duty cycle may
      // average a starved GPU's gaps away (said: "duty cycles ... are averaged away").
      const bool coarse = interval > 2;
      if (code(full) != c.verdict) {
        EXPECT_TRUE(coarse) << c.scenario << " at " << interval << " s: " << code(full);
        bool said = false;
        for (const auto& l : full.limitations) said = said || l.find("averaged away") != l.npos;
        EXPECT_TRUE(said) << c.scenario << " at " << interval << " s";
        EXPECT_NE(code(full), "healthy")
            << c.scenario << " at " << interval << " s: a problem hidden as healthy";
      }
      for (size_t k = 0; k < kFieldCount; ++k) {
        const Field f = static_cast<Field>(k);
        if (!rec.gpus.empty() && !rec.gpus[0].has(f)) continue;
        const Diagnosis d = diagnose(without(rec, f));
        ++runs;
        if (code(d) == code(full)) {
          ++kept;
          continue;
        }
        ++weaker;
        const std::string where = fmt::format("{} at {} s without {}: {} -> {}", c.scenario,
                                              interval, info(f).id, code(full), code(d));
        report += where + "\n";
        // A weaker verdict says what it lost.
        EXPECT_TRUE(new_limitation(full, d)) << where;
        // A healthy job is never called unhealthy by losing a column.
        if (code(full) == "healthy") {
          EXPECT_TRUE(code(d) == "healthy" || code(d) == "none") << where;
        } else {
          // ... and a problem is never hidden as healthy by it.
          EXPECT_NE(code(d), "healthy") << where;
        }
      }
    }
  }
  std::printf("sweep: %d diagnoses, %d kept the verdict, %d fell back\n%s", runs, kept, weaker,
              report.c_str());
  EXPECT_GT(runs, 200);
}

}  // namespace
}  // namespace gpudoctor
