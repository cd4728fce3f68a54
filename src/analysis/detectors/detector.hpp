// What the detectors see, and the one interface they share. Internal to src/analysis.
//
// A Window is a stretch of one GPU's timeline that gets one judgement: part of a steady phase, or
// an idle stretch long enough to blame. Its Features (made as it is judged: WindowFeatures) are
// the numbers every detector reads; a detector answers "does my cause explain this window?" with a
// Candidate (confidence, evidence) or nothing. Detectors are tried in the cause table's priority
// order; the first that fits wins.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/causes.hpp"
#include "analysis/config.hpp"
#include "analysis/detectors/evidence.hpp"
#include "analysis/diagnosis.hpp"
#include "analysis/power_limit.hpp"
#include "core/recording.hpp"

namespace gpudoctor::diag {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline bool known(double v) {
  return !std::isnan(v);
}

// Clock event reason bits the detectors read (NVML's values).
inline constexpr uint64_t kReasonIdle = 0x1;
inline constexpr uint64_t kReasonAppClocks = 0x2;
inline constexpr uint64_t kReasonSwPowerCap = 0x4;
inline constexpr uint64_t kReasonHwSlowdown = 0x8;
inline constexpr uint64_t kReasonSwThermal = 0x20;
inline constexpr uint64_t kReasonHwThermal = 0x40;
inline constexpr uint64_t kReasonHwPowerBrake = 0x80;

struct Features {
  size_t n = 0;                 // samples with a time in the window
  double util = kNaN;           // mean GPU-Util, %
  double dip_fraction = kNaN;   // share of samples with util below dip_util_pct
  double busy_fraction = kNaN;  // share with util >= busy_util_pct
  double flat_fraction = kNaN;  // share with util >= flat_util_pct (pinned, as NCCL spinning)
  double power_w = kNaN;
  double power_ratio = kNaN;     // mean power / default limit
  double power_sd_ratio = kNaN;  // standard deviation of power / default limit
  double enforced_w = kNaN;      // median enforced limit
  double at_cap = kNaN;          // mean power / enforced limit
  double sm = kNaN, tensor = kNaN, dram = kNaN, mem_util = kNaN;  // %
  double efficiency = kNaN;
  double clock_ratio = kNaN;      // SM clock / max over loaded samples
  double app_clock_ratio = kNaN;  // application clock / max
  double temp_max = kNaN, temp_mean = kNaN;
  double pcie_tx = kNaN, pcie_rx = kNaN, nvlink = kNaN;  // MiB/s means
  double mem_used_ratio = kNaN;
  double period_s = kNaN;         // util (or power) period from the autocorrelation
  double period_strength = kNaN;  // autocorrelation at that period
  bool has_reasons = false;
  std::array<double, 16> reason_fraction{};  // per bit 0..15: share of samples with it set
  int processes = -1;  // compute processes present most of the window; -1 unknown
  // An owner (a job, a pod, an allocation file's job) held the GPU most of the window, with or
  // without a process on it.
  bool owned = false;
  // The host over the window, where the input has it (`gpudoctor run`).
  double host_cpu_pct = kNaN, iowait_pct = kNaN, job_cpu_cores = kNaN, job_processes = kNaN;
  double host_cores = kNaN;

  double reason(uint64_t bit) const {
    for (int b = 0; b < 16; ++b)
      if ((uint64_t{1} << b) == bit) return reason_fraction[static_cast<size_t>(b)];
    return 0;
  }
};

// What another GPU did over a window, as the communication detector compares GPUs: the figures
// of Features of the same names, from running sums (PrefixSums).
struct PeerFeatures {
  size_t n = 0;
  double util = kNaN, power_ratio = kNaN, power_sd_ratio = kNaN, efficiency = kNaN;
};

struct Window {
  bool idle = false;  // an idle stretch (whole run or a long pause), not steady work
  double t0 = 0, t1 = 0;
  size_t i0 = 0, i1 = 0;  // sample index range [i0, i1)
};

// A window as the detectors judge it: it, its place among its GPU's windows, and its features,
// made where it is judged and not kept (a week of windows' features were megabytes beside the
// samples; what the GPU's figures read of them is summed as they are judged: SteadyFigures).
struct WindowFeatures : Window {
  size_t k = 0;
  Features f;
};

// What a GPU did over the times [t0, t1) of one of its windows, as another GPU's window over the
// same times sees it: its samples there (Context::range's), how many of them are active, and its
// peer figures over them.
struct PeerWindow {
  double t0 = 0, t1 = 0;
  size_t i0 = 0, i1 = 0, active = 0;
  PeerFeatures f;
};

// Running sums over a GPU's samples, so that the mean of a measure over any window costs two
// lookups and a few additions: what another GPU did over each window of a GPU (the communication
// detector's peers) would otherwise be read anew per window, quadratic in the GPUs. The sums and
// the count of active samples are kept at every kStride-th sample only (marks[k]: samples
// [0, k * kStride)), and those at any other sample are the nearest mark's plus the samples after
// it, added in the order a sum kept per sample adds them: bit for bit the same figures in
// 1/kStride of the memory.
struct PrefixSums {
  static constexpr size_t kStride = 16;
  struct Sums {
    double util = 0, pr = 0, pr_sq = 0, eff = 0;  // known values' sums (power ratio: and squares)
    uint32_t util_n = 0, pr_n = 0, eff_n = 0;     // known values
    uint32_t active_n = 0;                        // active samples
  };
  std::vector<Sums> marks;
};

struct GpuData {
  const GpuSeries* s = nullptr;
  double interval_s = 1;             // median time between samples
  double default_limit_w = kNaN;     // efficiency denominator
  std::string limit_source;          // "log", "model-table", "flag", "" (power_limit.hpp)
  bool default_limit_known = false;  // a real default (not the enforced limit standing in)
  double limit_confidence = 0;       // how sure the denominator is
  double plateau_w = 0;              // flat top of the power while busy, 0 when none
  std::vector<double> cap_levels_w;  // levels a cap held the GPU at, low first
  RatioColumn power_ratio;           // per sample: power / limit, or a percent column / 100
  bool power_ratio_known = false;    // some sample's
  // GPU-Util, or where the input has none the graphics engine's active time (DCGM GRACT), the
  // same kind of measure; nullptr when neither.
  ColumnView util;
  // The power draw, W (power_draw: the averaged reading, else the instantaneous one).
  ColumnView power;
  double clock_max_mhz = kNaN, slowdown_temp_c = kNaN, mem_total_mib = kNaN;
  ColumnView sm;                // SM activity, % (efficiency's other factor)
  std::vector<uint8_t> active;  // per sample
  std::vector<Phase> phases;
  std::vector<Window> windows;
  // Per window, in their order (Context::make_peer_windows): what every other GPU's window over
  // the same times reads of this one, made once, kept apart from the windows' features so that a
  // fleet's GPUs, each reading all the others per window, read a few words each.
  std::vector<PeerWindow> peer_windows;
  PrefixSums sums;
  ColumnView col(Field f) const { return s->column(f); }
  // Sample i's share of the time: the gap to the next sample, capped at 2 intervals (the last
  // sample's, one interval).
  double dt(size_t i) const {
    const auto& t = s->time_s;
    return i + 1 < t.size() ? std::min(t[i + 1] - t[i], 2 * interval_s) : interval_s;
  }
  // f(i, time of sample i, dt(i)) for the samples [i0, i1) in order, each time read once (a
  // column of decimals decodes a time per read).
  template <class F>
  void each_dt(size_t i0, size_t i1, F&& f) const {
    if (i0 >= i1) return;
    const ColumnView t = s->time_s;
    const double cap = 2 * interval_s;
    const size_t last = std::min(i1, t.size() - 1);  // (the last sample's dt: one interval)
    double next = t[i0];
    size_t i = i0;
    for (; i < last; ++i) {
      const double now = next;
      next = t[i + 1];
      f(i, now, std::min(next - now, cap));
    }
    if (i < i1) f(i, next, interval_s);
  }
  // Sample i's efficiency (NaN unknown): its power ratio times its SM activity, either alone where
  // the other is unknown, within [0, 1.5].
  double efficiency(size_t i) const { return efficiency_with(power_ratio[i], i); }
  // The same, with sample i's power ratio read already.
  double efficiency_with(double pr, size_t i) const {
    const double a = sm ? (*sm)[i] / 100 : kNaN;
    double e = kNaN;
    if (known(pr) && known(a))
      e = pr * a;
    else if (known(pr))
      e = pr;
    else if (known(a))
      e = a;
    return known(e) ? std::clamp(e, 0.0, 1.5) : kNaN;
  }
  // Hands back what is kept per sample (power ratio, activity, running sums) once the GPU's
  // result and its judged samples are made, so that it is not held beside them.
  void release_samples() {
    // (Move-assigned: `v = {}` would keep the capacity.)
    power_ratio = RatioColumn();
    active = std::vector<uint8_t>(), sums = PrefixSums();
    peer_windows = std::vector<PeerWindow>();
  }
  // The running sums over samples [0, i) (PrefixSums).
  PrefixSums::Sums sums_before(size_t i) const;
  // Adds sample i to running sums: the one step of building them and of reading them between marks.
  void add_sample(PrefixSums::Sums& s, size_t i) const {
    auto add = [](double& sum, uint32_t& count, double v) {
      const bool k = known(v);
      sum = sum + (k ? v : 0);
      count = count + k;
    };
    add(s.util, s.util_n, util ? (*util)[i] : kNaN);
    const double r = power_ratio[i];
    add(s.pr, s.pr_n, r);
    s.pr_sq = s.pr_sq + (known(r) ? r * r : 0);
    add(s.eff, s.eff_n, efficiency_with(r, i));
    s.active_n += active[i];
  }
  // Active samples before sample i (PrefixSums: a mark and the samples after it).
  size_t active_before(size_t i) const {
    const size_t k = i / PrefixSums::kStride;
    size_t n = sums.marks[k].active_n;
    for (size_t j = k * PrefixSums::kStride; j < i; ++j) n += active[j];
    return n;
  }
};

struct Context {
  // The input as read; each GPU's series as the detectors read it is gpus[g].s (a copy with the
  // rows the data-quality scan marked left out, where it marked any).
  const Recording& rec;
  const DiagnosisConfig& cfg;
  std::vector<GpuData> gpus;
  Workload workload;
  // Computes the features of GPU g over samples [i0, i1).
  Features features(size_t g, size_t i0, size_t i1) const;
  // What another GPU did over samples [i0, i1): the features' util, power_ratio, power_sd_ratio
  // and efficiency alone (the same figures features() gives, from the running sums).
  PeerFeatures peer_features(size_t g, size_t i0, size_t i1) const;
  // GPU g's peer windows (GpuData::peer_windows), from its windows, running sums and activity.
  void make_peer_windows(size_t g);
  // What GPU h did over window w (the k-th) of another GPU: h's k-th peer window where its times
  // are w's (GPUs sampled together), else made, its figures read from a window of h over the same
  // samples where there is one. The same as range(), active_samples() and peer_features() give.
  PeerWindow peer_over(size_t h, const Window& w, size_t k) const;
  size_t active_samples(size_t g, size_t i0, size_t i1) const;
  // Sample index range of GPU g with times in [t0, t1). hint0, hint1: where the bounds probably
  // are (a window's own indices, where the GPUs were sampled together), tried first.
  std::pair<size_t, size_t> range(size_t g, double t0, double t1, size_t hint0 = 0,
                                  size_t hint1 = 0) const;
};

struct Candidate {
  double confidence = 0.5;
  // Tells apart kinds of one cause that make separate findings ("held" / "free" idle GPUs, a
  // straggler / a see-saw): a literal.
  const char* variant = "";
  Evidence evidence;
  std::vector<Alternative> alternatives;  // causes this window cannot rule out
};

struct Detector {
  Cause cause;
  std::optional<Candidate> (*check)(const Context& ctx, size_t gpu, const WindowFeatures& w);
  // One sentence from a finding's merged evidence and GPUs.
  std::string (*describe)(const Finding& f);
};

// One per file in detectors/.
extern const Detector kIdleDetector;
extern const Detector kContentionDetector;
extern const Detector kThermalDetector;
extern const Detector kPowerCapDetector;
extern const Detector kClocksDetector;
extern const Detector kHealthyDetector;
extern const Detector kCommunicationDetector;
extern const Detector kStarvationDetector;
extern const Detector kMemoryBoundDetector;
extern const Detector kLaunchOverheadDetector;

// Memory bound seen through nvidia-smi's memory-controller busy share alone (no DRAM activity
// column): busy, the controller at or above memory_bound_mem_util_pct, below the reference
// efficiency. The healthy detector steps aside for it (an efficiency just above low_efficiency
// must not hide it).
bool memory_controller_bound(const Context& ctx, const Features& f);

// Rounded for evidence (JSON numbers a person reads).
double round_to(double v, int digits);
// The evidence number, or NaN when the finding lacks it.
double ev(const Finding& f, const char* key);
std::string gpu_list(const std::vector<unsigned>& gpus);  // "GPU 0", "GPUs 0-3", "GPUs 0, 2"
std::string pct(double ratio);                            // 0.34 -> "34 %"

}  // namespace gpudoctor::diag
