// `gpudoctor top` (issue: < 2 % of one core at the default refresh with 8 GPUs): what one redraw
// and one sample cost in the program's own code, on 8 simulated H100s (straggler job, so every
// panel has content). The whole process is measured by bench/top_overhead.py.
#include <benchmark/benchmark.h>

#include <vector>

#include "core/gpu_models.hpp"
#include "sources/sim/sim_source.hpp"
#include "tui/screen.hpp"
#include "tui/top_collector.hpp"
#include "tui/top_view.hpp"

namespace gpudoctor {
namespace {

constexpr double kInterval = 0.5;  // top's default refresh

struct Feed {
  std::string spec = "sim:straggler";
  SystemInfo system;
  std::vector<DeviceInfo> devices;
  std::vector<Frame> frames;  // 10 minutes at the default interval
};

const Feed& feed() {
  static const Feed f = [] {
    Feed out;
    auto spec = sim::parse_sim_spec("straggler,gpus=8");
    sim::SimSource src(spec.value(), *gpu_model_by_key("h100-sxm"), {});
    src.set_start_unix_ms(sim::kSimEpochUnixMs);
    out.system = src.system();
    out.devices = src.devices();
    for (int k = 1; k <= 1200; ++k) out.frames.push_back(src.sample_at(k * kInterval));
    return out;
  }();
  return f;
}

// Two consecutive states after 3 minutes: what the UI thread draws one after the other.
const std::pair<tui::TopState, tui::TopState>& states() {
  static const auto s = [] {
    const Feed& f = feed();
    tui::TopCollector c(f.spec, f.system, f.devices);
    for (size_t k = 0; k < 360; ++k) c.add(f.frames[k]);
    tui::TopState a = c.state();
    c.add(f.frames[360]);
    return std::make_pair(a, c.state());
  }();
  return s;
}

// One redraw: render the frame and write only what changed since the previous one.
void BM_TopFrameEightGpus(benchmark::State& state) {
  const int rows = static_cast<int>(state.range(0)), cols = static_cast<int>(state.range(1));
  const auto& [a, b] = states();
  tui::ViewState view;
  view.selected = 2;
  tui::AnsiWriter writer(true);
  writer.update(tui::render_top(a, view, rows, cols));
  size_t bytes = 0, frames = 0;
  bool flip = false;
  for (auto _ : state) {
    flip = !flip;
    const tui::Screen s = tui::render_top(flip ? b : a, view, rows, cols);
    const std::string out = writer.update(s);
    bytes += out.size();
    ++frames;
    benchmark::DoNotOptimize(out);
  }
  state.counters["bytes_per_frame"] = static_cast<double>(bytes) / static_cast<double>(frames);
}
BENCHMARK(BM_TopFrameEightGpus)->Args({40, 120})->Args({50, 200})->Unit(benchmark::kMicrosecond);

// One sample on the sampling thread: assessment, history, processes, the rolling window and the
// live diagnosis (every 5 s, so every 10th frame), plus the copy of the state handed to the UI.
void BM_TopCollectorEightGpus(benchmark::State& state) {
  const Feed& f = feed();
  auto collector = std::make_unique<tui::TopCollector>(f.spec, f.system, f.devices);
  size_t next = 0;
  for (auto _ : state) {
    if (next == f.frames.size()) {
      state.PauseTiming();
      collector = std::make_unique<tui::TopCollector>(f.spec, f.system, f.devices);
      next = 0;
      state.ResumeTiming();
    }
    collector->add(f.frames[next++]);
    auto copy = std::make_shared<const tui::TopState>(collector->state());
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_TopCollectorEightGpus)->Unit(benchmark::kMicrosecond);

// The live diagnosis alone, over a full 5-minute window of 8 GPUs at 2 Hz.
void BM_TopDiagnoseWindowEightGpus(benchmark::State& state) {
  const Feed& f = feed();
  tui::TopCollector c(f.spec, f.system, f.devices);
  for (size_t k = 0; k < 600; ++k) c.add(f.frames[k]);
  for (auto _ : state) c.diagnose_now();
  state.counters["samples_per_gpu"] = static_cast<double>(c.window().gpus[0].size());
}
BENCHMARK(BM_TopDiagnoseWindowEightGpus)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpudoctor
