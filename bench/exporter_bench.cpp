// Cost of `serve`'s own work per sample, for 8 simulated H100s: rendering /metrics, and a whole
// LiveExporter::add_frame (window, assessment, both renderings; the diagnosis of a 5-minute window
// once every 10 samples, as at `-i 1s`). The sampling itself is BM_SampleEightGpus.
#include <benchmark/benchmark.h>

#include "exporter/live_exporter.hpp"
#include "sources/sim/sim_source.hpp"

namespace {

using namespace gpudoctor;

std::unique_ptr<sim::SimSource> mixed() {
  auto s = sim::open_sim_source("mixed", {});  // 8 x H100: working, held idle and free GPUs
  if (!s) std::abort();
  auto* raw = dynamic_cast<sim::SimSource*>(s.value().release());
  raw->set_start_unix_ms(sim::kSimEpochUnixMs);
  return std::unique_ptr<sim::SimSource>(raw);
}

void BM_RenderMetricsEightGpus(benchmark::State& state) {
  auto src = mixed();
  LiveExporter ex(src->system(), src->devices(), {}, {});
  for (int t = 0; t < 30; ++t) ex.add_frame(src->sample_at(t), 0.001, true);
  ExportSnapshot s;
  s.devices = src->devices();
  s.frame = src->sample_at(30);
  for (const auto& d : s.frame.devices) s.assessments.push_back(assess(nullptr, d, 1));
  const auto format =
      state.range(0) ? ExpositionFormat::kOpenMetrics : ExpositionFormat::kPrometheusText;
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = render_metrics(s, {}, format);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderMetricsEightGpus)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_LiveExporterFrameEightGpus(benchmark::State& state) {
  auto src = mixed();
  std::vector<Frame> frames;
  for (int t = 0; t < 3000; ++t) frames.push_back(src->sample_at(t));
  std::unique_ptr<LiveExporter> ex;
  size_t i = frames.size();
  for (auto _ : state) {
    if (i == frames.size()) {  // a fresh exporter with a full 5-minute window, untimed
      state.PauseTiming();
      ex = std::make_unique<LiveExporter>(src->system(), src->devices(), ExportOptions{},
                                          LiveOptions{});
      for (i = 0; i < 300; ++i) ex->add_frame(frames[i], 0.001, true);
      state.ResumeTiming();
    }
    ex->add_frame(frames[i++], 0.001, true);
  }
}
BENCHMARK(BM_LiveExporterFrameEightGpus)->Unit(benchmark::kMicrosecond);

}  // namespace
