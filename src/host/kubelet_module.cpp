// gpudoctor-kubelet.so: the kubelet's pod-resources API (v1, gRPC on a unix socket) behind the C
// interface of host/kubelet_abi.h. Built as a module of its own and loaded by the program only
// where a kubelet's socket is there (host/pod_resources.cpp): gRPC stays in here.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "host/kubelet_abi.h"
#include "podresources_v1.grpc.pb.h"

namespace {

// Answers of a large node (hundreds of pods, each with its CPU ids) stay far below this.
constexpr int kMaxAnswerBytes = 16 << 20;

struct Device {
  std::string resource, device_id, pod, pod_namespace, container;
};

// A kind (each said once by the program) and the words for a failed call.
std::pair<std::string, std::string> describe(const grpc::Status& st, long long deadline_ms) {
  switch (st.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return {"timeout", fmt::format("no answer within {} ms", deadline_ms)};
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

}  // namespace

struct gd_kubelet {
  std::string socket;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
  std::mutex mu;                             // guards in_flight and cancelled
  grpc::ClientContext* in_flight = nullptr;  // the call in progress
  bool cancelled = false;
  // The last answer and what its pointers point into.
  std::string kind, words;
  std::vector<Device> devices;
  std::vector<gd_kubelet_device> views;
  gd_kubelet_answer answer{};

  // A failed call's answer (k and w: text that outlives the client, or its own strings). A fresh
  // connection next time, rather than the channel's own reconnection back-off.
  const gd_kubelet_answer* failed(const char* k, const char* w) noexcept {
    stub.reset();
    channel.reset();
    devices.clear(), views.clear();
    answer = {0, k, w, 0, nullptr};
    return &answer;
  }
  const gd_kubelet_answer* fail(std::string k, std::string w) {
    kind = std::move(k), words = std::move(w);
    return failed(kind.c_str(), words.c_str());
  }
};

extern "C" {

unsigned gd_kubelet_abi(void) noexcept {
  return GD_KUBELET_ABI;
}

gd_kubelet* gd_kubelet_open(const char* socket) noexcept {
  try {
    auto c = std::make_unique<gd_kubelet>();
    c->socket = socket;
    return c.release();
  } catch (const std::exception&) {  // std::bad_alloc
    return nullptr;
  }
}

const gd_kubelet_answer* gd_kubelet_list(gd_kubelet* c, long long deadline_ms) noexcept {
  try {
    if (!c->stub) {
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(kMaxAnswerBytes);
      args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);  // one try per call: the next refresh is the retry
      c->channel =
          grpc::CreateCustomChannel("unix:" + c->socket, grpc::InsecureChannelCredentials(), args);
      c->stub = v1::PodResourcesLister::NewStub(c->channel);
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
    {
      const std::lock_guard lock(c->mu);
      if (c->cancelled) return c->fail("cancelled", "call cancelled");
      c->in_flight = &ctx;
    }
    // Not in flight once the call has ended, however it ends (before ctx goes).
    struct Landed {
      gd_kubelet* c;
      ~Landed() {
        const std::lock_guard lock(c->mu);
        c->in_flight = nullptr;
      }
    };
    v1::ListPodResourcesResponse reply;
    grpc::Status st;
    {
      const Landed landed{c};
      st = c->stub->List(&ctx, v1::ListPodResourcesRequest{}, &reply);
    }
    if (!st.ok()) {
      auto [kind, words] = describe(st, deadline_ms);
      return c->fail(std::move(kind), std::move(words));
    }
    c->devices.clear();
    for (const auto& pod : reply.pod_resources())
      for (const auto& ct : pod.containers())
        for (const auto& d : ct.devices())
          for (const auto& id : d.device_ids())
            c->devices.push_back({d.resource_name(), id, pod.name(), pod.namespace_(), ct.name()});
    c->views.clear();
    for (const Device& d : c->devices)  // (pointers taken once every string is in place)
      c->views.push_back({d.resource.c_str(), d.device_id.c_str(), d.pod.c_str(),
                          d.pod_namespace.c_str(), d.container.c_str()});
    c->kind.clear(), c->words.clear();
    c->answer = {1, c->kind.c_str(), c->words.c_str(), c->views.size(), c->views.data()};
    return &c->answer;
  } catch (const std::exception&) {  // std::bad_alloc: a failed call, in words that need no room
    return c->failed("error", "the call failed in gpudoctor (out of memory)");
  }
}

void gd_kubelet_cancel(gd_kubelet* c) noexcept {
  const std::lock_guard lock(c->mu);
  c->cancelled = true;
  if (c->in_flight != nullptr) c->in_flight->TryCancel();
}

void gd_kubelet_close(gd_kubelet* c) noexcept {
  delete c;
}

}  // extern "C"
