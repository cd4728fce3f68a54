#include "formats/capture_reader.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/finish.hpp"
#include "text/text.hpp"

namespace gpudoctor {

bool looks_like_capture(std::string_view head) {
  if (head.find("\"gpudoctor-nvml-capture\"") != std::string_view::npos) return true;
  // The writer's keys are sorted: "format" comes after the samples, out of a long capture's
  // head; "created_by" comes first.
  const size_t k = head.find("\"created_by\"");
  if (k == std::string_view::npos) return false;
  std::string_view rest = head.substr(k + 12);
  const size_t v = rest.find_first_not_of(" \t\r\n:");
  return v != std::string_view::npos && rest.substr(v).starts_with("\"gpudoctor capture");
}

Result<Recording> read_capture(std::string_view text, const std::string& origin) {
  if (auto e = text::check_input(text::strip_bom(text), origin, "a gpudoctor capture (JSON)",
                                 std::nullopt))
    return std::move(*e);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return usage_error(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  try {
    if (doc.value("format", "") != "gpudoctor-nvml-capture")
      return usage_error(origin + ": not a gpudoctor capture (format marker missing)");
    Recording rec;
    log_reader::Problem not_increasing;
    rec.source = "capture: " + origin;
    rec.system.hostname = doc.value("host", "");
    const auto& sys = doc.value("system", nlohmann::json::object());
    rec.system.driver_version = sys.value("driver_version", "");
    if (const int cuda = sys.value("cuda_driver_version", 0); cuda > 0)
      rec.system.cuda_driver_version = fmt::format("{}.{}", cuda / 1000, (cuda % 1000) / 10);
    for (const auto& d : doc.at("devices")) {
      GpuSeries g;
      g.info.index = d.value("index", 0u);
      g.info.name = d.value("name", "");
      g.info.uuid = d.value("uuid", "");
      g.info.pci_bus_id = d.value("pci_bus_id", "");
      g.info.serial = d.value("serial", "");
      g.info.architecture = architecture_from_name(d.value("architecture", "unknown"));
      g.info.gpm_supported = d.value("gpm_supported", false);
      if (d.contains("persistence_mode") && d["persistence_mode"].is_boolean())
        g.info.persistence_mode = d["persistence_mode"].get<bool>();
      if (d.contains("mig_mode") && d["mig_mode"].is_boolean())
        g.info.mig_mode = d["mig_mode"].get<bool>();
      if (d.contains("lost_at_s") && d["lost_at_s"].is_number())
        g.lost_at_s = d["lost_at_s"].get<double>();
      if (d.contains("errors"))
        for (const auto& [key, code] : d["errors"].items())
          if (const auto f = field_by_id(key); f && code.is_string())
            g.unsupported[*f] = nvml_code_from_name(code.get<std::string>());
      std::array<double, kFieldCount> held;
      held.fill(kMissing);
      std::map<uint32_t, size_t> open_process;  // pid -> index in g.processes
      size_t sample_no = 0;
      for (const auto& s : d.at("samples")) {
        const double t = s.at("t_s").get<double>();
        ++sample_no;
        // A sample whose time is not after the one before (a hand-edited or merged file) would
        // break the order every reader guarantees: skipped and counted.
        if (!std::isfinite(t) || (g.size() > 0 && !(t > g.time_s.back()))) {
          if (not_increasing.count++ == 0)
            not_increasing.first =
                fmt::format("{}: GPU {}, sample {}: t_s {} is not after {}", origin, g.info.index,
                            sample_no, t, g.size() > 0 ? g.time_s.back() : 0.0);
          continue;
        }
        const nlohmann::json values = s.value("values", nlohmann::json::object());
        for (const auto& [key, v] : values.items())
          if (const auto f = field_by_id(key); f && v.is_number())
            held[index_of(*f)] = v.get<double>();
        const size_t row = g.append_row(t);
        for (size_t i = 0; i < kFieldCount; ++i)
          if (!is_missing(held[i])) g.column_for_write(static_cast<Field>(i))[row] = held[i];
        for (const auto& oj : s.value("owners", nlohmann::json::array()))
          if (auto o = owner_from_json(oj)) {
            auto span = std::find_if(g.owners.begin(), g.owners.end(),
                                     [&](const OwnerSpan& x) { return x.owner == *o; });
            if (span == g.owners.end())
              g.owners.push_back({std::move(*o), t, t});
            else
              span->last_s = t;
          }
        for (const auto& p : s.value("processes", nlohmann::json::array())) {
          const uint32_t pid = p.value("pid", 0u);
          auto it = open_process.find(pid);
          if (it == open_process.end()) {
            ProcessSpan span;
            span.pid = pid;
            span.name = p.value("name", "");
            span.first_s = t;
            it = open_process.emplace(pid, g.processes.size()).first;
            g.processes.push_back(span);
          }
          ProcessSpan& span = g.processes[it->second];
          span.last_s = t;
          if (p.contains("used_memory_mib") && p["used_memory_mib"].is_number())
            span.max_memory_mib =
                std::max(span.max_memory_mib.value_or(0), p["used_memory_mib"].get<double>());
        }
      }
      for (const auto& f : all_fields())
        if (!g.has(f.field) && !g.unsupported.count(f.field))
          g.unsupported[f.field] = nvml_code::kNotSupported;  // absent replays as NOT_SUPPORTED
      rec.gpus.push_back(std::move(g));
    }
    log_reader::mark_logged_power_limits(rec);
    log_reader::note_skipped(rec, not_increasing, "whose time did not advance", "sample(s)");
    return rec;
  } catch (const nlohmann::json::exception& e) {
    return usage_error(fmt::format("{}: malformed capture: {}", origin, e.what()));
  }
}

}  // namespace gpudoctor
