// The host around a job, from /proc: whole-machine CPU and I/O wait, and a process tree (the job
// `gpudoctor run` started and everything it forked: DataLoader workers, launchers' ranks) with
// its CPU, reads and context switches. Linux only; every reader tolerates processes that exit
// between listing and reading.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/recording.hpp"

namespace gpudoctor::host {

// Jiffies of the "cpu" line of /proc/stat.
struct CpuTimes {
  uint64_t busy = 0, iowait = 0, total = 0;
};
std::optional<CpuTimes> read_cpu_times(const std::string& proc = "/proc");

struct ProcInfo {
  pid_t pid = 0, ppid = 0;
  std::string comm;
  uint64_t cpu_ticks = 0;  // utime + stime
};
// Parses one /proc/PID/stat line (the command may hold spaces and parentheses).
std::optional<ProcInfo> parse_stat(const std::string& line);
// root and all its descendants, from /proc/*/stat.
std::vector<ProcInfo> process_tree(pid_t root, const std::string& proc = "/proc");

// CPU cores this process may run on (sched_getaffinity), at least 1.
int usable_cores();

// Samples the host and one job's process tree; rates come from the previous sample.
class JobSampler {
 public:
  explicit JobSampler(pid_t root, std::string proc = "/proc");
  // time_s: seconds since the recording's start, for the row.
  HostSample sample(double time_s);
  // Every pid seen in the job's tree so far.
  const std::vector<pid_t>& pids_seen() const { return seen_; }

 private:
  struct PerPid {
    uint64_t ticks = 0, read_bytes = 0, ctx = 0;
  };
  pid_t root_;
  std::string proc_;
  long ticks_per_s_;
  std::optional<CpuTimes> last_cpu_;
  std::map<pid_t, PerPid> last_;
  std::optional<double> last_mono_s_;
  std::vector<pid_t> seen_;
};

}  // namespace gpudoctor::host
