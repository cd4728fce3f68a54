#include "report/check_report.hpp"

#include <cctype>

#include <fmt/format.h>

#include "report/status_report.hpp"

namespace gpudoctor {
namespace {

constexpr size_t kCodeWidth = 20;

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void append_item(std::string& out, const AuditItem& i) {
  out += fmt::format("  {:<4}  {:<{}} {}\n", upper(i.level), i.code, kCodeWidth, i.message);
  if (!i.fix.empty()) out += fmt::format("  {:<4}  {:<{}} fix: {}\n", "", "", kCodeWidth, i.fix);
}

nlohmann::json item_json(const AuditItem& i) {
  nlohmann::json j = {{"check", i.code}, {"level", i.level}, {"message", i.message}};
  j["fix"] = i.fix.empty() ? nlohmann::json(nullptr) : nlohmann::json(i.fix);
  return j;
}

}  // namespace

std::string render_check_text(const CheckView& v) {
  const CheckResult& r = v.result;
  std::string out = fmt::format("gpudoctor check: {} GPU{} on host {}\n", r.gpus.size(),
                                r.gpus.size() == 1 ? "" : "s",
                                v.system.hostname.empty() ? "?" : v.system.hostname);
  out += "\nMachine\n";
  for (const auto& i : r.machine) append_item(out, i);
  if (r.gpus.empty()) out += "\nNo NVIDIA GPU found: only the machine was checked.\n";
  for (const auto& g : r.gpus) {
    out += fmt::format("\nGPU {}: {}", g.index, g.name.empty() ? "(no name)" : g.name);
    if (!g.pci_bus_id.empty()) out += fmt::format(" ({})", g.pci_bus_id);
    out += "\n";
    for (const auto& i : g.items) append_item(out, i);
  }
  out += fmt::format(
      "\nResult: {} ({} fail, {} warn, {} pass, {} info). gpudoctor changed nothing; the fixes "
      "are yours to apply.\n",
      upper(r.overall()), r.count("fail"), r.count("warn"), r.count("pass"), r.count("info"));
  return out;
}

nlohmann::json render_check_json(const CheckView& v) {
  const CheckResult& r = v.result;
  nlohmann::json j;
  j["format"] = "gpudoctor-check";
  j["version"] = 1;
  j["host"] = v.system.hostname;
  j["source"] = v.source;
  j["driver_version"] = v.system.driver_version;
  j["cuda_driver_version"] = v.system.cuda_driver_version;
  j["nvml_version"] = v.system.nvml_version;
  j["result"] = r.overall();
  j["counts"] = {{"fail", r.count("fail")},
                 {"warn", r.count("warn")},
                 {"pass", r.count("pass")},
                 {"info", r.count("info")}};
  j["machine"] = nlohmann::json::array();
  for (const auto& i : r.machine) j["machine"].push_back(item_json(i));
  j["gpus"] = nlohmann::json::array();
  for (size_t k = 0; k < r.gpus.size(); ++k) {
    const auto& g = r.gpus[k];
    nlohmann::json jg = {
        {"index", g.index}, {"name", g.name}, {"uuid", g.uuid}, {"pci_bus_id", g.pci_bus_id}};
    jg["checks"] = nlohmann::json::array();
    for (const auto& i : g.items) jg["checks"].push_back(item_json(i));
    if (k < v.health.size()) {
      nlohmann::json h = nlohmann::json::object();
      for (const auto& f : kHealthFields) h[f.id] = reading_json(v.health[k].*f.member);
      jg["health"] = v.health[k].read ? h : nlohmann::json(nullptr);
    }
    if (k < v.samples.size()) jg["readings"] = sample_readings_json(v.samples[k]);
    j["gpus"].push_back(std::move(jg));
  }
  return j;
}

}  // namespace gpudoctor
