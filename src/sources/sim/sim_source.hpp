// SimSource: the simulator as a live source (`--source sim:SCENARIO[,gpus=N,model=M,seed=S,
// speed=X]`). Simulated time runs at `speed` times real time from the moment the source opens,
// so `status`, `watch` and `capture` behave exactly as on a real machine.
#pragma once

#include <chrono>
#include <memory>

#include "core/recording.hpp"
#include "sources/sim/engine.hpp"
#include "sources/source.hpp"

namespace gpudoctor::sim {

struct SimSpec {
  Scenario scenario;
  double speed = 1.0;
};
// Parses "SCENARIO[,key=value...]" (the part after "sim:").
Result<SimSpec> parse_sim_spec(const std::string& text);

class SimSource final : public Source {
 public:
  SimSource(SimSpec spec, GpuModel model, std::vector<unsigned> gpus);
  const SystemInfo& system() const override { return system_; }
  const std::vector<DeviceInfo>& devices() const override { return infos_; }
  Frame sample() override;
  std::string description() const override;

  // Frame at simulated time t_s (monotonic), without reference to the wall clock.
  Frame sample_at(double t_s);
  // Wall-clock time of simulated time 0 (default: when the source opened).
  void set_start_unix_ms(int64_t ms) { start_unix_ms_ = ms; }

 private:
  SimSpec spec_;
  Simulation sim_;
  std::vector<unsigned> selected_;  // simulated GPU indices to report
  std::vector<DeviceInfo> infos_;
  SystemInfo system_;
  std::chrono::steady_clock::time_point start_;
  int64_t start_unix_ms_ = 0;
};

// Simulated time 0 for runs that must not depend on when they ran: 2026-01-01T00:00:00Z.
inline constexpr int64_t kSimEpochUnixMs = 1'767'225'600'000;

// The whole scenario (duration and interval from the scenario) at virtual time, from
// kSimEpochUnixMs: same seed, same Recording.
Recording simulate_recording(SimSpec spec, const GpuModel& model);

Result<std::unique_ptr<Source>> open_sim_source(const std::string& spec,
                                                const std::vector<unsigned>& gpus);

}  // namespace gpudoctor::sim
