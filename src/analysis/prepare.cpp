#include "analysis/prepare.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/power_limit.hpp"
#include "core/clock_reasons.hpp"
#include "core/gpu_models.hpp"

namespace gpudoctor::diag {
namespace {

struct Run {
  bool active;
  size_t i0, i1;  // [i0, i1)
};

}  // namespace

double median_of(ColumnView c, size_t i0, size_t i1) {
  if (!c) return kNaN;
  const auto b = c.begin() + static_cast<long>(i0), e = c.begin() + static_cast<long>(i1);
  const auto first = std::find_if(b, e, [](double x) { return known(x); });
  if (first == e) return kNaN;
  // Rows that hold one value throughout (a limit, a maximum clock, the memory size) are their own
  // median: no copy. Bit for bit, so that 0.0 and -0.0 go the general way.
  if (std::all_of(first, e, [v = *first](double x) { return same_bits(x, v) || !known(x); }))
    return *first;
  std::vector<double> v;
  v.reserve(i1 - i0);
  for (auto it = first; it != e; ++it)
    if (known(*it)) v.push_back(*it);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

double median_of(ColumnView c) {
  return median_of(c, 0, c.size());
}

void running_sums(GpuData& d) {
  const size_t n = d.active.size();
  auto& marks = d.sums.marks;
  marks.assign(n / PrefixSums::kStride + 1, {});
  PrefixSums::Sums run;
  for (size_t i = 0; i < n; ++i) {
    d.add_sample(run, i);
    if ((i + 1) % PrefixSums::kStride == 0) marks[(i + 1) / PrefixSums::kStride] = run;
  }
}

GpuData prepare(const GpuSeries& s, const DiagnosisConfig& cfg) {
  return prepare(s, cfg, resolve_power_limit(s, cfg));
}

GpuData prepare(const GpuSeries& s, const DiagnosisConfig& cfg, PowerLimitEvidence limit) {
  GpuData d;
  d.s = &s;
  const size_t n = s.size();
  if (n > 1) {
    d.interval_s =
        std::max(1e-3, median_by(n - 1, TimeSteps(s.time_s.view(), [](size_t i) { return i; })));
  }

  const auto model = s.info.name.empty() ? std::nullopt : gpu_model_by_name(s.info.name);
  if (limit.default_w > 0) d.default_limit_w = limit.default_w;
  d.default_limit_known = limit.is_default;
  d.limit_source = limit.source;
  d.limit_confidence = limit.confidence;
  d.plateau_w = limit.plateau_w;
  d.cap_levels_w = limit.cap_levels_w;
  d.power_ratio = limit.power_ratio;
  d.power_ratio_known = false;
  if (!d.power_ratio.empty())
    for (size_t i = 0; i < n && !d.power_ratio_known; ++i)
      d.power_ratio_known = known(d.power_ratio[i]);
  d.clock_max_mhz = median_of(s.column(Field::kClockSmMax));
  if (!known(d.clock_max_mhz) && model) d.clock_max_mhz = model->sm_clock_max_mhz;
  d.slowdown_temp_c = median_of(s.column(Field::kTempSlowdown));
  if (!known(d.slowdown_temp_c) && model) d.slowdown_temp_c = model->slowdown_temp_c;
  d.mem_total_mib = median_of(s.column(Field::kMemTotal));
  if (!known(d.mem_total_mib) && model) d.mem_total_mib = model->mem_total_mib;

  d.util = s.column(Field::kUtilGpu);
  if (!d.util) d.util = s.column(Field::kGpmGraphicsUtil);
  const ColumnView util = d.util;
  d.power = power_draw(s);
  const ColumnView power = d.power;
  d.sm = s.column(Field::kGpmSmUtil);
  const ColumnView sm = d.sm;
  const auto pstate = s.column(Field::kPstate);
  const auto reasons = s.column(Field::kClockEventReasons);
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
  if (const ColumnView clock = s.column(Field::kClockSm); reasons && clock) {
    size_t with = 0, idle_set = 0;
    for (size_t i = 0; i < n; ++i) {
      const double r = (*reasons)[i];
      if (known(r) && r >= 0 && r < 1e15)
        ++with, idle_set += (static_cast<uint64_t>(r) & kReasonIdle) != 0;
    }
    // The clocks only for a GPU the reasons call idle (few are): a copy and a sort otherwise.
    if (with >= static_cast<size_t>(cfg.window_samples) && idle_set >= 0.9 * with) {
      std::vector<double> clocks;
      for (const double c : clock)
        if (known(c) && c > 0) clocks.push_back(c);
      if (clocks.size() >= static_cast<size_t>(cfg.window_samples)) {
        std::sort(clocks.begin(), clocks.end());
        driver_idle = clocks[clocks.size() / 2] <= 0.5 * clocks[(clocks.size() - 1) * 99 / 100];
      }
    }
  }
  std::vector<int8_t> act_of(n, -1);
  double last_power = kNaN;  // the latest power reading (a long-format log splits its rows)
  for (size_t i = 0; i < n; ++i) {
    if (power && known((*power)[i])) last_power = (*power)[i];
    const double pr = d.power_ratio[i];
    const double a = sm ? (*sm)[i] / 100 : kNaN;
    int8_t act = -1;
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
    else if (!r.active && t[r.i1 - 1] + d.dt(r.i1 - 1) - t[r.i0] > cfg.pause_max_s)
      kind = "idle";  // too long to be a start, a pause or a shutdown: blamed as idle below
    else if (!r.active)
      kind = k == 0 ? "startup" : (k + 1 == runs.size() ? "shutdown" : "pause");
    d.phases.push_back({kind, t[r.i0], t[r.i1 - 1] + d.dt(r.i1 - 1)});
  }
  // Windows: the steady phases cut into pieces of about window_s; idle stretches long enough to
  // blame as they are.
  const double len = std::max(cfg.window_s, cfg.window_samples * d.interval_s);
  // Each run's pieces (0: not cut into windows), counted first: the windows are large (their
  // features), and a day of them is megabytes that growing by doublings would copy.
  std::vector<size_t> pieces_of(runs.size(), 0);
  size_t most = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    const Run& r = runs[k];
    const Phase& p = d.phases[k];
    const bool blame_idle =
        !r.active && (p.kind == "idle" || p.end_s - p.start_s > cfg.pause_max_s);
    if (!r.active && !blame_idle) continue;
    const double dur = p.end_s - p.start_s;
    pieces_of[k] = std::max<size_t>(1, static_cast<size_t>(std::llround(dur / len)));
    most += std::min(pieces_of[k], r.i1 - r.i0);  // (a piece of no sample makes no window)
  }
  d.windows.reserve(d.windows.size() + most);
  for (size_t k = 0; k < runs.size(); ++k) {
    const Run& r = runs[k];
    const Phase& p = d.phases[k];
    const size_t pieces = pieces_of[k];
    if (pieces == 0) continue;
    const double dur = p.end_s - p.start_s;
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
        w.t1 = t[j - 1] + d.dt(j - 1);
        d.windows.push_back(w);
      }
      i = j;
    }
  }
}

}  // namespace gpudoctor::diag
