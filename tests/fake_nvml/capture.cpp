#include "capture.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

namespace fake_nvml {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& why) {
  throw std::runtime_error(why);
}

struct CodeName {
  std::string_view name;
  nvmlReturn_t code;
};
constexpr CodeName kCodes[] = {
    {"SUCCESS", NVML_SUCCESS},
    {"UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
    {"INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT},
    {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
    {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
    {"ALREADY_INITIALIZED", 5},
    {"NOT_FOUND", NVML_ERROR_NOT_FOUND},
    {"INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE},
    {"INSUFFICIENT_POWER", 8},
    {"DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
    {"TIMEOUT", NVML_ERROR_TIMEOUT},
    {"IRQ_ISSUE", 11},
    {"LIBRARY_NOT_FOUND", 12},
    {"FUNCTION_NOT_FOUND", NVML_ERROR_FUNCTION_NOT_FOUND},
    {"CORRUPTED_INFOROM", 14},
    {"GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
    {"RESET_REQUIRED", 16},
    {"OPERATING_SYSTEM", 17},
    {"LIB_RM_VERSION_MISMATCH", 18},
    {"IN_USE", 19},
    {"MEMORY", 20},
    {"NO_DATA", NVML_ERROR_NO_DATA},
    {"INSUFFICIENT_RESOURCES", 23},
    {"ARGUMENT_VERSION_MISMATCH", NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
    {"DEPRECATED", 26},
    {"NOT_READY", 27},
    {"GPU_NOT_FOUND", 28},
    {"INVALID_STATE", 29},
    {"UNKNOWN", NVML_ERROR_UNKNOWN},
};

double number(const json& j, const std::string& what) {
  if (!j.is_number()) fail(what + " is not a number");
  const double v = j.get<double>();
  if (!std::isfinite(v)) fail(what + " is not finite");
  return v;
}

std::optional<std::string> opt_string(const json& obj, const char* key, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) fail(where + "." + key + " is not a string");
  return it->get<std::string>();
}

std::optional<bool> opt_bool(const json& obj, const char* key, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) fail(where + "." + key + " is not true, false or null");
  return it->get<bool>();
}

std::optional<double> opt_number(const json& obj, const char* key, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  return number(*it, where + "." + key);
}

Process read_process(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where + " is not an object");
  Process p;
  const double pid = number(j.value("pid", json()), where + ".pid");
  if (pid < 0 || pid > 4294967295.0 || pid != std::floor(pid)) fail(where + ".pid is not a pid");
  p.pid = static_cast<unsigned>(pid);
  p.name = opt_string(j, "name", where).value_or("");
  p.used_memory_mib = opt_number(j, "used_memory_mib", where);
  p.sm_util_pct = opt_number(j, "sm_util_pct", where);
  p.mem_util_pct = opt_number(j, "mem_util_pct", where);
  p.enc_util_pct = opt_number(j, "enc_util_pct", where);
  p.dec_util_pct = opt_number(j, "dec_util_pct", where);
  return p;
}

void read_samples(const json& samples, nvmlDevice_st& d, const std::string& where) {
  if (!samples.is_array() || samples.empty()) fail(where + ".samples is not a non-empty array");
  double prev_t = -INFINITY;
  double prev_interval = 1.0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const std::string at = where + ".samples[" + std::to_string(i) + "]";
    const json& s = samples[i];
    if (!s.is_object()) fail(at + " is not an object");
    const double t = number(s.value("t_s", json()), at + ".t_s");
    if (t <= prev_t) fail(at + ".t_s is not after the previous sample's");
    if (i > 0) prev_interval = t - prev_t;
    prev_t = t;
    if (const auto v = s.find("values"); v != s.end()) {
      if (!v->is_object()) fail(at + ".values is not an object");
      for (const auto& [key, val] : v->items()) {
        if (val.is_null()) continue;  // not read at this sample: keep holding the last value
        Series& series = d.values[key];
        series.t.push_back(t);
        series.v.push_back(number(val, at + ".values." + key));
      }
    }
    if (const auto p = s.find("processes"); p != s.end() && !p->is_null()) {
      if (!p->is_array()) fail(at + ".processes is not an array");
      ProcessSnapshot snap;
      snap.t = t;
      for (size_t k = 0; k < p->size(); ++k) {
        snap.processes.push_back(
            read_process((*p)[k], at + ".processes[" + std::to_string(k) + "]"));
      }
      d.processes.push_back(std::move(snap));
      d.process_times.push_back(t);
    }
  }
  d.first_t = number(samples.front().value("t_s", json()), where);
  d.last_t = prev_t;
  d.loop_period = (d.last_t - d.first_t) + prev_interval;
  for (const auto field : kIntegratedFields) {
    const auto it = d.values.find(field);
    if (it == d.values.end()) continue;
    Series& s = it->second;
    s.integral.assign(s.t.size(), 0.0);
    for (size_t i = 1; i < s.t.size(); ++i)
      s.integral[i] = s.integral[i - 1] + s.v[i - 1] * (s.t[i] - s.t[i - 1]);
  }
}

nvmlDevice_st read_device(const json& j, size_t position, const Replay& replay) {
  const std::string where = "devices[" + std::to_string(position) + "]";
  if (!j.is_object()) fail(where + " is not an object");
  nvmlDevice_st d;
  d.replay = replay;
  d.index = static_cast<unsigned>(position);
  if (const auto idx = opt_number(j, "index", where);
      idx && *idx != static_cast<double>(position)) {
    fail(where + ".index is not " + std::to_string(position) + " (devices must be in index order)");
  }
  d.name = opt_string(j, "name", where);
  d.uuid = opt_string(j, "uuid", where);
  d.serial = opt_string(j, "serial", where);
  d.pci_bus_id = opt_string(j, "pci_bus_id", where);
  if (d.pci_bus_id) {
    char extra = 0;
    if (std::sscanf(d.pci_bus_id->c_str(), "%x:%x:%x.%x%c", &d.pci_domain, &d.pci_bus,
                    &d.pci_device, &d.pci_function, &extra) != 4) {
      fail(where + ".pci_bus_id \"" + *d.pci_bus_id + "\" is not DOMAIN:BUS:DEVICE.FUNCTION");
    }
  }
  d.persistence_mode = opt_bool(j, "persistence_mode", where);
  d.mig_mode = opt_bool(j, "mig_mode", where);
  if (const auto a = j.find("architecture"); a != j.end() && !a->is_null()) {
    if (a->is_string()) {
      d.architecture = architecture_number(a->get<std::string>());
    } else {
      d.architecture = static_cast<unsigned>(number(*a, where + ".architecture"));
    }
  }
  d.gpm_supported = opt_bool(j, "gpm_supported", where).value_or(false);
  if (const auto e = j.find("errors"); e != j.end() && !e->is_null()) {
    if (!e->is_object()) fail(where + ".errors is not an object");
    for (const auto& [key, val] : e->items()) {
      std::optional<nvmlReturn_t> code;
      if (val.is_string()) code = parse_error_code(val.get<std::string>());
      if (val.is_number_integer()) code = val.get<int>();
      if (!code) fail(where + ".errors." + key + " is not an NVML error name");
      d.errors.emplace(key, *code);
    }
  }
  if (const auto e = j.find("delays_ms"); e != j.end() && !e->is_null()) {
    if (!e->is_object()) fail(where + ".delays_ms is not an object");
    for (const auto& [key, val] : e->items()) {
      const double ms = number(val, where + ".delays_ms." + key);
      if (ms < 0) fail(where + ".delays_ms." + key + " is negative");
      d.delays_ms.emplace(key, ms);
    }
  }
  d.lost_at_s = opt_number(j, "lost_at_s", where);
  if (const auto m = j.find("mig_devices"); m != j.end() && !m->is_null()) {
    if (!m->is_array()) fail(where + ".mig_devices is not an array");
    for (size_t k = 0; k < m->size(); ++k) {
      const std::string at = where + ".mig_devices[" + std::to_string(k) + "]";
      if (!(*m)[k].is_object()) fail(at + " is not an object");
      auto uuid = opt_string((*m)[k], "uuid", at);
      if (!uuid || uuid->rfind("MIG-", 0) != 0) fail(at + ".uuid is not a MIG UUID (\"MIG-...\")");
      d.mig_uuids.push_back(*uuid);
    }
  }
  if (const auto h = j.find("health"); h != j.end() && !h->is_null()) {
    if (!h->is_object()) fail(where + ".health is not an object");
    for (const auto& [key, val] : h->items()) {
      if (val.is_null()) continue;  // same as absent: not supported
      const double v =
          val.is_boolean() ? (val.get<bool>() ? 1.0 : 0.0) : number(val, where + ".health." + key);
      if (v < 0) fail(where + ".health." + key + " is negative");
      d.health.emplace(key, v);
    }
  }
  read_samples(j.value("samples", json()), d, where);
  return d;
}

// Index of the last element of sorted `times` at or before t, or -1.
long held_index(const std::vector<double>& times, double t) {
  const auto it = std::upper_bound(times.begin(), times.end(), t);
  return static_cast<long>(it - times.begin()) - 1;
}

// Index held at position p: before the first entry of a cycle after the first, the last entry of
// the previous cycle is still held; before the very first sample, the first entry is used.
long held_index(const std::vector<double>& times, const Position& p, bool* previous_cycle) {
  *previous_cycle = false;
  long i = held_index(times, p.t);
  if (i < 0) {
    if (p.cycle > 0) {
      *previous_cycle = true;
      return static_cast<long>(times.size()) - 1;
    }
    return times.empty() ? -1 : 0;
  }
  return i;
}

}  // namespace

std::optional<nvmlReturn_t> parse_error_code(std::string_view name) {
  if (name.starts_with("NVML_ERROR_")) name.remove_prefix(11);
  if (name == "NVML_SUCCESS") name = "SUCCESS";
  for (const auto& c : kCodes) {
    if (c.name == name) return c.code;
  }
  return std::nullopt;
}

unsigned architecture_number(std::string_view name) {
  static constexpr std::pair<std::string_view, unsigned> kArch[] = {
      {"kepler", 2}, {"maxwell", 3}, {"pascal", 4}, {"volta", 5},      {"turing", 6},
      {"ampere", 7}, {"ada", 8},     {"hopper", 9}, {"blackwell", 10},
  };
  for (const auto& [n, v] : kArch) {
    if (n == name) return v;
  }
  return 0xffffffffU;  // NVML_DEVICE_ARCH_UNKNOWN
}

Capture load_capture(const std::string& path, const Replay& replay) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open capture " + path);
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    fail("capture " + path + " is not valid JSON: " + e.what());
  }
  try {
    if (!doc.is_object()) fail("capture is not a JSON object");
    if (doc.value("format", json()) != "gpudoctor-nvml-capture") {
      fail("format is not \"gpudoctor-nvml-capture\"");
    }
    if (doc.value("version", json()) != 1) fail("version is not 1");
    Capture c;
    if (const auto s = doc.find("system"); s != doc.end() && !s->is_null()) {
      if (!s->is_object()) fail("system is not an object");
      c.driver_version = opt_string(*s, "driver_version", "system");
      c.nvml_version = opt_string(*s, "nvml_version", "system");
      if (const auto v = opt_number(*s, "cuda_driver_version", "system")) {
        c.cuda_driver_version = static_cast<int>(*v);
      }
    }
    const json& devices = doc.value("devices", json());
    if (!devices.is_array()) fail("devices is not an array");
    c.devices.reserve(devices.size());
    for (size_t i = 0; i < devices.size(); ++i)
      c.devices.push_back(read_device(devices[i], i, replay));
    for (const auto& d : c.devices)
      for (const auto& uuid : d.mig_uuids) {
        nvmlDevice_st m;
        m.index = d.index;
        m.uuid = uuid;
        m.mig_parent = d.index;
        c.mig_devices.push_back(std::move(m));
      }
    return c;
  } catch (const json::exception& e) {
    fail("capture " + path + ": " + e.what());
  } catch (const std::runtime_error& e) {
    fail("capture " + path + ": " + e.what());
  }
}

}  // namespace fake_nvml

using fake_nvml::Position;

Position nvmlDevice_st::locate(double T) const {
  if (!replay.loop || loop_period <= 0 || T < first_t) return {T, 0};
  const double cycles = std::floor((T - first_t) / loop_period);
  return {T - cycles * loop_period, static_cast<long>(cycles)};
}

std::optional<double> nvmlDevice_st::value(std::string_view field, double T) const {
  if (field == "energy_mj") return energy_mj(T);
  const auto it = values.find(field);
  if (it == values.end()) return std::nullopt;
  bool previous_cycle = false;
  const long i = fake_nvml::held_index(it->second.t, locate(T), &previous_cycle);
  if (i < 0) return std::nullopt;
  return it->second.v[static_cast<size_t>(i)];
}

std::optional<double> nvmlDevice_st::energy_mj(double T) const {
  const auto it = values.find("energy_mj");
  if (it == values.end()) return std::nullopt;
  const auto& t = it->second.t;
  const auto& e = it->second.v;
  const double t0 = t.front(), tn = t.back();
  // Power held at the last energy sample: the rate at which the counter keeps rising after it.
  double p_last = 0;
  if (const auto p = values.find("power_w"); p != values.end()) {
    const long i = fake_nvml::held_index(p->second.t, tn);
    p_last = p->second.v[static_cast<size_t>(std::max(i, 0L))];
  }
  // When looping, the counter's own cycle runs from its first sample for one loop period and
  // gains `per_cycle` each time round.
  double cycles = 0;
  double per_cycle = 0;
  if (replay.loop && loop_period > 0 && T > t0) {
    cycles = std::floor((T - t0) / loop_period);
    T -= cycles * loop_period;
    per_cycle = (e.back() - e.front()) + p_last * (t0 + loop_period - tn) * 1000.0;
  }
  double v = 0;
  if (T <= t0) {
    v = e.front();
  } else if (T >= tn) {
    v = e.back() + p_last * (T - tn) * 1000.0;
  } else {
    const size_t i = static_cast<size_t>(fake_nvml::held_index(t, T));
    const double f = (T - t[i]) / (t[i + 1] - t[i]);
    v = e[i] + f * (e[i + 1] - e[i]);
  }
  return v + cycles * per_cycle;
}

std::optional<double> nvmlDevice_st::integral(std::string_view field, double T) const {
  const auto it = values.find(field);
  if (it == values.end() || it->second.integral.empty()) return std::nullopt;
  const auto& s = it->second;
  const double t0 = s.t.front();
  double cycles = 0, per_cycle = 0;
  if (replay.loop && loop_period > 0 && T > t0) {
    cycles = std::floor((T - t0) / loop_period);
    T -= cycles * loop_period;
    per_cycle = s.integral.back() + s.v.back() * (t0 + loop_period - s.t.back());
  }
  const long i = fake_nvml::held_index(s.t, T);
  const double within = i < 0 ? 0.0
                              : s.integral[static_cast<size_t>(i)] +
                                    s.v[static_cast<size_t>(i)] * (T - s.t[static_cast<size_t>(i)]);
  return within + cycles * per_cycle;
}

fake_nvml::EventCursor nvmlDevice_st::event_cursor(std::string_view field, double T) const {
  fake_nvml::EventCursor c;
  const auto it = values.find(field);
  if (it == values.end()) return c;
  c.series = &it->second;
  const auto& t = it->second.t;
  const fake_nvml::Position p = locate(T);
  c.cycle = p.cycle;
  c.index = static_cast<size_t>(std::lower_bound(t.begin(), t.end(), p.t) - t.begin());
  return c;
}

std::optional<double> nvmlDevice_st::next_event(const fake_nvml::EventCursor& c, double now) const {
  if (c.series == nullptr) return std::nullopt;
  const auto& t = c.series->t;
  size_t i = c.index;
  long cycle = c.cycle;
  if (i >= t.size()) {
    if (!replay.loop || loop_period <= 0) return std::nullopt;
    i = 0;
    ++cycle;
  }
  if (t[i] + static_cast<double>(cycle) * loop_period > now) return std::nullopt;
  return c.series->v[i];
}

void nvmlDevice_st::advance(fake_nvml::EventCursor& c) const {
  if (c.series == nullptr) return;
  if (c.index >= c.series->t.size()) {
    c.index = 0;
    ++c.cycle;
  }
  ++c.index;
}

const fake_nvml::ProcessSnapshot* nvmlDevice_st::processes_at(double T, double* sample_time) const {
  if (processes.empty()) return nullptr;
  const Position p = locate(T);
  bool previous_cycle = false;
  const long i = fake_nvml::held_index(process_times, p, &previous_cycle);
  const auto& snap = processes[static_cast<size_t>(i)];
  const long cycle = previous_cycle ? p.cycle - 1 : p.cycle;
  if (sample_time) *sample_time = snap.t + static_cast<double>(cycle) * loop_period;
  return &snap;
}

const fake_nvml::Process* nvmlDevice_st::find_process(unsigned pid, double T,
                                                      double* sample_time) const {
  if (processes.empty()) return nullptr;
  const Position p = locate(T);
  bool previous_cycle = false;
  long i = fake_nvml::held_index(process_times, p, &previous_cycle);
  long cycle = previous_cycle ? p.cycle - 1 : p.cycle;
  for (size_t n = 0; n < processes.size(); ++n) {
    const auto& snap = processes[static_cast<size_t>(i)];
    for (const auto& proc : snap.processes) {
      if (proc.pid != pid) continue;
      if (sample_time) *sample_time = snap.t + static_cast<double>(cycle) * loop_period;
      return &proc;
    }
    if (--i < 0) {
      if (cycle == 0) break;
      --cycle;
      i = static_cast<long>(processes.size()) - 1;
    }
  }
  return nullptr;
}

std::optional<nvmlReturn_t> nvmlDevice_st::error(std::string_view key) const {
  const auto it = errors.find(key);
  if (it == errors.end()) return std::nullopt;
  return it->second;
}

std::optional<double> nvmlDevice_st::health_value(std::string_view key) const {
  const auto it = health.find(key);
  if (it == health.end()) return std::nullopt;
  return it->second;
}

double nvmlDevice_st::delay_ms(std::string_view key) const {
  const auto it = delays_ms.find(key);
  return it == delays_ms.end() ? 0.0 : it->second;
}
