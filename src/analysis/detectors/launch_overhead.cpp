// launch_overhead: GPU-Util high yet little real work (low power or low SM activity) and no sign
// of waiting on peers: one tiny kernel after another, the CPU launch-bound. The last detector
// tried: what remains of busy-but-idle windows, but only with positive evidence of little work
// (power below low_power_ratio of the limit, or SM activity below low_sm_pct); a GPU drawing most
// of its power with most SMs active is working, whatever its efficiency figure says.
//
// Launch gaps make GPU-Util jitter below 100 %; several GPUs doing so together could also be
// waiting on each other when the input has no interconnect traffic to tell: the finding then
// names communication wait as its alternative.
#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"

namespace gpudoctor::diag {
namespace {

std::optional<Candidate> check(const Context& ctx, size_t g, const WindowFeatures& w) {
  if (w.idle || !known(w.f.efficiency) || !known(w.f.util)) return std::nullopt;
  const Features& f = w.f;
  const auto& cfg = ctx.cfg;
  if (f.efficiency >= cfg.low_efficiency) return std::nullopt;
  const bool low_power = f.power_ratio < cfg.low_power_ratio;
  const bool low_sm = f.sm < cfg.low_sm_pct;
  if (!low_power && !low_sm) return std::nullopt;
  Candidate c;
  if (known(f.sm))
    c.confidence = low_sm ? 0.8 : 0.5;
  else
    c.confidence = 0.55;
  c.evidence["util_pct"] = round_to(f.util, 1);
  c.evidence["flat_fraction"] = round_to(f.flat_fraction, 3);
  c.evidence["sm_pct"] = round_to(f.sm, 1);
  c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
  c.evidence["dram_pct"] = round_to(f.dram, 1);
  c.evidence["mem_util_pct"] = round_to(f.mem_util, 1);
  c.evidence["efficiency"] = round_to(f.efficiency, 3);
  // Other GPUs working over the same time, and no traffic columns: they could be waiting on
  // each other instead.
  const bool traffic_known = known(f.nvlink) || known(f.pcie_tx);
  size_t peers = 0;
  for (size_t h = 0; h < ctx.gpus.size(); ++h) {
    if (h == g) continue;
    const auto [i0, i1] = ctx.range(h, w.t0, w.t1, w.i0, w.i1);
    if (i1 > i0 && ctx.active_samples(h, i0, i1) * 2 >= i1 - i0) ++peers;
  }
  if (peers > 0 && !traffic_known) {
    c.confidence = std::min(c.confidence, known(f.sm) ? 0.6 : 0.5);
    c.alternatives.push_back(
        {Cause::kCommunicationWait, round_to(1 - c.confidence - 0.1, 2),
         "GPU-Util jitters below 100 % (launch gaps); NCCL kernels spinning on a peer would hold "
         "it flat at 100 %. PCIe/NVLink throughput (nvidia-smi dmon -s t, DCGM) or an NCCL "
         "trace would tell: peers exchanging data while idle is communication wait"});
  }
  // Without the SM clock, clocks held low also look like this (low power, busy).
  if (!ctx.gpus[g].col(Field::kClockSm))
    c.alternatives.push_back(
        {Cause::kClocksLimited, 0.3,
         "the input has no SM clock: locked or slowed clocks also keep power low while busy; "
         "clocks.sm against clocks.max.sm (and the clock event reasons) would tell"});
  return c;
}

std::string describe(const Finding& f) {
  std::string s = fmt::format("{} busy but idle: GPU-Util {:.0f} % yet power {} of the limit",
                              gpu_list(f.gpus), ev(f, "util_pct"), pct(ev(f, "power_ratio")));
  if (known(ev(f, "sm_pct"))) s += fmt::format(" and SM activity {:.0f} %", ev(f, "sm_pct"));
  s += ": many small kernels, the CPU cannot launch them fast enough";
  return s;
}

}  // namespace

const Detector kLaunchOverheadDetector{Cause::kLaunchOverhead, check, describe};

}  // namespace gpudoctor::diag
