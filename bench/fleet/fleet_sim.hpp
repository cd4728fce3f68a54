// The scale bench's series, host by host and chunk by chunk: what `gpudoctor serve` would have
// counted (its ledger: analysis/ledger's rule over consecutive diagnosis windows of simulated
// frames, each second counted once) and, for the dcgm hosts, what dcgm-exporter would have shown
// every scrape. An epoch is simulated second by second (1 s, serve's default interval) when it is
// exact; otherwise its first FleetOptions::profile_s seconds are simulated (once per profile key,
// shared by every epoch with the same workload, model and layout) and its later windows repeat
// the profile's windows after the first: the causes and their share of the time are the
// simulator's and the diagnosis', the repetition is what makes a week of 1,000 GPUs take minutes.
// Thread-safety: a HostRun belongs to one thread; a ProfileCache is shared (locked).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "analysis/ledger.hpp"
#include "core/device.hpp"
#include "core/fields.hpp"
#include "core/gpu_models.hpp"
#include "exporter/exposition.hpp"
#include "fleet_plan.hpp"

namespace gpudoctor::fleet_bench {

// dcgm-exporter's families the path-2 series carry: its default counters that NVML (and so the
// simulator) has, FB_FREE, and SM activity (dcp-metrics-included.csv; the path 2 reads it).
// (Names, units and scales from the field catalogue's DCGM columns, as serve writes them.)
inline constexpr std::array<std::optional<Field>, 15> kDcgmFields{{
    Field::kClockSm,
    Field::kClockMem,
    Field::kTemp,
    Field::kPower,
    Field::kEnergy,
    Field::kUtilGpu,
    Field::kUtilMem,
    std::nullopt,  // DCGM_FI_DEV_FB_FREE: total - used
    Field::kMemUsed,
    Field::kGpmGraphicsUtil,
    Field::kGpmSmUtil,
    Field::kGpmTensorAny,
    Field::kGpmDramBw,
    Field::kGpmPcieTx,
    Field::kGpmPcieRx,
}};
std::string dcgm_family_name(size_t i);
using DcgmValues = std::array<double, kDcgmFields.size()>;  // NaN: no value

// One host's chunk: per scrape (chunk start + k * interval; it reports the samples taken since the
// previous one), the epoch those samples belong to, whether serve answered, and per GPU the
// counters serve reported then.
struct HostChunk {
  std::vector<int> epoch;
  std::vector<uint8_t> up;
  std::vector<uint8_t> dcgm;  // dcgm-exporter series at this scrape
  struct Gpu {
    std::vector<GpuLedger> ledger;  // what serve reported (cumulative since it started)
    std::vector<GpuLedger> delta;   // what the ledger counted since the previous scrape
    std::vector<DcgmValues> dcgm;
  };
  std::vector<Gpu> gpus;
};

// Per scrape slot of an epoch, per GPU: what the ledger added.
struct Profile {
  std::vector<std::vector<GpuLedger>> slots;  // [gpu][slot]
};

class ProfileCache {
 public:
  // The profile of the epoch's key, simulated on first use.
  std::shared_ptr<const Profile> get(const EpochPlan& e, const FleetOptions& o);
  size_t simulated() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_future<std::shared_ptr<const Profile>>> profiles_;
};

class HostRun {
 public:
  HostRun(const HostPlan& plan, const FleetOptions& o, ProfileCache& cache);
  ~HostRun();
  const std::vector<DeviceInfo>& devices() const { return devices_; }
  // The chunk starting at chunk_start_ms (chunks in order, from the span's start).
  void run_chunk(int64_t chunk_start_ms, HostChunk& out);
  double simulated_gpu_seconds() const { return simulated_gpu_s_; }
  // Simulates a whole epoch second by second; counted(gpu, sample) for what the ledger counts.
  static void simulate_exact(const EpochPlan& e, const GpuModel& model, int window_s, bool restart,
                             const std::function<void(size_t, const CountedSample&)>& counted);

 private:
  struct Exact;  // the epoch being simulated second by second
  const HostPlan& plan_;
  const FleetOptions& o_;
  ProfileCache& cache_;
  std::vector<DeviceInfo> devices_;
  std::vector<GpuLedger> cumulative_, carry_;
  std::vector<double> energy_offset_mj_, last_energy_mj_;
  std::optional<std::vector<DcgmValues>> carry_dcgm_;  // the frame of the next chunk's first scrape
  std::unique_ptr<Exact> exact_;
  int exact_epoch_ = -1;
  double simulated_gpu_s_ = 0;
};

// a += b, every counter.
void add_ledger(GpuLedger& a, const GpuLedger& b);

}  // namespace gpudoctor::fleet_bench
