// memory_bound: busy, not efficient, with DRAM activity high (GPM DRAM bandwidth or DCGM
// DRAM_ACTIVE; else nvidia-smi's memory utilisation) and tensor cores quiet.
// Without a DRAM activity column, nvidia-smi's utilization.memory (the share of time the memory
// controller was busy) is the evidence a plain log offers: busy GPU, controller busy at or above
// memory_bound_mem_util_pct, efficiency below the reference; the healthy detector steps aside.
#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"

namespace gpudoctor::diag {
namespace {

std::optional<Candidate> check(const Context& ctx, size_t, const WindowFeatures& w) {
  if (w.idle) return std::nullopt;
  const Features& f = w.f;
  // A GPU near its power limit is working, whatever its memory controller says.
  if (f.power_ratio >= ctx.cfg.working_power_ratio) return std::nullopt;
  const bool from_dram = known(f.dram);
  const double dram = from_dram ? f.dram : f.mem_util;
  // Without efficiency (no power limit, no SM activity) only the memory controller itself can
  // say it: busy GPU, controller busy at or above memory_bound_mem_util_pct; said with less
  // confidence.
  if (!known(f.efficiency)) {
    if (from_dram ? !(f.dram >= ctx.cfg.memory_bound_dram_pct && f.util >= ctx.cfg.busy_util_pct)
                  : !memory_controller_bound(ctx, f))
      return std::nullopt;
  } else if (!(dram >= ctx.cfg.memory_bound_dram_pct) && !memory_controller_bound(ctx, f)) {
    return std::nullopt;
  }
  if (f.tensor >= ctx.cfg.memory_bound_tensor_pct) return std::nullopt;
  Candidate c;
  c.confidence = from_dram ? 0.8 : 0.6;
  if (!known(f.efficiency)) c.confidence = 0.45;
  c.evidence[from_dram ? "dram_pct" : "mem_util_pct"] = round_to(dram, 1);
  c.evidence["tensor_pct"] = round_to(f.tensor, 1);
  c.evidence["util_pct"] = round_to(f.util, 1);
  c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
  c.evidence["efficiency"] = round_to(f.efficiency, 3);
  return c;
}

std::string describe(const Finding& f) {
  const bool dram = known(ev(f, "dram_pct"));
  std::string s = fmt::format("{} memory bound: {} {:.0f} %", gpu_list(f.gpus),
                              dram ? "DRAM activity" : "memory-controller utilisation",
                              dram ? ev(f, "dram_pct") : ev(f, "mem_util_pct"));
  if (known(ev(f, "tensor_pct"))) s += fmt::format(", tensor cores {:.0f} %", ev(f, "tensor_pct"));
  if (known(ev(f, "power_ratio")))
    s += fmt::format(", power {} of the limit", pct(ev(f, "power_ratio")));
  else if (known(ev(f, "util_pct")))
    s += fmt::format(
        ", GPU-Util {:.0f} % (no power limit known: how hard the SMs work cannot be "
        "measured)",
        ev(f, "util_pct"));
  return s;
}

}  // namespace

bool memory_controller_bound(const Context& ctx, const Features& f) {
  const auto& cfg = ctx.cfg;
  return !known(f.dram) && !(f.power_ratio >= cfg.working_power_ratio) &&
         f.mem_util >= cfg.memory_bound_mem_util_pct && f.util >= cfg.busy_util_pct &&
         !(f.efficiency >= cfg.reference_efficiency) && !(f.tensor >= cfg.memory_bound_tensor_pct);
}

const Detector kMemoryBoundDetector{Cause::kMemoryBound, check, describe};

}  // namespace gpudoctor::diag
