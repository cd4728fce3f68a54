// Shared helpers of the detectors: feature computation over a sample range, and the small
// formatting functions their summaries use.
#include <algorithm>
#include <bit>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"
#include "analysis/prepare.hpp"
#include "core/clock_reasons.hpp"

namespace gpudoctor::diag {
namespace {

struct Acc {
  double sum = 0, sq = 0;
  size_t n = 0;
  void add(double v) {
    if (!known(v)) return;
    sum += v, sq += v * v, ++n;
  }
  double mean() const { return n ? sum / static_cast<double>(n) : kNaN; }
  double sd() const {
    if (n < 2) return kNaN;
    const double m = mean();
    return std::sqrt(std::max(0.0, sq / static_cast<double>(n) - m * m));
  }
};

double mean_of(ColumnView c, size_t i0, size_t i1) {
  if (!c) return kNaN;
  Acc a;
  for (size_t i = i0; i < i1; ++i) a.add((*c)[i]);
  return a.mean();
}

// The first clear peak of the autocorrelation of x (after it has crossed zero): the period of a
// duty cycle, in samples. Returns {lag, r} or {0, NaN}.
std::pair<size_t, double> dominant_period(const std::vector<double>& x) {
  const size_t n = x.size();
  if (n < 8) return {0, kNaN};
  double m = 0;
  for (double v : x) m += v;
  m /= static_cast<double>(n);
  double var = 0;
  for (double v : x) var += (v - m) * (v - m);
  if (var <= 1e-9) return {0, kNaN};
  bool crossed = false;
  double prev = 1;
  size_t best = 0;
  double best_r = kNaN;
  for (size_t lag = 1; lag <= n / 2; ++lag) {
    double c = 0;
    for (size_t i = 0; i + lag < n; ++i) c += (x[i] - m) * (x[i + lag] - m);
    const double r = c / var;
    if (r < 0) crossed = true;
    if (crossed && r < prev && prev >= 0.3 && best == 0) {
      best = lag - 1, best_r = prev;
      break;
    }
    prev = r;
  }
  return {best, best_r};
}

}  // namespace

std::pair<size_t, size_t> Context::range(size_t g, double t0, double t1, size_t hint0,
                                         size_t hint1) const {
  const auto& t = gpus[g].s->time_s;
  const size_t n = t.size();
  // The first index whose time is not below x (std::lower_bound's), from the hint when it is it.
  auto first_not_below = [&](double x, size_t from, size_t hint) {
    if (hint >= from && hint <= n && (hint == from || t[hint - 1] < x) &&
        (hint == n || !(t[hint] < x)))
      return hint;
    return static_cast<size_t>(std::lower_bound(t.begin() + static_cast<long>(from), t.end(), x) -
                               t.begin());
  };
  const size_t a = first_not_below(t0, 0, hint0);
  return {a, first_not_below(t1, a, hint1)};
}

PrefixSums::Sums GpuData::sums_before(size_t i) const {
  const size_t k = i / PrefixSums::kStride;
  PrefixSums::Sums s = sums.marks[k];
  for (size_t j = k * PrefixSums::kStride; j < i; ++j) add_sample(s, j);
  return s;
}

PeerFeatures Context::peer_features(size_t g, size_t i0, size_t i1) const {
  const GpuData& d = gpus[g];
  PeerFeatures f;
  f.n = i1 - i0;
  if (f.n == 0) return f;
  const PrefixSums::Sums a = d.sums_before(i0), b = d.sums_before(i1);
  auto mean = [&](double sum0, double sum1, uint32_t n0, uint32_t n1) {
    const uint32_t k = n1 - n0;
    return k ? (sum1 - sum0) / static_cast<double>(k) : kNaN;
  };
  if (d.util) f.util = mean(a.util, b.util, a.util_n, b.util_n);
  if (!d.power_ratio.empty()) {
    f.power_ratio = mean(a.pr, b.pr, a.pr_n, b.pr_n);
    const uint32_t k = b.pr_n - a.pr_n;
    if (k >= 2) {
      const double sq = (b.pr_sq - a.pr_sq) / static_cast<double>(k);
      f.power_sd_ratio = std::sqrt(std::max(0.0, sq - f.power_ratio * f.power_ratio));
    }
  }
  f.efficiency = mean(a.eff, b.eff, a.eff_n, b.eff_n);
  return f;
}

void Context::make_peer_windows(size_t g) {
  GpuData& d = gpus[g];
  d.peer_windows.clear();
  d.peer_windows.reserve(d.windows.size());
  for (const Window& w : d.windows) {
    PeerWindow p;
    p.t0 = w.t0, p.t1 = w.t1;
    std::tie(p.i0, p.i1) = range(g, w.t0, w.t1, w.i0, w.i1);
    p.active = active_samples(g, p.i0, p.i1);
    p.f = peer_features(g, p.i0, p.i1);
    d.peer_windows.push_back(p);
  }
}

PeerWindow Context::peer_over(size_t h, const Window& w, size_t k) const {
  const auto& pw = gpus[h].peer_windows;
  // (range() is a function of the times alone: over the same times, the same samples.)
  if (k < pw.size() && pw[k].t0 == w.t0 && pw[k].t1 == w.t1) return pw[k];
  PeerWindow p;
  p.t0 = w.t0, p.t1 = w.t1;
  std::tie(p.i0, p.i1) = range(h, w.t0, w.t1, w.i0, w.i1);
  p.active = active_samples(h, p.i0, p.i1);
  auto same = [&](size_t j) { return j < pw.size() && pw[j].i0 == p.i0 && pw[j].i1 == p.i1; };
  size_t j = k;
  if (!same(j))
    j = static_cast<size_t>(
        std::lower_bound(pw.begin(), pw.end(), p.i0,
                         [](const PeerWindow& a, size_t i) { return a.i0 < i; }) -
        pw.begin());
  p.f = same(j) ? pw[j].f : peer_features(h, p.i0, p.i1);
  return p;
}

size_t Context::active_samples(size_t g, size_t i0, size_t i1) const {
  return gpus[g].active_before(i1) - gpus[g].active_before(i0);
}

Features Context::features(size_t g, size_t i0, size_t i1) const {
  const GpuData& d = gpus[g];
  Features f;
  f.n = i1 - i0;
  if (f.n == 0) return f;
  const ColumnView util = d.util;
  if (util) {
    Acc a;
    size_t dips = 0, busy = 0, flat = 0, n = 0;
    for (size_t i = i0; i < i1; ++i) {
      const double u = (*util)[i];
      if (!known(u)) continue;
      a.add(u), ++n;
      if (u < cfg.dip_util_pct) ++dips;
      if (u >= cfg.busy_util_pct) ++busy;
      if (u >= cfg.flat_util_pct) ++flat;
    }
    f.util = a.mean();
    if (n) {
      f.dip_fraction = static_cast<double>(dips) / static_cast<double>(n);
      f.busy_fraction = static_cast<double>(busy) / static_cast<double>(n);
      f.flat_fraction = static_cast<double>(flat) / static_cast<double>(n);
    }
  }
  if (const ColumnView p = d.power) f.power_w = mean_of(p, i0, i1);
  {
    // The power ratio and the efficiency (which reads it) in one pass: each sample's ratio read
    // once.
    Acc pr, eff;
    for (size_t i = i0; i < i1; ++i) {
      const double r = d.power_ratio[i];
      pr.add(r);
      eff.add(d.efficiency_with(r, i));
    }
    if (!d.power_ratio.empty()) {
      f.power_ratio = pr.mean();
      f.power_sd_ratio = pr.sd();
    }
    f.efficiency = eff.mean();
  }
  auto enf = d.col(Field::kPowerLimitEnforced);
  if (!enf) enf = d.col(Field::kPowerLimit);
  if (const double e = median_of(enf, i0, i1); known(e)) {
    f.enforced_w = e;
    if (known(f.power_w) && f.enforced_w > 0) f.at_cap = f.power_w / f.enforced_w;
  }
  f.sm = mean_of(d.col(Field::kGpmSmUtil), i0, i1);
  f.tensor = mean_of(d.col(Field::kGpmTensorAny), i0, i1);
  f.dram = mean_of(d.col(Field::kGpmDramBw), i0, i1);
  f.mem_util = mean_of(d.col(Field::kUtilMem), i0, i1);
  if (const auto clk = d.col(Field::kClockSm);
      clk && known(d.clock_max_mhz) && d.clock_max_mhz > 0) {
    Acc a;
    for (size_t i = i0; i < i1; ++i) {
      const bool loaded = !util || !known((*util)[i]) || (*util)[i] >= cfg.busy_util_pct;
      if (loaded) a.add((*clk)[i] / d.clock_max_mhz);
    }
    f.clock_ratio = a.mean();
    if (const auto app = d.col(Field::kClockAppSm))
      f.app_clock_ratio = mean_of(app, i0, i1) / d.clock_max_mhz;
  }
  if (const auto t = d.col(Field::kTemp)) {
    Acc a;
    double mx = kNaN;
    for (size_t i = i0; i < i1; ++i) {
      a.add((*t)[i]);
      if (known((*t)[i]) && !(mx >= (*t)[i])) mx = (*t)[i];
    }
    f.temp_mean = a.mean(), f.temp_max = mx;
  }
  f.pcie_tx = mean_of(d.col(Field::kPcieTx), i0, i1);
  f.pcie_rx = mean_of(d.col(Field::kPcieRx), i0, i1);
  if (!known(f.pcie_tx)) f.pcie_tx = mean_of(d.col(Field::kGpmPcieTx), i0, i1);
  if (!known(f.pcie_rx)) f.pcie_rx = mean_of(d.col(Field::kGpmPcieRx), i0, i1);
  {
    const double rx = mean_of(d.col(Field::kGpmNvlinkRx), i0, i1);
    const double tx = mean_of(d.col(Field::kGpmNvlinkTx), i0, i1);
    if (known(rx) || known(tx)) f.nvlink = (known(rx) ? rx : 0) + (known(tx) ? tx : 0);
  }
  if (known(d.mem_total_mib) && d.mem_total_mib > 0)
    f.mem_used_ratio = mean_of(d.col(Field::kMemUsed), i0, i1) / d.mem_total_mib;
  if (const auto r = d.col(Field::kClockEventReasons)) {
    size_t n = 0;
    std::array<size_t, 16> count{};
    for (size_t i = i0; i < i1; ++i) {
      const double v = (*r)[i];
      if (!known(v) || v < 0 || v > 1e15) continue;
      ++n;
      for (auto mask = static_cast<uint64_t>(v) & 0xffff; mask != 0; mask &= mask - 1)
        ++count[static_cast<size_t>(std::countr_zero(mask))];
    }
    if (n) {
      f.has_reasons = true;
      for (size_t b = 0; b < 16; ++b)
        f.reason_fraction[b] = static_cast<double>(count[b]) / static_cast<double>(n);
    }
  }
  // Processes: those present for most of the window (spans are per pid).
  if (!d.s->processes.empty() || d.s->processes_recorded) {
    const double t0 = d.s->time_s[i0], t1 = d.s->time_s[i1 - 1];
    const double len = std::max(t1 - t0, d.interval_s);
    int count = 0;
    for (const auto& p : d.s->processes) {
      const double overlap = std::min(p.last_s, t1) - std::max(p.first_s, t0);
      if (overlap + d.interval_s >= cfg.contention_overlap * len) ++count;
    }
    f.processes = count;
  }
  if (!d.s->owners.empty()) {
    const double t0 = d.s->time_s[i0], t1 = d.s->time_s[i1 - 1];
    const double len = std::max(t1 - t0, d.interval_s);
    double held = 0;  // owners' spans may overlap: the longest one decides
    for (const auto& o : d.s->owners)
      held = std::max(held, std::min(o.last_s, t1) - std::max(o.first_s, t0) + d.interval_s);
    f.owned = held >= 0.5 * len;
  }
  // The host over the same time.
  if (const auto& host = rec.host; host && !host->samples.empty()) {
    const double t0 = d.s->time_s[i0], t1 = d.s->time_s[i1 - 1] + d.interval_s;
    Acc cpu, io, job, procs;
    for (const auto& h : host->samples) {
      if (h.time_s < t0 || h.time_s >= t1) continue;
      cpu.add(h.cpu_pct), io.add(h.iowait_pct), job.add(h.job_cpu_cores);
      procs.add(h.job_processes);
    }
    f.host_cpu_pct = cpu.mean(), f.iowait_pct = io.mean(), f.job_cpu_cores = job.mean();
    f.job_processes = procs.mean();
    if (host->cores > 0) f.host_cores = host->cores;
  }
  // Period of the duty cycle: util where it varies, else power.
  {
    ColumnView src = util;
    if (!src || !(f.dip_fraction > 0)) src = d.power;
    if (src) {
      std::vector<double> x;
      x.reserve(f.n);
      for (size_t i = i0; i < i1; ++i)
        if (known((*src)[i])) x.push_back((*src)[i]);
      const auto [lag, r] = dominant_period(x);
      if (lag > 0) f.period_s = static_cast<double>(lag) * d.interval_s, f.period_strength = r;
    }
  }
  return f;
}

double round_to(double v, int digits) {
  if (!known(v)) return v;
  const double p = std::pow(10.0, digits);
  return std::round(v * p) / p;
}

double ev(const Finding& f, const char* key) {
  const auto it = f.evidence.find(key);
  if (it == f.evidence.end() || !it->is_number()) return kNaN;
  return it->get<double>();
}

std::string gpu_list(const std::vector<unsigned>& gpus) {
  if (gpus.empty()) return "no GPU";
  if (gpus.size() == 1) return fmt::format("GPU {}", gpus[0]);
  bool contiguous = true;
  for (size_t i = 1; i < gpus.size(); ++i) contiguous = contiguous && gpus[i] == gpus[i - 1] + 1;
  if (contiguous) return fmt::format("GPUs {}-{}", gpus.front(), gpus.back());
  return fmt::format("GPUs {}", fmt::join(gpus, ", "));
}

std::string pct(double ratio) {
  if (!known(ratio)) return "?";
  return fmt::format("{:.0f} %", ratio * 100);
}

}  // namespace gpudoctor::diag
