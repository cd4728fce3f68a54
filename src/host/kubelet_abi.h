// The kubelet client module's interface (C): the one way gpudoctor reaches gRPC. The module,
// gpudoctor-kubelet.so (host/kubelet_module.cpp), holds gRPC, protobuf and the pod-resources
// messages; the program loads it (host/pod_resources.cpp) only where a kubelet's socket is there
// to be asked, so that no other run pays for loading those libraries (about 60 shared objects:
// 8-9 ms of every start on the 2-core VM, bench/RESULTS.md).
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Raise it with every change below (a type, a function, what a call promises): a long-running
// program loads the module late (an upgrade may have replaced it meanwhile) and refuses one whose
// number is not its own.
#define GD_KUBELET_ABI 1

#ifdef __cplusplus
#define GD_KUBELET_NOEXCEPT noexcept
#else
#define GD_KUBELET_NOEXCEPT
#endif

// One device the kubelet gave to one container (strings in UTF-8, never NULL).
typedef struct gd_kubelet_device {
  const char* resource;
  const char* device_id;
  const char* pod;
  const char* pod_namespace;
  const char* container;
} gd_kubelet_device;

// A List call's end: ok and the devices, or what went wrong. kind: "timeout", "unavailable",
// "unimplemented", "permission", "cancelled" or "error"; words: what to tell a user.
typedef struct gd_kubelet_answer {
  int ok;
  const char* kind;
  const char* words;
  size_t count;
  const gd_kubelet_device* devices;
} gd_kubelet_answer;

typedef struct gd_kubelet gd_kubelet;

// GD_KUBELET_ABI of the module.
unsigned gd_kubelet_abi(void) GD_KUBELET_NOEXCEPT;
// A client of the pod-resources API on a unix socket (no connection yet); NULL only when out of
// memory. No function throws.
gd_kubelet* gd_kubelet_open(const char* socket) GD_KUBELET_NOEXCEPT;
// One List call, within deadline_ms. The answer is the client's until its next call or close.
// A failed call drops the connection: the next call makes a fresh one.
const gd_kubelet_answer* gd_kubelet_list(gd_kubelet* client,
                                         long long deadline_ms) GD_KUBELET_NOEXCEPT;
// From any thread: a call in flight ends as "cancelled", and so does every later one.
void gd_kubelet_cancel(gd_kubelet* client) GD_KUBELET_NOEXCEPT;
void gd_kubelet_close(gd_kubelet* client) GD_KUBELET_NOEXCEPT;

#ifdef __cplusplus
}
#endif
