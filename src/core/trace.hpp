// A profiler trace in compact form: what analysis needs of a PyTorch profiler (Kineto) trace, one
// rank per file. The reader (formats/kineto_trace) keeps only the events below, each a few
// words, and counts the rest; analysis/trace_measures turns them into time breakdowns, kernel
// statistics, launch delays, NCCL overlap and DataLoader time, and the trace's own records of
// synchronisation (cuda_sync) tell idle time spent waiting on another stream or an event. Times are
// nanoseconds since the Unix epoch (Kineto writes microseconds, with three decimals in its
// nanosecond-resolution traces: kept exactly, as integers).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpudoctor {

enum class TraceKind : uint8_t {
  kKernel,      // cat "kernel" / "Kernel": a GPU kernel (NCCL ones told by name)
  kMemcpy,      // cat "gpu_memcpy" / "Memcpy"
  kMemset,      // cat "gpu_memset" / "Memset"
  kRuntime,     // cat "cuda_runtime" / "cuda_driver": a CPU call into CUDA (launches among them)
  kStep,        // a "ProfilerStep#N" annotation: one training step
  kDataLoader,  // an "enumerate(DataLoader)...__next__" span: the loop waiting for a batch
  kSync,        // cat "cuda_sync": CUPTI's record of a synchronisation ("Stream Wait Event": a
                // stream told to wait on another stream's event; "Event Sync", "Stream Sync",
                // "Context Sync": the CPU blocked until the GPU got there), at the call's time
};

struct TraceEvent {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = -1;  // links a GPU event to the runtime call that launched it; -1: none
  uint32_t name = 0;         // index into TraceRank::names
  int32_t stream = -1;       // GPU events: the CUDA stream; kSync: the stream synchronised, -1
                             // for the whole device (Kineto writes -1 or 4294967295)
  int32_t device = -1;       // GPU events: the device index
  int32_t step = -1;         // kStep: N of ProfilerStep#N
  int32_t wait_stream = -1;  // kSync: the stream whose event is waited on (args.wait_on_stream)
  TraceKind kind = TraceKind::kKernel;
  int64_t end_ns() const { return start_ns + dur_ns; }
};

// One rank's trace (one file). A value: copy it whole.
struct TraceRank {
  std::string origin;                     // the file it was read from
  int rank = -1;                          // distributedInfo.rank; -1 when the trace does not say
  std::vector<std::string> device_names;  // deviceProperties, by id
  std::vector<std::string> names;         // every kept event's name, once
  std::vector<TraceEvent> events;         // in file order
  size_t events_read = 0;                 // every entry of traceEvents
  std::map<std::string, size_t> skipped;  // events not kept, by category ("cpu_op", ...)
  bool ns_resolution = false;             // timestamps carried nanosecond decimals
  // Where the input ended before the JSON did (a profiler stopped mid-write, a pipe cut by
  // Ctrl-C): the bytes read, 0 for a whole trace; whether it ended inside traceEvents (else in
  // what follows the list), and whether an event cut short there was dropped.
  uint64_t cut_at_byte = 0;
  bool cut_in_events = false;
  bool cut_event_dropped = false;
};

}  // namespace gpudoctor
