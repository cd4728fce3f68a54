#include "host/proc.hpp"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

namespace gpudoctor::host {
namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "key: value" lines (/proc/PID/io, /proc/PID/status): the number after key, or 0.
uint64_t field_of(const std::string& text, const std::string& key) {
  const auto at = text.find(key + ":");
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + key.size() + 1, nullptr, 10);
}

double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::optional<CpuTimes> read_cpu_times(const std::string& proc) {
  std::ifstream in(proc + "/stat");
  std::string label;
  if (!(in >> label) || label != "cpu") return std::nullopt;
  // user nice system idle iowait irq softirq steal (guest time is inside user already)
  uint64_t v[8] = {};
  for (auto& x : v)
    if (!(in >> x)) x = 0;
  CpuTimes t;
  t.iowait = v[4];
  t.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
  t.busy = t.total - v[3] - v[4];
  return t;
}

std::optional<ProcInfo> parse_stat(const std::string& line) {
  // pid (comm) state ppid ... utime(14) stime(15): comm ends at the last ')'.
  const auto open = line.find('(');
  const auto close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcInfo p;
  p.pid = static_cast<pid_t>(std::strtol(line.c_str(), nullptr, 10));
  p.comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  std::string state;
  long long ppid = 0;
  if (!(rest >> state >> ppid)) return std::nullopt;
  p.ppid = static_cast<pid_t>(ppid);
  // Fields 5..13 (pgrp .. cmajflt), then utime, stime.
  std::string skip;
  for (int i = 0; i < 9; ++i) rest >> skip;
  uint64_t utime = 0, stime = 0;
  if (!(rest >> utime >> stime)) return std::nullopt;
  p.cpu_ticks = utime + stime;
  return p;
}

std::vector<ProcInfo> process_tree(pid_t root, const std::string& proc) {
  std::vector<ProcInfo> all;
  if (DIR* d = opendir(proc.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      std::ifstream in(proc + "/" + e->d_name + "/stat");
      std::string line;
      if (!std::getline(in, line)) continue;  // exited meanwhile
      if (auto p = parse_stat(line)) all.push_back(std::move(*p));
    }
    closedir(d);
  }
  std::set<pid_t> in_tree = {root};
  std::vector<ProcInfo> out;
  // Parents may be listed after their children: repeat until nothing is added.
  for (bool added = true; added;) {
    added = false;
    for (const auto& p : all)
      if (!in_tree.count(p.pid) && in_tree.count(p.ppid)) in_tree.insert(p.pid), added = true;
  }
  for (auto& p : all)
    if (in_tree.count(p.pid)) out.push_back(std::move(p));
  return out;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

JobSampler::JobSampler(pid_t root, std::string proc)
    : root_(root), proc_(std::move(proc)), ticks_per_s_(std::max(1L, sysconf(_SC_CLK_TCK))) {}

HostSample JobSampler::sample(double time_s) {
  HostSample h;
  h.time_s = time_s;
  const double now = mono_s();
  const double dt = last_mono_s_ ? now - *last_mono_s_ : 0;
  if (auto c = read_cpu_times(proc_)) {
    if (last_cpu_ && c->total > last_cpu_->total) {
      const double total = static_cast<double>(c->total - last_cpu_->total);
      h.cpu_pct = 100.0 * static_cast<double>(c->busy - std::min(c->busy, last_cpu_->busy)) / total;
      h.iowait_pct =
          100.0 * static_cast<double>(c->iowait - std::min(c->iowait, last_cpu_->iowait)) / total;
    }
    last_cpu_ = c;
  }
  std::map<pid_t, PerPid> now_pids;
  uint64_t d_ticks = 0, d_read = 0, d_ctx = 0;
  for (const auto& p : process_tree(root_, proc_)) {
    PerPid cur;
    cur.ticks = p.cpu_ticks;
    const std::string dir = proc_ + "/" + std::to_string(p.pid);
    if (auto io = read_file(dir + "/io")) cur.read_bytes = field_of(*io, "read_bytes");
    if (auto st = read_file(dir + "/status"))
      cur.ctx =
          field_of(*st, "voluntary_ctxt_switches") + field_of(*st, "nonvoluntary_ctxt_switches");
    const auto it = last_.find(p.pid);
    const PerPid prev = it != last_.end() ? it->second : PerPid{};
    d_ticks += cur.ticks - std::min(cur.ticks, prev.ticks);
    d_read += cur.read_bytes - std::min(cur.read_bytes, prev.read_bytes);
    d_ctx += cur.ctx - std::min(cur.ctx, prev.ctx);
    now_pids[p.pid] = cur;
    if (std::find(seen_.begin(), seen_.end(), p.pid) == seen_.end()) seen_.push_back(p.pid);
  }
  h.job_processes = static_cast<double>(now_pids.size());
  if (dt > 0) {
    h.job_cpu_cores = static_cast<double>(d_ticks) / static_cast<double>(ticks_per_s_) / dt;
    h.job_read_mibs = static_cast<double>(d_read) / (1024.0 * 1024.0) / dt;
    h.job_ctx_switches_per_s = static_cast<double>(d_ctx) / dt;
  }
  last_ = std::move(now_pids);
  last_mono_s_ = now;
  return h;
}

}  // namespace gpudoctor::host
