// The simulator's engine: a training loop per GPU (input pipeline, host-to-device copy, kernels,
// collectives that wait for the slowest rank, optimizer, evaluation and checkpoint pauses) driving
// a model of the board (activity -> power at the current clock, SW power cap lowering the clock,
// first-order thermal model with slowdown, locked application clocks, HW slowdown). Time advances
// event by event, exactly; NVML's view (GPU-Util as the share of time a kernel ran, 1-second
// average and instant power, energy, clock event reasons, GPM metrics, PCIe/NVLink traffic) is
// accumulated between reads. Deterministic for a seed.
// Thread-safety: none; one owner drives it.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/gpu_models.hpp"
#include "sources/sim/scenario.hpp"

namespace gpudoctor::sim {

// A small deterministic generator (same numbers on every compiler and standard library).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed ? seed : 0x9E3779B97F4A7C15ULL) {}
  uint64_t next();
  double uniform();  // [0, 1)
  double normal();   // mean 0, sd 1
  double jitter(double rel) { return 1.0 + rel * normal(); }

 private:
  uint64_t s_;
};

class Simulation {
 public:
  Simulation(Scenario scenario, GpuModel model);

  const Scenario& scenario() const { return sc_; }
  const GpuModel& model() const { return model_; }
  const std::vector<DeviceInfo>& devices() const { return infos_; }
  double now() const { return t_; }

  // Runs the simulated machine forward to time t_s (seconds since the scenario started).
  void advance_to(double t_s);
  // NVML's view of GPU g now, with utilisation and traffic averaged since the previous read
  // of that GPU. Resets the averaging window.
  DeviceSample read(size_t g);

 private:
  enum class Phase {
    kStartup,
    kWaitData,
    kCopy,
    kCompute,
    kBarrier,
    kAllReduce,
    kOptimizer,
    kEval,
    kCheckpoint,
    kIdle
  };
  struct Activity {
    double kernel = 0, sm = 0, tensor = 0, dram = 0, pcie_rx_mibs = 0, pcie_tx_mibs = 0,
           nvlink_mibs = 0;
  };
  struct Accum {  // integrals since the last read
    double time = 0, kernel = 0, sm = 0, tensor = 0, dram = 0, pcie_rx = 0, pcie_tx = 0, nvlink = 0,
           occupancy = 0;
    uint64_t reasons = 0;
  };
  struct Gpu {
    Rank rank;
    Phase phase = Phase::kIdle;
    double phase_end = 0;  // absolute time; +inf while waiting at a barrier or idle
    Activity act;
    // input pipeline
    int queue = 0;
    double producer = 0;  // progress towards the next batch, seconds
    // board
    double clock_mhz = 0, clock_cap_mhz = 0, temp_c = 0, power_w = 0, energy_mj = 0;
    double demand = 0;  // smoothed activity-weighted demand, for the power controller
    uint64_t reasons = 0;
    double next_eval = 0, next_checkpoint = 0;
    long step = 0;
    double mem_used_mib = 0;
    std::deque<std::pair<double, double>> energy_history;  // (t, energy_mj) for the 1 s average
    Accum acc;
  };

  void start_phase(Gpu& g, Phase p);
  void finish_phase(size_t i);
  Activity activity(const Gpu& g, Phase p) const;
  double power_at(double demand, double clock_mhz) const;
  void control(Gpu& g, double dt);
  void integrate(Gpu& g, double dt);
  double effective_max_clock() const;
  void apply_changes();
  int working_ranks() const;

  Scenario sc_;
  GpuModel model_;
  Workload w_;
  std::vector<DeviceInfo> infos_;
  std::vector<Gpu> gpus_;
  Rng rng_;    // the job: durations, identities
  Rng noise_;  // sensor noise on reads, so how often one reads never changes the job
  double t_ = 0;
  double next_control_ = 0;
  size_t next_change_ = 0;
  double enforced_w_ = 0;
};

}  // namespace gpudoctor::sim
