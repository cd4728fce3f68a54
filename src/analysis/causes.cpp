#include "analysis/causes.hpp"

namespace gpudoctor {
namespace {

const std::vector<CauseInfo>& table() {
  static const std::vector<CauseInfo> t = {
      {Cause::kIdle,
       "idle",
       "Idle",
       "The GPU did no work: nothing ran on it, though its memory or a process may hold it.",
       {"Release GPUs a job does not use (check CUDA_VISIBLE_DEVICES and the launcher's GPU count)",
        "Check that the job is running and not stuck before its first step",
        "Stop idle notebooks and interactive sessions that hold GPU memory"},
       {"Scale replicas to the traffic (autoscale on queue length, scale to zero when none)",
        "Serve several small models on one GPU (MIG slices or MPS) instead of one GPU each"}},
      {Cause::kContention,
       "contention",
       "Contention",
       "Several processes share the GPU and slow each other down.",
       {"Run one job per GPU (pin each with CUDA_VISIBLE_DEVICES)",
        "Where sharing is intended, use MPS or MIG partitions instead of time-slicing",
        "Look for a stray process (a notebook, an evaluation job) on the same GPU"},
       {}},
      {Cause::kThermalThrottle,
       "thermal_throttle",
       "Thermal throttling",
       "The GPU cut its clocks because it ran too hot.",
       {"Improve airflow: check fans, blanking panels, filters and dust",
        "Check the room or inlet temperature and the fan curve",
        "Do not stack workstation cards without space between them"},
       {}},
      {Cause::kPowerCapped,
       "power_capped",
       "Lowered power cap",
       "The enforced power limit is below the board's default, and the GPU is held at it.",
       {"Restore the default limit (nvidia-smi -pl DEFAULT_W, needs root; gpudoctor never changes "
        "it)",
        "Ask whether a datacenter power policy or a previous user lowered it",
        "If the cap is intended, expect proportionally slower steps"},
       {}},
      {Cause::kClocksLimited,
       "clocks_limited",
       "Clocks held low",
       "The clocks stay well below their maximum for a reason other than heat or power.",
       {"Reset application or locked clocks (nvidia-smi -rac / -rgc, needs root)",
        "HW slowdown or power brake: check the power supply and the board's power cables",
        "Enable persistence mode so the driver keeps its settings between jobs"},
       {}},
      {Cause::kHealthy,
       "healthy",
       "Healthy",
       "The GPU was fed and busy: high activity and power near its limit.",
       {},
       {}},
      {Cause::kCommunicationWait,
       "communication_wait",
       "Communication wait",
       "GPUs spend their time waiting for each other in collectives: a straggler, or ranks "
       "taking turns.",
       {"Balance work across ranks (equal shards, sequence-length bucketing); find the straggler",
        "Overlap communication with compute (DDP bucket size, gradient accumulation)",
        "Check the topology (nvidia-smi topo -m) and run with NCCL_DEBUG=INFO to see the chosen "
        "transport; measure before changing NCCL settings"},
       {"Use fewer GPUs per replica (lower tensor parallelism) when the model fits, and run more "
        "replicas",
        "Keep tensor parallelism inside an NVLink domain (nvidia-smi topo -m): across PCIe every "
        "layer waits on its peers"}},
      {Cause::kDataStarvation,
       "data_starvation",
       "Data starvation",
       "The input pipeline cannot keep up: the GPU waits for each batch, then works in a burst.",
       {"More DataLoader workers, up to the CPU cores available per GPU",
        "pin_memory=True, a larger prefetch_factor and persistent_workers=True",
        "Faster storage (local NVMe, cached or pre-processed data), GPU-side decoding (DALI)",
        "Larger batches, so each transfer carries more work"},
       {"Raise concurrency: more simultaneous requests per replica (client concurrency, "
        "max_num_seqs / max batch size)",
        "Enable continuous or dynamic batching (vLLM, TGI, Triton's dynamic batcher with a small "
        "queue delay)",
        "Too little traffic for this GPU: fewer replicas, a smaller GPU or a MIG slice"}},
      {Cause::kMemoryBound,
       "memory_bound",
       "Memory bound",
       "Kernels are limited by memory bandwidth: the SMs wait on DRAM and tensor cores idle.",
       {"Mixed precision (bf16/fp16) halves the bytes moved",
        "Fuse element-wise and normalisation operators (torch.compile, fused kernels)",
        "Raise arithmetic intensity: larger batches or matrix sizes"},
       {"Batch more sequences per step: decoding reads all weights once per step, whatever the "
        "batch",
        "Quantised weights and KV cache (FP8, INT8/INT4) move fewer bytes per token",
        "Paged / flash attention kernels suited to this GPU"}},
      {Cause::kLaunchOverhead,
       "launch_overhead",
       "Launch overhead",
       "Many tiny kernels: the CPU cannot launch them fast enough, so the GPU is 'busy' with "
       "little work.",
       {"Larger batches", "CUDA graphs, torch.compile or operator fusion to launch fewer kernels",
        "Mixed precision; unset CUDA_LAUNCH_BLOCKING=1 if it was left set"},
       {"CUDA graphs for decoding (vLLM and SGLang capture them unless eager mode is forced: "
        "check enforce_eager / --disable-cuda-graph)",
        "Larger batches: more concurrent requests per step",
        "A smaller GPU or a MIG slice if the model cannot fill this one"}},
  };
  return t;
}

}  // namespace

std::span<const CauseInfo> causes() {
  return table();
}

const CauseInfo& cause_info(Cause c) {
  for (const auto& i : table())
    if (i.cause == c) return i;
  return table().front();
}

std::optional<Cause> cause_from_code(std::string_view code) {
  for (const auto& i : table())
    if (i.code == code) return i.cause;
  return std::nullopt;
}

}  // namespace gpudoctor
