#include "sources/nvml/nvml_source.hpp"

#include <pthread.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/parallel.hpp"
#include "sources/nvml/nvml_device.hpp"

namespace gpudoctor {
namespace {

double monotonic_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string cuda_version_text(int v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

}  // namespace

// One thread per GPU, all sharing the source's mutex. The source asks for generation g (with the
// time of the request); the worker samples and publishes its result under the mutex.
struct NvmlSource::Worker {
  std::unique_ptr<NvmlDevice> device;
  std::thread thread;
  std::condition_variable wake;  // source -> worker
  uint64_t requested = 0;        // generation asked for
  uint64_t completed = 0;        // generation of `result`
  double request_time_s = 0;
  DeviceSample result;
  bool stop = false;

  void run(std::mutex& mu, std::condition_variable& done) {
    std::unique_lock lock(mu);
    while (true) {
      wake.wait(lock, [&] { return stop || requested != completed; });
      if (stop) return;
      const uint64_t gen = requested;
      const double t = request_time_s;
      lock.unlock();
      DeviceSample s = device->sample(t);
      lock.lock();
      result = std::move(s);
      completed = gen;
      done.notify_all();
    }
  }
};

Result<std::unique_ptr<NvmlSource>> NvmlSource::open(const SourceOptions& options) {
  auto lib = NvmlLibrary::open();
  if (!lib) return lib.error();
  std::unique_ptr<NvmlSource> src(new NvmlSource());
  src->lib_ = std::move(lib.value());
  src->options_ = options;
  const NvmlApi& a = src->lib_->api();

  const nvmlReturn_t ir = a.init();
  if (ir != NVML_SUCCESS) {
    if (ir == NVML_ERROR_DRIVER_NOT_LOADED)
      return failure("NVIDIA driver is not loaded (NVML: " + nvml_error_text(a, ir) +
                     "); is the kernel module running? try `nvidia-smi`");
    if (ir == NVML_ERROR_NO_PERMISSION)
      return failure("no permission to use NVML (" + nvml_error_text(a, ir) +
                     "); check access to /dev/nvidia*");
    return failure("NVML failed to initialise: " + nvml_error_text(a, ir));
  }
  src->initialised_ = true;

  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (a.driver_version && a.driver_version(buf, sizeof buf) == NVML_SUCCESS)
    src->system_.driver_version = buf;
  std::fill(std::begin(buf), std::end(buf), '\0');
  if (a.nvml_version && a.nvml_version(buf, sizeof buf) == NVML_SUCCESS)
    src->system_.nvml_version = buf;
  int cuda = 0;
  if (a.cuda_driver_version && a.cuda_driver_version(&cuda) == NVML_SUCCESS)
    src->system_.cuda_driver_version = cuda_version_text(cuda);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) src->system_.hostname = host;

  unsigned count = 0;
  const nvmlReturn_t cr = a.device_count(&count);
  if (cr != NVML_SUCCESS) return failure("NVML could not count GPUs: " + nvml_error_text(a, cr));
  for (unsigned g : options.gpus)
    if (g >= count)
      return usage_error(fmt::format("GPU {} does not exist: this machine has {} GPU{} (0-{})", g,
                                     count, count == 1 ? "" : "s", count == 0 ? 0 : count - 1));

  for (unsigned i = 0; i < count; ++i) {
    if (!options.gpus.empty() &&
        std::find(options.gpus.begin(), options.gpus.end(), i) == options.gpus.end())
      continue;
    nvmlDevice_t h = nullptr;
    const nvmlReturn_t hr = a.handle_by_index(i, &h);
    auto w = std::make_unique<Worker>();
    w->device = std::make_unique<NvmlDevice>(a, h, i);
    if (hr == NVML_SUCCESS) {
      w->device->probe();
    } else {
      // A GPU NVML can number but not open (fallen off the bus, or no permission): keep it
      // visible as lost rather than renumbering the others.
      fmt::print(stderr, "gpudoctor: GPU {}: {}\n", i, nvml_error_text(a, hr));
      w->device->mark_lost();
    }
    src->infos_.push_back(w->device->info());
    src->workers_.push_back(std::move(w));
  }
  src->start_s_ = monotonic_s();
  // Workers inherit a mask without SIGINT/SIGTERM/SIGPIPE: Ctrl-C is the main thread's business
  // and must not interrupt an NVML call in a worker.
  {
    const WorkerSignals mask;
    for (auto& w : src->workers_) {
      Worker* raw = w.get();
      raw->thread = std::thread([raw, sync = src->sync_] { raw->run(sync->mu, sync->done); });
    }
  }
  return src;
}

NvmlSource::~NvmlSource() {
  bool stuck = false;
  {
    std::lock_guard lock(sync_->mu);
    for (auto& w : workers_) {
      w->stop = true;
      w->wake.notify_all();
      stuck = stuck || w->completed != w->requested;
    }
  }
  for (auto& w : workers_) {
    if (!w->thread.joinable()) continue;
    bool busy = false;
    {
      std::lock_guard lock(sync_->mu);
      busy = w->completed != w->requested;
    }
    if (busy) {
      // Still inside an NVML call that may never return: do not wait for it. The worker object,
      // this source's mutex and the library stay alive for the rest of the process.
      w->thread.detach();
      (void)w.release();
    } else {
      w->thread.join();
    }
  }
  if (stuck) {
    lib_->leak_on_close();
    (void)lib_.release();
    return;
  }
  workers_.clear();
  if (initialised_) lib_->api().shutdown();
}

Frame NvmlSource::sample() {
  Frame f;
  f.time_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const double now = monotonic_s();
  f.time_s = now - start_s_;
  f.devices.resize(workers_.size());

  std::unique_lock lock(sync_->mu);
  std::vector<uint64_t> wanted(workers_.size(), 0);
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker& w = *workers_[i];
    if (w.requested != w.completed) continue;  // still busy with an older request: skip it
    w.request_time_s = f.time_s;
    wanted[i] = ++w.requested;
    w.wake.notify_one();
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.call_budget;
  sync_->done.wait_until(lock, deadline, [&] {
    for (size_t i = 0; i < workers_.size(); ++i)
      if (wanted[i] != 0 && workers_[i]->completed != wanted[i]) return false;
    return true;
  });
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker& w = *workers_[i];
    if (wanted[i] != 0 && w.completed == wanted[i]) {
      f.devices[i] = std::move(w.result);
      w.result = {};
    } else {
      f.devices[i] = w.device->placeholder(NVML_ERROR_TIMEOUT);
    }
  }
  return f;
}

std::vector<DeviceHealth> NvmlSource::read_health() {
  std::vector<DeviceHealth> out(workers_.size());
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker& w = *workers_[i];
    bool busy = false;
    {
      std::lock_guard lock(sync_->mu);
      busy = w.requested != w.completed;
    }
    // Only this thread hands out requests, so an idle worker stays idle while we use its device.
    if (!busy) {
      out[i] = w.device->read_health();
      continue;
    }
    out[i].read = true;
    for (const auto& f : kHealthFields) out[i].*f.member = Reading::error(NVML_ERROR_TIMEOUT);
  }
  return out;
}

std::optional<unsigned> NvmlSource::parent_gpu(const std::string& mig_uuid) {
  const NvmlApi& a = lib_->api();
  if (!a.handle_by_uuid || !a.mig_parent) return std::nullopt;
  nvmlDevice_t mig = nullptr, gpu = nullptr;
  if (a.handle_by_uuid(mig_uuid.c_str(), &mig) != NVML_SUCCESS || !mig) return std::nullopt;
  if (a.mig_parent(mig, &gpu) != NVML_SUCCESS || !gpu) return std::nullopt;
  for (const auto& w : workers_)
    if (w->device->handle() == gpu) return w->device->info().index;
  return std::nullopt;  // a GPU not sampled (--gpus)
}

std::string NvmlSource::description() const {
  return fmt::format("nvml ({})", lib_->path());
}

}  // namespace gpudoctor
