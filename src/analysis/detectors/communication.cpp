// communication_wait: GPUs waiting for each other in collectives. NCCL kernels spin while they
// wait, so GPU-Util stays high while power is low. Told apart from launch overhead by what the
// other GPUs do over the same time:
//   - straggler: one GPU at high power while the others, busy, draw little (they wait for it);
//   - see-saw: two GPUs' power in anti-phase (they take turns being the slow one);
//   - peer traffic: NVLink / PCIe transmit while busy but idle;
//   - otherwise, several GPUs busy but idle together with no traffic data at all, GPU-Util held
//     flat at 100 % (a resident NCCL kernel spinning; launch gaps would make it jitter below):
//     probably waiting on each other, said with low confidence and launch overhead named as the
//     alternative (and held-down clocks where the input has no SM clock). Jittering GPU-Util is
//     left to launch overhead (which names this cause as its alternative).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"

namespace gpudoctor::diag {
namespace {

struct Peer {
  size_t g;
  PeerFeatures f;
};

// Pearson correlation of two GPUs' power over [t0, t1), pairing each sample of a with the
// nearest-in-time sample of b.
double power_correlation(const Context& ctx, size_t a, size_t b, double t0, double t1) {
  const auto pa = ctx.gpus[a].power;
  const auto pb = ctx.gpus[b].power;
  if (!pa || !pb) return kNaN;
  const auto [a0, a1] = ctx.range(a, t0, t1);
  const auto [b0, b1] = ctx.range(b, t0, t1);
  if (a1 - a0 < 6 || b1 - b0 < 6) return kNaN;
  const auto& ta = ctx.gpus[a].s->time_s;
  const auto& tb = ctx.gpus[b].s->time_s;
  const double tol = std::max(ctx.gpus[a].interval_s, ctx.gpus[b].interval_s) / 2;
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  size_t n = 0, j = b0;
  for (size_t i = a0; i < a1; ++i) {
    while (j + 1 < b1 && std::abs(tb[j + 1] - ta[i]) <= std::abs(tb[j] - ta[i])) ++j;
    if (std::abs(tb[j] - ta[i]) > tol) continue;
    const double x = (*pa)[i], y = (*pb)[j];
    if (!known(x) || !known(y)) continue;
    sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y, ++n;
  }
  if (n < 6) return kNaN;
  const double dn = static_cast<double>(n);
  const double cov = sxy / dn - (sx / dn) * (sy / dn);
  const double vx = sxx / dn - (sx / dn) * (sx / dn), vy = syy / dn - (sy / dn) * (sy / dn);
  if (vx <= 1e-9 || vy <= 1e-9) return kNaN;
  return cov / std::sqrt(vx * vy);
}

// The median of one figure of the GPUs (a GPU first, then its peers) but one (skip); v, its
// scratch. (In that order: a figure unknown on some GPU makes the order matter.)
double median_of_others(const Peer& self, const std::vector<Peer>& peers, size_t skip,
                        double PeerFeatures::*figure, std::vector<double>& v) {
  v.clear();
  if (self.g != skip) v.push_back(self.f.*figure);
  for (const auto& p : peers)
    if (p.g != skip) v.push_back(p.f.*figure);
  if (v.empty()) return kNaN;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

template <typename F>
bool busy_but_idle(const Context& ctx, const F& f) {
  return f.util >= ctx.cfg.busy_util_pct && f.efficiency < ctx.cfg.low_efficiency;
}

std::optional<Candidate> check(const Context& ctx, size_t g, const WindowFeatures& w) {
  if (w.idle) return std::nullopt;
  const auto& cfg = ctx.cfg;
  const Features& f = w.f;
  // The other GPUs working over the same time. (Where the GPUs were sampled together, each one's
  // window of these times has the index of this one: what it did is read from there.)
  const size_t k = w.k;
  std::vector<Peer> peers;
  peers.reserve(ctx.gpus.size());
  for (size_t h = 0; h < ctx.gpus.size(); ++h) {
    if (h == g) continue;
    const PeerWindow p = ctx.peer_over(h, w, k);
    if (p.i1 - p.i0 < 2 || p.active * 2 < p.i1 - p.i0) continue;
    peers.push_back({h, p.f});
  }
  if (peers.empty()) {
    // One GPU alone: only its own peer traffic can say it waits on others (other nodes).
    const double dram = known(f.dram) ? f.dram : f.mem_util;
    if (!busy_but_idle(ctx, f) || dram >= cfg.memory_bound_dram_pct) return std::nullopt;
    const double traffic = (known(f.nvlink) ? f.nvlink : 0) + (known(f.pcie_tx) ? f.pcie_tx : 0);
    if (!(known(f.nvlink) || known(f.pcie_tx)) || traffic < cfg.peer_traffic_mibs)
      return std::nullopt;
    Candidate c;
    c.confidence = 0.6;
    c.evidence["pattern"] = "peer_traffic";
    c.variant = "peer_traffic";
    c.evidence["peer_traffic_mibs"] = round_to(traffic, 0);
    c.evidence["util_pct"] = round_to(f.util, 1);
    c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
    return c;
  }

  // Straggler: the highest-power GPU well above the median of the others, who are busy but idle.
  {
    size_t top = g;
    double top_pr = f.power_ratio;
    for (const auto& p : peers)
      if (p.f.power_ratio > top_pr || !known(top_pr)) top = p.g, top_pr = p.f.power_ratio;
    // The others: every GPU here but the top one, this one among them. Each median is taken only
    // where the test before it passed (a median of 63 GPUs per window and figure is a fleet's
    // cost).
    const Peer self{g, {f.n, f.util, f.power_ratio, f.power_sd_ratio, f.efficiency}};
    std::vector<double> v;
    v.reserve(peers.size() + 1);
    auto median = [&](double PeerFeatures::*figure) {
      return median_of_others(self, peers, top, figure, v);
    };
    // (The median is no lower than the lowest: where even that is within the gap, and every
    // figure is known, no median is needed to say no.)
    bool all_known = known(f.power_ratio);
    double lowest = f.power_ratio;
    for (const auto& p : peers)
      all_known = all_known && known(p.f.power_ratio), lowest = std::min(lowest, p.f.power_ratio);
    const bool within_gap = all_known && top_pr - lowest < cfg.straggler_power_gap;
    const double m_pr = within_gap ? kNaN : median(&PeerFeatures::power_ratio);
    const bool straggler = known(top_pr) && known(m_pr) && top_pr - m_pr >= cfg.straggler_power_gap;
    const double m_util = straggler ? median(&PeerFeatures::util) : kNaN;
    const double m_eff =
        straggler && m_util >= cfg.busy_util_pct - 10 ? median(&PeerFeatures::efficiency) : kNaN;
    if (straggler && m_util >= cfg.busy_util_pct - 10 && m_eff < cfg.low_efficiency) {
      Candidate c;
      c.confidence = 0.8;
      c.evidence["pattern"] = "straggler";
      c.variant = "straggler";
      c.evidence["straggler_gpu"] = ctx.gpus[top].s->info.index;
      c.evidence["straggler_power_ratio"] = round_to(top_pr, 3);
      c.evidence["others_power_ratio"] = round_to(m_pr, 3);
      c.evidence["others_util_pct"] = round_to(m_util, 1);
      c.evidence["util_pct"] = round_to(f.util, 1);
      c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
      return c;
    }
  }
  // See-saw: power in anti-phase with another GPU, both swinging.
  if (f.power_sd_ratio >= cfg.antiphase_swing_ratio) {
    for (const auto& p : peers) {
      if (!(p.f.power_sd_ratio >= cfg.antiphase_swing_ratio)) continue;
      const double r = power_correlation(ctx, g, p.g, w.t0, w.t1);
      if (r <= cfg.antiphase_correlation) {
        Candidate c;
        c.confidence = 0.8;
        c.evidence["pattern"] = "seesaw";
        c.variant = "seesaw";
        c.evidence["partner_gpu"] = ctx.gpus[p.g].s->info.index;
        c.evidence["power_correlation"] = round_to(r, 2);
        c.evidence["power_swing_ratio"] = round_to(f.power_sd_ratio, 3);
        c.evidence["period_s"] = round_to(f.period_s, 1);
        c.evidence["util_pct"] = round_to(f.util, 1);
        c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
        return c;
      }
    }
  }
  if (!(f.efficiency < cfg.low_efficiency) || !busy_but_idle(ctx, f)) return std::nullopt;

  // DRAM busy says memory bound, a direct measurement; traffic and similarity are indirect.
  const double dram = known(f.dram) ? f.dram : f.mem_util;
  if (dram >= cfg.memory_bound_dram_pct) return std::nullopt;
  const bool traffic_known = known(f.nvlink) || known(f.pcie_tx);
  const double traffic = (known(f.nvlink) ? f.nvlink : 0) + (known(f.pcie_tx) ? f.pcie_tx : 0);
  Candidate c;
  c.evidence["util_pct"] = round_to(f.util, 1);
  c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
  if (traffic_known) {
    if (traffic < cfg.peer_traffic_mibs) return std::nullopt;
    c.confidence = 0.7;
    c.evidence["pattern"] = "peer_traffic";
    c.variant = "peer_traffic";
    c.evidence["peer_traffic_mibs"] = round_to(traffic, 0);
    return c;
  }
  // No traffic data: several GPUs busy but idle together, GPU-Util pinned, most likely wait on
  // each other.
  size_t together = 0;
  for (const auto& p : peers) together += busy_but_idle(ctx, p.f);
  if (together == 0) return std::nullopt;
  if (!(f.flat_fraction >= cfg.flat_fraction)) return std::nullopt;
  c.confidence = 0.5;
  c.evidence["flat_fraction"] = round_to(f.flat_fraction, 3);
  c.alternatives.push_back(
      {Cause::kLaunchOverhead, 0.3,
       "GPU-Util is flat at 100 %, as NCCL kernels spinning on a peer hold it; launch gaps would "
       "make it jitter below. PCIe/NVLink throughput (nvidia-smi dmon -s t, DCGM) or SM activity "
       "(DCGM_FI_PROF_SM_ACTIVE) would tell: peer traffic means communication wait, few active "
       "SMs with no traffic means launch overhead"});
  // Without the SM clock, clocks held low also look like this (low power, GPU-Util pinned).
  if (!ctx.gpus[g].col(Field::kClockSm))
    c.alternatives.push_back(
        {Cause::kClocksLimited, 0.2,
         "the input has no SM clock: locked or slowed clocks also keep power low while GPU-Util "
         "stays at 100 %; clocks.sm against clocks.max.sm (and the clock event reasons) would "
         "tell"});
  c.evidence["pattern"] = "busy_idle_together";
  c.variant = "busy_idle_together";
  c.evidence["gpus_busy_idle_together"] = together + 1;
  return c;
}

std::string describe(const Finding& f) {
  std::string pattern;
  if (const auto it = f.evidence.find("pattern"); it != f.evidence.end() && it->is_string())
    pattern = it->get<std::string>();
  if (pattern == "straggler")
    return fmt::format(
        "{}: GPU {:.0f} is the straggler the others wait for: it draws {} of its limit while "
        "they, GPU-Util {:.0f} %, draw {}",
        gpu_list(f.gpus), ev(f, "straggler_gpu"), pct(ev(f, "straggler_power_ratio")),
        ev(f, "others_util_pct"), pct(ev(f, "others_power_ratio")));
  if (pattern == "seesaw")
    return fmt::format(
        "{} take turns waiting for each other: power swings in anti-phase (correlation {:.2f}){}",
        gpu_list(f.gpus), ev(f, "power_correlation"),
        known(ev(f, "period_s")) ? fmt::format(", every {:.1f} s", ev(f, "period_s")) : "");
  if (pattern == "peer_traffic")
    return fmt::format(
        "{} busy but idle while exchanging {:.0f} MiB/s with peers: GPU-Util {:.0f} %, power {} "
        "of the limit",
        gpu_list(f.gpus), ev(f, "peer_traffic_mibs"), ev(f, "util_pct"), pct(ev(f, "power_ratio")));
  return fmt::format(
      "{} busy but idle together (GPU-Util {:.0f} %, power {} of the limit): most likely waiting "
      "on each other; the input has no PCIe or NVLink traffic to confirm it",
      gpu_list(f.gpus), ev(f, "util_pct"), pct(ev(f, "power_ratio")));
}

}  // namespace

const Detector kCommunicationDetector{Cause::kCommunicationWait, check, describe};

}  // namespace gpudoctor::diag
