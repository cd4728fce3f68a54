// The kubelet's pod-resources API (v1, gRPC on a unix socket): which devices the device plugins
// gave to which container of which pod. gpudoctor reads it for the owners of GPUs
// (docs/owners.md): pod names and namespaces, and pods that hold a GPU with nothing running on it.
// PodResourcesWatcher asks the kubelet on its own thread every few seconds, so sampling never
// waits for it; a kubelet that refuses, errs or does not answer within the deadline is said once
// in a note, never an error. gRPC stays inside the kubelet client module (host/kubelet_abi.h),
// which is loaded only where a kubelet's socket is there to be asked.
// Thread-safety: a watcher's methods may be called from any one thread; its refresh thread is
// its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/result.hpp"

namespace gpudoctor::host {

inline constexpr const char* kDefaultKubeletSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

// One device the kubelet gave to one container.
struct PodDevice {
  std::string resource;   // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", ...
  std::string device_id;  // as the device plugin names it: a GPU or MIG UUID, an index, "ID::N"
  std::string pod;
  std::string pod_namespace;
  std::string container;

  bool operator==(const PodDevice&) const = default;
};

// Where the kubelet client module is looked for: GPUDOCTOR_KUBELET_MODULE where it is set, else
// lib/gpudoctor/gpudoctor-kubelet.so beside the program's bin/ (../lib/gpudoctor from its
// directory: installed, /usr/bin and /usr/lib/gpudoctor; built, build/PRESET/src and
// build/PRESET/lib/gpudoctor); "" where the program's own path is not known.
std::string kubelet_module_path();

// One List call on a fresh connection: every device of every container, or an error that says
// what went wrong ("kubelet pod-resources at PATH: ..."). For tests and one-off use; the watcher
// keeps its connection.
Result<std::vector<PodDevice>> list_pod_devices(const std::string& socket,
                                                std::chrono::milliseconds deadline);

class PodResourcesWatcher {
 public:
  struct Options {
    std::string socket = kDefaultKubeletSocket;
    std::chrono::milliseconds deadline{1000};  // per List call
    std::chrono::milliseconds refresh{5000};   // between calls
    // How long the last answer stands in when the kubelet stops answering (then: none).
    std::chrono::milliseconds keep_last{30000};
  };
  // What the kubelet said last. `generation` changes whenever `devices` does.
  struct Snapshot {
    uint64_t generation = 0;
    std::vector<PodDevice> devices;
  };

  // Starts the refresh thread (with SIGINT, SIGTERM and SIGPIPE blocked), which asks at once.
  explicit PodResourcesWatcher(Options o);
  // Cancels a call in flight and joins the thread.
  ~PodResourcesWatcher();
  PodResourcesWatcher(const PodResourcesWatcher&) = delete;
  PodResourcesWatcher& operator=(const PodResourcesWatcher&) = delete;

  // The latest answer. Until the first call has ended, waits for it (at most the deadline and a
  // little more), so a one-shot `status` sees the kubelet's answer in its first frame.
  std::shared_ptr<const Snapshot> latest();
  // Problems, each kind said once: permission, no answer, refused, not a kubelet.
  std::vector<std::string> take_notes();
  // List calls made so far (tests).
  uint64_t calls() const;

 private:
  struct Impl;
  void run();
  void refresh_once();
  void note_once(const std::string& kind, const std::string& text);
  void publish(std::vector<PodDevice> devices);

  Options o_;
  std::unique_ptr<Impl> impl_;  // the module's client: made by the refresh thread (under mu_)
  mutable std::mutex mu_;
  std::condition_variable wake_, first_;
  bool stop_ = false, first_done_ = false;
  std::shared_ptr<const Snapshot> latest_ = std::make_shared<Snapshot>();
  std::chrono::steady_clock::time_point last_answer_{};
  std::vector<std::string> notes_, said_;
  uint64_t calls_ = 0;
  std::thread thread_;
};

}  // namespace gpudoctor::host
