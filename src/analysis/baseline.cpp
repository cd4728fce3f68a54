#include "analysis/baseline.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/duration.hpp"
#include "host/markers.hpp"

namespace gpudoctor {
namespace {

namespace fs = std::filesystem;

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 100) return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return false;
  return n[0] != '.';
}

std::optional<double> opt_num(const nlohmann::json& j, const char* k) {
  const auto it = j.find(k);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

nlohmann::ordered_json opt(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

Baseline baseline_of(const Recording& rec, const Diagnosis& d) {
  Baseline b;
  b.source = d.source;
  b.created = iso8601_utc(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
  double power = 0, eff = 0;
  int n_power = 0, n_eff = 0;
  for (const auto& g : d.gpus) {
    const auto steady = g.metrics.find("steady_s");
    if (steady == g.metrics.end() || steady->get<double>() <= 0) continue;
    ++b.gpus;
    if (auto it = g.metrics.find("mean_power_w"); it != g.metrics.end())
      power += it->get<double>(), ++n_power;
    if (g.efficiency) eff += *g.efficiency, ++n_eff;
  }
  if (n_power) b.mean_power_w = power / n_power;
  if (n_eff) b.efficiency = eff / n_eff;
  const auto steps = host::step_stats(rec.markers);
  if (!std::isnan(steps.throughput)) b.throughput = steps.throughput;
  if (!std::isnan(steps.mean_step_s)) b.step_time_s = steps.mean_step_s;
  return b;
}

BaselineComparison compare_to_baseline(const Baseline& baseline, const Baseline& now,
                                       double threshold) {
  BaselineComparison c{baseline, now, {}, std::nullopt};
  auto check = [&](const char* metric, const std::optional<double>& was,
                   const std::optional<double>& is) {
    if (!was || !is || *was <= 0) return;
    const double drop = (*was - *is) / *was;
    if (drop > threshold) c.regressions.push_back({metric, *was, *is, drop});
  };
  check("mean_power_w", baseline.mean_power_w, now.mean_power_w);
  check("efficiency", baseline.efficiency, now.efficiency);
  check("throughput", baseline.throughput, now.throughput);
  if (baseline.gpus == 1 && now.gpus > 1 && baseline.throughput && now.throughput &&
      *baseline.throughput > 0)
    c.scaling_efficiency = *now.throughput / (now.gpus * *baseline.throughput);
  return c;
}

std::string baseline_dir() {
  if (const char* d = std::getenv("GPUDOCTOR_BASELINE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
    return std::string(x) + "/gpudoctor/baselines";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.local/share/gpudoctor/baselines";
  return ".gpudoctor-baselines";
}

nlohmann::ordered_json baseline_json(const Baseline& b) {
  nlohmann::ordered_json j;
  j["name"] = b.name;
  j["created"] = b.created;
  j["source"] = b.source;
  j["gpus"] = b.gpus;
  j["mean_power_w"] = opt(b.mean_power_w);
  j["efficiency"] = opt(b.efficiency);
  j["throughput"] = opt(b.throughput);
  j["step_time_s"] = opt(b.step_time_s);
  return j;
}

nlohmann::ordered_json comparison_json(const BaselineComparison& c) {
  nlohmann::ordered_json j;
  j["name"] = c.baseline.name;
  j["baseline"] = baseline_json(c.baseline);
  j["now"] = baseline_json(c.now);
  j["now"].erase("name");
  j["now"].erase("created");
  j["regressions"] = nlohmann::ordered_json::array();
  for (const auto& r : c.regressions)
    j["regressions"].push_back({{"metric", r.metric},
                                {"baseline", r.baseline},
                                {"now", r.now},
                                {"drop", std::round(r.drop * 1000) / 1000}});
  j["scaling_efficiency"] = opt(c.scaling_efficiency);
  return j;
}

Result<std::string> save_baseline(const Baseline& b) {
  if (!valid_name(b.name))
    return usage_error(fmt::format(
        "baseline name \"{}\": use letters, digits, '-', '_' and '.' (not first)", b.name));
  const fs::path dir = baseline_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return failure(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  const fs::path path = dir / (b.name + ".json");
  const fs::path tmp = dir / (b.name + ".json.tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << baseline_json(b).dump(2) << "\n";
    if (!out) return failure(fmt::format("cannot write {}", tmp.string()));
  }
  fs::rename(tmp, path, ec);
  if (ec) return failure(fmt::format("cannot write {}: {}", path.string(), ec.message()));
  return path.string();
}

Result<Baseline> load_baseline(const std::string& name) {
  if (!valid_name(name)) return usage_error(fmt::format("baseline name \"{}\" is not valid", name));
  const fs::path path = fs::path(baseline_dir()) / (name + ".json");
  std::ifstream in(path);
  if (!in) {
    const auto known = list_baselines();
    return usage_error(
        fmt::format("no baseline \"{}\" in {} (saved: {})", name, baseline_dir(),
                    known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!j.is_object()) return failure(fmt::format("{}: not a baseline file", path.string()));
  // A hand-edited file may hold any type where a string or a count belongs: take what fits.
  auto str = [&](const char* key, const std::string& otherwise) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : otherwise;
  };
  Baseline b;
  b.name = str("name", name);
  b.created = str("created", "");
  b.source = str("source", "");
  if (j.contains("gpus")) {  // absent: 0, as saved before the count was kept
    const auto gpus = opt_num(j, "gpus");
    if (!gpus || !(*gpus >= 0 && *gpus <= 1e6))
      return usage_error(fmt::format("{}: \"gpus\" is not a count of GPUs", path.string()));
    b.gpus = static_cast<int>(*gpus);
  }
  b.mean_power_w = opt_num(j, "mean_power_w");
  b.efficiency = opt_num(j, "efficiency");
  b.throughput = opt_num(j, "throughput");
  b.step_time_s = opt_num(j, "step_time_s");
  return b;
}

std::vector<std::string> list_baselines() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(baseline_dir(), ec))
    if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpudoctor
