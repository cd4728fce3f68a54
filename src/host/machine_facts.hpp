// Facts about the machine that `gpudoctor check` reports next to host::audit_environment's
// judgement: which CPU frequency governors are in force and which NUMA node each GPU hangs off.
// Read-only, from /sys (or a stand-in tree for tests).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gpudoctor::host {

// Distinct scaling governors of the given CPUs, sorted ("performance", "powersave"); empty when
// cpufreq is not visible (many VMs and containers).
std::vector<std::string> cpu_governors(const std::vector<int>& cpus,
                                       const std::string& sys = "/sys");

// NUMA node of the PCI device NVML names "00000000:3B:00.0": nullopt when /sys has no entry for
// it, -1 when the firmware reports none (a single-node machine).
std::optional<int> pci_numa_node(const std::string& nvml_bus_id, const std::string& sys = "/sys");

// NUMA nodes the kernel knows (/sys/devices/system/node/nodeN); 0 when it does not say.
int numa_node_count(const std::string& sys = "/sys");

}  // namespace gpudoctor::host
