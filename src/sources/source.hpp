// Source: where frames come from. A live source (NVML today; the simulator and replays later)
// knows its devices and produces one Frame per sample() call. open_source() is the registry that
// turns a --source spec ("nvml", ...) into a Source.
// Thread-safety: a Source is driven by one thread (the sampling loop); its results are plain
// values.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct SourceOptions {
  // Indices of the GPUs to sample (as NVML numbers them); empty: all.
  std::vector<unsigned> gpus;
  // How long sample() waits for one GPU before reporting its readings as TIMEOUT for this frame.
  std::chrono::milliseconds call_budget{500};
  // Owners (docs/owners.md): resolved from /proc for every GPU process of a real source, and
  // from allocation files in this directory (dcgm-exporter's HPC job mapping, jobstats'
  // /run/gpustat) for GPUs held with no process. The environment variable GPUDOCTOR_PROC_ROOT
  // replaces /proc (tests).
  bool resolve_owners = true;
  std::string job_mapping_dir;
  // The kubelet's pod-resources socket (pod names; pods holding GPUs with no process). nullopt:
  // the default (/var/lib/kubelet/pod-resources/kubelet.sock) for NVML, none for the
  // simulator; "" or "none": not asked. A socket that is not there is not used, silently.
  std::optional<std::string> kubelet_socket;
};

class Source {
 public:
  virtual ~Source() = default;
  virtual const SystemInfo& system() const = 0;
  virtual const std::vector<DeviceInfo>& devices() const = 0;
  // One reading of every device. Never blocks longer than about the call budget.
  virtual Frame sample() = 0;
  // "nvml (/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1)" etc., for messages.
  virtual std::string description() const = 0;
  // What the source learnt that the user should hear once (e.g. "/proc is mounted with
  // hidepid"); each note is returned once.
  virtual std::vector<std::string> take_notes() { return {}; }
  // The source this one decorates (owners), or null: for what only the inner source can do.
  virtual Source* wrapped() { return nullptr; }
  // The NVML index of the GPU a MIG device (by UUID) is part of; nullopt where unknown.
  virtual std::optional<unsigned> parent_gpu(const std::string& /*mig_uuid*/) {
    return std::nullopt;
  }
};

// Opens the source named by spec: "nvml" (default). Errors name the spec and say what to do.
Result<std::unique_ptr<Source>> open_source(const std::string& spec, const SourceOptions& options);

// Parses "0,2,5" or "all" into GPU indices.
Result<std::vector<unsigned>> parse_gpu_list(const std::string& text);

}  // namespace gpudoctor
