// data_starvation: the GPU waits for its input. While it waits no kernel runs, so GPU-Util itself
// drops (unlike communication wait, where NCCL kernels keep it high): a duty cycle of bursts and
// gaps, often with a period (one batch) and host-to-device copy bursts.
//
// It needs positive evidence: GPU-Util dipping below dip_util_pct in at least dip_fraction of the
// samples (the gaps of a duty cycle), or, where the host was recorded, an input pipeline that
// saturates the CPU or waits on I/O while GPU-Util stays below busy. A GPU that is merely not at
// 100 % (a well-fed job at 84 % with no dips) is not starving.
//
// For an inference server the same gaps are requests not arriving fast enough (light traffic):
// the evidence says so and the fixes are the serving ones.
#include <algorithm>

#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"

namespace gpudoctor::diag {
namespace {

std::optional<Candidate> check(const Context& ctx, size_t, const WindowFeatures& w) {
  if (w.idle || !known(w.f.util)) return std::nullopt;
  const Features& f = w.f;
  const auto& cfg = ctx.cfg;
  const bool dips = f.dip_fraction >= cfg.dip_fraction;
  bool host_bound = false;
  if (known(f.job_cpu_cores))
    host_bound = (known(f.host_cores) && f.job_cpu_cores >= 0.85 * f.host_cores) ||
                 f.host_cpu_pct >= 85 || f.iowait_pct >= 20;
  if (!dips && !(host_bound && f.util < cfg.busy_util_pct)) return std::nullopt;
  Candidate c;
  c.confidence = dips ? 0.65 : 0.6;
  if (f.period_strength >= 0.3) c.confidence += 0.15;
  if (f.dip_fraction >= 2 * cfg.dip_fraction) c.confidence += 0.1;
  c.confidence = std::min(c.confidence, 0.9);
  c.evidence["util_pct"] = round_to(f.util, 1);
  c.evidence["dip_fraction"] = round_to(f.dip_fraction, 3);
  c.evidence["period_s"] = round_to(f.period_s, 1);
  c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
  c.evidence["efficiency"] = round_to(f.efficiency, 3);
  c.evidence["pcie_rx_mibs"] = round_to(f.pcie_rx, 0);
  if (ctx.workload.kind == "serving") c.evidence["workload"] = "serving";
  // The host's side, when recorded: a saturated input pipeline is the proof.
  if (known(f.job_cpu_cores)) {
    c.evidence["job_cpu_cores"] = round_to(f.job_cpu_cores, 2);
    c.evidence["host_cores"] = round_to(f.host_cores, 0);
    c.evidence["job_processes"] = round_to(f.job_processes, 1);
    c.evidence["host_cpu_pct"] = round_to(f.host_cpu_pct, 1);
    c.evidence["iowait_pct"] = round_to(f.iowait_pct, 1);
    const bool cpu_bound =
        (known(f.host_cores) && f.job_cpu_cores >= 0.85 * f.host_cores) || f.host_cpu_pct >= 85;
    const bool io_bound = f.iowait_pct >= 20;
    if (cpu_bound || io_bound) c.confidence = std::min(0.95, c.confidence + 0.1);
    // A host that keeps up says the gaps come from elsewhere (the loader's own waits, or
    // launch gaps): less sure.
    if (!cpu_bound && !io_bound) c.confidence = std::max(0.5, c.confidence - 0.1);
    c.evidence["host_bound"] = cpu_bound ? "cpu" : (io_bound ? "io" : "neither");
  }
  return c;
}

std::string describe(const Finding& f) {
  if (const auto it = f.evidence.find("workload"); it != f.evidence.end() && *it == "serving") {
    std::string s = fmt::format(
        "{} wait for requests: GPU-Util averages {:.0f} % and drops below 60 % in {} of samples; "
        "the server gets too little traffic (or too small batches) to keep the GPU busy",
        gpu_list(f.gpus), ev(f, "util_pct"), pct(ev(f, "dip_fraction")));
    if (known(ev(f, "power_ratio")))
      s += fmt::format("; power at {} of the limit", pct(ev(f, "power_ratio")));
    return s;
  }
  std::string s = fmt::format(
      "{} wait for input: GPU-Util averages {:.0f} % and drops below "
      "60 % in {} of samples",
      gpu_list(f.gpus), ev(f, "util_pct"), pct(ev(f, "dip_fraction")));
  if (known(ev(f, "period_s"))) s += fmt::format(", every {:.1f} s", ev(f, "period_s"));
  if (known(ev(f, "power_ratio")))
    s += fmt::format("; power at {} of the limit", pct(ev(f, "power_ratio")));
  std::string bound;
  if (const auto it = f.evidence.find("host_bound"); it != f.evidence.end() && it->is_string())
    bound = it->get<std::string>();
  if (bound == "cpu")
    s += fmt::format(
        "; the job's {:.0f} processes kept {:.1f} of {:.0f} CPU cores busy: the input "
        "pipeline is CPU-bound",
        ev(f, "job_processes"), ev(f, "job_cpu_cores"), ev(f, "host_cores"));
  else if (bound == "io")
    s += fmt::format("; CPU I/O wait {:.0f} %: reading the data is the bottleneck",
                     ev(f, "iowait_pct"));
  else if (bound == "neither")
    s += fmt::format(
        "; host CPU {:.0f} % busy, I/O wait {:.0f} %: neither saturated (look at the "
        "loader's own waits: network storage, locks, too few workers)",
        ev(f, "host_cpu_pct"), ev(f, "iowait_pct"));
  return s;
}

}  // namespace

const Detector kStarvationDetector{Cause::kDataStarvation, check, describe};

}  // namespace gpudoctor::diag
