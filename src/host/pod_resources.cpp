#include "host/pod_resources.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <type_traits>

#include <fmt/format.h>

#include "core/parallel.hpp"
#include "host/kubelet_abi.h"

namespace gpudoctor::host {

// The kubelet client module (host/kubelet_abi.h): loaded the first time a kubelet's socket is
// there to be asked, and kept. A load that fails is tried again at the next refresh (a package
// upgrade half done, no file descriptors left), its note said once.
struct KubeletModule {
  unsigned (*abi)() = nullptr;
  gd_kubelet* (*open)(const char*) = nullptr;
  const gd_kubelet_answer* (*list)(gd_kubelet*, long long) = nullptr;
  void (*cancel)(gd_kubelet*) = nullptr;
  void (*close)(gd_kubelet*) = nullptr;
};

namespace {

using std::chrono::milliseconds;

// The module, or nullptr and why not.
const KubeletModule* load_module(std::string* error) {
  static std::mutex mu;
  static std::unique_ptr<const KubeletModule> loaded;
  const std::lock_guard lock(mu);
  if (loaded) return loaded.get();
  const std::string path = kubelet_module_path();
  if (path.empty()) {
    *error =
        "the kubelet client module cannot be found: the program's own path is not known (no "
        "/proc/self/exe); name it with GPUDOCTOR_KUBELET_MODULE";
    return nullptr;
  }
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = ::dlerror();
    *error = fmt::format(
        "the kubelet client module {} cannot be loaded ({}; GPUDOCTOR_KUBELET_MODULE names "
        "another)",
        path, why ? why : "unknown error");
    return nullptr;
  }
  auto m = std::make_unique<KubeletModule>();
  std::string missing;
  auto sym = [&](auto& f, const char* name) {
    f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(::dlsym(h, name));
    if (f == nullptr && missing.empty()) missing = name;
  };
  sym(m->abi, "gd_kubelet_abi");
  sym(m->open, "gd_kubelet_open");
  sym(m->list, "gd_kubelet_list");
  sym(m->cancel, "gd_kubelet_cancel");
  sym(m->close, "gd_kubelet_close");
  const unsigned abi = missing.empty() ? m->abi() : 0;
  if (!missing.empty())
    *error = fmt::format("the kubelet client module {} has no {}", path, missing);
  else if (abi != GD_KUBELET_ABI)
    *error = fmt::format(
        "the kubelet client module {} is of another build (interface {}, this program's {})", path,
        abi, GD_KUBELET_ABI);
  if (!missing.empty() || abi != GD_KUBELET_ABI) {
    ::dlclose(h);
    return nullptr;
  }
  loaded = std::move(m);  // (the handle is never closed: the module stays while the program runs)
  return loaded.get();
}

// The devices of a successful answer.
std::vector<PodDevice> devices_of(const gd_kubelet_answer& a) {
  std::vector<PodDevice> out;
  out.reserve(a.count);
  for (size_t i = 0; i < a.count; ++i) {
    const gd_kubelet_device& d = a.devices[i];
    out.push_back({d.resource, d.device_id, d.pod, d.pod_namespace, d.container});
  }
  return out;
}

// Why the socket cannot be used before any call: "" when it can be tried.
std::string socket_problem(const std::string& path, bool* missing) {
  struct stat st {};
  *missing = false;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      *missing = true;
      return "";
    }
    if (errno == EACCES) return "permission";
    return fmt::format("cannot be read ({})", std::strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode)) return "not a socket";
  // connect() on a unix socket needs write permission on it.
  if (::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) != 0 && errno == EACCES)
    return "permission";
  return "";
}

std::string subject(const std::string& socket) {
  return fmt::format("the kubelet's pod-resources socket {}", socket);
}

constexpr const char* kConsequence =
    "; pods are known by UID only, and GPUs a pod holds with no process on them are not known";

}  // namespace

std::string kubelet_module_path() {
  if (const char* env = std::getenv("GPUDOCTOR_KUBELET_MODULE"); env != nullptr && *env != '\0')
    return env;
  // Beside the program: bin/gpudoctor and lib/gpudoctor/ (installed, and in the build tree:
  // build/PRESET/src/gpudoctor, build/PRESET/tests/unit_tests and build/PRESET/lib/gpudoctor).
  // The program's path: /proc/self/exe, or where there is no /proc (a chroot) the path it was
  // started by (the kernel's AT_EXECFN), made absolute.
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string path = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
  if (path.empty()) {
    const auto* started = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
    char real[PATH_MAX];
    if (started != nullptr && ::realpath(started, real) != nullptr) path = real;
  }
  // Never a guess relative to the working directory.
  if (path.empty() || path.front() != '/') return "";
  return path.substr(0, path.rfind('/')) + "/../lib/gpudoctor/gpudoctor-kubelet.so";
}

Result<std::vector<PodDevice>> list_pod_devices(const std::string& socket, milliseconds deadline) {
  std::string error;
  const KubeletModule* mp = load_module(&error);
  if (mp == nullptr) return failure(fmt::format("{}: {}", subject(socket), error));
  const KubeletModule& m = *mp;
  gd_kubelet* c = m.open(socket.c_str());
  if (c == nullptr) return failure(fmt::format("{}: out of memory", subject(socket)));
  const gd_kubelet_answer* a = m.list(c, deadline.count());
  Result<std::vector<PodDevice>> out =
      a->ok ? Result<std::vector<PodDevice>>(devices_of(*a))
            : failure(fmt::format("{}: {}", subject(socket), a->words));
  m.close(c);
  return out;
}

struct PodResourcesWatcher::Impl {
  const KubeletModule* module = nullptr;  // the module the client is of (set with it)
  gd_kubelet* client = nullptr;           // made by the refresh thread, closed by the destructor
};

PodResourcesWatcher::PodResourcesWatcher(Options o)
    : o_(std::move(o)), impl_(std::make_unique<Impl>()) {
  // The thread, and the threads gRPC starts from it, leave Ctrl-C to the main thread.
  const WorkerSignals mask;
  thread_ = std::thread([this] { run(); });
}

PodResourcesWatcher::~PodResourcesWatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    if (impl_->client != nullptr) impl_->module->cancel(impl_->client);  // a call in flight ends
  }
  wake_.notify_all();
  first_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (impl_->client != nullptr) impl_->module->close(impl_->client);
}

void PodResourcesWatcher::run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    refresh_once();
    lock.lock();
    if (!first_done_) {
      first_done_ = true;
      first_.notify_all();
    }
    wake_.wait_for(lock, o_.refresh, [&] { return stop_; });
  }
}

void PodResourcesWatcher::refresh_once() {
  const auto now = std::chrono::steady_clock::now();
  bool missing = false;
  const std::string problem = socket_problem(o_.socket, &missing);
  if (missing || !problem.empty()) {
    {
      // A fresh connection once the socket is there again.
      std::lock_guard lock(mu_);
      if (impl_->client != nullptr) impl_->module->close(std::exchange(impl_->client, nullptr));
    }
    if (problem == "permission")
      note_once("permission",
                fmt::format("{}: permission denied (connecting needs write permission on it: "
                            "root, or a group it is writable by; docs/owners.md){}",
                            subject(o_.socket), kConsequence));
    else if (!problem.empty())
      note_once("socket", fmt::format("{}: {}{}", subject(o_.socket), problem, kConsequence));
    publish({});  // no kubelet here (missing: said nowhere), or none that can be asked
    return;
  }
  // A socket to ask: the module that asks it, loaded now (once).
  std::string error;
  const KubeletModule* mp = load_module(&error);
  if (mp == nullptr) {
    note_once("module", fmt::format("{}: {}{}", subject(o_.socket), error, kConsequence));
    publish({});
    return;
  }
  const KubeletModule& m = *mp;
  gd_kubelet* client = nullptr;
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    if (impl_->client == nullptr) impl_->client = m.open(o_.socket.c_str()), impl_->module = &m;
    client = impl_->client;
    if (client != nullptr) ++calls_;
  }
  if (client == nullptr) {
    note_once("memory", fmt::format("{}: out of memory{}", subject(o_.socket), kConsequence));
    publish({});
    return;
  }
  const gd_kubelet_answer* a = m.list(client, o_.deadline.count());
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
  }
  if (a->ok) {
    last_answer_ = now;
    publish(devices_of(*a));
    return;
  }
  note_once(a->kind, fmt::format("{}: {}{}", subject(o_.socket), a->words, kConsequence));
  // The last answer stands in for a while (allocations change rarely), then nothing does.
  if (last_answer_ == std::chrono::steady_clock::time_point{} || now - last_answer_ > o_.keep_last)
    publish({});
}

void PodResourcesWatcher::publish(std::vector<PodDevice> devices) {
  std::lock_guard lock(mu_);
  if (devices == latest_->devices) return;
  auto next = std::make_shared<Snapshot>();
  next->generation = latest_->generation + 1;
  next->devices = std::move(devices);
  latest_ = std::move(next);
}

void PodResourcesWatcher::note_once(const std::string& kind, const std::string& text) {
  std::lock_guard lock(mu_);
  if (std::find(said_.begin(), said_.end(), kind) != said_.end()) return;
  said_.push_back(kind);
  notes_.push_back(text);
}

std::shared_ptr<const PodResourcesWatcher::Snapshot> PodResourcesWatcher::latest() {
  std::unique_lock lock(mu_);
  if (!first_done_)
    first_.wait_for(lock, o_.deadline + milliseconds(500), [&] { return first_done_ || stop_; });
  return latest_;
}

std::vector<std::string> PodResourcesWatcher::take_notes() {
  std::lock_guard lock(mu_);
  return std::exchange(notes_, {});
}

uint64_t PodResourcesWatcher::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

}  // namespace gpudoctor::host
