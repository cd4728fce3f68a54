#include "sources/sim/builtin_scenarios.hpp"

#include <array>

namespace gpudoctor::sim {
namespace {

// Each is a scenario file as a user would write one. Workload numbers describe the training loop
// (what the program does), never the telemetry the detectors look for.
constexpr std::array<BuiltinScenario, 19> kBuiltins{{
    {"healthy", R"({
  "name": "healthy", "cause": "healthy", "model": "h100-sxm", "gpus": 4, "startup_s": 20,
  "description": "Large-model training, fed and compute-bound; NVLink all-reduce overlaps little",
  "workload": {"kernels": 400, "kernel_ms": 1.2, "sm": 0.93, "tensor": 0.7, "dram": 0.45,
               "allreduce_mib": 400, "optimizer_ms": 15, "batch_s": 0.2, "prefetch": 4}
})"},
    {"healthy_default_cap", R"({
  "name": "healthy_default_cap", "cause": "healthy", "model": "a100-sxm4-80gb", "gpus": 2,
  "description": "Dense matrix work that hits the board's own (default) power limit: normal",
  "workload": {"kernels": 300, "kernel_ms": 2.0, "sm": 0.98, "tensor": 0.95, "dram": 0.6,
               "allreduce_mib": 200, "optimizer_ms": 10}
})"},
    {"idle", R"({
  "name": "idle", "cause": "idle", "model": "a100-sxm4-80gb", "gpus": 2,
  "description": "A notebook holds both GPUs' memory and runs nothing",
  "owner": {"kind": "k8s_pod", "id": "0c5e2f7a-91d4-4b3e-a6f0-3d8b7c1e9a42",
            "pod": "notebook-bob-0", "namespace": "research", "container": "notebook",
            "user": "bob"},
  "ranks": {"0-1": {"idle": true, "held": true}}
})"},
    {"data_starvation", R"({
  "name": "data_starvation", "cause": "data_starvation", "model": "a100-sxm4-80gb", "gpus": 2,
  "description": "DataLoader with too few workers: each batch takes longer to make than to train",
  "owner": {"kind": "slurm_job", "id": "52001", "step": "0", "user": "carol"},
  "workload": {"batch_s": 0.9, "prefetch": 2, "h2d_mib": 600, "kernels": 150, "kernel_ms": 1.5,
               "allreduce_mib": 100, "optimizer_ms": 8}
})"},
    {"data_starvation_disk", R"({
  "name": "data_starvation_disk", "cause": "data_starvation", "model": "h100-sxm", "gpus": 4,
  "description": "Images read from network storage: long waits for every batch, bursts of copies",
  "workload": {"batch_s": 2.5, "prefetch": 1, "h2d_mib": 1500, "kernels": 200, "kernel_ms": 1.5,
               "allreduce_mib": 300, "optimizer_ms": 10, "jitter": 0.1}
})"},
    {"data_starvation_decode", R"({
  "name": "data_starvation_decode", "cause": "data_starvation", "model": "l40s", "gpus": 1,
  "description": "JPEG decode and augmentation on too few CPU cores",
  "workload": {"batch_s": 0.5, "prefetch": 2, "h2d_mib": 200, "kernels": 120, "kernel_ms": 1.0}
})"},
    {"launch_overhead", R"({
  "name": "launch_overhead", "cause": "launch_overhead", "model": "h100-sxm", "gpus": 1,
  "description": "A small model at batch size 1: thousands of tiny kernels, the CPU launch-bound",
  "workload": {"kernels": 4000, "kernel_ms": 0.012, "launch_gap_ms": 0.02, "sm": 0.35,
               "tensor": 0.1, "dram": 0.15, "compute_bound": 0.3}
})"},
    {"launch_blocking", R"({
  "name": "launch_blocking", "cause": "launch_overhead", "model": "a100-sxm4-40gb", "gpus": 1,
  "description": "CUDA_LAUNCH_BLOCKING=1 left set: every launch waits for the previous kernel",
  "workload": {"kernels": 1500, "kernel_ms": 0.15, "launch_gap_ms": 0.4, "sm": 0.7,
               "tensor": 0.4, "dram": 0.3}
})"},
    {"straggler", R"({
  "name": "straggler", "cause": "communication_wait", "model": "h100-sxm", "gpus": 4,
  "description": "One rank has a larger shard: the others wait for it in every all-reduce",
  "owner": {"kind": "slurm_job", "id": "41900", "step": "0", "user": "dave"},
  "workload": {"kernels": 300, "kernel_ms": 1.2, "allreduce_mib": 400, "optimizer_ms": 10},
  "ranks": {"2": {"slowdown": 2.5}}
})"},
    {"seesaw", R"({
  "name": "seesaw", "cause": "communication_wait", "model": "a100-sxm4-80gb", "gpus": 2,
  "description": "Two pipeline stages take turns being the slow one: power swings in anti-phase",
  "workload": {"kernels": 200, "kernel_ms": 1.5, "allreduce_mib": 200},
  "ranks": {"0": {"slowdown": 3.0, "alternate_steps": 6, "alternate_phase": 0},
            "1": {"slowdown": 3.0, "alternate_steps": 6, "alternate_phase": 1}}
})"},
    {"slow_interconnect", R"({
  "name": "slow_interconnect", "cause": "communication_wait", "model": "l40s", "gpus": 4,
  "description": "Data parallel on PCIe-only GPUs: large gradients, all-reduce dominates",
  "workload": {"kernels": 150, "kernel_ms": 1.5, "allreduce_mib": 3000, "nvlink": false}
})"},
    {"memory_bound", R"({
  "name": "memory_bound", "cause": "memory_bound", "model": "h100-sxm", "gpus": 2,
  "description": "FP32 element-wise and normalisation kernels: bandwidth-limited, tensor cores idle",
  "workload": {"kernels": 600, "kernel_ms": 0.8, "sm": 0.55, "tensor": 0.02, "dram": 0.92,
               "compute_bound": 0.1, "allreduce_mib": 200}
})"},
    {"power_capped", R"({
  "name": "power_capped", "cause": "power_capped", "model": "a100-sxm4-80gb", "gpus": 2,
  "power_limit_w": 250,
  "description": "The power limit was lowered to 250 W (of 400 W): clocks fall, steps slow",
  "workload": {"kernels": 300, "kernel_ms": 1.5, "sm": 0.95, "tensor": 0.8, "dram": 0.5,
               "allreduce_mib": 200}
})"},
    {"thermal_throttle", R"({
  "name": "thermal_throttle", "cause": "thermal_throttle", "model": "rtx-4090", "gpus": 1,
  "ambient_c": 38, "cooling": 1.8,
  "description": "A workstation in a hot room with clogged filters: the GPU hits its slowdown temperature",
  "workload": {"kernels": 300, "kernel_ms": 1.5, "sm": 0.95, "tensor": 0.8, "dram": 0.5}
})"},
    {"clocks_locked", R"({
  "name": "clocks_locked", "cause": "clocks_limited", "model": "h100-sxm", "gpus": 1,
  "app_clock_mhz": 1005,
  "description": "Application clocks left locked at 1005 MHz after a benchmark",
  "workload": {"kernels": 300, "kernel_ms": 1.2}
})"},
    {"hw_slowdown", R"({
  "name": "hw_slowdown", "cause": "clocks_limited", "model": "a100-sxm4-80gb", "gpus": 2,
  "hw_slowdown": true,
  "description": "HW slowdown asserted (power brake from a failing PSU): clocks halved",
  "workload": {"kernels": 300, "kernel_ms": 1.5, "allreduce_mib": 200}
})"},
    {"contention", R"({
  "name": "contention", "cause": "contention", "model": "a100-sxm4-40gb", "gpus": 1,
  "description": "Two training processes started on the same GPU",
  "workload": {"kernels": 200, "kernel_ms": 1.5},
  "ranks": {"0": {"processes": 2}}
})"},
    {"mixed", R"({
  "name": "mixed", "cause": "idle", "model": "h100-sxm", "gpus": 8,
  "description": "A 4-GPU job on an 8-GPU node: four GPUs work, a notebook holds two idle, two are free",
  "workload": {"kernels": 400, "kernel_ms": 1.2, "allreduce_mib": 400, "optimizer_ms": 15},
  "owner": {"kind": "slurm_job", "id": "41877", "step": "0", "user": "alice"},
  "ranks": {"4-5": {"idle": true, "held": true,
                    "owner": {"kind": "k8s_pod", "id": "7d3a9b12-5e4f-4c21-b8a0-6f2e1d9c0b37",
                              "pod": "notebook-bob-0", "namespace": "research",
                              "container": "notebook", "user": "bob"}},
            "6-7": {"idle": true, "held": false}}
})"},
    {"degrading", R"({
  "name": "degrading", "cause": "data_starvation", "model": "h100-sxm", "gpus": 2,
  "duration_s": 600,
  "description": "Starts healthy; after 5 minutes the dataset spills out of the page cache",
  "workload": {"kernels": 400, "kernel_ms": 1.2, "allreduce_mib": 300, "batch_s": 0.1,
               "prefetch": 4},
  "changes": [{"at_s": 300, "workload": {"batch_s": 1.5, "prefetch": 1}}]
})"},
}};

}  // namespace

std::span<const BuiltinScenario> builtin_scenarios() {
  return kBuiltins;
}

}  // namespace gpudoctor::sim
