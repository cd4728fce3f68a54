#include "sources/sim/sim_source.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace gpudoctor::sim {

Result<SimSpec> parse_sim_spec(const std::string& text) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    parts.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  if (parts.empty() || parts[0].empty())
    return usage_error(
        "sim source needs a scenario: --source sim:NAME[,gpus=N,model=M,seed=S,speed=X]");
  auto sc = load_scenario(parts[0]);
  if (!sc) return sc.error();
  SimSpec spec{std::move(sc.value()), 1.0};
  for (size_t i = 1; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    if (eq == std::string::npos)
      return usage_error(fmt::format("sim option '{}': expected key=value", parts[i]));
    const std::string key = parts[i].substr(0, eq), value = parts[i].substr(eq + 1);
    if (key == "speed") {
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), spec.speed);
      if (ec != std::errc{} || p != value.data() + value.size() || !(spec.speed > 0) ||
          spec.speed > 1000)
        return usage_error(
            fmt::format("sim option speed={}: a number > 0 and at most 1000", value));
      continue;
    }
    auto r = apply_override(spec.scenario, key, value);
    if (!r) return r.error();
  }
  return spec;
}

SimSource::SimSource(SimSpec spec, GpuModel model, std::vector<unsigned> gpus)
    : spec_(spec), sim_(spec.scenario, model), selected_(std::move(gpus)) {
  if (selected_.empty())
    for (unsigned i = 0; i < sim_.devices().size(); ++i) selected_.push_back(i);
  for (unsigned g : selected_) infos_.push_back(sim_.devices()[g]);
  system_.driver_version = "550.54.15";
  system_.cuda_driver_version = "12.4";
  system_.nvml_version = "12.550.54.15";
  system_.hostname =
      spec_.scenario.host.empty() ? "sim-" + spec_.scenario.name : spec_.scenario.host;
  start_ = std::chrono::steady_clock::now();
  start_unix_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
}

Frame SimSource::sample_at(double t_s) {
  sim_.advance_to(std::max(t_s, sim_.now()));
  Frame f;
  f.time_s = sim_.now();
  f.time_unix_ms = start_unix_ms_ + static_cast<int64_t>(f.time_s * 1000);
  for (unsigned g : selected_) {
    DeviceSample s = sim_.read(g);
    s.time_s = f.time_s;
    f.devices.push_back(std::move(s));
  }
  return f;
}

Frame SimSource::sample() {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return sample_at(elapsed * spec_.speed);
}

std::string SimSource::description() const {
  return fmt::format("simulator: scenario {} on {} x {}", spec_.scenario.name, spec_.scenario.gpus,
                     spec_.scenario.model);
}

Recording simulate_recording(SimSpec spec, const GpuModel& model) {
  const double duration = spec.scenario.duration_s, interval = spec.scenario.interval_s;
  const std::string name = spec.scenario.name;
  SimSource src(std::move(spec), model, {});
  src.set_start_unix_ms(kSimEpochUnixMs);
  Recording rec;
  rec.system = src.system();
  rec.start_unix_ms = kSimEpochUnixMs;
  rec.source = "sim:" + name;
  for (const auto& d : src.devices()) {
    GpuSeries g;
    g.info = d;
    rec.gpus.push_back(std::move(g));
  }
  // The first read covers the first interval: nothing is averaged over an empty window.
  const auto count = static_cast<size_t>(duration / interval + 1e-9);
  for (size_t k = 1; k <= count; ++k)
    append_frame(rec, src.sample_at(static_cast<double>(k) * interval));
  return rec;
}

Result<std::unique_ptr<Source>> open_sim_source(const std::string& text,
                                                const std::vector<unsigned>& gpus) {
  auto spec = parse_sim_spec(text);
  if (!spec) return spec.error();
  const auto model = gpu_model_by_key(spec->scenario.model);
  if (!model) return usage_error("unknown GPU model '" + spec->scenario.model + "'");
  for (unsigned g : gpus)
    if (g >= static_cast<unsigned>(spec->scenario.gpus))
      return usage_error(fmt::format("GPU {} does not exist: the scenario has {} GPU{}", g,
                                     spec->scenario.gpus, spec->scenario.gpus == 1 ? "" : "s"));
  return std::unique_ptr<Source>(new SimSource(std::move(spec.value()), *model, gpus));
}

}  // namespace gpudoctor::sim
