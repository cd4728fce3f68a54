// NvmlDevice: everything gpudoctor reads from one GPU through NVML. Probes once which calls the
// device supports (a call that answers NOT_SUPPORTED, NO_PERMISSION or is missing from the driver
// is skipped afterwards, its fields reported as unsupported with that code), reads static fields
// once, slow ones every kSlowCadenceSeconds, and samples the rest. Keeps the previous GPM sample
// to compute GPM metrics from a pair, the previous NVLink counters for their rate, and an event
// set of its own for XID events (drained with timeout 0 each sample).
// Thread-safety: one thread at a time per device (the source gives each device its own worker).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/device.hpp"
#include "core/health.hpp"
#include "sources/nvml/nvml_api.hpp"

namespace gpudoctor {

class NvmlDevice {
 public:
  NvmlDevice(const NvmlApi& api, nvmlDevice_t handle, unsigned index);
  ~NvmlDevice();
  NvmlDevice(const NvmlDevice&) = delete;
  NvmlDevice& operator=(const NvmlDevice&) = delete;

  // Reads identity and static fields and learns which calls work. Call once, before sample().
  void probe();
  const DeviceInfo& info() const { return info_; }
  nvmlDevice_t handle() const { return handle_; }
  // For a GPU whose handle could not be obtained: every sample reports GPU_IS_LOST.
  void mark_lost() { lost_ = true; }

  // One sample of every field. now_s is the caller's monotonic clock (for GPM pairing).
  DeviceSample sample(double now_s);

  // A sample whose dynamic readings all carry code (e.g. TIMEOUT), static ones as known.
  DeviceSample placeholder(int32_t code) const;

  // ECC, retired pages, row remapping and default application clocks, read now (for `check`:
  // once per command, never per sample). Not supported / no permission / missing from the driver
  // come back as unsupported readings with their code.
  DeviceHealth read_health();

 private:
  // A reader is one NVML call (or a tight group) filling one or more fields.
  struct Reader {
    const char* name;
    std::vector<Field> fields;
    Cadence cadence;
    std::function<nvmlReturn_t(DeviceSample&)> read;
  };
  struct Capability {
    bool skip = false;  // learned unsupported: do not call again
    int32_t code = 0;   // why
  };

  void build_readers();
  void run_reader(size_t i, DeviceSample& out);
  void read_processes(DeviceSample& out);
  nvmlReturn_t read_gpm(DeviceSample& out, double now_s);
  // XID events: registers this device's event set (at probe; again after a transient failure).
  void register_xid_events();
  nvmlReturn_t read_xid(DeviceSample& out);

  const NvmlApi& api_;
  nvmlDevice_t handle_;
  DeviceInfo info_;
  std::atomic<bool> lost_{false};  // read by placeholder() from the source's thread

  std::vector<Reader> readers_;
  std::vector<Capability> caps_;
  DeviceSample static_;       // static fields as probed; written only by probe()
  DeviceSample static_live_;  // the same, retried by the worker after transient errors
  DeviceSample slow_;         // slow fields as last read
  double slow_read_s_ = -1;   // when they were (caller's clock); < 0: never
  double now_s_ = 0;          // the caller's clock for the sample being read

  // One nvmlDeviceGetFieldValues call per sample: power (average, instant), memory temperature,
  // the NVLink data counters. Each field value learns on its own that it is unsupported.
  static constexpr size_t kFieldValueCount = 5;
  nvmlReturn_t read_field_values(const NvmlApi& a, nvmlDevice_t h, DeviceSample& s);
  std::array<Capability, kFieldValueCount> fv_caps_{};
  Capability power_usage_;                            // the fallback for the average power
  double nvlink_prev_kib_ = -1, nvlink_prev_s_ = -1;  // the counters of the last rate (< 0: none)
  Reading nvlink_last_;                               // the last rate

  // XID events
  nvmlEventSet_t events_ = nullptr;
  Capability xid_cap_;
  std::optional<double> last_xid_;

  // Processes
  Capability proc_cap_, proc_util_cap_;
  unsigned long long proc_util_last_us_ = 0;
  struct ProcUtil {
    unsigned long long time_us = 0;
    unsigned sm = 0, mem = 0;
  };
  std::unordered_map<unsigned, ProcUtil> proc_util_;  // last known share per pid
  std::unordered_map<unsigned, std::string> process_names_;

  // GPM
  Capability gpm_cap_;
  nvmlGpmSample_t gpm_prev_ = nullptr, gpm_cur_ = nullptr;
  double gpm_prev_s_ = -1;
  std::array<Reading, kFieldCount> gpm_last_{};
};

}  // namespace gpudoctor
