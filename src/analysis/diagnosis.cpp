#include "analysis/diagnosis.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/data_quality.hpp"
#include "analysis/detectors/detector.hpp"
#include "analysis/power_limit.hpp"
#include "analysis/workload.hpp"
#include "core/clock_reasons.hpp"
#include "core/duration.hpp"
#include "core/gpu_models.hpp"

namespace gpudoctor {

std::string_view severity_code(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

namespace diag {
namespace {

// No cause has evidence in a working window: the GPU is taken as healthy, with less confidence
// than the healthy detector's (a finding needs positive evidence of its cause; a GPU that is not
// at 100 % is not for that reason starving).
std::optional<Candidate> no_cause_check(const Context&, size_t, const Window& w) {
  // Only where the work-pattern causes could have been seen (GPU-Util known): without it, a GPU
  // below the healthy efficiency cannot be told from one waiting (no verdict, said).
  if (w.idle || !known(w.f.efficiency) || !known(w.f.util)) return std::nullopt;
  Candidate c;
  c.confidence = 0.5;
  c.evidence["efficiency"] = round_to(w.f.efficiency, 3);
  c.evidence["power_ratio"] = round_to(w.f.power_ratio, 3);
  c.evidence["util_pct"] = round_to(w.f.util, 1);
  c.evidence["sm_pct"] = round_to(w.f.sm, 1);
  c.evidence["no_cause_evidence"] = 1;
  return c;
}
const Detector kNoCauseDetector{Cause::kHealthy, no_cause_check, nullptr};

// In the cause table's priority order.
const Detector* const kDetectors[] = {
    &kIdleDetector,        &kContentionDetector,     &kThermalDetector, &kPowerCapDetector,
    &kClocksDetector,      &kCommunicationDetector,  &kHealthyDetector, &kStarvationDetector,
    &kMemoryBoundDetector, &kLaunchOverheadDetector, &kNoCauseDetector,
};

const Detector& detector_for(Cause c) {
  for (const Detector* d : kDetectors)
    if (d->cause == c && d->describe) return *d;
  return kHealthyDetector;
}

double median_of(const std::vector<double>* c) {
  if (!c) return kNaN;
  std::vector<double> v;
  for (double x : *c)
    if (known(x)) v.push_back(x);
  if (v.empty()) return kNaN;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::string dur(double s) {
  return human_duration(s);
}

// Static facts and per-sample derived series of one GPU.
GpuData prepare(const GpuSeries& s, const DiagnosisConfig& cfg) {
  GpuData d;
  d.s = &s;
  const size_t n = s.size();
  {
    std::vector<double> gaps;
    for (size_t i = 1; i < n; ++i) gaps.push_back(s.time_s[i] - s.time_s[i - 1]);
    if (!gaps.empty()) {
      std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
      d.interval_s = std::max(1e-3, gaps[gaps.size() / 2]);
    }
  }
  d.dt.resize(n);
  for (size_t i = 0; i < n; ++i)
    d.dt[i] = i + 1 < n ? std::min(s.time_s[i + 1] - s.time_s[i], 2 * d.interval_s) : d.interval_s;

  const auto model = s.info.name.empty() ? std::nullopt : gpu_model_by_name(s.info.name);
  PowerLimitEvidence limit = resolve_power_limit(s, cfg);
  if (limit.default_w > 0) d.default_limit_w = limit.default_w;
  d.default_limit_known = limit.is_default;
  d.limit_source = limit.source;
  d.limit_confidence = limit.confidence;
  d.plateau_w = limit.plateau_w;
  d.cap_levels_w = limit.cap_levels_w;
  d.power_ratio = std::move(limit.power_ratio);
  d.clock_max_mhz = median_of(s.column(Field::kClockSmMax));
  if (!known(d.clock_max_mhz) && model) d.clock_max_mhz = model->sm_clock_max_mhz;
  d.slowdown_temp_c = median_of(s.column(Field::kTempSlowdown));
  if (!known(d.slowdown_temp_c) && model) d.slowdown_temp_c = model->slowdown_temp_c;
  d.mem_total_mib = median_of(s.column(Field::kMemTotal));
  if (!known(d.mem_total_mib) && model) d.mem_total_mib = model->mem_total_mib;

  d.util = s.column(Field::kUtilGpu);
  if (!d.util) d.util = s.column(Field::kGpmGraphicsUtil);
  const auto* util = d.util;
  const auto* power = s.column(Field::kPower);
  const auto* sm = s.column(Field::kGpmSmUtil);
  const auto* pstate = s.column(Field::kPstate);
  const auto* reasons = s.column(Field::kClockEventReasons);
  d.efficiency.assign(n, kNaN);
  d.active.assign(n, 0);
  // Activity, from the most direct signal the sample has: GPU-Util, SM activity, power against
  // the limit; without those, positive signs either way: the idle clock event reason or a deep
  // P-state (P8 and below) say idle, a power-cap reason, a working P-state (P0-P2) or power above
  // the idle floor of any board say busy (a cap reason at idle draw is a cap set below it). No
  // sign at all is not idleness: such samples take the activity nearest before them (at the
  // start, after), and a GPU with no sign anywhere counts as working, so that a cause needing
  // the missing signal is not asserted and the limitations say why.
  // A GPU the driver keeps idle: its "GPU idle" clock reason on nearly every sample and its SM
  // clock mostly at the floor, far below the highest the log shows (a starved job's GPU stays
  // clocked up between its short gaps; a desktop's drops to idle clocks).
  bool driver_idle = false;
  if (reasons && s.column(Field::kClockSm)) {
    size_t with = 0, idle_set = 0;
    std::vector<double> clocks;
    for (size_t i = 0; i < n; ++i) {
      const double r = (*reasons)[i], c = (*s.column(Field::kClockSm))[i];
      if (known(r) && r >= 0 && r < 1e15)
        ++with, idle_set += (static_cast<uint64_t>(r) & kReasonIdle) != 0;
      if (known(c) && c > 0) clocks.push_back(c);
    }
    if (with >= static_cast<size_t>(cfg.window_samples) && idle_set >= 0.9 * with &&
        clocks.size() >= static_cast<size_t>(cfg.window_samples)) {
      std::sort(clocks.begin(), clocks.end());
      driver_idle = clocks[clocks.size() / 2] <= 0.5 * clocks[(clocks.size() - 1) * 99 / 100];
    }
  }
  std::vector<int> act_of(n, -1);
  double last_power = kNaN;  // the latest power reading (a long-format log splits its rows)
  for (size_t i = 0; i < n; ++i) {
    if (power && known((*power)[i])) last_power = (*power)[i];
    const double pr = d.power_ratio[i];
    const double a = sm ? (*sm)[i] / 100 : kNaN;
    double e = kNaN;
    if (known(pr) && known(a))
      e = pr * a;
    else if (known(pr))
      e = pr;
    else if (known(a))
      e = a;
    d.efficiency[i] = known(e) ? std::clamp(e, 0.0, 1.5) : kNaN;
    int act = -1;
    const double r_i = reasons ? (*reasons)[i] : kNaN;
    const bool idle_reason =
        known(r_i) && r_i >= 0 && r_i < 1e15 && (static_cast<uint64_t>(r_i) & kReasonIdle) != 0;
    if (util && known((*util)[i]))
      // On a GPU the driver keeps idle-clocked, light GPU-Util is desktop or media work that
      // runs a kernel now and then, not a job.
      act = (*util)[i] >= cfg.idle_util_pct &&
            !(driver_idle && idle_reason && (*util)[i] < cfg.dip_util_pct);
    else if (known(a))
      act = a * 100 >= cfg.idle_util_pct;
    else if (known(pr))
      act = pr >= cfg.idle_power_ratio;
    else {
      const double r = reasons ? (*reasons)[i] : kNaN;
      const uint64_t mask = known(r) && r >= 0 && r < 1e15 ? static_cast<uint64_t>(r) : 0;
      const double ps = pstate ? (*pstate)[i] : kNaN;
      // A cap or thermal reason at idle draw is a cap set below it, not work.
      const bool idle_draw = known(last_power) && last_power < cfg.idle_power_floor_w;
      if ((mask & (kReasonSwPowerCap | kReasonHwPowerBrake | kReasonSwThermal)) && !idle_draw)
        act = 1;
      else if (mask & kReasonIdle)
        act = 0;
      else if (known(ps) && ps <= 2)
        act = 1;
      else if (known(ps) && ps >= 8)
        act = 0;
      else if (power && known((*power)[i]) && (*power)[i] >= cfg.idle_power_floor_w)
        act = 1;
    }
    act_of[i] = act;
  }
  // Samples with no sign take the activity before them, or (at the start) the first one after.
  int last = -1;
  for (size_t i = 0; i < n && last < 0; ++i) last = act_of[i];
  for (size_t i = 0; i < n; ++i) {
    if (act_of[i] >= 0) last = act_of[i];
    d.active[i] = static_cast<uint8_t>(last != 0);
  }
  return d;
}

// Where a GPU's limit came from when the log did not simply state it: said in the input notes.
std::string limit_note(const GpuData& d) {
  auto levels = [&] {
    std::vector<std::string> w;
    for (double x : d.cap_levels_w) w.push_back(fmt::format("{:.0f}", x));
    return fmt::format("{} W", fmt::join(w, ", "));
  };
  const std::string& src = d.limit_source;
  if (src == "percent-of-limit column" && known(d.default_limit_w))
    return fmt::format("power limit {:.0f} W from the percent-of-limit column (power / percent)",
                       d.default_limit_w);
  if (src == "percent-of-limit column")
    return "power as a share of the limit from the percent-of-limit column (no watts needed)";
  if (src == "highest cap in the log")
    return fmt::format(
        "the cap column moves ({}): the highest, {:.0f} W, is taken as the board's limit and the "
        "caps below it as lowered",
        levels(), d.default_limit_w);
  if (src == "highest power-cap plateau")
    return fmt::format(
        "the SW power cap held the power at several levels ({}): the highest, {:.0f} W, is taken "
        "as the board's limit and the levels below it as lowered caps",
        levels(), d.default_limit_w);
  if (src == "power-cap plateau")
    return fmt::format(
        "power limit {:.0f} W from the power the SW power cap held the GPU at (a lowered cap "
        "cannot be told from the default)",
        d.default_limit_w);
  if (src == "power plateau")
    return fmt::format(
        "power limit {:.0f} W from a plateau: the power sits flat at its top while busy, as at a "
        "limit (the default may be higher; give --gpu-name MODEL to check for a lowered cap)",
        d.default_limit_w);
  return "";
}

// The verdict rule, the same for one GPU and for a run: where the judged GPU time went. Time that
// is mostly working (healthy windows holding healthy_share of it) is healthy, its smaller
// findings listed under it; otherwise the problem that lost the most GPU time among those holding
// at least finding_min_share of the GPU time observed (then the one covering most). A finding below
// that share is listed, never the verdict. nullopt when nothing was judged.
struct TimeOfCause {
  double lost_h = 0, hours = 0;
};
std::optional<Cause> where_time_went(const std::map<Cause, TimeOfCause>& by_cause, double judged_h,
                                     double windows_h, const DiagnosisConfig& cfg) {
  if (judged_h <= 0) return std::nullopt;
  const auto healthy = by_cause.find(Cause::kHealthy);
  const double healthy_h = healthy == by_cause.end() ? 0 : healthy->second.hours;
  if (healthy_h >= cfg.healthy_share * judged_h) return Cause::kHealthy;
  std::optional<Cause> best;
  double best_lost = -1, best_cover = -1;
  for (const auto& [cause, t] : by_cause) {
    if (cause == Cause::kHealthy || t.hours < cfg.finding_min_share * std::max(judged_h, windows_h))
      continue;
    if (t.lost_h > best_lost + 1e-12 ||
        (std::abs(t.lost_h - best_lost) <= 1e-12 && t.hours > best_cover))
      best = cause, best_lost = t.lost_h, best_cover = t.hours;
  }
  if (!best && healthy_h >= cfg.finding_min_share * std::max(judged_h, windows_h))
    return Cause::kHealthy;
  return best;
}

// The run's one line: the verdict's meaning, or, when some GPUs of the run idled while others
// worked, how many and what share of the GPU time ("2 of 8 GPUs idle: 25 % of the GPU time").
std::string headline(const Diagnosis& d, double idle_h, double observed_h) {
  if (!d.verdict) return "cannot tell from this input (see limitations)";
  const size_t idle =
      static_cast<size_t>(std::count_if(d.gpus.begin(), d.gpus.end(), [](const GpuDiagnosis& g) {
        return g.verdict == Cause::kIdle;
      }));
  const bool some_idle = d.gpus.size() > 1 && idle > 0 && idle < d.gpus.size() && observed_h > 0;
  if (!some_idle) return std::string(cause_info(*d.verdict).what);
  const std::string gpus = fmt::format("{} of {} GPUs idle: {:.0f} % of the GPU time", idle,
                                       d.gpus.size(), 100 * idle_h / observed_h);
  if (*d.verdict == Cause::kIdle) return gpus;
  return fmt::format("{} ({})", cause_info(*d.verdict).what, gpus);
}

struct Run {
  bool active;
  size_t i0, i1;  // [i0, i1)
};

// Phases from the activity mask: short gaps inside work are part of the work (duty cycles), short
// bursts inside idleness are not work; what stays idle before, between and after is start-up,
// pause or shutdown.
void segment(GpuData& d, const DiagnosisConfig& cfg) {
  const auto& t = d.s->time_s;
  const size_t n = t.size();
  if (n == 0) return;
  auto span = [&](const Run& r) { return t[r.i1 - 1] - t[r.i0] + d.interval_s; };
  std::vector<Run> runs;
  for (size_t i = 0; i < n; ++i) {
    if (runs.empty() || runs.back().active != static_cast<bool>(d.active[i]))
      runs.push_back({static_cast<bool>(d.active[i]), i, i + 1});
    else
      runs.back().i1 = i + 1;
  }
  auto merge = [&](auto&& absorb) {
    std::vector<Run> out;
    for (size_t k = 0; k < runs.size(); ++k) {
      Run r = runs[k];
      if (absorb(k)) r.active = !r.active;
      if (!out.empty() && out.back().active == r.active)
        out.back().i1 = r.i1;
      else
        out.push_back(r);
    }
    runs = std::move(out);
  };
  // Gaps shorter than a pause between two stretches of work: part of the work.
  merge([&](size_t k) {
    return !runs[k].active && k > 0 && k + 1 < runs.size() && span(runs[k]) < cfg.pause_min_s;
  });
  // Bursts shorter than a pause with idleness on both sides: not steady work.
  merge([&](size_t k) {
    if (!runs[k].active || runs.size() == 1 || span(runs[k]) >= cfg.pause_min_s) return false;
    // The log's edges cut the idleness before the first and after the last burst: its length
    // there is unknown, so a short one counts when the other side is long idleness.
    const bool long_before = k > 0 && span(runs[k - 1]) >= cfg.pause_min_s;
    const bool long_after = k + 1 < runs.size() && span(runs[k + 1]) >= cfg.pause_min_s;
    const bool edge_before = k <= 1, edge_after = k + 2 >= runs.size();
    return (long_before || edge_before) && (long_after || edge_after) &&
           (long_before || long_after);
  });
  const bool any_active =
      std::any_of(runs.begin(), runs.end(), [](const Run& r) { return r.active; });
  for (size_t k = 0; k < runs.size(); ++k) {
    const Run& r = runs[k];
    std::string kind = "steady";
    if (!any_active)
      kind = "idle";
    else if (!r.active && t[r.i1 - 1] + d.dt[r.i1 - 1] - t[r.i0] > cfg.pause_max_s)
      kind = "idle";  // too long to be a start, a pause or a shutdown: blamed as idle below
    else if (!r.active)
      kind = k == 0 ? "startup" : (k + 1 == runs.size() ? "shutdown" : "pause");
    d.phases.push_back({kind, t[r.i0], t[r.i1 - 1] + d.dt[r.i1 - 1]});
  }
  // Windows: the steady phases cut into pieces of about window_s; idle stretches long enough to
  // blame as they are.
  const double len = std::max(cfg.window_s, cfg.window_samples * d.interval_s);
  for (size_t k = 0; k < runs.size(); ++k) {
    const Run& r = runs[k];
    const Phase& p = d.phases[k];
    const bool blame_idle =
        !r.active && (p.kind == "idle" || p.end_s - p.start_s > cfg.pause_max_s);
    if (!r.active && !blame_idle) continue;
    const double dur = p.end_s - p.start_s;
    const size_t pieces = std::max<size_t>(1, static_cast<size_t>(std::llround(dur / len)));
    size_t i = r.i0;
    for (size_t q = 0; q < pieces; ++q) {
      const double end_t = q + 1 == pieces ? p.end_s + 1 : p.start_s + dur * (q + 1) / pieces;
      size_t j = i;
      while (j < r.i1 && t[j] < end_t) ++j;
      if (j > i) {
        Window w;
        w.idle = !r.active;
        w.i0 = i, w.i1 = j;
        w.t0 = t[i];
        w.t1 = t[j - 1] + d.dt[j - 1];
        d.windows.push_back(w);
      }
      i = j;
    }
  }
}

struct Judged {
  size_t gpu;
  const Window* w;
  Cause cause;
  Candidate c;
  std::optional<double> lost_h;
  double hours;  // GPU hours the window covers
};

// GPU seconds sample i of a window lost (nullopt: efficiency unknown).
std::optional<double> sample_lost_s(const Context& ctx, size_t g, const Window& w, size_t i) {
  const GpuData& d = ctx.gpus[g];
  if (w.idle) return d.dt[i];
  const double e = d.efficiency[i];
  if (!known(e)) return std::nullopt;
  return d.dt[i] * std::max(0.0, 1 - e / ctx.cfg.reference_efficiency);
}

std::optional<double> lost_hours(const Context& ctx, size_t g, const Window& w) {
  double lost = 0;
  bool any = false;
  for (size_t i = w.i0; i < w.i1; ++i)
    if (const auto l = sample_lost_s(ctx, g, w, i)) lost += *l, any = true;
  if (!any) return std::nullopt;
  return lost / 3600;
}

// GPU hours a window covers, counted as the observed time is (each sample's dt, gaps capped), so
// that shares of the GPU time add up to at most one.
double window_hours(const Context& ctx, size_t g, const Window& w) {
  double s = 0;
  for (size_t i = w.i0; i < w.i1; ++i) s += ctx.gpus[g].dt[i];
  return s / 3600;
}

// Duration-weighted mean of numeric evidence; strings and GPU ids take the most common value.
nlohmann::ordered_json merge_evidence(const std::vector<const Judged*>& parts) {
  struct Num {
    double sum = 0, weight = 0;
  };
  std::vector<std::string> order;
  std::map<std::string, Num> nums;
  std::map<std::string, std::map<std::string, double>> modes;
  std::map<std::string, nlohmann::ordered_json> mode_values;
  for (const Judged* j : parts) {
    const double wgt = std::max(1e-9, j->w->t1 - j->w->t0);
    for (const auto& [k, v] : j->c.evidence.items()) {
      if (std::find(order.begin(), order.end(), k) == order.end()) order.push_back(k);
      const bool is_id = k.size() > 4 && k.compare(k.size() - 4, 4, "_gpu") == 0;
      if (v.is_number() && !is_id) {
        const double x = v.get<double>();
        if (!known(x)) continue;
        nums[k].sum += x * wgt, nums[k].weight += wgt;
      } else if (!v.is_null()) {
        modes[k][v.dump()] += wgt;
        mode_values[v.dump()] = v;
      }
    }
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& k : order) {
    if (auto it = nums.find(k); it != nums.end() && it->second.weight > 0) {
      const double m = it->second.sum / it->second.weight;
      const double digits = std::abs(m) >= 100 ? 1 : (std::abs(m) >= 1 ? 2 : 3);
      out[k] = round_to(m, static_cast<int>(digits));
    } else if (auto mt = modes.find(k); mt != modes.end()) {
      const auto best = std::max_element(mt->second.begin(), mt->second.end(),
                                         [](auto& a, auto& b) { return a.second < b.second; });
      out[k] = mode_values[best->first];
    }
  }
  return out;
}

nlohmann::ordered_json gpu_metrics(const Context& ctx, size_t g,
                                   const std::vector<const Judged*>& steady) {
  const GpuData& d = ctx.gpus[g];
  const auto& cfg = ctx.cfg;
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  double observed = 0, steady_s = 0;
  for (double x : d.dt) observed += x;
  for (const Judged* j : steady) steady_s += j->w->t1 - j->w->t0;
  m["samples"] = d.s->size();
  m["interval_s"] = round_to(d.interval_s, 3);
  m["observed_s"] = round_to(observed, 1);
  m["steady_s"] = round_to(steady_s, 1);
  if (steady.empty()) return m;
  struct Acc {
    double sum = 0, w = 0;
    void add(double v, double wt) {
      if (known(v)) sum += v * wt, w += wt;
    }
    double get() const { return w > 0 ? sum / w : kNaN; }
  };
  Acc power, pr, util, sm, tensor, dram, memu, eff, clock, tmean, rx, tx, nvl, busy, period;
  double tmax = kNaN;
  std::array<Acc, 16> reasons{};
  bool has_reasons = false;
  for (const Judged* j : steady) {
    const Features& f = j->w->f;
    const double wt = j->w->t1 - j->w->t0;
    power.add(f.power_w, wt), pr.add(f.power_ratio, wt), util.add(f.util, wt), sm.add(f.sm, wt);
    tensor.add(f.tensor, wt), dram.add(f.dram, wt), memu.add(f.mem_util, wt);
    eff.add(f.efficiency, wt), clock.add(f.clock_ratio, wt), tmean.add(f.temp_mean, wt);
    rx.add(f.pcie_rx, wt), tx.add(f.pcie_tx, wt), nvl.add(f.nvlink, wt);
    busy.add(f.busy_fraction, wt), period.add(f.period_s, wt);
    if (known(f.temp_max) && !(tmax >= f.temp_max)) tmax = f.temp_max;
    if (f.has_reasons) {
      has_reasons = true;
      for (size_t b = 0; b < 16; ++b) reasons[b].add(f.reason_fraction[b], wt);
    }
  }
  // Busy but idle: share of steady samples with util >= busy and power < low_power_ratio.
  double bi_n = 0, bi = 0;
  const auto* u = d.util;
  const auto& pr_of = d.power_ratio;
  // Memory churn: the largest change of memory used per second, as a share of the total.
  double churn = kNaN;
  const auto* mem = d.col(Field::kMemUsed);
  for (const Judged* j : steady) {
    for (size_t i = j->w->i0; i < j->w->i1; ++i) {
      if (u && known((*u)[i]) && known(pr_of[i])) {
        bi_n += 1;
        bi += (*u)[i] >= cfg.busy_util_pct && pr_of[i] < cfg.low_power_ratio;
      }
      if (mem && i > j->w->i0 && known(d.mem_total_mib) && d.mem_total_mib > 0) {
        const double dt = d.s->time_s[i] - d.s->time_s[i - 1];
        if (dt > 0 && known((*mem)[i]) && known((*mem)[i - 1])) {
          const double c =
              std::abs((*mem)[i] - (*mem)[i - 1]) / d.mem_total_mib / std::max(dt, 1.0);
          if (!(churn >= c)) churn = c;
        }
      }
    }
  }
  auto put = [&](const char* k, double v, int digits) {
    if (known(v)) m[k] = round_to(v, digits);
  };
  put("mean_power_w", power.get(), 1);
  put("mean_power_ratio", pr.get(), 3);
  put("mean_util_pct", util.get(), 1);
  put("mean_sm_pct", sm.get(), 1);
  put("mean_tensor_pct", tensor.get(), 1);
  put("mean_dram_pct", dram.get(), 1);
  put("mean_mem_util_pct", memu.get(), 1);
  put("efficiency", eff.get(), 3);
  put("busy_idle_fraction", bi_n > 0 ? bi / bi_n : kNaN, 3);
  put("duty_cycle", busy.get(), 3);
  put("period_s", period.get(), 1);
  put("clock_ratio", clock.get(), 3);
  put("mean_temp_c", tmean.get(), 1);
  put("max_temp_c", tmax, 0);
  if (known(tmax) && known(d.slowdown_temp_c)) put("thermal_margin_c", d.slowdown_temp_c - tmax, 0);
  put("memory_churn_ratio_per_s", churn, 3);
  put("mean_pcie_rx_mibs", rx.get(), 0);
  put("mean_pcie_tx_mibs", tx.get(), 0);
  put("mean_nvlink_mibs", nvl.get(), 0);
  if (has_reasons) {
    nlohmann::ordered_json r = nlohmann::ordered_json::object();
    for (const auto& cr : clock_reasons()) {
      for (size_t b = 0; b < 16; ++b)
        if (cr.bit == (uint64_t{1} << b) && reasons[b].get() >= 0.01)
          r[std::string(cr.code)] = round_to(reasons[b].get(), 3);
    }
    m["clock_event_reasons"] = r;
  }
  return m;
}

}  // namespace
}  // namespace diag

namespace {

// Leaves out the samples of a GPU the data-quality scan marked (time going back, frozen rows), so
// that every series the detectors read runs forward over live readings.
void drop_marked(GpuSeries& g, const std::vector<uint8_t>& drop) {
  std::vector<size_t> keep;
  for (size_t i = 0; i < g.size(); ++i)
    if (!drop[i]) keep.push_back(i);
  auto compact = [&](std::vector<double>& v) {
    size_t kept = 0;
    for (size_t i : keep) v[kept++] = v[i];
    v.resize(kept);
  };
  compact(g.time_s);
  for (auto& c : g.columns)
    if (c) compact(*c);
}

}  // namespace

Diagnosis diagnose(const Recording& input, const DiagnosisConfig& cfg) {
  // Readers promise times that increase per GPU; a Recording built any other way might not, and
  // a hung logger repeats its last row: those samples are left out (and said).
  QualityScan quality = scan_quality(input, cfg);
  std::optional<Recording> fixed;
  std::vector<std::string> fixes;
  // A log with only the instantaneous power reading (DCGM's power_usage_instant) has power all
  // the same: the diagnosis reads it as the power draw.
  const bool instant_power = std::any_of(
      input.gpus.begin(), input.gpus.end(),
      [](const GpuSeries& s) { return !s.has(Field::kPower) && s.has(Field::kPowerInstant); });
  if (quality.any_drop || instant_power) {
    fixed.emplace();
    fixed->system = input.system;
    fixed->start_unix_ms = input.start_unix_ms;
    fixed->source = input.source;
    fixed->notes = input.notes;
    fixed->command = input.command;
    fixed->host = input.host;
    fixed->markers = input.markers;
    for (size_t g = 0; g < input.gpus.size(); ++g) {
      const auto& s = input.gpus[g];
      GpuSeries c;
      c.info = s.info;
      c.time_s = s.time_s;
      for (size_t f = 0; f < kFieldCount; ++f)
        if (s.columns[f]) c.columns[f] = std::make_unique<std::vector<double>>(*s.columns[f]);
      c.unsupported = s.unsupported;
      c.host = s.host;
      c.processes = s.processes;
      c.owners = s.owners;
      c.processes_recorded = s.processes_recorded;
      c.lost_at_s = s.lost_at_s;
      c.power_limit_source = s.power_limit_source;
      if (!c.has(Field::kPower) && c.has(Field::kPowerInstant))
        c.columns[index_of(Field::kPower)] =
            std::make_unique<std::vector<double>>(*c.column(Field::kPowerInstant));
      drop_marked(c, quality.drop[g]);
      fixed->gpus.push_back(std::move(c));
    }
  }
  if (instant_power)
    fixes.push_back(
        "power draw from the instantaneous reading (the input has no averaged power): noisier, "
        "so power-based figures are less certain");
  for (const auto& issue : quality.issues) {
    if (issue.kind == "time_backwards")
      fixes.push_back(
          fmt::format("GPU {}: {} sample(s) whose time did not move forward were left out",
                      issue.gpu, issue.samples));
    else if (issue.kind == "frozen")
      fixes.push_back(fmt::format("GPU {}: {} frozen rows from {} ({}) were left out", issue.gpu,
                                  issue.samples, human_duration(issue.start_s), issue.detail));
    else if (issue.kind == "interleaved")
      fixes.push_back(fmt::format("GPU {}: {}", issue.gpu, issue.detail));
  }
  const Recording& rec = fixed ? *fixed : input;
  using namespace diag;
  Diagnosis out;
  out.source = rec.source;
  out.reference_efficiency = cfg.reference_efficiency;
  out.start_unix_ms = rec.start_unix_ms;
  out.input_notes = rec.notes;
  Context ctx{rec, cfg, {}, detect_workload(rec)};
  out.workload = ctx.workload;
  out.data_quality = std::move(quality.issues);
  for (const auto& s : rec.gpus) ctx.gpus.push_back(prepare(s, cfg));
  for (auto& d : ctx.gpus) segment(d, cfg);
  // Features of every window before any detector runs.
  for (size_t g = 0; g < ctx.gpus.size(); ++g)
    for (auto& w : ctx.gpus[g].windows) w.f = ctx.features(g, w.i0, w.i1);
  for (const auto& s : rec.gpus)
    if (!s.time_s.empty()) out.duration_s = std::max(out.duration_s, s.time_s.back());

  // Judge every window.
  std::vector<Judged> judged;
  std::vector<size_t> steady_samples(ctx.gpus.size(), 0);
  for (size_t g = 0; g < ctx.gpus.size(); ++g)
    for (const auto& w : ctx.gpus[g].windows)
      if (!w.idle) steady_samples[g] += w.i1 - w.i0;
  // Time in windows, judged or not: what a finding's share is weighed against for the verdict
  // (start-up and shutdown are phases, not the run's time to blame).
  std::vector<double> windows_h(ctx.gpus.size(), 0);
  for (size_t g = 0; g < ctx.gpus.size(); ++g) {
    for (const auto& w : ctx.gpus[g].windows) {
      if (!w.idle && steady_samples[g] < static_cast<size_t>(cfg.min_samples)) continue;
      windows_h[g] += window_hours(ctx, g, w);
      for (const Detector* det : kDetectors) {
        auto c = det->check(ctx, g, w);
        if (!c) continue;
        judged.push_back(
            {g, &w, det->cause, std::move(*c), lost_hours(ctx, g, w), window_hours(ctx, g, w)});
        break;
      }
    }
  }

  // Per GPU: consecutive windows with the same cause become one span.
  struct Span {
    size_t gpu;
    Cause cause;
    std::string variant;
    double t0, t1;
    std::vector<const Judged*> parts;
  };
  std::vector<Span> spans;
  for (const auto& j : judged) {
    if (!spans.empty() && spans.back().gpu == j.gpu && spans.back().cause == j.cause &&
        spans.back().variant == j.c.variant) {
      spans.back().t1 = j.w->t1;
      spans.back().parts.push_back(&j);
    } else {
      spans.push_back({j.gpu, j.cause, j.c.variant, j.w->t0, j.w->t1, {&j}});
    }
  }
  // Across GPUs: spans of the same cause that overlap in time become one finding.
  struct Group {
    Cause cause;
    std::string variant;
    double t0, t1;
    std::vector<const Span*> spans;
  };
  std::vector<Group> groups;
  for (const auto& s : spans) {
    if (s.cause == Cause::kHealthy) continue;
    Group* into = nullptr;
    for (auto& gr : groups)
      if (gr.cause == s.cause && gr.variant == s.variant && s.t0 <= gr.t1 && gr.t0 <= s.t1)
        into = &gr;
    if (!into) {
      groups.push_back({s.cause, s.variant, s.t0, s.t1, {}});
      into = &groups.back();
    }
    into->t0 = std::min(into->t0, s.t0), into->t1 = std::max(into->t1, s.t1);
    into->spans.push_back(&s);
  }

  // Time each GPU was judged (its judged windows), the denominator of a finding's share.
  std::vector<double> judged_h(ctx.gpus.size(), 0);
  for (const auto& j : judged) judged_h[j.gpu] += j.hours;

  // Per GPU and for the run, per cause: lost hours and covered hours (for verdicts).
  std::vector<std::map<Cause, TimeOfCause>> per_gpu(ctx.gpus.size());
  std::map<Cause, TimeOfCause> per_run;
  for (const auto& j : judged) {
    for (auto* e : {&per_gpu[j.gpu][j.cause], &per_run[j.cause]}) {
      e->lost_h += j.lost_h.value_or(0);
      e->hours += j.hours;
    }
  }
  // Every GPU's observed time, the denominator of a finding's share of the run.
  double observed_h = 0;
  for (const auto& d : ctx.gpus)
    for (double x : d.dt) observed_h += x / 3600;
  out.gpu_hours = round_to(observed_h, 3);

  for (const auto& gr : groups) {
    Finding f;
    f.cause = gr.cause;
    f.start_s = gr.t0, f.end_s = gr.t1;
    std::vector<const Judged*> parts;
    std::set<unsigned> gpus;
    double lost = 0, hours = 0, conf = 0, max_share = 0;
    bool lost_known = false;
    std::map<size_t, double> gpu_hours;
    for (const Span* s : gr.spans) {
      gpus.insert(ctx.gpus[s->gpu].s->info.index);
      for (const Judged* j : s->parts) {
        parts.push_back(j);
        if (j->lost_h) lost += *j->lost_h, lost_known = true;
        hours += j->hours;
        conf += j->c.confidence * j->hours;
        gpu_hours[s->gpu] += j->hours;
      }
    }
    for (const auto& [g, h] : gpu_hours)
      if (judged_h[g] > 0) max_share = std::max(max_share, h / judged_h[g]);
    f.gpus.assign(gpus.begin(), gpus.end());
    for (const Span* s : gr.spans)
      for (const auto& o : ctx.gpus[s->gpu].s->owners)
        if (o.first_s <= s->t1 && s->t0 <= o.last_s &&
            std::find(f.owners.begin(), f.owners.end(), owner_label(o.owner)) == f.owners.end())
          f.owners.push_back(owner_label(o.owner));
    f.confidence = hours > 0 ? round_to(conf / hours, 2) : 0;
    f.evidence = merge_evidence(parts);
    if (lost_known) f.lost_gpu_hours = round_to(lost, 3);
    const double lost_share = hours > 0 && lost_known ? lost / hours : 0;
    const bool free_idle = f.cause == Cause::kIdle && ev(f, "held") < 0.5;
    if (max_share < cfg.finding_min_share || free_idle)
      f.severity = Severity::kInfo;
    else if (lost_share >= cfg.critical_lost_share && f.confidence >= cfg.critical_confidence)
      f.severity = Severity::kCritical;
    else
      f.severity = Severity::kWarning;
    f.evidence["duration_s"] = round_to(gr.t1 - gr.t0, 1);
    f.share = observed_h > 0 ? round_to(hours / observed_h, 3) : 0;
    f.summary = detector_for(f.cause).describe(f);
    // Alternatives carried by at least half of the finding's time, ranked by confidence.
    {
      struct Alt {
        double conf_h = 0, hours = 0;
        std::string tell;
      };
      std::map<Cause, Alt> alts;
      for (const Judged* j : parts)
        for (const auto& a : j->c.alternatives) {
          auto& x = alts[a.cause];
          x.conf_h += a.confidence * j->hours, x.hours += j->hours;
          if (x.tell.empty()) x.tell = a.tell_apart;
        }
      for (const auto& [cause, a] : alts)
        if (hours > 0 && a.hours * 2 >= hours)
          f.alternatives.push_back({cause, round_to(a.conf_h / a.hours, 2), a.tell});
      std::stable_sort(
          f.alternatives.begin(), f.alternatives.end(),
          [](const Alternative& x, const Alternative& y) { return x.confidence > y.confidence; });
    }
    f.fixes = fixes_for(f.cause, ctx.workload);
    out.findings.push_back(std::move(f));
  }
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     if (a.severity != b.severity) return a.severity > b.severity;
                     return a.lost_gpu_hours.value_or(0) > b.lost_gpu_hours.value_or(0);
                   });

  // Per-GPU results.
  for (size_t g = 0; g < ctx.gpus.size(); ++g) {
    const GpuData& d = ctx.gpus[g];
    GpuDiagnosis gd;
    gd.index = d.s->info.index;
    gd.name = d.s->info.name;
    gd.uuid = d.s->info.uuid;
    gd.phases = d.phases;
    if (known(d.default_limit_w)) gd.power_limit_w = round_to(d.default_limit_w, 1);
    gd.power_limit_source = d.limit_source;
    if (!d.limit_source.empty()) gd.power_limit_confidence = d.limit_confidence;
    {
      const auto* enf = d.col(Field::kPowerLimitEnforced);
      if (!enf) enf = d.col(Field::kPowerLimit);
      const double e = median_of(enf);
      if (known(e)) gd.enforced_limit_w = round_to(e, 1);
    }
    std::vector<const Judged*> steady;
    double lost = 0, conf = 0, conf_h = 0;
    bool lost_known = false;
    for (const auto& j : judged) {
      if (j.gpu != g) continue;
      if (!j.w->idle) steady.push_back(&j);
      if (j.lost_h) lost += *j.lost_h, lost_known = true;
      for (size_t i = j.w->i0; i < j.w->i1; ++i)
        gd.judged.push_back(
            {d.s->time_s[i], d.dt[i], j.cause,
             j.cause == Cause::kHealthy ? 0 : sample_lost_s(ctx, g, *j.w, i).value_or(0)});
    }
    gd.metrics = gpu_metrics(ctx, g, steady);
    if (auto it = gd.metrics.find("efficiency"); it != gd.metrics.end())
      gd.efficiency = it->get<double>();
    if (lost_known) gd.lost_gpu_hours = round_to(lost, 3);
    std::optional<Cause> best = where_time_went(per_gpu[g], judged_h[g], windows_h[g], cfg);
    gd.verdict = best;
    if (best) {
      for (const auto& j : judged)
        if (j.gpu == g && j.cause == *best) conf += j.c.confidence * j.hours, conf_h += j.hours;
      gd.confidence = conf_h > 0 ? round_to(conf / conf_h, 2) : 0;
    }
    out.gpus.push_back(std::move(gd));
  }
  // The run's verdict by the same rule over every GPU's judged time; healthy only when every GPU
  // that worked could be judged (a GPU busy with nothing to judge it by may be the one with the
  // problem).
  {
    double run_judged_h = 0;
    for (double h : judged_h) run_judged_h += h;
    double run_windows_h = 0;
    for (double h : windows_h) run_windows_h += h;
    std::optional<Cause> best = where_time_went(per_run, run_judged_h, run_windows_h, cfg);
    bool unjudged_work = false;
    for (size_t g = 0; g < ctx.gpus.size(); ++g)
      unjudged_work = unjudged_work || (!out.gpus[g].verdict &&
                                        steady_samples[g] >= static_cast<size_t>(cfg.min_samples));
    if (best == Cause::kHealthy && unjudged_work) best.reset();
    out.verdict = best;
    double lost = 0;
    bool lost_known = false;
    for (const auto& g : out.gpus)
      if (g.lost_gpu_hours) lost += *g.lost_gpu_hours, lost_known = true;
    if (lost_known) out.lost_gpu_hours = round_to(lost, 3);
    const auto idle = per_run.find(Cause::kIdle);
    out.headline = headline(out, idle == per_run.end() ? 0 : idle->second.hours, observed_h);
  }

  // What this input could not show.
  auto any_has = [&](Field f) {
    return std::any_of(rec.gpus.begin(), rec.gpus.end(),
                       [&](const GpuSeries& s) { return s.has(f); });
  };
  auto& lim = out.limitations;
  for (auto& f : fixes) lim.push_back(std::move(f));
  if (rec.gpus.empty() || out.duration_s <= 0 ||
      std::all_of(rec.gpus.begin(), rec.gpus.end(),
                  [](const GpuSeries& s) { return s.size() < 2; }))
    lim.push_back("fewer than two samples per GPU: nothing over time can be judged");
  if (!any_has(Field::kPower))
    lim.push_back(
        "no power draw in this input: efficiency and the power-based causes (busy but idle, "
        "power cap, launch overhead, communication wait, memory bound) cannot be judged; "
        "verdicts rest on GPU-Util, SM activity and clocks");
  if (!any_has(Field::kUtilGpu) && any_has(Field::kGpmGraphicsUtil))
    lim.push_back(
        "no GPU-Util in this input: the graphics engine's active time (GRACT) stands in for it");
  else if (!any_has(Field::kUtilGpu))
    lim.push_back("no GPU-Util in this input: duty cycles (data starvation) cannot be seen");
  if (!any_has(Field::kGpmSmUtil))
    lim.push_back(
        "no SM activity in this input: efficiency is power / limit alone (lower confidence), and "
        "launch overhead is told from communication wait only by peer traffic and by how the GPUs "
        "differ; record with gpudoctor on a Hopper or newer GPU, or with DCGM "
        "(DCGM_FI_PROF_SM_ACTIVE)");
  if (!any_has(Field::kClockSm))
    lim.push_back(
        "no SM clock in this input: clocks held low (locked application clocks, HW slowdown) "
        "cannot be seen, and a GPU slowed by them looks busy but idle");
  if (!any_has(Field::kClockEventReasons))
    lim.push_back(
        "no clock event reasons: thermal and clock limits are judged from temperature and clocks "
        "alone");
  if (std::none_of(rec.gpus.begin(), rec.gpus.end(),
                   [](const GpuSeries& s) { return s.processes_recorded || !s.processes.empty(); }))
    lim.push_back(
        "no process list in this input: contention (several processes on one GPU) "
        "cannot be checked");
  if (rec.gpus.size() > 1 && !any_has(Field::kPcieTx) && !any_has(Field::kGpmPcieTx) &&
      !any_has(Field::kGpmNvlinkTx))
    lim.push_back(
        "no PCIe or NVLink throughput: GPUs waiting on each other are recognised only "
        "by how their power differs");
  for (size_t g = 0; g < ctx.gpus.size(); ++g) {
    const GpuData& d = ctx.gpus[g];
    const auto& s = *d.s;
    const std::string who = fmt::format("GPU {}", s.info.index);
    const bool ratio_known =
        std::any_of(d.power_ratio.begin(), d.power_ratio.end(), [](double x) { return known(x); });
    if (const std::string note = limit_note(d); !note.empty())
      out.input_notes.push_back(fmt::format("{}: {}", who, note));
    if (!known(d.default_limit_w) && !ratio_known && s.has(Field::kPower))
      lim.push_back(fmt::format(
          "{}: no power limit in the input and none known for {}: efficiency cannot be computed, "
          "so the causes judged by it (healthy, busy but idle, a lowered cap) are not asserted; "
          "those that do not need it (dips, the memory controller, clock event reasons, "
          "temperature) still are (give --gpu-name MODEL or --power-limit W)",
          who, s.info.name.empty() ? std::string("an unnamed GPU") : "\"" + s.info.name + "\""));
    else if (known(d.default_limit_w) && !d.default_limit_known)
      lim.push_back(fmt::format(
          "{}: default power limit unknown: efficiency is measured against the enforced limit, "
          "and a lowered cap cannot be seen",
          who));
    if (s.size() >= 2 && steady_samples[g] > 0 &&
        steady_samples[g] < static_cast<size_t>(cfg.min_samples))
      lim.push_back(fmt::format("{}: only {} samples of steady work: too few to judge", who,
                                steady_samples[g]));
    if (s.lost_at_s)
      lim.push_back(fmt::format("{} fell off the bus (GPU lost) at {}: nothing after it", who,
                                dur(*s.lost_at_s)));
    if (!out.gpus[g].verdict && s.size() >= 2 &&
        steady_samples[g] >= static_cast<size_t>(cfg.min_samples))
      lim.push_back(
          s.has(Field::kPower) && !known(d.default_limit_w) && !ratio_known
              ? fmt::format("{}: busy, but with no power limit its power draw cannot say how hard "
                            "it worked: give --gpu-name MODEL or --power-limit W",
                            who)
          : !s.has(Field::kPower) && !s.has(Field::kGpmSmUtil)
              ? fmt::format("{}: busy, but the input has neither power nor SM activity to tell "
                            "real work from busy-but-idle",
                            who)
              : fmt::format("{}: busy, but for most of its work nothing in the input tells real "
                            "work from busy-but-idle",
                            who));
  }
  {
    double worst = 0;
    for (const auto& d : ctx.gpus) worst = std::max(worst, d.interval_s);
    if (worst > 2)
      lim.push_back(
          fmt::format("samples are {:.0f} s apart: duty cycles shorter than about {:.0f} s "
                      "are averaged away",
                      worst, 2 * worst));
  }
  return out;
}

}  // namespace gpudoctor
