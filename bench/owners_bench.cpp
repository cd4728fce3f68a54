// What finding owners costs `serve`, `watch` and `top`: 8 GPUs with 8 processes each (64 real
// child processes, so /proc is the kernel's own), annotated once per sample. Steady state: the
// owners are cached by PID and start time, so each sample reads one /proc/PID/stat per process.
// Cold: every process looked up afresh (the first sample, or all PIDs new). With the kubelet: the
// same, with the stand-in kubelet (tests/kubelet, a gRPC server on a unix socket) listing a pod
// per GPU, as on a Kubernetes node: the List answer is cached by its watcher thread, and each
// sample merges it with the process owners. The merge alone: 64 pod processes named by it.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include <benchmark/benchmark.h>

#include <filesystem>
#include <thread>

#include "host/kubelet_owners.hpp"
#include "host/owners.hpp"
#if GPUDOCTOR_BENCH_KUBELET
#include "fake_kubelet.hpp"
#endif

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
  for (unsigned i = 0; i < 8; ++i) {
    devs[i].index = i;
    devs[i].uuid = "GPU-0000000" + std::to_string(i) + "-1111-2222-3333-444455556666";
  }
  return f;
}

// A pod per GPU, each holding it by UUID (device ids as NVIDIA's device plugin writes them).
std::vector<gpudoctor::host::PodDevice> pod_per_gpu(const std::vector<DeviceInfo>& devs) {
  std::vector<gpudoctor::host::PodDevice> out;
  for (const auto& d : devs)
    out.push_back({"nvidia.com/gpu", d.uuid, "trainer-" + std::to_string(d.index), "ml", "main"});
  return out;
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

#if GPUDOCTOR_BENCH_KUBELET
void BM_Owners8Gpus64ProcessesSteadyWithKubelet(benchmark::State& state) {
  Children kids(64);
  std::vector<DeviceInfo> devs;
  const Frame base = frame_of(kids.pids, devs);
  char dir[] = "/tmp/gpudoctor-owners-bench-XXXXXX";
  const std::string socket = std::string(::mkdtemp(dir)) + "/kubelet.sock";
  std::vector<fake_kubelet::Pod> pods;
  for (const auto& d : pod_per_gpu(devs))
    pods.push_back({d.pod, d.pod_namespace, {{d.container, {{d.resource, {d.device_id}}}}}});
  {
    fake_kubelet::Server kubelet(socket, fake_kubelet::Mode::kAnswer, pods);
    gpudoctor::host::OwnerResolver::Options o;
    o.kubelet_socket = socket;  // refreshed every 5 s by its thread, as in serve
    gpudoctor::host::OwnerResolver r(o);
    Frame warm = base;
    r.annotate(warm, devs);
    for (auto _ : state) {
      Frame f = base;
      r.annotate(f, devs);
      benchmark::DoNotOptimize(f);
    }
    Frame last = base;
    r.annotate(last, devs);
    size_t pods_seen = 0;
    for (const auto& d : last.devices)
      for (const auto& ow : d.owners) pods_seen += ow.source == "kubelet pod-resources";
    state.counters["kubelet_pods"] = static_cast<double>(pods_seen);
    state.counters["kubelet_calls"] = kubelet.calls();
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_Owners8Gpus64ProcessesSteadyWithKubelet)->MeasureProcessCPUTime()->UseRealTime();

// What a List refresh costs (the watcher's thread, gRPC's, and the in-process stand-in server's
// too, so an upper bound): the watcher refreshing every 5 ms instead of every 5 s, 100 ms per
// iteration; CPU per call = CPU per iteration / calls.
void BM_KubeletRefreshEvery5ms(benchmark::State& state) {
  std::vector<DeviceInfo> devs;
  frame_of({}, devs);
  char dir[] = "/tmp/gpudoctor-owners-bench-XXXXXX";
  const std::string socket = std::string(::mkdtemp(dir)) + "/kubelet.sock";
  std::vector<fake_kubelet::Pod> pods;
  for (const auto& d : pod_per_gpu(devs))
    pods.push_back({d.pod, d.pod_namespace, {{d.container, {{d.resource, {d.device_id}}}}}});
  {
    fake_kubelet::Server kubelet(socket, fake_kubelet::Mode::kAnswer, pods);
    gpudoctor::host::PodResourcesWatcher w(
        {socket, std::chrono::milliseconds(1000), std::chrono::milliseconds(5)});
    w.latest();
    const int before = kubelet.calls();
    for (auto _ : state) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    state.counters["calls"] =
        benchmark::Counter(kubelet.calls() - before, benchmark::Counter::kAvgIterations);
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_KubeletRefreshEvery5ms)->MeasureProcessCPUTime()->UseRealTime();
#endif

// The merge alone, per sample: 8 GPUs, 8 processes each in the pod holding the GPU.
void BM_KubeletMerge8Gpus64PodProcesses(benchmark::State& state) {
  std::vector<DeviceInfo> devs;
  std::vector<pid_t> pids(64);
  for (size_t i = 0; i < pids.size(); ++i) pids[i] = static_cast<pid_t>(1000 + i);
  Frame base = frame_of(pids, devs);
  for (size_t g = 0; g < 8; ++g) {
    gpudoctor::Owner o;
    o.kind = gpudoctor::OwnerKind::kK8sPod;
    o.id = "0000000" + std::to_string(g) + "-aaaa-bbbb-cccc-ddddeeeeffff";
    o.container = "5c6d7e8f9a0b";
    o.user = "alice";
    o.source = "cgroup";
    for (auto& p : base.devices[g].processes) p.owner = o;
    base.devices[g].owners = {o};
  }
  gpudoctor::host::KubeletOwners k;
  k.set_devices(pod_per_gpu(devs), devs, nullptr);
  const std::vector<bool> skip(8, false);
  for (auto _ : state) {
    Frame f = base;
    k.merge(f, skip);
    benchmark::DoNotOptimize(f);
  }
  Frame last = base;
  k.merge(last, skip);
  state.counters["named"] = last.devices[0].owners[0].pod.empty() ? 0 : 1;
}
BENCHMARK(BM_KubeletMerge8Gpus64PodProcesses)->MeasureProcessCPUTime()->UseRealTime();

// The frame copy both loops above make, for the difference.
void BM_FrameCopy8Gpus64Processes(benchmark::State& state) {
  std::vector<DeviceInfo> devs;
  std::vector<pid_t> pids(64);
  for (size_t i = 0; i < pids.size(); ++i) pids[i] = static_cast<pid_t>(1000 + i);
  const Frame base = frame_of(pids, devs);
  for (auto _ : state) {
    Frame f = base;
    benchmark::DoNotOptimize(f);
  }
}
BENCHMARK(BM_FrameCopy8Gpus64Processes)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
