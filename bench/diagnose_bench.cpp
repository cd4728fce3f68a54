// Issue 5's performance targets, on one core:
//   - diagnose a 24 h x 8 GPU x 1 s recording (about 700k samples per field) in < 1 s;
//   - diagnose a 1 GB nvidia-smi CSV in < 10 s (read + diagnose; measured here on the day of 8
//     GPUs as nvidia-smi CSV, about 460 MB, and reported as a rate; the full 1 GB once from the
//     command line, see RESULTS.md).
#include <benchmark/benchmark.h>

#include <string>

#include "analysis/diagnosis.hpp"
#include "core/gpu_models.hpp"
#include "formats/smi_csv.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor {
namespace {

const Recording& day_recording() {
  static const Recording rec = [] {
    // A data-starving 8-GPU job for a day: the busiest case for the detectors (every window has
    // a duty cycle whose period is searched for).
    auto spec = sim::parse_sim_spec("data_starvation,gpus=8,duration=24h,interval=1s");
    return sim::simulate_recording(std::move(spec.value()), *gpu_model_by_key("a100-sxm4-80gb"));
  }();
  return rec;
}

void BM_DiagnoseDayEightGpus(benchmark::State& state) {
  const Recording& rec = day_recording();
  size_t samples = 0;
  for (const auto& g : rec.gpus) samples += g.size();
  for (auto _ : state) {
    auto d = diagnose(rec);
    if (!d.verdict) state.SkipWithError("no verdict");
    benchmark::DoNotOptimize(d);
  }
  state.counters["samples_per_field"] = static_cast<double>(samples);
}
BENCHMARK(BM_DiagnoseDayEightGpus)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ReadAndDiagnoseSmiCsv(benchmark::State& state) {
  // The day recording as nvidia-smi CSV with units and every field nvidia-smi has.
  static const std::string text = write_smi_csv(day_recording(), true);
  for (auto _ : state) {
    auto rec = read_smi_csv(text, "bench", {});
    if (!rec) {
      state.SkipWithError(rec.error().message.c_str());
      break;
    }
    auto d = diagnose(rec.value());
    benchmark::DoNotOptimize(d);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text.size()));
  state.counters["file_MB"] = static_cast<double>(text.size()) / 1e6;
}
BENCHMARK(BM_ReadAndDiagnoseSmiCsv)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
}  // namespace gpudoctor
