// A stand-in kubelet for the tests: a real gRPC server (Debian's grpc++) on a unix socket that
// answers the pod-resources List call (/v1.PodResourcesLister/List) as a kubelet does, with the
// fields gpudoctor does not read (CPU ids, memory, NUMA topology, DRA claims) filled in; or one
// that never answers, answers bytes that are no List answer, or is no gRPC server at all.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace grpc {
class Server;
}

namespace fake_kubelet {

struct Devices {
  std::string resource;  // "nvidia.com/gpu"
  std::vector<std::string> ids;
};
struct Container {
  std::string name;
  std::vector<Devices> devices;
};
struct Pod {
  std::string name, pod_namespace;
  std::vector<Container> containers;
};

enum class Mode {
  kAnswer,   // the pods, as a kubelet sends them
  kHang,     // accepts the call and never answers (until the caller gives up)
  kGarbage,  // answers bytes that do not parse as a List answer
  kNotGrpc,  // a plain socket server that writes junk and hangs up
};

// The serialized List answer for these pods (what a kubelet writes).
std::string list_answer(const std::vector<Pod>& pods);

class Server {
 public:
  // Serves on `socket` (a path; created, and removed again by the destructor). Aborts the test
  // program with a message when it cannot listen.
  Server(const std::string& socket, Mode mode, std::vector<Pod> pods = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void set_pods(std::vector<Pod> pods);
  int calls() const { return calls_.load(); }

  // Used by the reactor.
  std::string answer();
  Mode mode() const { return mode_; }
  void count_call() { ++calls_; }

 private:
  void serve_junk();

  std::string socket_;
  Mode mode_;
  std::mutex mu_;
  std::vector<Pod> pods_;
  std::atomic<int> calls_{0};
  std::unique_ptr<grpc::Server> server_;
  struct Service;
  std::unique_ptr<Service> service_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread junk_;
};

// A socket file nobody listens on (bound, then closed): connecting is refused.
void make_dead_socket(const std::string& path);

}  // namespace fake_kubelet
