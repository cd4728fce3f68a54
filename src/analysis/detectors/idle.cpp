// idle: no work at all for a long stretch (the whole run, or a pause longer than pause_max_s).
// "Held" when memory is in use, a process is present or an owner holds it (a job's allocation,
// a pod the kubelet gave the GPU, with nothing running): someone has the GPU and wastes it.
#include <chrono>

#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"
#include "core/duration.hpp"

namespace gpudoctor::diag {
namespace {

std::optional<Candidate> check(const Context& ctx, size_t, const WindowFeatures& w) {
  if (!w.idle) return std::nullopt;
  const Features& f = w.f;
  const bool held = (known(f.mem_used_ratio) && f.mem_used_ratio > ctx.cfg.held_memory_ratio) ||
                    f.processes > 0 || f.owned;
  Candidate c;
  c.confidence = known(f.util) ? 0.9 : 0.6;
  c.variant = held ? "held" : "free";
  c.evidence["util_pct"] = round_to(f.util, 1);
  c.evidence["power_w"] = round_to(f.power_w, 1);
  c.evidence["power_ratio"] = round_to(f.power_ratio, 3);
  c.evidence["mem_used_ratio"] = round_to(f.mem_used_ratio, 3);
  if (f.processes >= 0) c.evidence["processes"] = f.processes;
  if (f.owned) c.evidence["owned"] = 1;
  c.evidence["held"] = held ? 1 : 0;
  return c;
}

std::string describe(const Finding& f) {
  const auto dur = human_duration(f.end_s - f.start_s);
  if (ev(f, "held") >= 0.5) {
    std::string mem = known(ev(f, "mem_used_ratio"))
                          ? fmt::format(", {} of memory in use", pct(ev(f, "mem_used_ratio")))
                          : std::string();
    return fmt::format("{} held but idle for {}: GPU-Util {:.0f} %{}", gpu_list(f.gpus), dur,
                       known(ev(f, "util_pct")) ? ev(f, "util_pct") : 0.0, mem);
  }
  return fmt::format("{} unused for {}: nothing ran on {}", gpu_list(f.gpus), dur,
                     f.gpus.size() > 1 ? "them" : "it");
}

}  // namespace

const Detector kIdleDetector{Cause::kIdle, check, describe};

}  // namespace gpudoctor::diag
