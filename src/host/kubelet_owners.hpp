// The kubelet's allocations as owners (docs/owners.md): which GPU each device id of the
// pod-resources answer names (GPU UUID, MIG UUID, "MIG-GPU-<uuid>/gi/ci", index, "index:mig",
// with time-slicing's "::N" replica suffix), and the merge with the owners the cgroups give: a pod
// that the cgroups know by UID and the kubelet by name becomes one owner, and a pod that holds a
// GPU with no process on it becomes that GPU's owner. Pure: no gRPC, no I/O.
// Thread-safety: a KubeletOwners is used by one thread (the sampling loop).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/device.hpp"
#include "host/pod_resources.hpp"

namespace gpudoctor::host {

// What a device id names: a GPU by UUID, a MIG device by UUID, or a GPU by NVML index.
struct DeviceRef {
  enum class Kind { kGpuUuid, kMigUuid, kIndex };
  Kind kind = Kind::kGpuUuid;
  std::string uuid;    // kGpuUuid, kMigUuid
  unsigned index = 0;  // kIndex (a MIG device by index: its GPU's)
};
// nullopt when the id names no NVIDIA GPU (another device plugin's devices). Indices count only
// under nvidia.com/ resources.
std::optional<DeviceRef> parse_device_id(std::string_view resource, std::string_view id);

// The NVML index of the GPU a MIG device (by UUID) is part of; nullopt when unknown.
using MigLookup = std::function<std::optional<unsigned>(const std::string& mig_uuid)>;

class KubeletOwners {
 public:
  // Maps a new answer onto the GPUs (called when the answer changed, not per sample). MIG UUIDs
  // are looked up once each.
  void set_devices(const std::vector<PodDevice>& devices, const std::vector<DeviceInfo>& gpus,
                   const MigLookup& mig);
  // Adds the kubelet's side to a frame whose process owners are filled in: pods known by UID get
  // their name, namespace and (where one container holds the GPU) container name; pods holding
  // a GPU with no process of theirs on it are added. Devices with skip[i] are left alone.
  void merge(Frame& frame, const std::vector<bool>& skip);

  // For tests: the pod (namespace, name) paired with a pod UID, if any.
  std::optional<std::pair<std::string, std::string>> pod_of_uid(const std::string& uid) const;

 private:
  struct Holder {
    std::string pod, pod_namespace, container;
    bool operator==(const Holder&) const = default;
  };
  using PodKey = std::pair<std::string, std::string>;  // namespace, name

  std::vector<std::vector<Holder>> by_gpu_;  // per position in the frame
  std::map<std::string, PodKey> paired_;     // pod UID -> pod, from GPUs where that is clear
  std::map<std::string, unsigned> mig_parent_;
};

}  // namespace gpudoctor::host
