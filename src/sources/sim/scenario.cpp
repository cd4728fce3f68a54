#include "sources/sim/scenario.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/duration.hpp"
#include "core/gpu_models.hpp"
#include "sources/sim/builtin_scenarios.hpp"

namespace gpudoctor::sim {
namespace {

using json = nlohmann::json;

template <class T>
Result<Nothing> get(const json& j, const char* key, T& out, const std::string& origin) {
  if (!j.contains(key) || j[key].is_null()) return kOk;
  try {
    out = j[key].get<T>();
  } catch (const json::exception&) {
    return usage_error(fmt::format("{}: '{}' has the wrong type ({})", origin, key, j[key].dump()));
  }
  return kOk;
}

#define GD_TRY(expr)            \
  do {                          \
    auto r_ = (expr);           \
    if (!r_) return r_.error(); \
  } while (0)

Result<Nothing> check_keys(const json& j, std::initializer_list<const char*> known,
                           const std::string& origin) {
  for (const auto& [k, v] : j.items()) {
    bool ok = false;
    for (const char* n : known) ok = ok || k == n;
    if (!ok) return usage_error(fmt::format("{}: unknown key '{}'", origin, k));
  }
  return kOk;
}

}  // namespace

Result<Nothing> validate_scenario(const Scenario& s, const std::string& origin) {
  if (s.gpus < 1 || s.gpus > 64) return usage_error(origin + ": gpus must be 1-64");
  if (!(s.duration_s > 0 && s.duration_s <= 30 * 86400.0) || !(s.interval_s >= 0.01) ||
      s.duration_s / s.interval_s > 1e7)
    return usage_error(origin +
                       ": duration must be > 0 and at most 30 days, interval at least 10ms, and "
                       "at most 10 million samples");
  if (!gpu_model_by_key(s.model)) {
    auto model = find_gpu_model(s.model);
    return usage_error(
        fmt::format("{}: {}", origin,
                    model ? fmt::format("GPU model '{}': write it as '{}'", s.model, model->key)
                          : model.error().message));
  }
  if (s.power_limit_w && !(*s.power_limit_w > 0 && *s.power_limit_w < 1e5))
    return usage_error(origin + ": power_limit_w must be a positive number of watts");
  if (s.app_clock_mhz && !(*s.app_clock_mhz > 0 && *s.app_clock_mhz < 1e5))
    return usage_error(origin + ": app_clock_mhz must be a positive number of MHz");
  if (!(s.ambient_c > -50 && s.ambient_c < 100) || !(s.cooling > 0 && s.cooling < 100) ||
      !(s.startup_s >= 0 && s.startup_s < 1e6))
    return usage_error(origin + ": ambient_c, cooling (> 0) or startup_s out of range");
  for (const Rank& r : s.ranks)
    if (r.processes < 1 || r.processes > 64 || !(r.slowdown > 0 && r.slowdown < 1000) ||
        r.alternate_steps < 0 || (r.alternate_phase != 0 && r.alternate_phase != 1))
      return usage_error(origin +
                         ": a rank needs processes 1-64, slowdown > 0, "
                         "alternate_steps >= 0, alternate_phase 0 or 1");
  return kOk;
}

Result<Nothing> apply_workload_json(Workload& w, const json& j, const std::string& origin) {
  if (!j.is_object()) return usage_error(origin + ": 'workload' must be an object");
  GD_TRY(
      check_keys(j,
                 {"batch_s", "prefetch", "h2d_mib", "kernels", "kernel_ms", "launch_gap_ms", "sm",
                  "tensor", "dram", "compute_bound", "allreduce_mib", "nvlink", "optimizer_ms",
                  "eval_every_s", "eval_s", "checkpoint_every_s", "checkpoint_s", "jitter"},
                 origin + " workload"));
  GD_TRY(get(j, "batch_s", w.batch_s, origin));
  GD_TRY(get(j, "prefetch", w.prefetch, origin));
  GD_TRY(get(j, "h2d_mib", w.h2d_mib, origin));
  GD_TRY(get(j, "kernels", w.kernels, origin));
  GD_TRY(get(j, "kernel_ms", w.kernel_ms, origin));
  GD_TRY(get(j, "launch_gap_ms", w.launch_gap_ms, origin));
  GD_TRY(get(j, "sm", w.sm, origin));
  GD_TRY(get(j, "tensor", w.tensor, origin));
  GD_TRY(get(j, "dram", w.dram, origin));
  GD_TRY(get(j, "compute_bound", w.compute_bound, origin));
  GD_TRY(get(j, "allreduce_mib", w.allreduce_mib, origin));
  GD_TRY(get(j, "nvlink", w.nvlink, origin));
  GD_TRY(get(j, "optimizer_ms", w.optimizer_ms, origin));
  GD_TRY(get(j, "eval_every_s", w.eval_every_s, origin));
  GD_TRY(get(j, "eval_s", w.eval_s, origin));
  GD_TRY(get(j, "checkpoint_every_s", w.checkpoint_every_s, origin));
  GD_TRY(get(j, "checkpoint_s", w.checkpoint_s, origin));
  GD_TRY(get(j, "jitter", w.jitter, origin));
  if (w.kernels < 1 || w.kernel_ms <= 0 || w.launch_gap_ms < 0 || w.prefetch < 1 || w.batch_s < 0)
    return usage_error(origin +
                       ": workload needs kernels >= 1, kernel_ms > 0, launch_gap_ms >= 0, "
                       "prefetch >= 1, batch_s >= 0");
  for (double a : {w.sm, w.tensor, w.dram, w.compute_bound})
    if (!(a >= 0 && a <= 1))
      return usage_error(origin + ": sm, tensor, dram, compute_bound are 0-1");
  // Every step must take time, or simulated time could not advance.
  if (!(w.kernel_ms * w.kernels >= 1e-3) || !(w.jitter >= 0 && w.jitter <= 0.5) ||
      !(w.h2d_mib >= 0) || !(w.allreduce_mib >= 0) || !(w.optimizer_ms >= 0) ||
      !(w.eval_every_s >= 0) || !(w.eval_s >= 0) || !(w.checkpoint_every_s >= 0) ||
      !(w.checkpoint_s >= 0))
    return usage_error(origin +
                       ": a step needs kernels x kernel_ms >= 1 us, jitter 0-0.5, and "
                       "no negative sizes or times");
  return kOk;
}

Result<Owner> parse_owner_json(const json& j, const std::string& origin) {
  if (!j.is_object()) return usage_error(origin + ": an owner is a JSON object");
  GD_TRY(check_keys(j, {"kind", "id", "step", "pod", "namespace", "container", "user"}, origin));
  Owner o;
  std::string kind = "slurm_job";
  GD_TRY(get(j, "kind", kind, origin));
  const auto k = owner_kind_from_code(kind);
  if (!k)
    return usage_error(
        fmt::format("{}: owner kind '{}' (slurm_job, k8s_pod, container, systemd_unit, process)",
                    origin, kind));
  o.kind = *k;
  GD_TRY(get(j, "id", o.id, origin));
  GD_TRY(get(j, "step", o.step, origin));
  GD_TRY(get(j, "pod", o.pod, origin));
  GD_TRY(get(j, "namespace", o.pod_namespace, origin));
  GD_TRY(get(j, "container", o.container, origin));
  GD_TRY(get(j, "user", o.user, origin));
  if (o.id.empty() && o.pod.empty()) return usage_error(origin + ": an owner needs an id");
  o.source = "sim";
  return o;
}

Result<Scenario> parse_scenario(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {
    return usage_error(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  if (!j.is_object()) return usage_error(origin + ": a scenario is a JSON object");
  GD_TRY(check_keys(j,
                    {"name", "description", "cause", "model", "gpus", "duration_s", "interval_s",
                     "seed", "power_limit_w", "app_clock_mhz", "hw_slowdown", "ambient_c",
                     "cooling", "startup_s", "workload", "ranks", "changes", "owner", "host"},
                    origin));
  Scenario s;
  GD_TRY(get(j, "name", s.name, origin));
  GD_TRY(get(j, "description", s.description, origin));
  GD_TRY(get(j, "cause", s.cause, origin));
  GD_TRY(get(j, "model", s.model, origin));
  GD_TRY(get(j, "gpus", s.gpus, origin));
  GD_TRY(get(j, "duration_s", s.duration_s, origin));
  GD_TRY(get(j, "interval_s", s.interval_s, origin));
  GD_TRY(get(j, "seed", s.seed, origin));
  double v = 0;
  if (j.contains("power_limit_w") && !j["power_limit_w"].is_null()) {
    GD_TRY(get(j, "power_limit_w", v, origin));
    s.power_limit_w = v;
  }
  if (j.contains("app_clock_mhz") && !j["app_clock_mhz"].is_null()) {
    GD_TRY(get(j, "app_clock_mhz", v, origin));
    s.app_clock_mhz = v;
  }
  GD_TRY(get(j, "hw_slowdown", s.hw_slowdown, origin));
  GD_TRY(get(j, "ambient_c", s.ambient_c, origin));
  GD_TRY(get(j, "cooling", s.cooling, origin));
  GD_TRY(get(j, "startup_s", s.startup_s, origin));
  GD_TRY(get(j, "host", s.host, origin));
  if (j.contains("owner")) {
    auto o = parse_owner_json(j["owner"], origin + " owner");
    if (!o) return o.error();
    s.owner = std::move(o.value());
  }
  if (j.contains("workload")) GD_TRY(apply_workload_json(s.workload, j["workload"], origin));
  if (s.gpus < 1 || s.gpus > 64) return usage_error(origin + ": gpus must be 1-64");
  s.ranks.assign(static_cast<size_t>(s.gpus), Rank{});
  if (j.contains("ranks")) {
    if (!j["ranks"].is_object())
      return usage_error(origin + ": 'ranks' maps GPU indices (\"1\", \"2-3\") to settings");
    for (const auto& [key, r] : j["ranks"].items()) {
      int lo = 0, hi = 0;
      const auto dash = key.find('-');
      const std::string a = key.substr(0, dash),
                        b = dash == std::string::npos ? a : key.substr(dash + 1);
      const auto ra = std::from_chars(a.data(), a.data() + a.size(), lo);
      const auto rb = std::from_chars(b.data(), b.data() + b.size(), hi);
      if (ra.ec != std::errc{} || ra.ptr != a.data() + a.size() || rb.ec != std::errc{} ||
          rb.ptr != b.data() + b.size() || lo < 0 || lo > hi || hi >= s.gpus)
        return usage_error(fmt::format("{}: bad rank key '{}'", origin, key));
      GD_TRY(check_keys(
          r,
          {"idle", "held", "slowdown", "processes", "alternate_steps", "alternate_phase", "owner"},
          origin + " rank " + key));
      for (int i = lo; i <= hi && i < s.gpus; ++i) {
        Rank& rk = s.ranks[static_cast<size_t>(i)];
        GD_TRY(get(r, "idle", rk.idle, origin));
        GD_TRY(get(r, "held", rk.held, origin));
        GD_TRY(get(r, "slowdown", rk.slowdown, origin));
        GD_TRY(get(r, "processes", rk.processes, origin));
        GD_TRY(get(r, "alternate_steps", rk.alternate_steps, origin));
        GD_TRY(get(r, "alternate_phase", rk.alternate_phase, origin));
        if (r.contains("owner")) {
          auto o = parse_owner_json(r["owner"], origin + " rank " + key + " owner");
          if (!o) return o.error();
          rk.owner = std::move(o.value());
        }
      }
    }
  }
  if (j.contains("changes")) {
    if (!j["changes"].is_array()) return usage_error(origin + ": 'changes' is an array");
    for (const auto& c : j["changes"]) {
      GD_TRY(check_keys(c, {"at_s", "workload"}, origin + " change"));
      Change ch;
      GD_TRY(get(c, "at_s", ch.at_s, origin));
      if (!c.contains("workload")) return usage_error(origin + ": a change needs 'workload'");
      Workload probe = s.workload;
      GD_TRY(apply_workload_json(probe, c["workload"], origin + " change"));
      ch.workload = c["workload"];
      s.changes.push_back(std::move(ch));
    }
    std::stable_sort(s.changes.begin(), s.changes.end(),
                     [](const Change& x, const Change& y) { return x.at_s < y.at_s; });
  }
  GD_TRY(validate_scenario(s, origin));
  return s;
}

std::vector<std::string> builtin_scenario_names() {
  std::vector<std::string> out;
  for (const auto& b : builtin_scenarios()) out.emplace_back(b.name);
  return out;
}

Result<Scenario> load_scenario(const std::string& name_or_path) {
  for (const auto& b : builtin_scenarios())
    if (b.name == name_or_path)
      return parse_scenario(std::string(b.json), "scenario " + name_or_path);
  std::ifstream in(name_or_path);
  if (!in)
    return usage_error(fmt::format("unknown scenario '{}' (built in: {}; or give a file path)",
                                   name_or_path, fmt::join(builtin_scenario_names(), ", ")));
  std::stringstream ss;
  ss << in.rdbuf();
  auto s = parse_scenario(ss.str(), name_or_path);
  if (s && s->name.empty()) s->name = name_or_path;
  return s;
}

Result<Nothing> apply_override(Scenario& s, const std::string& key, const std::string& value) {
  auto number = [&](double& out) -> Result<Nothing> {
    const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
    if (ec != std::errc{} || p != value.data() + value.size())
      return usage_error(fmt::format("sim option {}={}: not a number", key, value));
    return kOk;
  };
  double v = 0;
  auto integer = [&](uint64_t& out, uint64_t max) -> Result<Nothing> {
    const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
    if (ec != std::errc{} || p != value.data() + value.size() || out > max)
      return usage_error(fmt::format("sim option {}={}: a whole number up to {}", key, value, max));
    return kOk;
  };
  uint64_t n = 0;
  if (key == "gpus") {
    GD_TRY(integer(n, 64));
    if (n < 1) return usage_error("sim option gpus: 1-64");
    s.gpus = static_cast<int>(n);
    s.ranks.resize(static_cast<size_t>(s.gpus));
  } else if (key == "model") {
    auto model = find_gpu_model(value);
    if (!model) return model.error();
    s.model = model->key;
  } else if (key == "seed") {
    GD_TRY(integer(n, UINT64_MAX));
    s.seed = n;
  } else if (key == "duration" || key == "interval") {
    auto d = parse_duration(value);
    if (!d) return d.error();
    (key == "duration" ? s.duration_s : s.interval_s) = static_cast<double>(d->count()) / 1000.0;
  } else if (key == "host") {
    const bool ok =
        !value.empty() && value.size() <= 253 &&
        std::all_of(value.begin(), value.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
        });
    if (!ok) return usage_error(fmt::format("sim option host={}: a host name", value));
    s.host = value;
  } else if (key == "power_limit") {
    GD_TRY(number(v));
    s.power_limit_w = v;  // validated below
  } else {
    return usage_error(fmt::format(
        "unknown sim option '{}' (gpus, model, seed, speed, duration, interval, power_limit, "
        "host)",
        key));
  }
  return validate_scenario(s, "sim option " + key);
}

}  // namespace gpudoctor::sim
