// contention: more than one compute process on the GPU for most of a window. Time-slicing makes
// each one slower than it would be alone, whatever the GPU's own numbers say.
#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"

namespace gpudoctor::diag {
namespace {

std::optional<Candidate> check(const Context&, size_t, const WindowFeatures& w) {
  if (w.idle || w.f.processes < 2) return std::nullopt;
  Candidate c;
  c.confidence = 0.85;
  c.evidence["processes"] = w.f.processes;
  c.evidence["util_pct"] = round_to(w.f.util, 1);
  c.evidence["efficiency"] = round_to(w.f.efficiency, 3);
  return c;
}

std::string describe(const Finding& f) {
  return fmt::format("{}: {:.0f} compute processes share the GPU and take turns on it",
                     gpu_list(f.gpus), ev(f, "processes"));
}

}  // namespace

const Detector kContentionDetector{Cause::kContention, check, describe};

}  // namespace gpudoctor::diag
