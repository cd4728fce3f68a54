// What a source knows about a GPU: static identity (DeviceInfo), one sample of every field
// (DeviceSample), and a Frame: one timestamped sample of every device. Plain values, safe to copy
// between threads.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/fields.hpp"
#include "core/owner.hpp"
#include "core/reading.hpp"

namespace gpudoctor {

enum class Architecture : uint8_t {
  kUnknown = 0,
  kKepler = 2,
  kMaxwell = 3,
  kPascal = 4,
  kVolta = 5,
  kTuring = 6,
  kAmpere = 7,
  kAda = 8,
  kHopper = 9,
  kBlackwell = 10,
};
// NVML's nvmlDeviceArchitecture_t numbering; names are lower-case ("hopper").
std::string architecture_name(Architecture a);
Architecture architecture_from_name(const std::string& name);

struct DeviceInfo {
  unsigned index = 0;
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  std::string serial;                    // "" when the board reports none
  std::optional<bool> persistence_mode;  // nullopt: not supported
  std::optional<bool> mig_mode;          // nullopt: not supported
  Architecture architecture = Architecture::kUnknown;
  bool gpm_supported = false;
};

struct SystemInfo {
  std::string driver_version;       // "550.54.15"
  std::string cuda_driver_version;  // "12.4"
  std::string nvml_version;
  std::string hostname;
};

struct ProcessInfo {
  uint32_t pid = 0;
  std::string name;
  std::optional<double> used_memory_mib;  // nullopt where the driver does not say (e.g. in MIG)
  std::optional<double> sm_util_pct;      // per-process SM share, where the driver gives it
  std::optional<double> mem_util_pct;
  std::optional<Owner> owner;  // who runs it (host/owners); nullopt: not resolved
};

struct DeviceSample {
  std::array<Reading, kFieldCount> readings{};
  // Monotonic seconds at which this device was read (0: unknown). Rates such as mean power from
  // the energy counter use it rather than the frame time: devices are read in parallel.
  double time_s = 0;
  std::vector<ProcessInfo> processes;
  bool processes_supported = false;
  bool lost = false;  // GPU_IS_LOST seen: the device fell off the bus
  // Who holds the GPU: its processes' owners, else allocation files; empty: nobody known.
  std::vector<Owner> owners;

  const Reading& operator[](Field f) const { return readings[index_of(f)]; }
  const Reading& at(Field f) const { return readings[index_of(f)]; }
  Reading& operator[](Field f) { return readings[index_of(f)]; }
};

struct Frame {
  int64_t time_unix_ms = 0;  // wall clock, for logs and recordings
  double time_s = 0;         // monotonic seconds since the source opened, for rates and intervals
  std::vector<DeviceSample> devices;  // same order as the source's devices()
};

}  // namespace gpudoctor
