// TopCollector: turns the frames of a live source into the TopState that `gpudoctor top` draws.
// Per frame it assesses every GPU against the previous frame (analysis/snapshot), keeps a short
// history per GPU, names the processes (user and command line from /proc where the process runs
// on this host), and appends the frame to a rolling Recording window; every few seconds it runs
// the diagnosis (analysis/diagnosis) over that window and keeps its findings. Driven by one thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/config.hpp"
#include "analysis/live_window.hpp"
#include "core/recording.hpp"
#include "tui/top_state.hpp"

namespace gpudoctor::tui {

struct CollectorOptions {
  double history_s = 180;            // history kept for the sparklines
  double window_s = 300;             // what the live diagnosis looks at
  double diagnosis_every_s = 5;      // how often it runs (frame time)
  size_t diagnosis_min_frames = 10;  // frames before the first diagnosis
  double diagnosis_min_span_s = 10;  // and this much time
  double interval_s = 0.5;           // the sampling interval, for labels
  DiagnosisConfig config;
};

// What the host knows about a process: its user and command line ("" where it does not know).
struct HostProcess {
  std::string user;
  std::string command;
};
// Reads /proc/PID/status (Uid, then the user name from the password database) and
// /proc/PID/cmdline.
HostProcess host_process(uint32_t pid);

class TopCollector {
 public:
  TopCollector(std::string source, const SystemInfo& system, const std::vector<DeviceInfo>& devices,
               CollectorOptions options = {});

  // Where process users and command lines come from; unset: processes are shown as the source
  // names them (for sources whose processes are not on this host, such as the simulator).
  void set_process_lookup(std::function<HostProcess(uint32_t)> lookup) {
    lookup_ = std::move(lookup);
  }

  // Adds one frame (devices in the order of the source's devices()); runs the diagnosis when due.
  void add(const Frame& frame);
  // Runs the diagnosis over the window now, when there are enough frames (else it says so).
  void diagnose_now();

  const TopState& state() const { return state_; }
  const Recording& window() const { return live_.window(); }

 private:
  void update_processes(GpuView& view, const DeviceSample& s);
  // Copies the live window's latest diagnosis into the state.
  void take_diagnosis();

  CollectorOptions options_;
  TopState state_;
  LiveWindow live_;
  Frame prev_;
  bool have_prev_ = false;
  std::function<HostProcess(uint32_t)> lookup_;
  std::map<uint32_t, HostProcess> host_cache_;
};

}  // namespace gpudoctor::tui
