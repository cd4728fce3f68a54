#include "host/kubelet_owners.hpp"

#include <algorithm>
#include <charconv>
#include <set>

namespace gpudoctor::host {
namespace {

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}

bool is_uuid_text(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
  });
}

std::optional<unsigned> to_index(std::string_view s) {
  unsigned v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// A pod the cgroups name by UID only (before the kubelet's names are added).
bool from_cgroup_only(const Owner& o) {
  return o.kind == OwnerKind::kK8sPod && o.pod.empty();
}

}  // namespace

std::optional<DeviceRef> parse_device_id(std::string_view resource, std::string_view id) {
  // Time-slicing and MPS replicas of one device: "<id>::<replica>" (NVIDIA's device plugin).
  if (const size_t p = id.find("::"); p != std::string_view::npos) id = id.substr(0, p);
  DeviceRef r;
  if (starts_with(id, "GPU-") && is_uuid_text(id.substr(4))) {
    r.uuid = std::string(id);
    return r;
  }
  // Drivers before R470 named MIG devices after their GPU: "MIG-GPU-<uuid>/<gi>/<ci>".
  if (starts_with(id, "MIG-GPU-")) {
    std::string_view gpu = id.substr(4);  // "GPU-<uuid>/<gi>/<ci>"
    gpu = gpu.substr(0, gpu.find('/'));
    if (!is_uuid_text(gpu.substr(4))) return std::nullopt;
    r.uuid = std::string(gpu);
    return r;
  }
  if (starts_with(id, "MIG-") && is_uuid_text(id.substr(4))) {
    r.kind = DeviceRef::Kind::kMigUuid;
    r.uuid = std::string(id);
    return r;
  }
  // deviceIDStrategy=index: "<gpu>" or, for a MIG device, "<gpu>:<mig>".
  if (!starts_with(resource, "nvidia.com/")) return std::nullopt;
  const size_t colon = id.find(':');
  const auto gpu = to_index(id.substr(0, colon));
  if (!gpu || (colon != std::string_view::npos && !to_index(id.substr(colon + 1))))
    return std::nullopt;
  r.kind = DeviceRef::Kind::kIndex;
  r.index = *gpu;
  return r;
}

void KubeletOwners::set_devices(const std::vector<PodDevice>& devices,
                                const std::vector<DeviceInfo>& gpus, const MigLookup& mig) {
  by_gpu_.assign(gpus.size(), {});
  std::map<std::string, unsigned> mig_parent;  // only this answer's MIG devices stay known
  for (const auto& pd : devices) {
    const auto ref = parse_device_id(pd.resource, pd.device_id);
    if (!ref) continue;
    std::optional<unsigned> index;
    std::string uuid = ref->uuid;
    switch (ref->kind) {
      case DeviceRef::Kind::kGpuUuid:
        break;
      case DeviceRef::Kind::kIndex:
        index = ref->index;
        break;
      case DeviceRef::Kind::kMigUuid:
        if (auto it = mig_parent_.find(ref->uuid); it != mig_parent_.end())
          index = it->second;
        else if (mig)
          index = mig(ref->uuid);
        if (index) mig_parent[ref->uuid] = *index;
        uuid.clear();
        break;
    }
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (uuid.empty() ? (!index || gpus[i].index != *index) : gpus[i].uuid != uuid) continue;
      Holder h{pd.pod, pd.pod_namespace, pd.container};
      if (std::find(by_gpu_[i].begin(), by_gpu_[i].end(), h) == by_gpu_[i].end())
        by_gpu_[i].push_back(std::move(h));
      break;
    }
  }
  mig_parent_ = std::move(mig_parent);
}

void KubeletOwners::merge(Frame& frame, const std::vector<bool>& skip) {
  const size_t n = std::min(frame.devices.size(), by_gpu_.size());
  const bool any_holder =
      std::any_of(by_gpu_.begin(), by_gpu_.end(), [](const auto& v) { return !v.empty(); });
  if (!any_holder) {
    paired_.clear();
    return;
  }
  auto skipped = [&](size_t i) { return i < skip.size() && skip[i]; };

  // Pair pod UIDs (cgroups) with pods (kubelet) where a GPU leaves no doubt: the kubelet gave it
  // to one pod and one pod's processes run on it, and no other GPU says otherwise.
  std::map<std::string, std::set<PodKey>> pods_of_uid;
  std::map<PodKey, std::set<std::string>> uids_of_pod;
  std::set<std::string> running;
  std::set<PodKey> listed;
  for (size_t i = 0; i < n; ++i) {
    for (const auto& h : by_gpu_[i]) listed.insert({h.pod_namespace, h.pod});
    if (skipped(i)) continue;
    std::set<std::string> uids;
    for (const auto& o : frame.devices[i].owners)
      if (from_cgroup_only(o)) uids.insert(o.id);
    running.insert(uids.begin(), uids.end());
    std::set<PodKey> pods;
    for (const auto& h : by_gpu_[i]) pods.insert({h.pod_namespace, h.pod});
    if (uids.size() != 1 || pods.size() != 1) continue;
    pods_of_uid[*uids.begin()].insert(*pods.begin());
    uids_of_pod[*pods.begin()].insert(*uids.begin());
  }
  for (const auto& [uid, pods] : pods_of_uid) {
    if (pods.size() == 1 && uids_of_pod[*pods.begin()].size() == 1)
      paired_[uid] = *pods.begin();
    else
      paired_.erase(uid);
  }
  // A pairing lasts while its pod runs and is listed, unless a GPU now pairs the pod otherwise.
  std::erase_if(paired_, [&](const auto& kv) {
    const auto it = uids_of_pod.find(kv.second);
    return !running.count(kv.first) || !listed.count(kv.second) ||
           (it != uids_of_pod.end() && !it->second.count(kv.first));
  });
  std::map<PodKey, std::string> uid_of_pod;
  for (const auto& [uid, pod] : paired_) uid_of_pod[pod] = uid;

  for (size_t i = 0; i < n; ++i) {
    if (skipped(i)) continue;
    DeviceSample& d = frame.devices[i];
    const auto& holders = by_gpu_[i];
    // Container ids (cgroups) per pod UID on this GPU, before any is renamed.
    std::map<std::string, std::set<std::string>> container_ids;
    for (const auto& o : d.owners)
      if (from_cgroup_only(o)) container_ids[o.id].insert(o.container);
    auto name = [&](Owner& o) {
      if (!from_cgroup_only(o)) return;
      const auto it = paired_.find(o.id);
      if (it == paired_.end()) return;
      o.pod_namespace = it->second.first;
      o.pod = it->second.second;
      o.source = "cgroup, kubelet pod-resources";
      // The container's name where one container of the pod holds this GPU and one runs on it.
      std::set<std::string> names;
      for (const auto& h : holders)
        if (h.pod_namespace == o.pod_namespace && h.pod == o.pod) names.insert(h.container);
      if (names.size() == 1 && container_ids[o.id].size() <= 1) o.container = *names.begin();
    };
    for (auto& o : d.owners) name(o);
    for (auto& p : d.processes)
      if (p.owner) name(*p.owner);
    // Pods holding this GPU with no process of theirs on it.
    for (const auto& h : holders) {
      const bool known = std::any_of(d.owners.begin(), d.owners.end(), [&](const Owner& o) {
        return o.kind == OwnerKind::kK8sPod && o.pod == h.pod && o.pod_namespace == h.pod_namespace;
      });
      if (known) continue;
      Owner o;
      o.kind = OwnerKind::kK8sPod;
      const auto uid = uid_of_pod.find({h.pod_namespace, h.pod});
      o.id = uid != uid_of_pod.end() ? uid->second : h.pod_namespace + "/" + h.pod;
      o.pod = h.pod;
      o.pod_namespace = h.pod_namespace;
      o.container = h.container;
      o.source = "kubelet pod-resources";
      d.owners.push_back(std::move(o));
    }
    // Renamed containers may now be one owner.
    std::set<std::string> keys;
    std::erase_if(d.owners, [&](const Owner& o) { return !keys.insert(owner_key(o)).second; });
  }
}

std::optional<std::pair<std::string, std::string>> KubeletOwners::pod_of_uid(
    const std::string& uid) const {
  const auto it = paired_.find(uid);
  if (it == paired_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gpudoctor::host
