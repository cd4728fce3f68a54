// Simulator scenarios: small declarative JSON files (comments allowed) that describe a machine
// and the training loop running on it. Built-in scenarios cover every cause of DOMAIN.md §2;
// users and tests write their own (format: docs/simulator.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/owner.hpp"
#include "core/result.hpp"

namespace gpudoctor::sim {

// One training step on one GPU, as the hardware sees it. Times are at the GPU's maximum clock.
struct Workload {
  double batch_s = 0;            // input pipeline: seconds to prepare one batch per rank (0: free)
  int prefetch = 2;              // batches the loader may keep ready
  double h2d_mib = 0;            // host-to-device copy per step over PCIe
  int kernels = 200;             // kernels per step
  double kernel_ms = 1.5;        // mean kernel duration at max clock
  double launch_gap_ms = 0.004;  // CPU time between kernels (launch overhead, sync)
  double sm = 0.92;              // while a kernel runs: SM activity (0-1)
  double tensor = 0.65;          // tensor pipe activity (0-1)
  double dram = 0.45;            // DRAM bandwidth use (0-1)
  double compute_bound = 0.85;   // share of kernel time that scales with the SM clock
  double allreduce_mib = 0;      // gradient all-reduce per step (0: single GPU, no collective)
  bool nvlink = true;            // collective over NVLink (else PCIe)
  double optimizer_ms = 0;
  double eval_every_s = 0, eval_s = 0;              // periodic evaluation pause
  double checkpoint_every_s = 0, checkpoint_s = 0;  // periodic checkpoint (GPU waits on disk)
  double jitter = 0.03;                             // relative noise on durations
};

// Per-GPU differences from the scenario's workload.
struct Rank {
  bool idle = false;           // no job: held (memory, process) or free
  bool held = true;            // when idle: a process keeps memory allocated
  double slowdown = 1.0;       // > 1: this rank computes slower (a straggler)
  int processes = 1;           // compute processes sharing the GPU
  long alternate_steps = 0;    // > 0: slow only in turns of this many steps (see-saw between ranks)
  long alternate_phase = 0;    // which turn this rank is slow in (0 or 1)
  std::optional<Owner> owner;  // who holds this GPU (default: the scenario's owner)
};

struct Change {
  double at_s = 0;
  nlohmann::json workload;  // fields of Workload to change from then on
};

struct Scenario {
  std::string name;
  std::string description;
  std::string cause;  // the cause code this scenario should be diagnosed as
  std::string model = "h100-sxm";
  int gpus = 1;
  double duration_s = 300;
  double interval_s = 1;
  uint64_t seed = 1;
  std::optional<double> power_limit_w;  // enforced limit; default: the board's
  std::optional<double> app_clock_mhz;  // locked application clock
  bool hw_slowdown = false;             // HW slowdown asserted (power brake, PSU)
  double ambient_c = 30;
  double cooling = 1.0;  // multiplies thermal resistance: > 1 poor airflow
  double startup_s = 0;  // model loading before the first step: memory held, no kernels
  Workload workload;
  std::vector<Rank> ranks;  // one per GPU (filled to `gpus`)
  // Who runs the workload (a Slurm job, a pod...): every GPU held or working without its own
  // rank owner gets it; free GPUs have none.
  std::optional<Owner> owner;
  std::string host;  // the simulated host name (default: sim-NAME); GPU UUIDs derive from it
  std::vector<Change> changes;
};

// Parses a scenario document; `origin` names it in errors.
Result<Scenario> parse_scenario(const std::string& text, const std::string& origin);
// A built-in name ("data_starvation") or a path to a JSON file.
Result<Scenario> load_scenario(const std::string& name_or_path);
std::vector<std::string> builtin_scenario_names();
// Applies "key=value" overrides: gpus, model, seed, duration, interval, power_limit.
Result<Nothing> apply_override(Scenario& s, const std::string& key, const std::string& value);
// Checks ranges that keep the simulation meaningful and finite (called by the parsers).
Result<Nothing> validate_scenario(const Scenario& s, const std::string& origin);
// Parses {"kind": "slurm_job", "id": ..., "step", "pod", "namespace", "container", "user"}.
Result<Owner> parse_owner_json(const nlohmann::json& j, const std::string& origin);
// Applies a JSON object of Workload fields; unknown keys are errors.
Result<Nothing> apply_workload_json(Workload& w, const nlohmann::json& j,
                                    const std::string& origin);

}  // namespace gpudoctor::sim
