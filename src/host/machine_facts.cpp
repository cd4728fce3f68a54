#include "host/machine_facts.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

namespace gpudoctor::host {
namespace {

std::optional<std::string> first_line(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string s;
  std::getline(in, s);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

}  // namespace

std::vector<std::string> cpu_governors(const std::vector<int>& cpus, const std::string& sys) {
  std::set<std::string> found;
  for (int c : cpus) {
    const auto g =
        first_line(fmt::format("{}/devices/system/cpu/cpu{}/cpufreq/scaling_governor", sys, c));
    if (g && !g->empty()) found.insert(*g);
  }
  return {found.begin(), found.end()};
}

std::optional<int> pci_numa_node(const std::string& nvml_bus_id, const std::string& sys) {
  // sysfs names the device "0000:3b:00.0": a 4-digit domain and lower-case hex.
  std::string id = nvml_bus_id;
  for (auto& ch : id) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const auto colon = id.find(':');
  if (colon == std::string::npos) return std::nullopt;
  if (colon > 4) id = id.substr(colon - 4);
  const auto text = first_line(fmt::format("{}/bus/pci/devices/{}/numa_node", sys, id));
  if (!text || text->empty()) return std::nullopt;
  int node = 0;
  const auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), node);
  if (ec != std::errc{} || p != text->data() + text->size()) return std::nullopt;
  return std::max(node, -1);
}

int numa_node_count(const std::string& sys) {
  std::error_code ec;
  int n = 0;
  std::filesystem::directory_iterator it(sys + "/devices/system/node", ec), end;
  for (; !ec && it != end; it.increment(ec)) {  // never throws, even mid-listing
    const std::string name = it->path().filename().string();
    n += name.size() > 4 && name.rfind("node", 0) == 0 &&
         std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; });
  }
  return n;
}

}  // namespace gpudoctor::host
