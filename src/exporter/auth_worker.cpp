#include "exporter/auth_worker.hpp"

#include <pthread.h>

#include <csignal>

namespace gpudoctor {

void block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGPIPE);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

AuthWorker::AuthWorker(BasicAuth& auth, std::function<void()> on_done)
    : auth_(auth), on_done_(std::move(on_done)) {
  thread_ = std::thread([this] { run(); });
}

bool AuthWorker::submit(Job job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || jobs_.size() >= kMaxJobs) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

std::deque<AuthWorker::Job> AuthWorker::take_done() {
  std::deque<Job> done;
  std::lock_guard lock(mu_);
  done.swap(done_);
  return done;
}

void AuthWorker::stop() {
  {
    // Under the lock, or the thread may miss the wake-up between its check and its wait.
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AuthWorker::run() {
  block_stop_signals();
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job.ok = auth_.check(job.authorization);
    {
      std::lock_guard lock(mu_);
      done_.push_back(std::move(job));
    }
    on_done_();
  }
}

}  // namespace gpudoctor
