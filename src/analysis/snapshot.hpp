// Snapshot assessment: from two consecutive samples of one GPU, the numbers that say whether it is
// really working (mean power against the board's default limit, SM activity, the efficiency score
// of DOMAIN.md §1) and a one-line verdict. This is the instant view of `status` and `watch`; the
// full diagnosis over a run (phases, causes, evidence) builds on the same numbers.
#pragma once

#include <optional>
#include <string>

#include "core/device.hpp"

namespace gpudoctor {

// Defaults from DOMAIN.md §3; every one can be overridden.
struct Thresholds {
  double busy_util_pct = 90;        // util above this counts as "busy"
  double low_power_ratio = 0.60;    // busy but below this share of the limit: busy but idle
  double low_efficiency = 0.60;     // efficiency score below this: probably loafing
  double idle_util_pct = 5;         // util below this: no work
  double hot_temp_c = 85;           // throttling risk
  double held_memory_ratio = 0.01;  // memory share above which an idle GPU counts as held
};

enum class SnapshotVerdict {
  kWorking,
  kBusyButIdle,
  kLowEfficiency,
  kIdle,           // held (memory or process) but no work
  kFree,           // no work, nothing held
  kPowerCapped,    // enforced limit below the default and power pinned at it
  kThermal,        // thermal clock event reasons or at the slowdown temperature
  kClocksLimited,  // clocks held low by application clocks, HW slowdown or power brake
  kLost,
  kNotResponding,
  kUnknown,  // too little data (e.g. no power reading)
};
// "WORKING", "BUSY BUT IDLE", ...
std::string verdict_label(SnapshotVerdict v);
// "working", "busy_but_idle", ...
std::string verdict_code(SnapshotVerdict v);

struct GpuAssessment {
  std::optional<double> util_pct;
  std::optional<double> sm_pct;   // GPM SM activity
  std::optional<double> power_w;  // mean over the interval (energy counter) or reading
  bool power_from_energy = false;
  std::optional<double> limit_w;  // denominator: default limit, else enforced
  bool limit_is_default = false;
  std::optional<double> enforced_limit_w;
  std::optional<double> power_ratio;  // power_w / limit_w
  std::optional<double> efficiency;   // power_ratio * sm/100, or power_ratio when no SM
  bool efficiency_has_sm = false;
  std::optional<double> mem_used_mib, mem_total_mib;
  bool pcie_degraded = false;
  std::string pcie_text;  // "Gen4 x16", "Gen1 x4 (max Gen4 x16)", "" when unknown
  SnapshotVerdict verdict = SnapshotVerdict::kUnknown;
  std::string detail;  // "util 99 % but power 34 % of 400 W and SM activity 18 %"
};

// prev may be null (first sample); dt_s is the time between prev and cur, used when the samples
// do not carry their own read times.
GpuAssessment assess(const DeviceSample* prev, const DeviceSample& cur, double dt_s,
                     const Thresholds& t = {});

// "GPU 2: BUSY BUT IDLE: util 99 % but power 34 % of 400 W and SM activity 18 %"
std::string verdict_line(unsigned index, const GpuAssessment& a);

}  // namespace gpudoctor
