#include "core/parallel.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

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

unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1U, std::thread::hardware_concurrency());
}

void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& fn) {
  constexpr unsigned kMostThreads = 16;
  threads = std::min({threads != 0 ? threads : usable_cpus(), kMostThreads,
                      static_cast<unsigned>(std::min<size_t>(n, kMostThreads))});
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::mutex m;
  std::exception_ptr first;
  auto run = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard lock(m);
        if (!first) first = std::current_exception();
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
