// The bcrypt side of the HTTP server (exporter/http_server.hpp): a thread that checks basic
// authentication off the event loop, so that a slow bcrypt never delays other scrapers. The
// loop submits a job per request whose credentials are not yet known good, and takes the
// finished ones back when `on_done` (its wake-up) has been called. At most kMaxJobs wait; more
// are refused, and the loop answers those 503.
// Thread-safety: submit, take_done and stop from the loop's (or owner's) thread; the worker
// thread runs BasicAuth::check, which is thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "exporter/web_config.hpp"

namespace gpudoctor {

// Blocks the signals the main thread handles (SIGINT, SIGTERM, SIGPIPE, SIGHUP), so they never
// land on a server thread. Each server thread calls it first.
void block_stop_signals();

class AuthWorker {
 public:
  struct Job {
    uint64_t id = 0;  // the connection's, to tell it from a later one on the same fd
    int fd = -1;
    std::string authorization;
    bool ok = false;
  };
  static constexpr size_t kMaxJobs = 32;

  AuthWorker(BasicAuth& auth, std::function<void()> on_done);
  ~AuthWorker() { stop(); }
  AuthWorker(const AuthWorker&) = delete;
  AuthWorker& operator=(const AuthWorker&) = delete;

  // False when kMaxJobs wait already, or when stopped.
  bool submit(Job job);
  std::deque<Job> take_done();
  // Joins the thread; jobs still waiting are dropped. Idempotent.
  void stop();

 private:
  void run();
  BasicAuth& auth_;
  std::function<void()> on_done_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_, done_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpudoctor
