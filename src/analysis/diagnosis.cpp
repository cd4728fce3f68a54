#include "analysis/diagnosis.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/data_quality.hpp"
#include "analysis/detectors/detector.hpp"
#include "analysis/prepare.hpp"
#include "analysis/trace_findings.hpp"
#include "analysis/verdict.hpp"
#include "analysis/workload.hpp"
#include "core/clock_reasons.hpp"
#include "core/duration.hpp"
#include "core/parallel.hpp"

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
std::optional<Candidate> no_cause_check(const Context&, size_t, const WindowFeatures& w) {
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

std::string dur(double s) {
  return human_duration(s);
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

// A window judged: the cause its detector found, how sure, and the GPU time it covers and lost.
// What the detector said besides (Told) is kept apart, at the same place in Judgement::told: the
// findings alone read it, and let each window's go once its finding is made (a week of windows'
// evidence is megabytes).
struct Judged {
  size_t gpu = 0;
  const Window* w = nullptr;
  Cause cause = Cause::kHealthy;
  double confidence = 0.5;
  const char* variant = "";  // Candidate::variant
  std::optional<double> lost_h;
  double hours = 0;  // GPU hours the window covers
};
struct Told {
  Evidence evidence;
  std::vector<Alternative> alternatives;
};

// GPU seconds sample i (its share of the time dt) of a window lost (nullopt: efficiency unknown).
std::optional<double> sample_lost_s(const Context& ctx, size_t g, const Window& w, size_t i,
                                    double dt) {
  const GpuData& d = ctx.gpus[g];
  if (w.idle) return dt;
  const double e = d.efficiency(i);
  if (!known(e)) return std::nullopt;
  return dt * std::max(0.0, 1 - e / ctx.cfg.reference_efficiency);
}

// GPU hours a window covers, counted as the observed time is (each sample's dt, gaps capped), so
// that shares of the GPU time add up to at most one; and of them, those lost (nullopt: no
// sample's efficiency known).
struct WindowHours {
  double hours = 0;
  std::optional<double> lost;
};
double window_hours(const Context& ctx, size_t g, const Window& w) {
  double s = 0;
  ctx.gpus[g].each_dt(w.i0, w.i1, [&](size_t, double, double dt) { s += dt; });
  return s / 3600;
}
WindowHours window_time(const Context& ctx, size_t g, const Window& w) {
  double s = 0, lost = 0;
  bool any = false;
  ctx.gpus[g].each_dt(w.i0, w.i1, [&](size_t i, double, double dt) {
    s += dt;
    if (const auto l = sample_lost_s(ctx, g, w, i, dt)) lost += *l, any = true;
  });
  return {s / 3600, any ? std::optional<double>(lost / 3600) : std::nullopt};
}

// Duration-weighted mean of numeric evidence; strings and GPU ids take the most common value.
// (told: each part's, at its place among the judged windows from `first`.)
nlohmann::ordered_json merge_evidence(const std::vector<const Judged*>& parts,
                                      const std::vector<Told>& told, const Judged* first) {
  struct Num {
    double sum = 0, weight = 0;
  };
  std::vector<std::string> order;
  std::map<std::string, Num> nums;
  std::map<std::string, std::map<std::string, double>> modes;
  std::map<std::string, nlohmann::ordered_json> mode_values;
  for (const Judged* j : parts) {
    const double wgt = std::max(1e-9, j->w->t1 - j->w->t0);
    const Evidence& evidence = told[static_cast<size_t>(j - first)].evidence;
    for (const Evidence::Entry& e : evidence.entries()) {
      const std::string k = e.key;
      const nlohmann::ordered_json v = evidence.json(e);
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

// What a GPU's figures read of its steady windows' features: their means weighted by the windows'
// lengths, summed as the windows are judged (their features are not kept), block by block and
// the blocks in order (SteadyFigures::add), so the same sums however many threads judge them.
struct SteadyFigures {
  struct Acc {
    double sum = 0, w = 0;
    void add(double v, double wt) {
      if (known(v)) sum += v * wt, w += wt;
    }
    // The next block's sums after this one's.
    void add(const Acc& o) {
      if (w == 0 && sum == 0)
        *this = o;
      else
        sum += o.sum, w += o.w;
    }
    double get() const { return w > 0 ? sum / w : kNaN; }
  };
  Acc power, pr, util, sm, tensor, dram, memu, eff, clock, tmean, rx, tx, nvl, busy, period;
  double tmax = kNaN;
  std::array<Acc, 16> reasons{};
  bool has_reasons = false;

  void add(const Features& f, double wt) {
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
  void add(const SteadyFigures& o) {
    power.add(o.power), pr.add(o.pr), util.add(o.util), sm.add(o.sm), tensor.add(o.tensor);
    dram.add(o.dram), memu.add(o.memu), eff.add(o.eff), clock.add(o.clock), tmean.add(o.tmean);
    rx.add(o.rx), tx.add(o.tx), nvl.add(o.nvl), busy.add(o.busy), period.add(o.period);
    if (known(o.tmax) && !(tmax >= o.tmax)) tmax = o.tmax;
    for (size_t b = 0; b < 16; ++b) reasons[b].add(o.reasons[b]);
    has_reasons = has_reasons || o.has_reasons;
  }
};

nlohmann::ordered_json gpu_metrics(const Context& ctx, size_t g,
                                   const std::vector<const Judged*>& steady,
                                   const SteadyFigures& fig) {
  const GpuData& d = ctx.gpus[g];
  const auto& cfg = ctx.cfg;
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  double observed = 0, steady_s = 0;
  d.each_dt(0, d.s->size(), [&](size_t, double, double dt) { observed += dt; });
  for (const Judged* j : steady) steady_s += j->w->t1 - j->w->t0;
  m["samples"] = d.s->size();
  m["interval_s"] = round_to(d.interval_s, 3);
  m["observed_s"] = round_to(observed, 1);
  m["steady_s"] = round_to(steady_s, 1);
  if (steady.empty()) return m;
  const auto& [power, pr, util, sm, tensor, dram, memu, eff, clock, tmean, rx, tx, nvl, busy,
               period, tmax, reasons, has_reasons] = fig;
  // Busy but idle: share of steady samples with util >= busy and power < low_power_ratio.
  double bi_n = 0, bi = 0;
  const ColumnView u = d.util;
  const auto& pr_of = d.power_ratio;
  // Memory churn: the largest change of memory used per second, as a share of the total.
  double churn = kNaN;
  const auto mem = d.col(Field::kMemUsed);
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

// Leaves out the samples of a GPU the data-quality scan marked (time going back, frozen rows), so
// that every series the detectors read runs forward over live readings.
void drop_marked(GpuSeries& g, const std::vector<uint8_t>& drop) {
  std::vector<size_t> keep;
  for (size_t i = 0; i < g.size(); ++i)
    if (!drop[i]) keep.push_back(i);
  keep_rows(g, keep);
}

// The input as the detectors read it: the rows the quality scan marked left out, in a copy of the
// GPUs that had any (the others read as they are); `said` tells what was changed and what the
// detectors read in place of a missing reading (the first limitations).
struct Cleaned {
  std::vector<std::optional<GpuSeries>> series;  // per GPU: its rows left out, or nullopt (none)
  std::vector<std::string> said;
  // GPU g's series as the detectors read it.
  const GpuSeries& of(const Recording& input, size_t g) const {
    return series[g] ? *series[g] : input.gpus[g];
  }
};
Cleaned clean_input(const Recording& input, const QualityScan& quality) {
  Cleaned out;
  out.series.resize(input.gpus.size());
  if (quality.any_drop)
    for (size_t g = 0; g < input.gpus.size(); ++g)
      if (!quality.drop[g].empty()) {
        out.series[g].emplace(input.gpus[g]);
        drop_marked(*out.series[g], quality.drop[g]);
      }
  // A log with only the instantaneous power reading (DCGM's power_usage_instant) has power all
  // the same: the diagnosis reads it as the power draw (power_draw).
  const bool instant_power = std::any_of(
      input.gpus.begin(), input.gpus.end(),
      [](const GpuSeries& s) { return !s.has(Field::kPower) && s.has(Field::kPowerInstant); });
  if (instant_power)
    out.said.push_back(
        "power draw from the instantaneous reading (the input has no averaged power): noisier, "
        "so power-based figures are less certain");
  for (const auto& issue : quality.issues) {
    if (issue.kind == "time_backwards")
      out.said.push_back(
          fmt::format("GPU {}: {} sample(s) whose time did not move forward were left out",
                      issue.gpu, issue.samples));
    else if (issue.kind == "frozen")
      out.said.push_back(fmt::format("GPU {}: {} frozen rows from {} ({}) were left out", issue.gpu,
                                     issue.samples, human_duration(issue.start_s), issue.detail));
    else if (issue.kind == "interleaved")
      out.said.push_back(fmt::format("GPU {}: {}", issue.gpu, issue.detail));
  }
  return out;
}

// A run of one GPU's windows, [k0, k1) in its list: the share of the windows' steps (features,
// judging) one thread takes at a time, so that a lone GPU's thousands of windows are spread too.
struct WindowBlock {
  size_t g, k0, k1;
};
std::vector<WindowBlock> window_blocks(const Context& ctx) {
  constexpr size_t kWindows = 512;
  std::vector<WindowBlock> blocks;
  for (size_t g = 0; g < ctx.gpus.size(); ++g)
    for (size_t k = 0, n = ctx.gpus[g].windows.size(); k < n; k += kWindows)
      blocks.push_back({g, k, std::min(n, k + kWindows)});
  return blocks;
}

// Each GPU's derived series, phases and windows, and what other GPUs' detectors read of it (its
// peer windows), before any detector runs; each GPU on its own (from its power limit, made
// already). A window's features are made where it is judged (judge_windows).
void prepare_gpus(Context& ctx, const Cleaned& cleaned, std::vector<PowerLimitEvidence>& limits) {
  ctx.gpus.resize(ctx.rec.gpus.size());
  parallel_for(ctx.gpus.size(), 0, [&](size_t g) {
    ctx.gpus[g] = prepare(cleaned.of(ctx.rec, g), ctx.cfg, std::move(limits[g]));
    segment(ctx.gpus[g], ctx.cfg);
    // What the other GPUs' windows read of this one (a lone GPU has no peers to read it).
    if (ctx.gpus.size() > 1) {
      running_sums(ctx.gpus[g]);
      ctx.make_peer_windows(g);
    }
  });
}

// Every GPU's observed time, the denominator of a finding's share of the run.
double observed_hours(const Context& ctx) {
  double observed_h = 0;
  for (const auto& d : ctx.gpus)
    d.each_dt(0, d.s->size(), [&](size_t, double, double dt) { observed_h += dt / 3600; });
  return observed_h;
}

// What judging the windows gave: each judged window, in GPU then window order, and per GPU and for
// the run where the time went.
struct Judgement {
  std::vector<Judged> judged;
  std::vector<Told> told;              // each judged window's, at its place
  std::vector<SteadyFigures> figures;  // per GPU: what its steady judged windows' features say
  std::vector<size_t> steady_samples;  // per GPU: samples in steady windows
  std::vector<Tally> per_gpu;
  Tally run;
};

// Each window judged by the first detector that fits, in the cause table's order. A GPU with
// fewer than min_samples of steady work has only its idle windows judged.
Judgement judge_windows(const Context& ctx) {
  const auto& cfg = ctx.cfg;
  Judgement jd;
  jd.steady_samples.assign(ctx.gpus.size(), 0);
  jd.per_gpu.resize(ctx.gpus.size());
  for (size_t g = 0; g < ctx.gpus.size(); ++g)
    for (const auto& w : ctx.gpus[g].windows)
      if (!w.idle) jd.steady_samples[g] += w.i1 - w.i0;
  auto judged_at_all = [&](size_t g, const Window& w) {
    return w.idle || jd.steady_samples[g] >= static_cast<size_t>(cfg.min_samples);
  };
  // Each block of windows on its own (the detectors read the context, never change it), into
  // its windows' places in GPU and window order (one place per window judged at all: a window
  // no detector explains leaves its place empty, taken out after).
  const std::vector<WindowBlock> blocks = window_blocks(ctx);
  std::vector<size_t> first_of(blocks.size() + 1, 0);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const auto [g, k0, k1] = blocks[b];
    first_of[b + 1] = first_of[b];
    for (size_t k = k0; k < k1; ++k) first_of[b + 1] += judged_at_all(g, ctx.gpus[g].windows[k]);
  }
  jd.judged.resize(first_of.back());
  jd.told.resize(first_of.back());
  // Each window's features made here, read by the detectors and summed for its GPU's figures
  // (those of its steady windows judged) per block, then the blocks in order.
  std::vector<SteadyFigures> block_figures(blocks.size());
  parallel_for(blocks.size(), 0, [&](size_t b) {
    const auto [g, k0, k1] = blocks[b];
    size_t at = first_of[b];
    WindowFeatures wf;
    for (size_t k = k0; k < k1; ++k) {
      const Window& w = ctx.gpus[g].windows[k];
      if (!judged_at_all(g, w)) continue;
      static_cast<Window&>(wf) = w;
      wf.k = k;
      wf.f = ctx.features(g, w.i0, w.i1);
      const size_t place = at++;
      for (const Detector* det : kDetectors) {
        auto c = det->check(ctx, g, wf);
        if (!c) continue;
        c->evidence.trim();
        const WindowHours h = window_time(ctx, g, w);
        jd.judged[place] = {g, &w, det->cause, c->confidence, c->variant, h.lost, h.hours};
        jd.told[place] = {std::move(c->evidence), std::move(c->alternatives)};
        if (!w.idle) block_figures[b].add(wf.f, w.t1 - w.t0);
        break;
      }
    }
  });
  size_t kept = 0;
  for (size_t i = 0; i < jd.judged.size(); ++i) {
    if (jd.judged[i].w == nullptr) continue;
    if (kept != i) jd.judged[kept] = jd.judged[i], jd.told[kept] = std::move(jd.told[i]);
    ++kept;
  }
  jd.judged.resize(kept);
  jd.told.resize(kept);
  jd.figures.resize(ctx.gpus.size());
  for (size_t b = 0; b < blocks.size(); ++b) jd.figures[blocks[b].g].add(block_figures[b]);
  // (Summed here, window after window, as one loop would: the same hours to the last bit.)
  for (size_t g = 0; g < ctx.gpus.size(); ++g)
    for (const auto& w : ctx.gpus[g].windows)
      if (judged_at_all(g, w)) jd.per_gpu[g].windows_h += window_hours(ctx, g, w);
  // Per GPU and for the run, per cause: lost hours and covered hours (for verdicts).
  for (const auto& j : jd.judged) {
    jd.per_gpu[j.gpu].judged_h += j.hours;
    jd.per_gpu[j.gpu].add(j.cause, j.lost_h.value_or(0), j.hours);
    jd.run.add(j.cause, j.lost_h.value_or(0), j.hours);
  }
  for (const auto& t : jd.per_gpu) jd.run.judged_h += t.judged_h, jd.run.windows_h += t.windows_h;
  return jd;
}

// Two variants the same (literals: most often the same one).
bool same_variant(const char* a, const char* b) {
  return a == b || std::strcmp(a, b) == 0;
}

// Per GPU: consecutive windows with the same cause (and variant) become one span.
struct Span {
  size_t gpu;
  Cause cause;
  const char* variant;
  double t0, t1;
  std::vector<const Judged*> parts;
};
// Across GPUs: spans of the same cause that overlap in time become one finding.
struct Group {
  Cause cause;
  const char* variant;
  double t0, t1;
  std::vector<const Span*> spans;
};

// One finding from a group of spans: its GPUs, owners, confidence, evidence, GPU time lost,
// severity (critical needs confidence), share of the run, summary, alternatives and fixes.
Finding finding_of(const Context& ctx, const Group& gr, const std::vector<Tally>& per_gpu,
                   double observed_h, const std::vector<Told>& told, const Judged* first) {
  const auto& cfg = ctx.cfg;
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
      conf += j->confidence * j->hours;
      gpu_hours[s->gpu] += j->hours;
    }
  }
  for (const auto& [g, h] : gpu_hours)
    if (per_gpu[g].judged_h > 0) max_share = std::max(max_share, h / per_gpu[g].judged_h);
  f.gpus.assign(gpus.begin(), gpus.end());
  for (const Span* s : gr.spans)
    for (const auto& o : ctx.gpus[s->gpu].s->owners)
      if (o.first_s <= s->t1 && s->t0 <= o.last_s &&
          std::find(f.owners.begin(), f.owners.end(), owner_label(o.owner)) == f.owners.end())
        f.owners.push_back(owner_label(o.owner));
  f.confidence = hours > 0 ? round_to(conf / hours, 2) : 0;
  f.evidence = merge_evidence(parts, told, first);
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
      for (const auto& a : told[static_cast<size_t>(j - first)].alternatives) {
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
  return f;
}

// The findings of a run, the most severe first (then the most GPU time lost). told: what the
// judged windows' detectors said (Judgement::told), let go window by window as it is read.
std::vector<Finding> findings_of(const Context& ctx, const Judgement& jd, std::vector<Told> told,
                                 double observed_h) {
  const Judged* first = jd.judged.data();
  auto let_go = [&](const Span& s) {
    for (const Judged* j : s.parts) told[static_cast<size_t>(j - first)] = Told{};
  };
  std::vector<Span> spans;
  for (const auto& j : jd.judged) {
    if (!spans.empty() && spans.back().gpu == j.gpu && spans.back().cause == j.cause &&
        same_variant(spans.back().variant, j.variant)) {
      spans.back().t1 = j.w->t1;
      spans.back().parts.push_back(&j);
    } else {
      spans.push_back({j.gpu, j.cause, j.variant, j.w->t0, j.w->t1, {&j}});
    }
  }
  std::vector<Group> groups;
  for (const auto& s : spans) {
    if (s.cause == Cause::kHealthy) {
      let_go(s);
      continue;
    }
    Group* into = nullptr;
    for (auto& gr : groups)
      if (gr.cause == s.cause && same_variant(gr.variant, s.variant) && s.t0 <= gr.t1 &&
          gr.t0 <= s.t1)
        into = &gr;
    if (!into) {
      groups.push_back({s.cause, s.variant, s.t0, s.t1, {}});
      into = &groups.back();
    }
    into->t0 = std::min(into->t0, s.t0), into->t1 = std::max(into->t1, s.t1);
    into->spans.push_back(&s);
  }

  std::vector<Finding> findings;
  for (const auto& gr : groups) {
    findings.push_back(finding_of(ctx, gr, jd.per_gpu, observed_h, told, first));
    for (const Span* s : gr.spans) let_go(*s);
  }
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    return a.lost_gpu_hours.value_or(0) > b.lost_gpu_hours.value_or(0);
  });
  return findings;
}

// A GPU's judged samples: their time counted (GpuDiagnosis::judged_time) and, where asked, each.
struct JudgedOfGpu {
  GpuDiagnosis::JudgedTime time;
  std::vector<GpuDiagnosis::JudgedSample> each;
};
JudgedOfGpu judged_samples(const Context& ctx, size_t g, const Judgement& jd, JudgedSamples keep) {
  const GpuData& d = ctx.gpus[g];
  JudgedOfGpu out;
  const bool each = keep == JudgedSamples::kEach;
  if (each) {
    size_t samples = 0;
    for (const auto& j : jd.judged)
      if (j.gpu == g) samples += j.w->i1 - j.w->i0;
    out.each.reserve(samples);  // written whole below
    advise_huge_pages(out.each.data(), samples * sizeof(GpuDiagnosis::JudgedSample));
  }
  for (const auto& j : jd.judged) {
    if (j.gpu != g) continue;
    d.each_dt(j.w->i0, j.w->i1, [&](size_t i, double t, double dt) {
      const GpuDiagnosis::JudgedSample s{
          t, dt, j.cause,
          j.cause == Cause::kHealthy ? 0 : sample_lost_s(ctx, g, *j.w, i, dt).value_or(0)};
      out.time.count(s);
      if (each) out.each.push_back(s);
    });
  }
  return out;
}

// One GPU's result: its phases, limits, metrics, GPU time lost and verdict (by the verdict rule);
// not its judged samples (judged_samples, a step of its own beside this one).
GpuDiagnosis gpu_result(const Context& ctx, size_t g, const Judgement& jd) {
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
    auto enf = d.col(Field::kPowerLimitEnforced);
    if (!enf) enf = d.col(Field::kPowerLimit);
    const double e = median_of(enf);
    if (known(e)) gd.enforced_limit_w = round_to(e, 1);
  }
  std::vector<const Judged*> steady;
  double lost = 0, conf = 0, conf_h = 0;
  bool lost_known = false;
  for (const auto& j : jd.judged) {
    if (j.gpu != g) continue;
    if (!j.w->idle) steady.push_back(&j);
    if (j.lost_h) lost += *j.lost_h, lost_known = true;
  }
  gd.metrics = gpu_metrics(ctx, g, steady, jd.figures[g]);
  if (auto it = gd.metrics.find("efficiency"); it != gd.metrics.end())
    gd.efficiency = it->get<double>();
  if (lost_known) gd.lost_gpu_hours = round_to(lost, 3);
  std::optional<Cause> best = verdict_of(jd.per_gpu[g], ctx.cfg);
  gd.verdict = best;
  if (best) {
    for (const auto& j : jd.judged)
      if (j.gpu == g && j.cause == *best) conf += j.confidence * j.hours, conf_h += j.hours;
    gd.confidence = conf_h > 0 ? round_to(conf / conf_h, 2) : 0;
  }
  return gd;
}

// The run's verdict by the same rule over every GPU's judged time; healthy only when every GPU
// that worked could be judged (a GPU busy with nothing to judge it by may be the one with the
// problem).
void judge_run(Diagnosis& out, const Context& ctx, const Judgement& jd, double observed_h) {
  std::optional<Cause> best = verdict_of(jd.run, ctx.cfg);
  bool unjudged_work = false;
  for (size_t g = 0; g < ctx.gpus.size(); ++g)
    unjudged_work =
        unjudged_work ||
        (!out.gpus[g].verdict && jd.steady_samples[g] >= static_cast<size_t>(ctx.cfg.min_samples));
  if (best == Cause::kHealthy && unjudged_work) best.reset();
  out.verdict = best;
  double lost = 0;
  bool lost_known = false;
  for (const auto& g : out.gpus)
    if (g.lost_gpu_hours) lost += *g.lost_gpu_hours, lost_known = true;
  if (lost_known) out.lost_gpu_hours = round_to(lost, 3);
  out.headline = headline(out, jd.run.hours_of(Cause::kIdle), observed_h);
}

// What this input could not show (after what cleaning it changed), and where each GPU's limit came
// from when the input did not simply state it (in the input notes).
void say_limits(Diagnosis& out, const Context& ctx, const Judgement& jd,
                std::vector<std::string> cleaning) {
  const auto& cfg = ctx.cfg;
  // (Each GPU's series as the detectors read it.)
  auto any_gpu = [&](auto&& f) {
    return std::any_of(ctx.gpus.begin(), ctx.gpus.end(), [&](const GpuData& d) { return f(*d.s); });
  };
  auto any_has = [&](Field f) { return any_gpu([&](const GpuSeries& s) { return s.has(f); }); };
  auto& lim = out.limitations;
  for (auto& f : cleaning) lim.push_back(std::move(f));
  if (ctx.gpus.empty() || out.duration_s <= 0 ||
      !any_gpu([](const GpuSeries& s) { return s.size() >= 2; }))
    lim.push_back("fewer than two samples per GPU: nothing over time can be judged");
  if (!any_gpu([](const GpuSeries& s) { return bool(power_draw(s)); }))
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
  if (!any_gpu([](const GpuSeries& s) { return s.processes_recorded || !s.processes.empty(); }))
    lim.push_back(
        "no process list in this input: contention (several processes on one GPU) "
        "cannot be checked");
  if (ctx.gpus.size() > 1 && !any_has(Field::kPcieTx) && !any_has(Field::kGpmPcieTx) &&
      !any_has(Field::kGpmNvlinkTx))
    lim.push_back(
        "no PCIe or NVLink throughput: GPUs waiting on each other are recognised only "
        "by how their power differs");
  for (size_t g = 0; g < ctx.gpus.size(); ++g) {
    const GpuData& d = ctx.gpus[g];
    const auto& s = *d.s;
    const std::string who = fmt::format("GPU {}", s.info.index);
    if (const std::string note = limit_note(d); !note.empty())
      out.input_notes.push_back(fmt::format("{}: {}", who, note));
    if (!known(d.default_limit_w) && !d.power_ratio_known && d.power)
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
    if (s.size() >= 2 && jd.steady_samples[g] > 0 &&
        jd.steady_samples[g] < static_cast<size_t>(cfg.min_samples))
      lim.push_back(fmt::format("{}: only {} samples of steady work: too few to judge", who,
                                jd.steady_samples[g]));
    if (s.lost_at_s)
      lim.push_back(fmt::format("{} fell off the bus (GPU lost) at {}: nothing after it", who,
                                dur(*s.lost_at_s)));
    if (!out.gpus[g].verdict && s.size() >= 2 &&
        jd.steady_samples[g] >= static_cast<size_t>(cfg.min_samples))
      lim.push_back(
          d.power && !known(d.default_limit_w) && !d.power_ratio_known
              ? fmt::format("{}: busy, but with no power limit its power draw cannot say how hard "
                            "it worked: give --gpu-name MODEL or --power-limit W",
                            who)
          : !d.power && !s.has(Field::kGpmSmUtil)
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
}

}  // namespace
}  // namespace diag

Diagnosis diagnose(const Recording& input, const DiagnosisConfig& cfg, JudgedSamples judged) {
  using namespace diag;
  // Readers promise times that increase per GPU; a Recording built any other way might not, and
  // a hung logger repeats its last row: those samples are left out (and said). Each GPU's power
  // limit is read beside its scan, from the input as it is; where cleaning changed a GPU's
  // series, again from the cleaned one.
  const size_t gpus = input.gpus.size();
  std::vector<GpuQuality> scans(gpus);
  std::vector<PowerLimitEvidence> limits(gpus);
  parallel_for(2 * gpus, 0, [&](size_t k) {
    const size_t g = k / 2;
    if (k % 2 == 0)
      scans[g] = scan_gpu_quality(input.gpus[g], cfg);
    else
      limits[g] = resolve_power_limit(input.gpus[g], cfg);
  });
  QualityScan quality = combine_quality(std::move(scans));
  Cleaned cleaned = clean_input(input, quality);
  std::vector<std::vector<uint8_t>>().swap(quality.drop);  // (a byte per sample, read)
  if (quality.any_drop)
    parallel_for(gpus, 0, [&](size_t g) {
      if (cleaned.series[g]) limits[g] = resolve_power_limit(*cleaned.series[g], cfg);
    });
  Diagnosis out;
  out.source = input.source;
  out.reference_efficiency = cfg.reference_efficiency;
  out.start_unix_ms = input.start_unix_ms;
  out.input_notes = input.notes;
  Context ctx{input, cfg, {}, detect_workload(input)};
  out.workload = ctx.workload;
  out.data_quality = std::move(quality.issues);
  prepare_gpus(ctx, cleaned, limits);
  for (const auto& d : ctx.gpus)
    if (!d.s->time_s.empty()) out.duration_s = std::max(out.duration_s, d.s->time_s.back());

  Judgement jd = judge_windows(ctx);
  std::vector<Told> told = std::move(jd.told);
  const double observed_h = observed_hours(ctx);
  out.gpu_hours = round_to(observed_h, 3);
  // The findings beside each GPU's result and its judged samples (they read the judged windows,
  // not the samples a GPU's result hands back): a lone GPU's three steps on as many threads.
  const size_t n_gpus = ctx.gpus.size();
  out.gpus.resize(n_gpus);
  std::vector<JudgedOfGpu> samples(n_gpus);
  // A GPU's samples, read by no step below, are let go by the second of its two steps to end:
  // not held beside the judged samples.
  std::vector<std::atomic<int>> steps_done(n_gpus);
  // (The findings first: where both throw, theirs is the error, as when they came first.)
  parallel_for(2 * n_gpus + 1, 0, [&](size_t k) {
    if (k == 0) {
      out.findings = findings_of(ctx, jd, std::move(told), observed_h);
      return;
    }
    const size_t g = (k - 1) / 2;
    if ((k - 1) % 2 == 0)
      out.gpus[g] = gpu_result(ctx, g, jd);
    else
      samples[g] = judged_samples(ctx, g, jd, judged);
    if (steps_done[g].fetch_add(1) == 1) ctx.gpus[g].release_samples();
  });
  for (size_t g = 0; g < n_gpus; ++g) {
    out.gpus[g].judged_time = samples[g].time;
    out.gpus[g].judged = std::move(samples[g].each);
  }
  judge_run(out, ctx, jd, observed_h);
  say_limits(out, ctx, jd, std::move(cleaned.said));
  add_trace_findings(out, input, trace_thresholds(cfg));
  return out;
}

}  // namespace gpudoctor
