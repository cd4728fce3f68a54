// What finding owners costs `serve`, `watch` and `top`: 8 GPUs with 8 processes each (64 real
// child processes, so /proc is the kernel's own), annotated once per sample. Steady state: the
// owners are cached by PID and start time, so each sample reads one /proc/PID/stat per process.
// Cold: every process looked up afresh (the first sample, or all PIDs new).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include <benchmark/benchmark.h>

#include "host/owners.hpp"

namespace {

using gpudoctor::DeviceInfo;
using gpudoctor::Frame;
using gpudoctor::ProcessInfo;

struct Children {
  std::vector<pid_t> pids;
  explicit Children(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t p = fork();
      if (p == 0) {
        pause();
        _exit(0);
      }
      if (p > 0) pids.push_back(p);
    }
  }
  ~Children() {
    for (pid_t p : pids) kill(p, SIGKILL);
    for (pid_t p : pids) waitpid(p, nullptr, 0);
  }
};

Frame frame_of(const std::vector<pid_t>& pids, std::vector<DeviceInfo>& devs) {
  Frame f;
  f.devices.resize(8);
  devs.resize(8);
  for (size_t i = 0; i < pids.size(); ++i) {
    ProcessInfo p;
    p.pid = static_cast<uint32_t>(pids[i]);
    p.name = "python";
    f.devices[i % 8].processes.push_back(p);
  }
  for (unsigned i = 0; i < 8; ++i) devs[i].index = i;
  return f;
}

void BM_Owners8Gpus64ProcessesSteady(benchmark::State& state) {
  Children kids(64);
  std::vector<DeviceInfo> devs;
  const Frame base = frame_of(kids.pids, devs);
  gpudoctor::host::OwnerResolver r;
  Frame warm = base;
  r.annotate(warm, devs);
  for (auto _ : state) {
    Frame f = base;
    r.annotate(f, devs);
    benchmark::DoNotOptimize(f);
  }
  state.counters["cached"] = static_cast<double>(r.cache_size());
}
BENCHMARK(BM_Owners8Gpus64ProcessesSteady)->MeasureProcessCPUTime()->UseRealTime();

void BM_Owners8Gpus64ProcessesCold(benchmark::State& state) {
  Children kids(64);
  std::vector<DeviceInfo> devs;
  const Frame base = frame_of(kids.pids, devs);
  for (auto _ : state) {
    gpudoctor::host::OwnerResolver r;
    Frame f = base;
    r.annotate(f, devs);
    benchmark::DoNotOptimize(f);
  }
}
BENCHMARK(BM_Owners8Gpus64ProcessesCold)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
