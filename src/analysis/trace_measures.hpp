// What a profiler trace says about one rank (core/trace.hpp): where the GPU's time went (compute
// kernels, NCCL kernels, memory copies and sets, idle, and the idle time split by what the GPU
// waited for: IdleSplit below), kernels by size band and the top kernels, the launch delay
// (the runtime call's start to the kernel's start, matched by correlation id), NCCL time and its
// overlap with compute, and per ProfilerStep#N step the same breakdown and the DataLoader time.
//
// Conventions, as Holistic Trace Analysis counts them: the span runs from the first GPU event's
// start to the last one's end; busy time is the union of the GPU events' intervals (all streams
// and devices of the rank together); compute comes first, so communication is NCCL time not
// overlapped by compute (its exposed part), memory is copy and set time overlapped by neither,
// and the four parts sum to the span.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/trace.hpp"

namespace gpudoctor {

struct TimeSplit {
  int64_t span_ns = 0;
  int64_t compute_ns = 0;  // union of compute kernels
  int64_t comm_ns = 0;     // NCCL kernels not overlapped by compute
  int64_t memory_ns = 0;   // copies and sets overlapped by neither
  int64_t idle_ns = 0;     // no GPU event at all
};

// The idle time (no GPU event of the rank running) split by what the GPU waited for. Each idle
// gap is judged by the GPU event that ends it and that event's launch call (matched by
// correlation id), in this order:
//   sync: the CPU was blocked in a synchronisation when the GPU ran dry, so it could not queue
//         ahead (`.item()`, a printed loss, an event wait): a synchronising runtime call
//         (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize) or the trace's
//         own record of one (cuda_sync "Event Sync", "Stream Sync", "Context Sync") spans the
//         gap's start.
//   host: waiting for the host, nothing queued: the next event's launch call began only after
//         the GPU had run dry (the CPU is too slow to launch: Python, launch overhead, input).
//   sync: waiting on another stream or event, the work queued: the trace records a "Stream Wait
//         Event" on the next event's stream (waiting on another stream) between the launch of
//         that stream's previous event and this one's; or, with no such record, the next
//         event's launch call had returned before the gap began, so the GPU held queued work
//         for a dependency (an event wait the trace did not record, stream order).
//   other: the rest: no launch call matched (events without correlation ids), or the launch
//         call was still in flight when the GPU ran dry.
// Time when one stream idles while another runs is busy time, not idle, at the rank's level;
// each stream's own idle time is split by the same rule over that stream's events alone
// (StreamMeasure::idle).
struct IdleSplit {
  int64_t host_ns = 0;
  int64_t sync_ns = 0;
  int64_t other_ns = 0;
  int64_t sync_recorded_ns = 0;  // of sync_ns, the gaps the trace's cuda_sync records explain
};

// One stream of one device: its GPU events, the time they ran (their union) and the time from
// its first event's start to its last one's end; idle is the difference, split as the rank's is
// (IdleSplit's rule, applied to the gaps between this stream's events: each judged by the
// stream's event that ends it), so idle.host_ns + idle.sync_ns + idle.other_ns is
// span_ns - busy_ns. What HTA's idle time breakdown calls host wait is host_ns; its kernel wait
// is here sync_ns (waiting on another stream or an event, or the CPU blocked in a sync).
struct StreamMeasure {
  int32_t device = -1, stream = -1;
  size_t events = 0;
  int64_t busy_ns = 0, span_ns = 0;
  IdleSplit idle;
};

struct KernelBand {
  int64_t below_ns = 0;  // upper bound of the band; INT64_MAX for the last
  size_t count = 0;
  int64_t total_ns = 0;
};

struct TopKernel {
  std::string name;
  size_t count = 0;
  int64_t total_ns = 0;
};

struct StepMeasure {
  int step = -1;  // N of ProfilerStep#N
  int64_t start_ns = 0, dur_ns = 0;
  TimeSplit split;  // within the step's CPU span
  IdleSplit idle;   // of split.idle_ns
  int64_t dataloader_ns = 0;
  size_t launched = 0;  // GPU events whose launch call began within the step (HTA's iteration)
};

struct TraceMeasures {
  int rank = -1;
  std::string origin, device;       // device: the first GPU event's device's name, where known
  size_t devices = 0;               // distinct devices with GPU events
  std::vector<int32_t> device_ids;  // those devices, in the order first seen
  int64_t first_ns = 0;             // the first GPU event's start
  TimeSplit split;
  IdleSplit idle;                 // of split.idle_ns
  int64_t idle_host_wait_ns = 0;  // idle.host_ns (the name the first version gave it)
  size_t kernels = 0, nccl_kernels = 0, memory_ops = 0;
  int64_t kernel_ns = 0;          // sum of kernel durations
  int64_t nccl_ns = 0;            // union of NCCL kernels
  int64_t nccl_overlap_ns = 0;    // of it, overlapped by compute
  std::vector<KernelBand> bands;  // < 10 us, < 100 us, < 1 ms, < 10 ms, the rest
  std::vector<TopKernel> top;     // by total time, at most 10
  size_t launches = 0;            // kernels matched to their launch call
  double launch_delay_median_us = 0, launch_delay_p90_us = 0;
  int64_t runtime_ns = 0;   // sum of CUDA runtime calls' durations
  size_t sync_records = 0;  // cuda_sync events
  size_t device_syncs = 0;  // of them, of the whole device (stream -1: "Context Sync" ...)
  size_t stream_waits = 0;  // of them, a stream waiting on another's event
  std::vector<StreamMeasure> streams;  // by device, then stream
  std::vector<StepMeasure> steps;
  int64_t dataloader_ns = 0;  // DataLoader spans, whole trace
};

// True for a kernel whose name says NCCL (communication); memory copies and sets are never.
bool is_nccl_kernel(std::string_view name);
// True for a cuda_sync record of a stream told to wait on an event ("Stream Wait Event"), which
// does not block the CPU; the other records ("Event Sync", "Stream Sync", "Context Sync") do.
bool is_stream_wait(std::string_view name);
// True for a CUDA runtime call that blocks the CPU until GPU work is done.
bool is_sync_call(std::string_view name);

TraceMeasures measure_trace(const TraceRank& t);

}  // namespace gpudoctor
