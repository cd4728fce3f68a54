// Work spread over the CPUs the process may run on: the one thread pool idea of the library (the
// rows of a large log, the GPUs of a diagnosis). Results never depend on the number of threads:
// each index's work is the same code on the same data, merged in index order by the caller.
#pragma once

#include <signal.h>

#include <cstddef>
#include <functional>
#include <string>

namespace gpudoctor {

// While it lives, the threads this thread starts inherit a signal mask without SIGINT, SIGTERM
// and SIGPIPE: signals are the main thread's business (Ctrl-C finishes the current line or file
// there), and a worker's blocking call must not be cut by one. Every worker thread of gpudoctor
// starts under one.
class WorkerSignals {
 public:
  WorkerSignals() noexcept;
  ~WorkerSignals();
  WorkerSignals(const WorkerSignals&) = delete;
  WorkerSignals& operator=(const WorkerSignals&) = delete;

 private:
  sigset_t old_;
};

// CPUs this process may run on (taskset, a cgroup's cpuset), within its cgroup's CPU limit
// (/sys/fs/cgroup/cpu.max: a container given 2 CPUs of 64 runs 2 threads), at least 1.
unsigned usable_cpus();
// The whole CPUs a cgroup v2 `cpu.max` line allows ("200000 100000": 2, "150000 100000": 2), or
// 0 for no limit ("max 100000") or a line that is not one.
unsigned cgroup_cpu_quota(const std::string& cpu_max);

// The threads work is spread over by default: GPUDOCTOR_THREADS where it is set (a whole number
// from 1 to 256; 1 keeps everything on the calling thread), else one per usable CPU, at most 16.
unsigned default_threads();
// What is wrong with GPUDOCTOR_THREADS ("GPUDOCTOR_THREADS: expected ..."), or "" when it is unset
// or right: the program refuses to start with a wrong one rather than guess.
std::string threads_env_error();

// Runs fn(i) for every i in [0, n), on up to `threads` threads (this one among them; 0:
// default_threads()), the others started under WorkerSignals. Returns when every call has
// returned; the exception of the lowest index that threw is rethrown here (the one a loop in
// order meets first). Called from work already spread (in_spread_work: an fn of another
// parallel_for, a fleet worker's task), it runs every fn(i) on the calling thread: the work is on
// every CPU already, and threads of threads would only take turns.
void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& fn);

// Whether this thread is doing one share of work spread over threads (SpreadWork lives on it).
bool in_spread_work();
// Marks the thread it is made on as doing a share of spread work while it lives: what
// parallel_for does on each of its threads, and pools of their own (fleet's workers) on theirs.
// Other pools of the library ask in_spread_work too (the CSV reader's chunks: one pass there).
class SpreadWork {
 public:
  SpreadWork() noexcept;
  ~SpreadWork();
  SpreadWork(const SpreadWork&) = delete;
  SpreadWork& operator=(const SpreadWork&) = delete;

 private:
  bool was_;
};

}  // namespace gpudoctor
