#include "tui/top_collector.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "analysis/diagnosis.hpp"
#include "core/clock_reasons.hpp"

namespace gpudoctor::tui {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float as_float(const std::optional<double>& v, double scale = 1) {
  return v ? static_cast<float>(*v * scale) : kNaN;
}

}  // namespace

std::string_view process_sort_name(ProcessSort s) {
  switch (s) {
    case ProcessSort::kMemory:
      return "memory";
    case ProcessSort::kSm:
      return "SM share";
    case ProcessSort::kPid:
      return "pid";
    case ProcessSort::kGpu:
      return "GPU";
  }
  return "memory";
}

ProcessSort next_sort(ProcessSort s) {
  switch (s) {
    case ProcessSort::kMemory:
      return ProcessSort::kSm;
    case ProcessSort::kSm:
      return ProcessSort::kPid;
    case ProcessSort::kPid:
      return ProcessSort::kGpu;
    case ProcessSort::kGpu:
      return ProcessSort::kMemory;
  }
  return ProcessSort::kMemory;
}

HostProcess host_process(uint32_t pid) {
  HostProcess hp;
  {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) != 0) continue;
      std::istringstream in(line.substr(4));
      long uid = -1;
      if (!(in >> uid) || uid < 0) break;
      passwd pw{};
      passwd* found = nullptr;
      std::vector<char> buf(4096);
      if (getpwuid_r(static_cast<uid_t>(uid), &pw, buf.data(), buf.size(), &found) == 0 && found)
        hp.user = found->pw_name;
      else
        hp.user = std::to_string(uid);
      break;
    }
  }
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string args;
  char buf[1024];
  cmdline.read(buf, sizeof buf);
  args.assign(buf, static_cast<size_t>(std::max<std::streamsize>(0, cmdline.gcount())));
  for (char& c : args)
    if (c == '\0') c = ' ';
  while (!args.empty() && args.back() == ' ') args.pop_back();
  hp.command = std::move(args);
  return hp;
}

TopCollector::TopCollector(std::string source, const SystemInfo& system,
                           const std::vector<DeviceInfo>& devices, CollectorOptions options)
    : options_(std::move(options)),
      live_(source, system, devices,
            LiveWindowOptions{options_.window_s, options_.diagnosis_every_s,
                              options_.diagnosis_min_frames, options_.diagnosis_min_span_s,
                              options_.config}) {
  state_.source = source;
  state_.hostname = system.hostname;
  state_.driver_version = system.driver_version;
  state_.interval_s = options_.interval_s;
  state_.diagnosis_every_s = options_.diagnosis_every_s;
  for (const auto& d : devices) {
    GpuView v;
    v.info = d;
    state_.gpus.push_back(std::move(v));
  }
}

void TopCollector::update_processes(GpuView& view, const DeviceSample& s) {
  view.processes_supported = s.processes_supported;
  view.processes.clear();
  for (const auto& p : s.processes) {
    ProcessView pv;
    pv.pid = p.pid;
    pv.command = p.name;
    pv.mem_mib = p.used_memory_mib;
    pv.sm_pct = p.sm_util_pct;
    if (p.owner && p.owner->kind != OwnerKind::kProcess) {
      Owner o = *p.owner;
      o.user.clear();
      pv.owner = owner_label(o);
    }
    if (p.owner) pv.user = p.owner->user;
    if (lookup_) {
      auto it = host_cache_.find(p.pid);
      if (it == host_cache_.end()) it = host_cache_.emplace(p.pid, lookup_(p.pid)).first;
      if (!it->second.user.empty()) pv.user = it->second.user;
      if (!it->second.command.empty()) pv.command = it->second.command;
    }
    view.processes.push_back(std::move(pv));
  }
}

void TopCollector::add(const Frame& frame) {
  const bool diagnosed = live_.add(frame);
  ++state_.frames;
  state_.time_unix_ms = frame.time_unix_ms;
  state_.time_s = frame.time_s;
  const double dt = have_prev_ ? frame.time_s - prev_.time_s : 0;
  std::set<uint32_t> pids;
  for (size_t i = 0; i < frame.devices.size() && i < state_.gpus.size(); ++i) {
    const DeviceSample& s = frame.devices[i];
    const DeviceSample* p = have_prev_ && i < prev_.devices.size() && !prev_.devices[i].lost
                                ? &prev_.devices[i]
                                : nullptr;
    GpuView& v = state_.gpus[i];
    v.now = assess(p, s, dt);
    v.lost = s.lost;
    v.temp_c = opt_value(s[Field::kTemp]);
    v.temp_slowdown_c = opt_value(s[Field::kTempSlowdown]);
    v.clock_sm_mhz = opt_value(s[Field::kClockSm]);
    v.clock_sm_max_mhz = opt_value(s[Field::kClockSmMax]);
    v.pstate = opt_value(s[Field::kPstate]);
    v.reasons = reasons_mask(s[Field::kClockEventReasons]);
    update_processes(v, s);
    for (const auto& pv : v.processes) pids.insert(pv.pid);
    if (!s.lost) {
      HistoryPoint h;
      h.t_s = frame.time_s;
      h.power_pct = as_float(v.now.power_ratio, 100);
      h.util_pct = as_float(v.now.util_pct);
      h.sm_pct = as_float(v.now.sm_pct);
      h.efficiency = as_float(v.now.efficiency);
      h.clock_ratio = v.clock_sm_mhz && v.clock_sm_max_mhz && *v.clock_sm_max_mhz > 0
                          ? static_cast<float>(*v.clock_sm_mhz / *v.clock_sm_max_mhz)
                          : kNaN;
      v.history.push_back(h);
    }
    const double keep_from = frame.time_s - options_.history_s;
    const auto first_kept = std::find_if(v.history.begin(), v.history.end(),
                                         [&](const HistoryPoint& h) { return h.t_s >= keep_from; });
    v.history.erase(v.history.begin(), first_kept);
  }
  for (auto it = host_cache_.begin(); it != host_cache_.end();)
    it = pids.count(it->first) ? std::next(it) : host_cache_.erase(it);
  prev_ = frame;
  have_prev_ = true;
  if (diagnosed) take_diagnosis();
}

void TopCollector::diagnose_now() {
  if (live_.diagnose_now()) take_diagnosis();
}

void TopCollector::take_diagnosis() {
  const Diagnosis& d = *live_.diagnosis();
  state_.diagnosed = true;
  state_.diagnosis_at_s = state_.time_s;
  state_.diagnosis_span_s = live_.diagnosis_span_s();
  state_.verdict = d.verdict;
  state_.limitations = d.limitations;
  state_.findings.clear();
  for (const auto& f : d.findings) {
    if (f.cause == Cause::kHealthy) continue;
    // A finding's last window may reach past the last sample: never say more than was seen.
    state_.findings.push_back({f.severity, f.cause, f.gpus,
                               std::min(f.end_s - f.start_s, state_.diagnosis_span_s), f.summary});
  }
  for (auto& v : state_.gpus) {
    v.cause.reset();
    v.cause_confidence.reset();
    for (const auto& g : d.gpus) {
      if (g.index != v.info.index || !g.verdict) continue;
      v.cause = g.verdict;
      v.cause_confidence = g.confidence;
    }
  }
}

}  // namespace gpudoctor::tui
