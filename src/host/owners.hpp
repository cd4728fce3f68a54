// Who holds each GPU (docs/owners.md): the owner of a GPU process from its /proc/PID/cgroup
// (Slurm cgroup v1 and v2, Kubernetes with the cgroupfs and systemd drivers, Docker, Podman,
// systemd units and sessions, else the plain process) and /proc/PID/status (the user), cached by
// PID and start time; and the owners of GPUs held with no process, from allocation files
// (dcgm-exporter's HPC job mapping directory, jobstats' /run/gpustat), and the kubelet's
// pod-resources API where its socket is there (host/pod_resources, host/kubelet_owners: pod names,
// and pods holding a GPU with no process). Every reader takes a root so tests run on fixture
// trees. No call here fails: what cannot be read leaves the owner unknown.
// Thread-safety: an OwnerResolver is used by one thread (the sampling loop).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.hpp"
#include "core/owner.hpp"
#include "host/kubelet_owners.hpp"
#include "host/pod_resources.hpp"

namespace gpudoctor::host {

// The owner a /proc/PID/cgroup text names, or nullopt when no line names a job, pod, container
// or unit (the caller then says `process`). Malformed lines are skipped.
std::optional<Owner> owner_from_cgroup(std::string_view cgroup_text);

// The real UID of a /proc/PID/status text ("Uid:\t1000\t1000\t1000\t1000").
std::optional<uint32_t> uid_from_status(std::string_view status_text);

// Start time (clock ticks since boot, field 22) of a /proc/PID/stat line.
std::optional<uint64_t> start_time_from_stat(std::string_view stat_line);

// User name of a UID (getpwuid_r), nullopt when the system has none.
std::optional<std::string> system_user_name(uint32_t uid);
using UserLookup = std::function<std::optional<std::string>(uint32_t)>;

// One allocation file's owner: "JOBID UID" (jobstats) or one job id per line (dcgm-exporter;
// several lines: the first job). nullopt when the file names none.
std::optional<Owner> owner_from_allocation(std::string_view text, const UserLookup& users);

class OwnerResolver {
 public:
  struct Options {
    std::string proc_root = "/proc";
    std::string job_mapping_dir;    // "" none; else dcgm-exporter's or jobstats' directory
    bool resolve_processes = true;  // false: processes are not looked up (simulated pids)
    UserLookup users = system_user_name;
    // The kubelet's pod-resources socket ("" none): asked while it exists, on a thread of its
    // own (PodResourcesWatcher), every `kubelet_refresh`, each call at most `kubelet_deadline`.
    std::string kubelet_socket;
    std::chrono::milliseconds kubelet_deadline{1000};
    std::chrono::milliseconds kubelet_refresh{5000};
    // The GPU a MIG device UUID belongs to (the source's NVML lookup), for MIG allocations.
    MigLookup mig_parent;
  };
  explicit OwnerResolver(Options o);
  OwnerResolver() : OwnerResolver(Options{}) {}

  // The owner of a process; nullopt when it exited between listing and reading.
  std::optional<Owner> resolve(uint32_t pid);
  // Fills every process' owner and every device's owners (process owners, named and completed by
  // the kubelet's allocations, then allocation files for the device's index, "index.gi" or
  // UUID). Devices that already carry owners are left alone (the simulator brings its own).
  void annotate(Frame& frame, const std::vector<DeviceInfo>& devices);
  // Things said once (hidepid, SLUIDs): taken by the caller for its notes.
  std::vector<std::string> take_notes();

  // For tests and the benchmark.
  size_t cache_size() const { return cache_.size(); }
  size_t reads() const { return reads_; }

 private:
  struct Cached {
    uint64_t start = 0;
    Owner owner;
    bool seen = false;
  };
  std::vector<Owner> allocation_owners(const DeviceInfo& d);
  void add_kubelet_owners(Frame& frame, const std::vector<DeviceInfo>& devices,
                          const std::vector<bool>& skip);
  void note_once(const std::string& text);

  Options o_;
  std::map<uint32_t, Cached> cache_;
  std::vector<std::string> notes_, said_;
  size_t reads_ = 0;
  bool hidepid_ = false;
  // Started once the socket is seen (looked for every kubelet_refresh until then).
  std::unique_ptr<PodResourcesWatcher> kubelet_;
  std::chrono::steady_clock::time_point next_kubelet_look_{};
  uint64_t kubelet_generation_ = 0;
  KubeletOwners kubelet_owners_;
};

}  // namespace gpudoctor::host
