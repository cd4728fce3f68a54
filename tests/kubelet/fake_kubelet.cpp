#include "fake_kubelet.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include "podresources_full.pb.h"

namespace fake_kubelet {
namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "fake_kubelet: %s\n", what.c_str());
  std::abort();
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) die("socket path too long: " + path);
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

// One List call: read the (empty) request, then answer as the server's mode says.
class Reactor final : public grpc::ServerGenericBidiReactor {
 public:
  Reactor(Server* s, grpc::GenericCallbackServerContext* ctx) : s_(s) {
    if (ctx->method() != "/v1.PodResourcesLister/List") {
      finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown method " + ctx->method()));
      return;
    }
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      finish(grpc::Status(grpc::StatusCode::INTERNAL, "no request"));
      return;
    }
    s_->count_call();
    switch (s_->mode()) {
      case Mode::kHang:
        return;  // OnCancel finishes it when the caller gives up
      case Mode::kGarbage:
        reply(
            std::string("\x0a\x05"
                        "ab",
                        4));  // a pod of 5 bytes, cut after 2
        return;
      default:
        reply(s_->answer());
    }
  }
  void OnCancel() override { finish(grpc::Status::CANCELLED); }
  void OnDone() override { delete this; }

 private:
  void reply(const std::string& bytes) {
    if (finished_) return;
    finished_ = true;
    grpc::Slice slice(bytes);
    response_ = grpc::ByteBuffer(&slice, 1);
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void finish(const grpc::Status& st) {
    if (finished_.exchange(true)) return;
    Finish(st);
  }

  Server* s_;
  grpc::ByteBuffer request_, response_;
  std::atomic<bool> finished_{false};
};

}  // namespace

struct Server::Service final : grpc::CallbackGenericService {
  explicit Service(Server* s) : server(s) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new Reactor(server, ctx);
  }
  Server* server;
};

std::string list_answer(const std::vector<Pod>& pods) {
  kubelet_full::v1::ListPodResourcesResponse r;
  int64_t cpu = 0;
  for (const auto& p : pods) {
    auto* pr = r.add_pod_resources();
    pr->set_name(p.name);
    pr->set_namespace_(p.pod_namespace);
    for (const auto& c : p.containers) {
      auto* cr = pr->add_containers();
      cr->set_name(c.name);
      // What a kubelet adds with the CPU and memory managers and DRA: not read by gpudoctor.
      cr->add_cpu_ids(cpu++);
      cr->add_cpu_ids(cpu++);
      auto* mem = cr->add_memory();
      mem->set_memory_type("memory");
      mem->set_size(uint64_t{8} << 30);
      mem->mutable_topology()->add_nodes()->set_id(0);
      for (const auto& d : c.devices) {
        auto* cd = cr->add_devices();
        cd->set_resource_name(d.resource);
        for (const auto& id : d.ids) cd->add_device_ids(id);
        cd->mutable_topology()->add_nodes()->set_id(1);
      }
      auto* dra = cr->add_dynamic_resources();
      dra->set_claim_name(c.name + "-claim");
      dra->set_claim_namespace(p.pod_namespace);
      auto* claim = dra->add_claim_resources();
      claim->set_driver_name("nic.example.com");
      claim->set_pool_name("node-pool");
      claim->set_device_name("nic-0");
      claim->add_cdi_devices()->set_name("example.com/nic=nic-0");
    }
  }
  return r.SerializeAsString();
}

Server::Server(const std::string& socket, Mode mode, std::vector<Pod> pods)
    : socket_(socket), mode_(mode), pods_(std::move(pods)) {
  ::unlink(socket_.c_str());
  if (mode_ == Mode::kNotGrpc) {
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_un a = address_of(socket_);
    if (listen_fd_ < 0 ||
        ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_fd_, 8) != 0)
      die("cannot listen on " + socket_ + ": " + std::strerror(errno));
    junk_ = std::thread([this] { serve_junk(); });
    return;
  }
  service_ = std::make_unique<Service>(this);
  grpc::ServerBuilder b;
  b.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
  b.RegisterCallbackGenericService(service_.get());
  server_ = b.BuildAndStart();
  if (!server_) die("gRPC cannot listen on " + socket_);
}

Server::~Server() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  stop_ = true;
  if (junk_.joinable()) junk_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  ::unlink(socket_.c_str());
}

void Server::set_pods(std::vector<Pod> pods) {
  std::lock_guard lock(mu_);
  pods_ = std::move(pods);
}

std::string Server::answer() {
  std::lock_guard lock(mu_);
  return list_answer(pods_);
}

void Server::serve_junk() {
  static const char kJunk[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++calls_;
    (void)!::write(fd, kJunk, sizeof kJunk - 1);
    ::close(fd);
  }
}

void make_dead_socket(const std::string& path) {
  ::unlink(path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_un a = address_of(path);
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
    die("cannot bind " + path + ": " + std::strerror(errno));
  ::close(fd);  // the file stays; nobody listens
}

}  // namespace fake_kubelet
