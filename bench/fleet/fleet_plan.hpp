// The simulated fleet of the scale bench (docs/fleet.md, "Scaling bench"): N hosts of G GPUs over
// a span, each host's time cut into epochs. An epoch runs one of the simulator's built-in
// scenarios on the first k GPUs for one owner (a Slurm job, a pod or a plain process); of the
// other GPUs some are held idle by a notebook pod and the rest are free. Some epochs leave the
// whole host free, some GPUs are shared by two owners (two jobs' processes on one GPU), a few
// hosts restart gpudoctor serve (its counters start again from 0) or stop reporting for hours.
// Everything is drawn from one seed, so a plan is the same on every run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/owner.hpp"
#include "sources/sim/scenario.hpp"

namespace gpudoctor::fleet_bench {

struct FleetOptions {
  int hosts = 125;
  int gpus = 8;          // per host
  int64_t start_ms = 0;  // the span, aligned to chunk_s
  int64_t end_ms = 0;
  int interval_s = 30;       // scrape interval of the series written
  int window_s = 600;        // the ledger's diagnosis windows (and the epochs' grain)
  int profile_s = 1800;      // simulated seconds of an epoch before its windows repeat
  int chunk_s = 7200;        // one output file per chunk (one 2 h TSDB block)
  int dcgm_hosts = 8;        // the first hosts also get plain dcgm-exporter series ...
  int64_t dcgm_from_ms = 0;  // ... from here to end_ms, simulated second by second
  bool exact = false;        // simulate every epoch second by second (no repeated windows)
  uint64_t seed = 1;
  std::string host_prefix = "gpu-node-";
};

struct EpochPlan {
  int64_t start_ms = 0, end_ms = 0;
  bool down = false;        // the host reports nothing (its scrapes fail: up = 0)
  bool restart = false;     // serve (re)started at the start: its counters begin at 0
  bool exact = false;       // simulated second by second, frames kept for the dcgm-exporter series
  std::string label;        // what runs, for the summary: "data_starvation x4 + 2 held + 2 free"
  std::string profile_key;  // epochs with the same key share one simulated profile
  sim::Scenario scenario;   // gpus, model, host, seed, owners set; duration = the epoch
  std::vector<std::vector<Owner>> owners;  // per GPU, as serve would see them
};

struct HostPlan {
  std::string hostname;
  std::string model_key;          // the simulator's GPU model (h100-sxm, a100-sxm4-80gb)
  bool dcgm = false;              // dcgm-exporter series from FleetOptions::dcgm_from_ms
  std::vector<EpochPlan> epochs;  // cover [start_ms, end_ms) without gaps, in order
};

// The plan of every host; an error names a bad option.
Result<std::vector<HostPlan>> plan_fleet(const FleetOptions& o);

}  // namespace gpudoctor::fleet_bench
