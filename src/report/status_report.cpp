#include "report/status_report.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/clock_reasons.hpp"
#include "report/text_table.hpp"

namespace gpudoctor {
namespace {

std::string num_or_na(const std::optional<double>& v, const char* fmt_spec) {
  return v ? fmt::format(fmt::runtime(fmt_spec), *v) : "n/a";
}

std::string shorten(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 1) + "~";
}

std::string processes_text(const DeviceSample& s) {
  if (!s.processes_supported) return "n/a";
  if (s.processes.empty()) return "-";
  std::string out;
  for (size_t i = 0; i < s.processes.size() && i < 2; ++i) {
    const auto& p = s.processes[i];
    if (!out.empty()) out += ", ";
    out += fmt::format("{}({})", p.name.empty() ? "?" : shorten(p.name, 16), p.pid);
  }
  if (s.processes.size() > 2) out += fmt::format(" +{}", s.processes.size() - 2);
  return out;
}

std::string reasons_text(const Reading& r) {
  const auto mask = reasons_mask(r);
  if (!mask) return "n/a";
  const auto words = decode_clock_reasons(*mask);
  if (words.empty()) return "none";
  return fmt::format("{}", fmt::join(words, ","));
}

}  // namespace

StatusView make_status_view(const SystemInfo& system, const std::vector<DeviceInfo>& devices,
                            const Frame& first, const Frame& second) {
  StatusView v;
  v.system = system;
  v.devices = devices;
  v.frame = second;
  v.interval_s = second.time_s - first.time_s;
  for (size_t i = 0; i < second.devices.size(); ++i) {
    const DeviceSample* prev = i < first.devices.size() ? &first.devices[i] : nullptr;
    v.assessments.push_back(assess(prev, second.devices[i], v.interval_s));
  }
  return v;
}

std::string render_status_text(const StatusView& v, size_t width) {
  std::string out;
  out += fmt::format("{} GPU{}  driver {}  CUDA {}  host {}\n", v.devices.size(),
                     v.devices.size() == 1 ? "" : "s",
                     v.system.driver_version.empty() ? "?" : v.system.driver_version,
                     v.system.cuda_driver_version.empty() ? "?" : v.system.cuda_driver_version,
                     v.system.hostname.empty() ? "?" : v.system.hostname);
  // The owner column only where some GPU's owner is known (docs/owners.md); the PCIe column
  // always where a link is degraded, else the first to go when the terminal is narrow.
  bool any_owner = false, any_degraded = false;
  for (const auto& s : v.frame.devices) any_owner = any_owner || !s.owners.empty();
  for (const auto& a : v.assessments) any_degraded = any_degraded || a.pcie_degraded;
  enum {
    kGpu,
    kName,
    kUtil,
    kSm,
    kPower,
    kEff,
    kP,
    kClocks,
    kTemp,
    kMem,
    kReasons,
    kPcie,
    kOwner,
    kProcs
  };
  std::vector<TextColumn> cols = {{"GPU", true, 0, 0, false},
                                  {"Name", false, 0, 12, false},
                                  {"Util", true, 0, 0, false},
                                  {"SM", true, 0, 0, false},
                                  {"Power / Limit", true, 0, 0, false},
                                  {"Eff", true, 0, 0, false},
                                  {"P", false, 2, 0, false},
                                  {"SM MHz/max", true, 3, 0, false},
                                  {"Temp", true, 5, 0, false},
                                  {"Memory GiB", true, 4, 0, false},
                                  {"Reasons", false, 6, 8, false},
                                  {"PCIe", false, any_degraded ? 0 : 1, 0, false},
                                  {"Owner", false, any_owner ? 0 : -1, 24, true},
                                  {"Processes", false, 0, 10, false}};
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < v.devices.size() && i < v.frame.devices.size(); ++i) {
    const DeviceInfo& d = v.devices[i];
    const DeviceSample& s = v.frame.devices[i];
    const GpuAssessment& a = v.assessments[i];
    std::vector<std::string> r(cols.size(), "-");
    r[kGpu] = std::to_string(d.index);
    // "NVIDIA " says nothing in a table of NVIDIA GPUs: the room goes to the model.
    r[kName] = d.name.rfind("NVIDIA ", 0) == 0 ? d.name.substr(7) : d.name;
    r[kOwner] = owners_text(s.owners);
    if (s.lost) {
      r[kUtil] = "lost";
      rows.push_back(std::move(r));
      continue;
    }
    r[kUtil] = a.util_pct ? fmt::format("{:.0f}%", *a.util_pct) : "n/a";
    r[kSm] = a.sm_pct ? fmt::format("{:.0f}%", *a.sm_pct) : "n/a";
    if (a.power_w && a.limit_w)
      r[kPower] =
          fmt::format("{:.0f}/{:.0f}W {:>3.0f}%", *a.power_w, *a.limit_w, *a.power_ratio * 100);
    else
      r[kPower] = a.power_w ? fmt::format("{:.0f}W", *a.power_w) : "n/a";
    r[kEff] = a.efficiency ? fmt::format("{:.2f}", *a.efficiency) : "n/a";
    const Reading& ps = s[Field::kPstate];
    r[kP] = ps.has_value() ? fmt::format("P{:.0f}", ps.value()) : "n/a";
    r[kClocks] = fmt::format("{}/{}", num_or_na(opt_value(s[Field::kClockSm]), "{:.0f}"),
                             num_or_na(opt_value(s[Field::kClockSmMax]), "{:.0f}"));
    r[kTemp] = num_or_na(opt_value(s[Field::kTemp]), "{:.0f}C");
    r[kMem] = a.mem_used_mib && a.mem_total_mib
                  ? fmt::format("{:.1f}/{:.1f}", *a.mem_used_mib / 1024, *a.mem_total_mib / 1024)
                  : "n/a";
    r[kReasons] = reasons_text(s[Field::kClockEventReasons]);
    r[kPcie] = a.pcie_text.empty() ? "n/a" : a.pcie_text.substr(0, a.pcie_text.find(" ("));
    if (a.pcie_degraded) r[kPcie] += " !";
    r[kProcs] = processes_text(s);
    rows.push_back(std::move(r));
  }
  TextTable table(std::move(cols), 2, /*shorten_from=*/5);
  table.fit(rows, width);
  out += table.header();
  for (const auto& r : rows) out += table.row(r);
  out += "\n";
  bool any_no_sm = false;
  for (size_t i = 0; i < v.devices.size() && i < v.assessments.size(); ++i) {
    out += verdict_line(v.devices[i].index, v.assessments[i]) + "\n";
    any_no_sm = any_no_sm || (v.assessments[i].efficiency && !v.assessments[i].efficiency_has_sm);
  }
  if (!table.shown(kP) || !table.shown(kMem) || !table.shown(kClocks))
    out += "Columns left out to fit: --json has every reading (or a wider terminal).\n";
  if (any_no_sm)
    out +=
        "\nEff = power/default limit x SM activity; where SM activity is n/a (no GPM before "
        "Hopper) it is power/limit alone.\n";
  return out;
}

nlohmann::json reading_json(const Reading& r) {
  switch (r.state()) {
    case Reading::State::kValue:
      return r.value();
    case Reading::State::kUnsupported:
      return {{"status", "not_supported"}, {"code", nvml_code_name(r.code())}};
    case Reading::State::kError:
      return {{"status", "error"}, {"code", nvml_code_name(r.code())}};
    case Reading::State::kNoData:
      return {{"status", "no_data"}};
  }
  return nullptr;
}

nlohmann::json sample_readings_json(const DeviceSample& s) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& fi : all_fields()) j[std::string(fi.id)] = reading_json(s[fi.field]);
  return j;
}

nlohmann::json owner_json(const Owner& o) {
  return owner_to_json(o);
}

std::string owners_text(const std::vector<Owner>& owners) {
  if (owners.empty()) return "-";
  std::string out = owner_label(owners.front());
  if (owners.size() > 1) out += fmt::format(" +{}", owners.size() - 1);
  return out;
}

nlohmann::json processes_json(const std::vector<ProcessInfo>& processes) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : processes) {
    nlohmann::json jp = {{"pid", p.pid}, {"name", p.name}};
    jp["used_memory_mib"] = p.used_memory_mib ? nlohmann::json(*p.used_memory_mib) : nullptr;
    jp["sm_util_pct"] = p.sm_util_pct ? nlohmann::json(*p.sm_util_pct) : nullptr;
    jp["mem_util_pct"] = p.mem_util_pct ? nlohmann::json(*p.mem_util_pct) : nullptr;
    jp["owner"] = p.owner ? owner_json(*p.owner) : nlohmann::json(nullptr);
    arr.push_back(std::move(jp));
  }
  return arr;
}

nlohmann::json render_status_json(const StatusView& v) {
  auto optj = [](const std::optional<double>& x) { return x ? nlohmann::json(*x) : nullptr; };
  nlohmann::json j;
  j["host"] = v.system.hostname;
  j["driver_version"] = v.system.driver_version;
  j["cuda_driver_version"] = v.system.cuda_driver_version;
  j["time_unix_ms"] = v.frame.time_unix_ms;
  j["interval_s"] = v.interval_s;
  j["gpus"] = nlohmann::json::array();
  for (size_t i = 0; i < v.devices.size() && i < v.frame.devices.size(); ++i) {
    const DeviceInfo& d = v.devices[i];
    const DeviceSample& s = v.frame.devices[i];
    const GpuAssessment& a = v.assessments[i];
    nlohmann::json g;
    g["index"] = d.index;
    g["name"] = d.name;
    g["uuid"] = d.uuid;
    g["pci_bus_id"] = d.pci_bus_id;
    g["serial"] = d.serial;
    g["architecture"] = architecture_name(d.architecture);
    g["persistence_mode"] = d.persistence_mode ? nlohmann::json(*d.persistence_mode) : nullptr;
    g["mig_mode"] = d.mig_mode ? nlohmann::json(*d.mig_mode) : nullptr;
    g["gpm_supported"] = d.gpm_supported;
    g["lost"] = s.lost;
    g["verdict"] = {{"code", verdict_code(a.verdict)}, {"text", verdict_line(d.index, a)}};
    g["efficiency"] = optj(a.efficiency);
    g["efficiency_uses_sm_activity"] = a.efficiency_has_sm;
    g["power_mean_w"] = optj(a.power_w);
    g["power_mean_from_energy"] = a.power_from_energy;
    g["power_limit_w"] = optj(a.limit_w);
    g["power_limit_source"] = a.limit_is_default ? "default" : (a.limit_w ? "enforced" : "none");
    g["power_ratio"] = optj(a.power_ratio);
    g["pcie_degraded"] = a.pcie_degraded;
    if (const auto mask = reasons_mask(s[Field::kClockEventReasons])) {
      g["clock_event_reasons"] = decode_clock_reasons(*mask, false);
    } else {
      g["clock_event_reasons"] = nullptr;
    }
    g["readings"] = sample_readings_json(s);
    g["processes"] = s.processes_supported ? processes_json(s.processes) : nlohmann::json(nullptr);
    g["owners"] = nlohmann::json::array();
    for (const auto& o : s.owners) g["owners"].push_back(owner_json(o));
    j["gpus"].push_back(std::move(g));
  }
  return j;
}

}  // namespace gpudoctor
