// The stand-in NVML library's view of a capture file (docs/capture-format.md): the JSON is read
// once at nvmlInit into these structures and never changed after, so every thread may read them
// without a lock. Lookups answer "what did the capture say at replay time T".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sources/nvml/nvml_types.hpp"

namespace fake_nvml {

// One field's samples: the times of the samples that have it and its values there.
struct Series {
  std::vector<double> t;
  std::vector<double> v;
  // For the rates the stand-in answers as counters (nvlink_mibs): the integral of the held value
  // from the first sample to t[i] (value * seconds).
  std::vector<double> integral;
};

// Capture fields the stand-in turns into counters: NVML has the running total, the capture the
// rate (nvlink_mibs: MiB/s, answered as the NVLink data counters in KiB).
inline constexpr std::string_view kIntegratedFields[] = {"nvlink_mibs"};

struct Process {
  unsigned pid = 0;
  std::string name;
  std::optional<double> used_memory_mib;
  std::optional<double> sm_util_pct;
  std::optional<double> mem_util_pct;
  std::optional<double> enc_util_pct;
  std::optional<double> dec_util_pct;
};

// The process list of one sample that has "processes".
struct ProcessSnapshot {
  double t = 0;
  std::vector<Process> processes;
};

// Where replay time T falls in a device's samples: the capture time t (T itself, or T folded into
// the first cycle when looping) and how many whole cycles lie before it.
struct Position {
  double t = 0;
  long cycle = 0;
};

// The next event of an event field: sample `index` of loop cycle `cycle` of `series` (nullptr:
// the device has no such events).
struct EventCursor {
  const Series* series = nullptr;
  long cycle = 0;
  size_t index = 0;
};

// Replay settings, fixed at nvmlInit.
struct Replay {
  double speed = 1;
  double start_s = 0;
  bool loop = false;
};

}  // namespace fake_nvml

// The object an nvmlDevice_t handle points at (declared incomplete by nvml_types.hpp).
struct nvmlDevice_st {
  unsigned index = 0;
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<std::string> serial;
  std::optional<std::string> pci_bus_id;  // as written in the capture
  unsigned pci_domain = 0, pci_bus = 0, pci_device = 0, pci_function = 0;
  std::optional<bool> persistence_mode;  // null or absent: not supported
  std::optional<bool> mig_mode;
  std::optional<unsigned> architecture;  // NVML numbering
  bool gpm_supported = false;
  std::map<std::string, nvmlReturn_t, std::less<>> errors;
  std::map<std::string, double, std::less<>> delays_ms;
  std::optional<double> lost_at_s;
  // "mig_devices": the UUIDs of the GPU's MIG devices (nvmlDeviceGetHandleByUUID finds them).
  std::vector<std::string> mig_uuids;
  // Set on a MIG device's handle (Capture::mig_devices): the index of its GPU.
  std::optional<unsigned> mig_parent;
  std::map<std::string, fake_nvml::Series, std::less<>> values;
  // "health": what nvmlDeviceGetEccMode, ...TotalEccErrors, ...RetiredPages(PendingStatus),
  // ...RemappedRows and ...DefaultApplicationsClock answer (true/false stored as 1/0).
  std::map<std::string, double, std::less<>> health;
  std::vector<fake_nvml::ProcessSnapshot> processes;
  std::vector<double> process_times;  // processes[i].t
  double first_t = 0;                 // time of the first sample
  double last_t = 0;                  // time of the last sample
  double loop_period = 0;  // length of one cycle when looping: the span plus one sample interval
  fake_nvml::Replay replay;

  // Where replay time T falls (folds T into the first cycle when looping).
  fake_nvml::Position locate(double T) const;
  // The held value of a field at T, or nullopt when no sample has the field.
  std::optional<double> value(std::string_view field, double T) const;
  // energy_mj at T: interpolated between samples, extrapolated at the last power_w after them.
  std::optional<double> energy_mj(double T) const;
  // The integral of a kIntegratedFields field's held value from its first sample to T (value *
  // seconds; the last value is held to the end of a loop cycle), or nullopt when no sample has it.
  std::optional<double> integral(std::string_view field, double T) const;
  // Events: a field whose every sample is one event ("xid"). cursor is where the next one is
  // (event_cursor: the first at or after replay time T); next_event returns its value and moves
  // the cursor on when it happened by replay time `now`, else nullopt.
  fake_nvml::EventCursor event_cursor(std::string_view field, double T) const;
  std::optional<double> next_event(const fake_nvml::EventCursor& cursor, double now) const;
  // Moves the cursor past the event next_event returned.
  void advance(fake_nvml::EventCursor& cursor) const;
  // The process list held at T (nullptr when no sample has "processes") and the replay time of
  // the sample it came from.
  const fake_nvml::ProcessSnapshot* processes_at(double T, double* sample_time) const;
  // The most recent entry for pid at or before T (looking back one loop at most), and the replay
  // time of its sample; nullptr when no sample lists pid.
  const fake_nvml::Process* find_process(unsigned pid, double T, double* sample_time) const;
  // The error code the capture forces on `key`, if any.
  std::optional<nvmlReturn_t> error(std::string_view key) const;
  // A "health" entry, or nullopt when the capture has none (the call answers NOT_SUPPORTED).
  std::optional<double> health_value(std::string_view key) const;
  double delay_ms(std::string_view key) const;
};

namespace fake_nvml {

struct Capture {
  std::optional<std::string> driver_version;
  std::optional<std::string> nvml_version;
  std::optional<int> cuda_driver_version;
  std::vector<nvmlDevice_st> devices;  // never resized after loading: handles point into it
  // One per MIG device of every GPU (uuid and mig_parent only); their handles answer no device
  // call, only nvmlDeviceGetDeviceHandleFromMigDeviceHandle.
  std::vector<nvmlDevice_st> mig_devices;
};

// Reads and checks a capture; throws std::runtime_error with a one-line reason.
Capture load_capture(const std::string& path, const Replay& replay);

// NVML code for a name as written in "errors": "NOT_SUPPORTED", "NVML_ERROR_NO_PERMISSION", 12.
std::optional<nvmlReturn_t> parse_error_code(std::string_view name);

// NVML numbering for an architecture name ("hopper" -> 9); NVML_DEVICE_ARCH_UNKNOWN otherwise.
unsigned architecture_number(std::string_view name);

}  // namespace fake_nvml
