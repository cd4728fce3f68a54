#include "sources/sim/engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace gpudoctor::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kControlTickS = 0.02;  // power/thermal controller period
constexpr double kUtilBucketS = 0.001;  // GPU-Util counts a bucket busy if any kernel ran in it
constexpr double kPowerExponent = 2.2;  // dynamic power ~ f^2.2 (voltage falls with clock)
constexpr double kDemandTauS = 0.05;    // the power controller reacts within ~50 ms
constexpr double kMiBPerGB = 1000.0 * 1000 * 1000 / (1024.0 * 1024);

// Usable host-to-device bandwidth of a PCIe link, MiB/s (about 80 % of the raw rate).
double pcie_mibs(int gen, int width) {
  static constexpr double kGBsPerLane[] = {0, 0.25, 0.5, 0.985, 1.97, 3.94, 7.88};
  const int g = std::clamp(gen, 1, 6);
  return kGBsPerLane[g] * width * 0.8 * kMiBPerGB;
}

}  // namespace

uint64_t Rng::next() {  // splitmix64
  uint64_t z = (s_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double Rng::normal() {  // Box-Muller; one value per call keeps the sequence simple
  const double u1 = std::max(uniform(), 1e-300);
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

namespace {
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}
}  // namespace

Simulation::Simulation(Scenario scenario, GpuModel model)
    : sc_(std::move(scenario)),
      model_(model),
      w_(sc_.workload),
      rng_(sc_.seed),
      noise_(sc_.seed ^ 0x5EEDF00DULL) {
  enforced_w_ = std::clamp(sc_.power_limit_w.value_or(model_.tdp_w), model_.power_limit_min_w,
                           model_.power_limit_max_w);
  sc_.ranks.resize(static_cast<size_t>(sc_.gpus));
  gpus_.resize(static_cast<size_t>(sc_.gpus));
  for (int i = 0; i < sc_.gpus; ++i) {
    Gpu& g = gpus_[static_cast<size_t>(i)];
    g.rank = sc_.ranks[static_cast<size_t>(i)];
    g.temp_c = sc_.ambient_c + 5;
    g.clock_mhz = model_.sm_clock_min_mhz;
    g.clock_cap_mhz = model_.sm_clock_max_mhz;
    g.energy_mj = 1e9 * (1 + rng_.uniform());  // the counter runs since the driver loaded
    g.energy_history.emplace_back(0.0, g.energy_mj);
    g.next_eval = w_.eval_every_s > 0 ? w_.eval_every_s : kInf;
    g.next_checkpoint = w_.checkpoint_every_s > 0 ? w_.checkpoint_every_s : kInf;
    if (g.rank.idle) {
      g.mem_used_mib = g.rank.held ? 0.12 * model_.mem_total_mib : 0.5;
      start_phase(g, Phase::kIdle);
    } else {
      start_phase(g, sc_.startup_s > 0 ? Phase::kStartup : Phase::kWaitData);
    }

    DeviceInfo d;
    d.index = static_cast<unsigned>(i);
    d.name = std::string(model_.nvml_name);
    // Derived from the host name (and seed): two simulated hosts never share a GPU UUID.
    const uint64_t host_hash = fnv1a(sc_.host.empty() ? "sim-" + sc_.name : sc_.host);
    const uint64_t r1 = rng_.next() & 0xfff, r2 = rng_.next() & 0xfff,
                   r3 = rng_.next() & 0xffffffffffffULL;
    d.uuid = fmt::format("GPU-5e5e{:04x}-{:04x}-4{:03x}-8{:03x}-{:012x}", sc_.seed & 0xffff, i, r1,
                         r2, (r3 ^ host_hash) & 0xffffffffffffULL);
    d.pci_bus_id = fmt::format("00000000:{:02X}:00.0", (0x18 + 0x10 * i) % 0x100);
    d.serial = fmt::format("16{:011d}", rng_.next() % 100000000000ULL);
    d.persistence_mode = true;
    d.mig_mode =
        model_.architecture >= Architecture::kAmpere ? std::optional<bool>(false) : std::nullopt;
    d.architecture = model_.architecture;
    d.gpm_supported = model_.architecture >= Architecture::kHopper;
    infos_.push_back(std::move(d));
  }
}

double Simulation::effective_max_clock() const {
  double f = model_.sm_clock_max_mhz;
  if (sc_.app_clock_mhz) f = std::clamp(*sc_.app_clock_mhz, model_.sm_clock_min_mhz, f);
  if (sc_.hw_slowdown) f = std::max(model_.sm_clock_min_mhz, f * 0.5);
  return f;
}

Simulation::Activity Simulation::activity(const Gpu& g, Phase p) const {
  Activity a;
  switch (p) {
    case Phase::kStartup:
    case Phase::kWaitData:
    case Phase::kIdle:
      break;
    case Phase::kCopy:
      a.pcie_rx_mibs = pcie_mibs(model_.pcie_gen_max, model_.pcie_width_max);
      break;
    case Phase::kCompute: {
      const double k = w_.kernel_ms * 1e-3, gap = w_.launch_gap_ms * 1e-3;
      const double duty = k / (k + gap);
      // GPU-Util: a ~1 ms bucket counts as busy when any kernel ran in it, so gaps shorter than
      // a bucket are invisible to it (why tiny kernels read 100 %).
      a.kernel = 1.0 - std::max(0.0, gap - kUtilBucketS) / (k + gap);
      const double share = g.rank.processes > 1 ? 0.9 : 1.0;  // context switches between processes
      a.sm = duty * w_.sm * share;
      a.tensor = duty * w_.tensor * share;
      a.dram = duty * w_.dram * share;
      a.pcie_rx_mibs = 20;  // small host traffic (metadata, logging)
      break;
    }
    case Phase::kBarrier:  // NCCL kernels spin, waiting for peers: busy for GPU-Util, SMs idle
      a.kernel = 1;
      a.sm = 0.07;
      a.dram = 0.02;
      break;
    case Phase::kAllReduce:
      a.kernel = 1;
      a.sm = 0.18;
      a.dram = 0.3;
      a.nvlink_mibs = w_.nvlink && model_.nvlink_gb_s > 0 ? model_.nvlink_gb_s / 2 * kMiBPerGB : 0;
      if (a.nvlink_mibs == 0)
        a.pcie_tx_mibs = a.pcie_rx_mibs = pcie_mibs(model_.pcie_gen_max, model_.pcie_width_max) / 2;
      break;
    case Phase::kOptimizer:
      a.kernel = 1;
      a.sm = 0.65;
      a.dram = 0.8;
      break;
    case Phase::kEval:
      a.kernel = 0.97;
      a.sm = 0.6;
      a.tensor = 0.35;
      a.dram = 0.35;
      break;
    case Phase::kCheckpoint:  // weights copied to the host, then the GPU waits on the disk
      a.pcie_tx_mibs = 2000;
      break;
  }
  return a;
}

void Simulation::start_phase(Gpu& g, Phase p) {
  g.phase = p;
  g.act = activity(g, p);
  control(g, 0);  // the controller sees the new activity at once
  const double fmax = model_.sm_clock_max_mhz;
  const double f = std::max(g.clock_mhz, model_.sm_clock_min_mhz);
  double d = 0;
  switch (p) {
    case Phase::kStartup:
      d = sc_.startup_s;
      break;
    case Phase::kIdle:
      d = kInf;
      break;
    case Phase::kWaitData:
      if (w_.batch_s <= 0 || g.queue > 0)
        d = 0;
      else
        d = std::max(0.0, w_.batch_s - g.producer);
      break;
    case Phase::kCopy:
      d = w_.h2d_mib / pcie_mibs(model_.pcie_gen_max, model_.pcie_width_max) *
          rng_.jitter(w_.jitter);
      break;
    case Phase::kCompute: {
      // The compute-bound part of each kernel stretches as the clock falls.
      const double scale = w_.compute_bound * fmax / f + (1 - w_.compute_bound);
      // A straggler is slow on every step, or (alternate_steps) in turns with its peers: the
      // see-saw of pipeline stages or imbalanced shards.
      ++g.step;
      double slow = g.rank.slowdown;
      if (g.rank.alternate_steps > 0 &&
          ((g.step / g.rank.alternate_steps) + g.rank.alternate_phase) % 2 == 0)
        slow = 1.0;
      const double kernels = w_.kernels * w_.kernel_ms * 1e-3 * scale * slow;
      const double gaps = w_.kernels * w_.launch_gap_ms * 1e-3;
      d = (kernels + gaps) * g.rank.processes * rng_.jitter(w_.jitter);
      break;
    }
    case Phase::kBarrier:
      d = kInf;
      break;
    case Phase::kAllReduce: {
      const double n = static_cast<double>(working_ranks());
      const double bw = g.act.nvlink_mibs > 0 ? g.act.nvlink_mibs : g.act.pcie_tx_mibs;
      d = 2 * (n - 1) / n * w_.allreduce_mib / std::max(bw, 1.0) * rng_.jitter(w_.jitter);
      break;
    }
    case Phase::kOptimizer:
      d = w_.optimizer_ms * 1e-3 * rng_.jitter(w_.jitter);
      break;
    case Phase::kEval:
      d = w_.eval_s;
      break;
    case Phase::kCheckpoint:
      d = w_.checkpoint_s;
      break;
  }
  g.phase_end = t_ + std::max(0.0, d);
}

void Simulation::finish_phase(size_t i) {
  Gpu& g = gpus_[i];
  const bool collective = w_.allreduce_mib > 0 && working_ranks() > 1;
  switch (g.phase) {
    case Phase::kStartup:
      start_phase(g, Phase::kWaitData);
      return;
    case Phase::kWaitData:
      if (g.queue > 0)
        g.queue--;
      else
        g.producer = 0;  // the batch it waited for, just made
      start_phase(g, w_.h2d_mib > 0 ? Phase::kCopy : Phase::kCompute);
      return;
    case Phase::kCopy:
      start_phase(g, Phase::kCompute);
      return;
    case Phase::kCompute:
      if (collective)
        start_phase(g, Phase::kBarrier);
      else
        start_phase(g, w_.optimizer_ms > 0 ? Phase::kOptimizer : Phase::kWaitData);
      break;
    case Phase::kAllReduce:
      start_phase(g, w_.optimizer_ms > 0 ? Phase::kOptimizer : Phase::kWaitData);
      break;
    case Phase::kOptimizer:
      start_phase(g, Phase::kWaitData);
      break;
    case Phase::kEval:
    case Phase::kCheckpoint:
      start_phase(g, Phase::kWaitData);
      return;
    case Phase::kBarrier:
    case Phase::kIdle:
      return;
  }
  // Between steps: evaluation and checkpoints when due (all ranks share the schedule).
  if (g.phase == Phase::kWaitData) {
    if (t_ >= g.next_checkpoint) {
      g.next_checkpoint += w_.checkpoint_every_s;
      start_phase(g, Phase::kCheckpoint);
    } else if (t_ >= g.next_eval) {
      g.next_eval += w_.eval_every_s;
      start_phase(g, Phase::kEval);
    }
  }
}

// What the activity asks of the board, 0-1: tensor pipes cost most, then the SMs, then DRAM.
static double demand_of(double sm, double tensor, double dram) {
  return std::min(1.0, 0.35 * sm + 0.45 * tensor + 0.25 * dram);
}

// Board power at a demand and clock. Full demand at the maximum clock asks 15 % more than the
// TDP, so dense math meets the default limit (and is trimmed by the power cap, as on real boards).
double Simulation::power_at(double demand, double clock_mhz) const {
  const double dynamic_max = 1.15 * model_.tdp_w - model_.idle_w;
  const double f = clock_mhz / model_.sm_clock_max_mhz;
  return model_.idle_w + dynamic_max * demand * std::pow(f, kPowerExponent);
}

void Simulation::control(Gpu& g, double dt) {
  // The demand the board's power controller works from: it follows a rise at once (power capping
  // acts within milliseconds) and lets a fall decay, so clocks do not chase every short gap.
  const double instant = demand_of(g.act.sm, g.act.tensor, g.act.dram);
  if (instant >= g.demand) {
    g.demand = instant;
  } else {
    const double alpha = 1 - std::exp(-dt / kDemandTauS);
    g.demand += alpha * (instant - g.demand);
  }

  uint64_t reasons = 0;
  const double fmax = effective_max_clock();
  if (sc_.app_clock_mhz && *sc_.app_clock_mhz < model_.sm_clock_max_mhz) reasons |= 0x2;
  if (sc_.hw_slowdown) reasons |= 0x8;
  double f = fmax;
  // SW power cap: the highest clock at which the demand fits under the enforced limit.
  if (power_at(g.demand, fmax) > enforced_w_) {
    const double dynamic_max = 1.15 * model_.tdp_w - model_.idle_w;
    const double room = std::max(0.0, enforced_w_ - model_.idle_w) / (dynamic_max * g.demand);
    f = std::max(model_.sm_clock_min_mhz,
                 model_.sm_clock_max_mhz * std::pow(room, 1.0 / kPowerExponent));
    f = std::min(f, fmax);
    reasons |= 0x4;
  }
  // Thermal: past the slowdown temperature the clock is pulled down until it cools.
  const double slowdown = model_.slowdown_temp_c;
  if (g.temp_c >= slowdown) {
    if (dt > 0) g.clock_cap_mhz = std::max(model_.sm_clock_min_mhz, g.clock_cap_mhz * 0.97);
    reasons |= 0x20;
    if (g.temp_c >= slowdown + 2) reasons |= 0x40;
  } else if (g.temp_c < slowdown - 2 && dt > 0) {
    g.clock_cap_mhz = std::min(model_.sm_clock_max_mhz, g.clock_cap_mhz * 1.01 + 1);
  }
  if (g.clock_cap_mhz < f) {
    f = g.clock_cap_mhz;
    if (!(reasons & 0x60)) reasons |= 0x20;  // still held down while cooling off
  }
  // No kernels for a while: clocks park, the driver reports the GPU idle.
  if (g.demand < 0.01 && g.act.kernel == 0) {
    f = model_.sm_clock_min_mhz;
    reasons = (reasons & ~uint64_t{0x4}) | 0x1;
  }
  g.clock_mhz = f;
  g.reasons = reasons;
}

void Simulation::integrate(Gpu& g, double dt) {
  if (dt <= 0) return;
  // Instantaneous power follows the current activity at the current clock.
  g.power_w = power_at(demand_of(g.act.sm, g.act.tensor, g.act.dram), g.clock_mhz);
  g.energy_mj += g.power_w * dt * 1000;
  // First-order thermal model, solved exactly over dt.
  const double target = sc_.ambient_c + model_.thermal_resistance_c_per_w * sc_.cooling * g.power_w;
  g.temp_c = target + (g.temp_c - target) * std::exp(-dt / model_.thermal_time_constant_s);
  // Input pipeline keeps producing while its queue has room.
  if (w_.batch_s > 0 && !g.rank.idle) {
    g.producer += dt;
    while (g.producer >= w_.batch_s && g.queue < w_.prefetch) {
      g.producer -= w_.batch_s;
      g.queue++;
    }
    if (g.queue >= w_.prefetch) g.producer = std::min(g.producer, w_.batch_s);
  }
  if (g.phase == Phase::kStartup && sc_.startup_s > 0)
    g.mem_used_mib = std::min(0.85, 0.85 * (t_ + dt) / sc_.startup_s) * model_.mem_total_mib;
  else if (!g.rank.idle)
    g.mem_used_mib = 0.85 * model_.mem_total_mib;

  Accum& a = g.acc;
  a.time += dt;
  a.kernel += g.act.kernel * dt;
  a.sm += g.act.sm * dt;
  a.tensor += g.act.tensor * dt;
  a.dram += g.act.dram * dt;
  a.occupancy += g.act.sm * 0.45 * dt;
  a.pcie_rx += g.act.pcie_rx_mibs * dt;
  a.pcie_tx += g.act.pcie_tx_mibs * dt;
  a.nvlink += g.act.nvlink_mibs * dt;
  a.reasons |= g.reasons;
}

int Simulation::working_ranks() const {
  int n = 0;
  for (const Gpu& g : gpus_) n += g.rank.idle ? 0 : 1;
  return n;
}

void Simulation::apply_changes() {
  bool changed = false;
  while (next_change_ < sc_.changes.size() && sc_.changes[next_change_].at_s <= t_) {
    (void)apply_workload_json(w_, sc_.changes[next_change_].workload, "change");
    ++next_change_;
    changed = true;
  }
  if (!changed) return;
  // Schedules restart from now; a job that stopped all-reducing releases ranks at the barrier.
  const bool collective = w_.allreduce_mib > 0 && working_ranks() > 1;
  for (Gpu& g : gpus_) {
    g.next_eval = w_.eval_every_s > 0 ? t_ + w_.eval_every_s : kInf;
    g.next_checkpoint = w_.checkpoint_every_s > 0 ? t_ + w_.checkpoint_every_s : kInf;
    if (!collective && g.phase == Phase::kBarrier) start_phase(g, Phase::kWaitData);
  }
}

void Simulation::advance_to(double t_end) {
  while (t_ < t_end) {
    double next = std::min(t_end, next_control_);
    for (const Gpu& g : gpus_) next = std::min(next, g.phase_end);
    if (next_change_ < sc_.changes.size()) next = std::min(next, sc_.changes[next_change_].at_s);
    next = std::max(next, t_);
    const double dt = next - t_;
    for (Gpu& g : gpus_) integrate(g, dt);
    t_ = next;
    for (Gpu& g : gpus_) {
      if (g.energy_history.empty() || t_ - g.energy_history.back().first >= 0.05) {
        g.energy_history.emplace_back(t_, g.energy_mj);
        while (g.energy_history.size() > 2 && t_ - g.energy_history[1].first >= 1.0)
          g.energy_history.pop_front();
      }
    }
    if (t_ >= next_control_) {
      for (Gpu& g : gpus_) control(g, kControlTickS);
      next_control_ += kControlTickS;
    }
    apply_changes();
    for (size_t i = 0; i < gpus_.size(); ++i)
      for (int guard = 0; guard < 16 && gpus_[i].phase_end <= t_; ++guard) finish_phase(i);
    // A collective starts when the last rank arrives; everyone waits for the slowest.
    bool any = false, all = true;
    for (const Gpu& g : gpus_) {
      if (g.rank.idle) continue;
      any = true;
      all = all && g.phase == Phase::kBarrier;
    }
    if (any && all)
      for (Gpu& g : gpus_)
        if (!g.rank.idle) start_phase(g, Phase::kAllReduce);
  }
}

DeviceSample Simulation::read(size_t i) {
  Gpu& g = gpus_[i];
  Accum a = g.acc;
  g.acc = {};
  const double span = std::max(a.time, 1e-9);
  DeviceSample s;
  auto pct = [&](double integral) { return std::clamp(100.0 * integral / span, 0.0, 100.0); };
  using enum Field;
  const bool free_gpu = g.rank.idle && !g.rank.held;
  s[kUtilGpu] = Reading::of(std::round(pct(a.kernel)));
  s[kUtilMem] = Reading::of(std::round(pct(a.dram)));
  // The driver's 1-second average, from the energy counter's history.
  const auto& h = g.energy_history;
  double avg = g.power_w;
  for (const auto& [t, e] : h) {
    if (t_ - t <= 1.0 + 1e-9 && t_ - t > 0.05) {
      avg = (g.energy_mj - e) / 1000.0 / (t_ - t);
      break;
    }
  }
  s[kPower] = Reading::of(std::round(avg * 100) / 100);
  s[kPowerInstant] =
      Reading::of(std::round(std::max(0.0, g.power_w * noise_.jitter(0.02)) * 100) / 100);
  s[kEnergy] = Reading::of(std::floor(g.energy_mj));
  s[kPowerLimitEnforced] = Reading::of(enforced_w_);
  s[kPowerLimit] = Reading::of(enforced_w_);
  s[kPowerLimitDefault] = Reading::of(model_.tdp_w);
  s[kPowerLimitMin] = Reading::of(model_.power_limit_min_w);
  s[kPowerLimitMax] = Reading::of(model_.power_limit_max_w);
  s[kTemp] = Reading::of(std::round(g.temp_c));
  // HBM sits beside the die on the same package: a little warmer, more so when it is busy.
  s[kTempMem] = model_.hbm ? Reading::of(std::round(g.temp_c + 2 + 6 * pct(a.dram) / 100))
                           : Reading::unsupported();
  s[kTempSlowdown] = Reading::of(model_.slowdown_temp_c);
  s[kClockSm] = Reading::of(std::round(g.clock_mhz / 15) * 15);
  s[kClockMem] = Reading::of(free_gpu ? 405 : model_.mem_clock_mhz);
  s[kClockSmMax] = Reading::of(model_.sm_clock_max_mhz);
  s[kClockMemMax] = Reading::of(model_.mem_clock_mhz);
  s[kClockAppSm] = Reading::of(sc_.app_clock_mhz.value_or(model_.sm_clock_max_mhz));
  s[kClockAppMem] = Reading::of(model_.mem_clock_mhz);
  s[kPstate] = Reading::of(free_gpu ? 8 : 0);
  s[kClockEventReasons] = Reading::of(static_cast<double>(g.reasons));
  s[kMemUsed] = Reading::of(std::round(g.mem_used_mib));
  s[kMemTotal] = Reading::of(model_.mem_total_mib);
  s[kPcieTx] = Reading::of(std::round(a.pcie_tx / span));
  s[kPcieRx] = Reading::of(std::round(a.pcie_rx / span));
  s[kPcieGen] = Reading::of(free_gpu ? 1 : model_.pcie_gen_max);
  s[kPcieGenMax] = Reading::of(model_.pcie_gen_max);
  s[kPcieWidth] = Reading::of(model_.pcie_width_max);
  s[kPcieWidthMax] = Reading::of(model_.pcie_width_max);
  // A healthy board: no replays, no remapped rows (row remapping: Ampere and newer HBM parts).
  s[kPcieReplays] = Reading::of(0);
  const bool remaps = model_.hbm && model_.architecture >= Architecture::kAmpere;
  for (Field f : {kRemappedRowsCorrected, kRemappedRowsUncorrected, kRemapFailure})
    s[f] = remaps ? Reading::of(0) : Reading::unsupported();
  s[kNvlink] = model_.nvlink_gb_s > 0 ? Reading::of(std::round(2 * a.nvlink / span))
                                      : Reading::unsupported();
  s[kFan] = model_.passive_cooling ? Reading::unsupported()
                                   : Reading::of(std::round(std::clamp(g.temp_c - 5, 30.0, 100.0)));
  if (infos_[i].gpm_supported) {
    auto r1 = [](double v) { return Reading::of(std::round(v * 10) / 10); };
    s[kGpmGraphicsUtil] = r1(pct(a.kernel));
    s[kGpmSmUtil] = r1(pct(a.sm));
    s[kGpmSmOccupancy] = r1(pct(a.occupancy));
    s[kGpmTensorAny] = r1(pct(a.tensor));
    s[kGpmDramBw] = r1(pct(a.dram));
    s[kGpmFp64] = r1(0);
    s[kGpmFp32] = r1(pct(a.sm) * 0.12);
    s[kGpmFp16] = r1(pct(a.tensor) * 0.08);
    s[kGpmPcieTx] = r1(a.pcie_tx / span);
    s[kGpmPcieRx] = r1(a.pcie_rx / span);
    s[kGpmNvlinkRx] = r1(a.nvlink / span);
    s[kGpmNvlinkTx] = r1(a.nvlink / span);
  } else {
    for (Field f :
         {kGpmGraphicsUtil, kGpmSmUtil, kGpmSmOccupancy, kGpmTensorAny, kGpmDramBw, kGpmFp64,
          kGpmFp32, kGpmFp16, kGpmPcieTx, kGpmPcieRx, kGpmNvlinkRx, kGpmNvlinkTx})
      s[f] = Reading::unsupported();
  }
  s.processes_supported = true;
  if (!free_gpu) {
    if (g.rank.owner)
      s.owners.push_back(*g.rank.owner);
    else if (sc_.owner)
      s.owners.push_back(*sc_.owner);
    const int n = std::max(1, g.rank.processes);
    for (int k = 0; k < n; ++k) {
      ProcessInfo p;
      p.pid = static_cast<uint32_t>(40000 + 100 * i + static_cast<size_t>(k));
      p.name = "python";
      p.used_memory_mib = std::max(0.0, std::round(g.mem_used_mib / n - 300));
      p.sm_util_pct = std::round(pct(a.kernel) / n);
      p.mem_util_pct = std::round(pct(a.dram) / n);
      if (!s.owners.empty()) p.owner = s.owners.front();
      s.processes.push_back(std::move(p));
    }
  }
  return s;
}

}  // namespace gpudoctor::sim
