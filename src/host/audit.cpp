#include "host/audit.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

extern char** environ;

namespace gpudoctor::host {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// NVML's "00000000:3B:00.0" -> sysfs's "0000:3b:00.0".
std::string sysfs_bus_id(std::string id) {
  for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);
  return id;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (part.empty()) continue;
    char* end = nullptr;
    const long a = std::strtol(part.c_str(), &end, 10);
    if (end == part.c_str()) return {};
    long b = a;
    if (*end == '-') {
      const char* start = end + 1;
      b = std::strtol(start, &end, 10);
      if (end == start) return {};
    }
    if (*end != '\0' || b < a || a < 0 || b - a > 65536) return {};
    for (long c = a; c <= b; ++c) out.push_back(static_cast<int>(c));
  }
  return out;
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::vector<int> affinity_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::vector<AuditItem> audit_environment(const AuditInput& in) {
  std::vector<AuditItem> out;
  auto env = [&](const char* k) -> const std::string* {
    const auto it = in.env.find(k);
    return it == in.env.end() ? nullptr : &it->second;
  };
  if (const auto* v = env("CUDA_LAUNCH_BLOCKING"); v && *v == "1")
    out.push_back({"fail", "cuda_launch_blocking",
                   "CUDA_LAUNCH_BLOCKING=1: every kernel launch waits for the previous kernel, so "
                   "the GPU idles between launches",
                   "unset CUDA_LAUNCH_BLOCKING (it is for debugging)"});
  std::vector<std::string> nccl;
  for (const auto& [k, v] : in.env)
    if (k.rfind("NCCL_", 0) == 0) nccl.push_back(k + "=" + v);
  if (!nccl.empty())
    out.push_back({"info", "nccl_settings",
                   fmt::format("NCCL settings in force: {}", fmt::join(nccl, ", ")),
                   "measure with and without them; NCCL_DEBUG=INFO shows the transport chosen"});
  if (const auto* v = env("NCCL_P2P_DISABLE"); v && *v == "1")
    out.push_back({"warn", "nccl_p2p_disable",
                   "NCCL_P2P_DISABLE=1: GPUs exchange data through host memory instead of NVLink "
                   "or PCIe peer to peer",
                   "unset it unless peer-to-peer access is broken on this machine"});
  if (const auto* v = env("NCCL_IB_DISABLE"); v && *v == "1")
    out.push_back({"warn", "nccl_ib_disable",
                   "NCCL_IB_DISABLE=1: traffic between nodes goes over TCP sockets",
                   "only set it where there is no InfiniBand / RoCE"});
  const int gpus = std::max(1, in.gpus);
  if (const auto* v = env("OMP_NUM_THREADS")) {
    const long threads = std::strtol(v->c_str(), nullptr, 10);
    if (threads > 0 && in.gpus > 1 && threads * in.gpus > in.cores)
      out.push_back(
          {"warn", "omp_oversubscribed",
           fmt::format("OMP_NUM_THREADS={} with {} GPUs (one process each) asks for {} "
                       "threads on {} cores",
                       threads, in.gpus, threads * in.gpus, in.cores),
           fmt::format("OMP_NUM_THREADS={} (cores / processes)", std::max(1, in.cores / gpus))});
  } else if (in.gpus > 1) {
    out.push_back(
        {"info", "omp_unset",
         "OMP_NUM_THREADS is not set: each process may start a thread per core",
         fmt::format("OMP_NUM_THREADS={} (cores / processes)", std::max(1, in.cores / gpus))});
  }
  if (in.gpus > 0 && in.cores / gpus < 4)
    out.push_back({"warn", "few_cores_per_gpu",
                   fmt::format("{} CPU core{} for {} GPU{}: {:.1f} per GPU for data loading and "
                               "kernel launches",
                               in.cores, in.cores == 1 ? "" : "s", in.gpus, in.gpus == 1 ? "" : "s",
                               static_cast<double>(in.cores) / gpus),
                   "give the job more cores (at least 4 per GPU is a common start), or move "
                   "decoding to the GPU (DALI)"});
  // CPU frequency governor. Under a generic cpufreq driver (acpi-cpufreq, cppc_cpufreq ...)
  // 'powersave' pins the lowest clock. Under intel_pstate or amd-pstate-epp in active mode it is
  // the usual setting and still scales up under load; there the energy-performance preference
  // 'power' is what keeps clocks low.
  bool pinned_low = false, prefers_power = false;
  const std::string cpu_dir = in.sys + "/devices/system/cpu";
  for (int c : in.cpus) {
    const std::string base = fmt::format("{}/cpu{}/cpufreq/", cpu_dir, c);
    if (read_line(base + "scaling_governor") != "powersave") continue;
    const std::string driver = read_line(base + "scaling_driver");
    if (driver == "intel_pstate" || driver == "amd-pstate-epp")
      prefers_power |= read_line(base + "energy_performance_preference") == "power";
    else
      pinned_low = true;
  }
  if (pinned_low)
    out.push_back({"warn", "cpu_governor",
                   "CPU frequency governor 'powersave' on the job's cores: the data pipeline and "
                   "kernel launches run at the lowest clock",
                   "use the 'performance' governor (cpupower frequency-set -g performance, needs "
                   "root)"});
  else if (prefers_power)
    out.push_back({"warn", "cpu_governor",
                   "energy-performance preference 'power' on the job's cores (intel_pstate / "
                   "amd-pstate): the data pipeline and kernel launches run at low clocks",
                   "set it to 'performance' or 'balance_performance' (cpupower set "
                   "--perf-bias 0, or write energy_performance_preference; needs root)"});
  // GPUs and the job's CPUs on different NUMA nodes.
  std::set<int> job_cpus(in.cpus.begin(), in.cpus.end());
  for (const auto& bus : in.gpu_pci_bus_ids) {
    const std::string node_text =
        read_line(fmt::format("{}/bus/pci/devices/{}/numa_node", in.sys, sysfs_bus_id(bus)));
    if (node_text.empty()) continue;
    const int node = std::atoi(node_text.c_str());
    if (node < 0) continue;  // single-node machine
    const auto node_cpus = parse_cpu_list(
        read_line(fmt::format("{}/devices/system/node/node{}/cpulist", in.sys, node)));
    if (node_cpus.empty() || job_cpus.empty()) continue;
    const bool near = std::any_of(node_cpus.begin(), node_cpus.end(),
                                  [&](int c) { return job_cpus.count(c) > 0; });
    if (!near)
      out.push_back(
          {"warn", "numa_affinity",
           fmt::format("the job may only run on CPUs of other NUMA nodes than GPU {}'s "
                       "(node {}): every copy crosses the socket link",
                       bus, node),
           fmt::format("pin the job to node {} (numactl --cpunodebind={} ...)", node, node)});
  }
  return out;
}

}  // namespace gpudoctor::host
