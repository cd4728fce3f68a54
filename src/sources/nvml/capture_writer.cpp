#include "sources/nvml/capture_writer.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace gpudoctor {
namespace {
double round_to(double v, double step) {
  return std::round(v / step) * step;
}
}  // namespace

CaptureWriter::CaptureWriter(const SystemInfo& system, const std::vector<DeviceInfo>& devices) {
  doc_["format"] = "gpudoctor-nvml-capture";
  doc_["version"] = 1;
  doc_["created_by"] = std::string("gpudoctor capture ") + GPUDOCTOR_VERSION;
  doc_["host"] = system.hostname;
  int cuda = 0;
  if (!system.cuda_driver_version.empty()) {
    unsigned major = 0, minor = 0;
    if (std::sscanf(system.cuda_driver_version.c_str(), "%u.%u", &major, &minor) >= 1)
      cuda = static_cast<int>(major * 1000 + minor * 10);
  }
  doc_["system"] = {{"driver_version", system.driver_version},
                    {"cuda_driver_version", cuda},
                    {"nvml_version", system.nvml_version}};
  doc_["devices"] = nlohmann::json::array();
  for (const auto& d : devices) {
    nlohmann::json j = {{"index", d.index},
                        {"name", d.name},
                        {"uuid", d.uuid},
                        {"pci_bus_id", d.pci_bus_id},
                        {"serial", d.serial},
                        {"architecture", architecture_name(d.architecture)},
                        {"gpm_supported", d.gpm_supported},
                        {"errors", nlohmann::json::object()},
                        {"samples", nlohmann::json::array()}};
    j["persistence_mode"] = d.persistence_mode ? nlohmann::json(*d.persistence_mode) : nullptr;
    j["mig_mode"] = d.mig_mode ? nlohmann::json(*d.mig_mode) : nullptr;
    doc_["devices"].push_back(std::move(j));
  }
  last_.assign(devices.size(), std::vector<Reading>(kFieldCount));
}

void CaptureWriter::add(const Frame& frame) {
  if (t0_ < 0) t0_ = frame.time_s;
  const double t = round_to(frame.time_s - t0_, 0.001);
  if (frames_ > 0 && t <= last_t_) return;  // the replay needs strictly increasing times
  last_t_ = t;
  for (size_t i = 0; i < frame.devices.size() && i < last_.size(); ++i) {
    const DeviceSample& s = frame.devices[i];
    nlohmann::json& dev = doc_["devices"][i];
    if (s.lost) {
      if (!dev.contains("lost_at_s")) dev["lost_at_s"] = t;
      // The replay needs one sample per device: a GPU lost from the start gets an empty one.
      if (dev["samples"].empty())
        dev["samples"].push_back({{"t_s", t}, {"values", nlohmann::json::object()}});
      continue;
    }
    nlohmann::json values = nlohmann::json::object();
    for (const auto& fi : all_fields()) {
      const Reading& r = s[fi.field];
      if (r.has_value()) {
        // Sample-and-hold on replay: a value equal to the last one written need not repeat,
        // except the counter, which the replay interpolates between samples.
        if (r == last_[i][index_of(fi.field)] && fi.field != Field::kEnergy) continue;
        values[std::string(fi.id)] = round_to(r.value(), 0.001);
        last_[i][index_of(fi.field)] = r;
      } else if (r.state() == Reading::State::kUnsupported &&
                 r.code() != nvml_code::kNotSupported) {
        // NOT_SUPPORTED is what an absent field replays as; other reasons must be kept.
        dev["errors"][std::string(fi.id)] = nvml_code_name(r.code());
      }
    }
    nlohmann::json sample = {{"t_s", t}, {"values", std::move(values)}};
    if (s.processes_supported) {
      nlohmann::json procs = nlohmann::json::array();
      for (const auto& p : s.processes) {
        nlohmann::json jp = {{"pid", p.pid}, {"name", p.name}};
        if (p.used_memory_mib) jp["used_memory_mib"] = round_to(*p.used_memory_mib, 0.01);
        if (p.sm_util_pct) jp["sm_util_pct"] = *p.sm_util_pct;
        if (p.mem_util_pct) jp["mem_util_pct"] = *p.mem_util_pct;
        procs.push_back(std::move(jp));
      }
      sample["processes"] = std::move(procs);
    }
    if (!s.owners.empty()) {  // who held the GPU (docs/owners.md); the stand-in ignores it
      nlohmann::json owners = nlohmann::json::array();
      for (const auto& o : s.owners) owners.push_back(owner_to_json(o));
      sample["owners"] = std::move(owners);
    }
    dev["samples"].push_back(std::move(sample));
  }
  ++frames_;
}

void CaptureWriter::set_health(const std::vector<DeviceHealth>& health) {
  for (size_t i = 0; i < health.size() && i < doc_["devices"].size(); ++i) {
    if (!health[i].read) continue;
    nlohmann::json& dev = doc_["devices"][i];
    nlohmann::json h = nlohmann::json::object();
    for (const auto& f : kHealthFields) {
      const Reading& r = health[i].*f.member;
      if (r.has_value())
        h[f.id] = r.value();
      else if (r.state() != Reading::State::kNoData && r.code() != nvml_code::kNotSupported)
        dev["errors"][f.id] = nvml_code_name(r.code());
    }
    dev["health"] = std::move(h);
  }
}

nlohmann::json CaptureWriter::to_json() const {
  return doc_;
}

Result<Nothing> CaptureWriter::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return failure(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    out << doc_.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return failure(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return failure(fmt::format("cannot write {}: {}", path, why));
  }
  return kOk;
}

}  // namespace gpudoctor
