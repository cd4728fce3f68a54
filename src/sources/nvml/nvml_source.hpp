// NvmlSource: the live source over NVML. Opens the library, initialises NVML, probes every GPU,
// then samples all GPUs in parallel, one worker thread per GPU, so that a GPU whose calls hang
// (a dying board, a slow driver) costs the others nothing: sample() waits at most the call budget,
// and a GPU that has not answered by then reports TIMEOUT readings for that frame.
// Thread-safety: sample() from one thread at a time.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "core/health.hpp"
#include "sources/nvml/nvml_api.hpp"
#include "sources/source.hpp"

namespace gpudoctor {

class NvmlSource final : public Source {
 public:
  static Result<std::unique_ptr<NvmlSource>> open(const SourceOptions& options);
  ~NvmlSource() override;

  const SystemInfo& system() const override { return system_; }
  const std::vector<DeviceInfo>& devices() const override { return infos_; }
  Frame sample() override;
  std::string description() const override;
  const NvmlLibrary& library() const { return *lib_; }
  // ECC, retired pages, row remapping and default application clocks of every GPU (same order as
  // devices()), read now on the calling thread (`check` reads them once). A GPU whose worker is
  // still inside an earlier NVML call is not asked: its readings say TIMEOUT.
  std::vector<DeviceHealth> read_health();
  // The GPU a MIG device belongs to (nvmlDeviceGetHandleByUUID, then
  // nvmlDeviceGetDeviceHandleFromMigDeviceHandle), on the calling thread.
  std::optional<unsigned> parent_gpu(const std::string& mig_uuid) override;

 private:
  struct Worker;
  NvmlSource() = default;

  std::unique_ptr<NvmlLibrary> lib_;
  bool initialised_ = false;
  SourceOptions options_;
  SystemInfo system_;
  std::vector<DeviceInfo> infos_;
  std::vector<std::unique_ptr<Worker>> workers_;
  // Shared with the workers (a worker stuck in NVML may outlive the source).
  struct Sync {
    std::mutex mu;                 // guards every worker's request/result state
    std::condition_variable done;  // a worker finished a request
  };
  std::shared_ptr<Sync> sync_ = std::make_shared<Sync>();
  double start_s_ = 0;
};

}  // namespace gpudoctor
