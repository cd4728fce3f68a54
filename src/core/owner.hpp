// Who holds a GPU: a Slurm job, a Kubernetes pod, a container, a systemd unit or a plain process,
// with what else is known about it (job step, pod name and namespace, container, user) and where
// it came from. Found by host/owners (from /proc and allocation files), carried on every
// DeviceSample, recorded, exported (gpudoctor_gpu_owner_info) and named in diagnoses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpudoctor {

enum class OwnerKind : uint8_t { kProcess, kSystemdUnit, kContainer, kK8sPod, kSlurmJob };
// "process", "systemd_unit", "container", "k8s_pod", "slurm_job".
std::string_view owner_kind_code(OwnerKind k);
std::optional<OwnerKind> owner_kind_from_code(std::string_view code);

struct Owner {
  OwnerKind kind = OwnerKind::kProcess;
  // Slurm job id (or SLUID), pod UID, container id, unit name, PID.
  std::string id;
  std::string step;  // Slurm job step: "0", "batch", "extern", "interactive"
  std::string pod;   // pod name (kubelet); "" where only the UID is known
  std::string pod_namespace;
  std::string container;  // k8s: container name (kubelet) or id; container: short id
  std::string runtime;    // "docker", "podman", "containerd", "cri-o" where the cgroup says
  std::string user;       // user name; "uid N" where the name is unknown; "" not known
  std::optional<uint32_t> uid;
  std::string source;  // "cgroup", "job-mapping", "gpustat", "kubelet", "sim"
  std::string note;    // e.g. "Slurm SLUID: kept as the job id"

  bool operator==(const Owner&) const = default;
};

// How people name it: "job 41877.0 (alice)", "pod ml/trainer-0", "container 3f2a9c1b7e4d (bob)",
// "unit jupyter.service (carol)", "pid 4242 (dave)".
std::string owner_label(const Owner& o);

// Identity for de-duplication: the same job, pod, container, unit or process.
std::string owner_key(const Owner& o);

// JSON form ({kind, id, label, step, pod, namespace, container, runtime, user, uid, source,
// note}; empty fields left out), as status, watch and captures write it.
nlohmann::json owner_to_json(const Owner& o);
// The same read back; nullopt when kind or id is missing or wrong.
std::optional<Owner> owner_from_json(const nlohmann::json& j);

}  // namespace gpudoctor
