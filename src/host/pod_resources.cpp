#include "host/pod_resources.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include "core/parallel.hpp"
#include "podresources_v1.grpc.pb.h"

namespace gpudoctor::host {
namespace {

using std::chrono::milliseconds;

// Answers of a large node (hundreds of pods, each with its CPU ids) stay far below this.
constexpr int kMaxAnswerBytes = 16 << 20;

std::shared_ptr<grpc::Channel> make_channel(const std::string& socket) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxAnswerBytes);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);  // one try per call: the next refresh is the retry
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
}

std::vector<PodDevice> devices_of(const v1::ListPodResourcesResponse& answer) {
  std::vector<PodDevice> out;
  for (const auto& pod : answer.pod_resources())
    for (const auto& c : pod.containers())
      for (const auto& d : c.devices())
        for (const auto& id : d.device_ids())
          out.push_back({d.resource_name(), id, pod.name(), pod.namespace_(), c.name()});
  return out;
}

// A kind (each said once) and the words for a failed call.
std::pair<std::string, std::string> describe(const grpc::Status& st, milliseconds deadline) {
  switch (st.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return {"timeout", fmt::format("no answer within {} ms", deadline.count())};
    case grpc::StatusCode::UNAVAILABLE:
      return {"unavailable", fmt::format("cannot be reached ({})", st.error_message())};
    case grpc::StatusCode::UNIMPLEMENTED:
      // gRPC's client says so too when the answer does not parse as the message.
      if (st.error_message().find("No message returned") == std::string::npos)
        return {"unimplemented",
                fmt::format("does not serve the v1 List call ({}; a kubelet before Kubernetes "
                            "1.20 has only v1alpha1)",
                            st.error_message())};
      break;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return {"permission", fmt::format("refused the call ({})", st.error_message())};
    case grpc::StatusCode::CANCELLED:
      return {"cancelled", "call cancelled"};
    default:
      break;
  }
  return {"error", fmt::format("answered with an error or not as a kubelet (gRPC status {}: {})",
                               static_cast<int>(st.error_code()), st.error_message())};
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

Result<std::vector<PodDevice>> list_pod_devices(const std::string& socket, milliseconds deadline) {
  auto stub = v1::PodResourcesLister::NewStub(make_channel(socket));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  v1::ListPodResourcesResponse answer;
  const grpc::Status st = stub->List(&ctx, v1::ListPodResourcesRequest{}, &answer);
  if (!st.ok())
    return failure(fmt::format("{}: {}", subject(socket), describe(st, deadline).second));
  return devices_of(answer);
}

struct PodResourcesWatcher::Impl {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
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
    if (in_flight_) in_flight_->TryCancel();
  }
  wake_.notify_all();
  first_.notify_all();
  if (thread_.joinable()) thread_.join();
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
    impl_->stub.reset();
    impl_->channel.reset();
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
  if (!impl_->stub) {
    impl_->channel = make_channel(o_.socket);
    impl_->stub = v1::PodResourcesLister::NewStub(impl_->channel);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + o_.deadline);
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    in_flight_ = &ctx;
    ++calls_;
  }
  v1::ListPodResourcesResponse answer;
  const grpc::Status st = impl_->stub->List(&ctx, v1::ListPodResourcesRequest{}, &answer);
  {
    std::lock_guard lock(mu_);
    in_flight_ = nullptr;
    if (stop_) return;
  }
  if (st.ok()) {
    last_answer_ = now;
    publish(devices_of(answer));
    return;
  }
  // A fresh connection next time, rather than the channel's own reconnection back-off.
  impl_->stub.reset();
  impl_->channel.reset();
  const auto [kind, words] = describe(st, o_.deadline);
  note_once(kind, fmt::format("{}: {}{}", subject(o_.socket), words, kConsequence));
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
