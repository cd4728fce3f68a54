#include "core/parallel.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace gpudoctor {

WorkerSignals::WorkerSignals() noexcept {
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &blocked, &old_);
}

WorkerSignals::~WorkerSignals() {
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

unsigned cgroup_cpu_quota(const std::string& cpu_max) {
  // "QUOTA PERIOD" in microseconds, or "max PERIOD": no limit.
  double quota = 0, period = 0;
  if (std::sscanf(cpu_max.c_str(), "%lf %lf", &quota, &period) != 2 || !(quota > 0) ||
      !(period > 0))
    return 0;
  return static_cast<unsigned>(std::max(1.0, std::ceil(quota / period)));
}

unsigned usable_cpus() {
  unsigned n = std::max(1U, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    n = static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  // A container's CPU limit (cgroup v2, as docker --cpus and Kubernetes' limits set it).
  std::ifstream in("/sys/fs/cgroup/cpu.max");
  std::string line;
  if (in && std::getline(in, line))
    if (const unsigned q = cgroup_cpu_quota(line)) n = std::min(n, q);
  return n;
}

namespace {

constexpr unsigned kMostAutoThreads = 16, kMostThreads = 256;

// GPUDOCTOR_THREADS as a count, or 0 when unset or wrong.
unsigned threads_from_env(std::string* error) {
  const char* v = std::getenv("GPUDOCTOR_THREADS");
  if (v == nullptr || *v == '\0') return 0;
  unsigned n = 0;
  const char* end = v + std::strlen(v);
  const auto r = std::from_chars(v, end, n);
  if (r.ec != std::errc() || r.ptr != end || n < 1 || n > kMostThreads) {
    if (error)
      *error = fmt::format("GPUDOCTOR_THREADS: expected a whole number from 1 to {}, got \"{}\"",
                           kMostThreads, v);
    return 0;
  }
  return n;
}

}  // namespace

unsigned default_threads() {
  if (const unsigned n = threads_from_env(nullptr)) return n;
  return std::min(usable_cpus(), kMostAutoThreads);
}

std::string threads_env_error() {
  std::string error;
  threads_from_env(&error);
  return error;
}

namespace {
thread_local bool spread_work = false;
}  // namespace

bool in_spread_work() {
  return spread_work;
}

SpreadWork::SpreadWork() noexcept : was_(spread_work) {
  spread_work = true;
}

SpreadWork::~SpreadWork() {
  spread_work = was_;
}

void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& fn) {
  threads = std::min({threads != 0 ? threads : default_threads(), kMostThreads,
                      static_cast<unsigned>(std::min<size_t>(n, kMostThreads))});
  if (spread_work) threads = 1;
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::mutex m;
  // The lowest index that threw: what a loop in order would have thrown (every lower index was
  // taken before it, so all of them ran).
  std::exception_ptr first;
  size_t first_index = n;
  auto run = [&] {
    const SpreadWork share;
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard lock(m);
        if (i < first_index) {
          first = std::current_exception();
          first_index = i;
        }
        next = n;  // the others stop at their next index
      }
    }
  };
  std::vector<std::thread> pool;
  try {
    const WorkerSignals mask;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(run);
  } catch (const std::system_error&) {  // no more threads: this one does what they leave
  }
  run();
  for (auto& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace gpudoctor
