#include "analysis/machine_check.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "core/clock_reasons.hpp"

namespace gpudoctor {
namespace {

constexpr uint64_t kAppClocksBit = 0x2;
constexpr uint64_t kSwPowerCapBit = 0x4;
constexpr uint64_t kHwSlowdownBit = 0x8;     // also set with HW thermal slowdown and, NVML
                                             // says, during P-state or clock changes
constexpr uint64_t kHwPowerBrakeBit = 0x80;  // the board's power-brake input
constexpr uint64_t kHwThermalBit = 0x40;
constexpr uint64_t kThermalBits = 0x20 | kHwThermalBit;

AuditItem item(const char* level, const char* code, std::string message, std::string fix = "") {
  return {level, code, std::move(message), std::move(fix)};
}

// Why a reading has no value, in words.
std::string why(const Reading& r) {
  switch (r.state()) {
    case Reading::State::kValue:
      return "read";
    case Reading::State::kNoData:
      return "not read";
    case Reading::State::kUnsupported:
      if (r.code() == nvml_code::kNotSupported) return "not supported";
      if (r.code() == nvml_code::kNoPermission) return "no permission";
      if (r.code() == nvml_code::kFunctionNotFound) return "not in this driver";
      return "not supported (" + nvml_code_name(r.code()) + ")";
    case Reading::State::kError:
      return "error " + nvml_code_name(r.code());
  }
  return "unknown";
}

bool not_supported(const Reading& r) {
  return r.state() == Reading::State::kUnsupported &&
         (r.code() == nvml_code::kNotSupported || r.code() == nvml_code::kFunctionNotFound);
}

// A count reading as text ("3").
std::string n(double v) {
  return fmt::format("{:.0f}", v);
}

// Approximate usable bandwidth per lane in MB/s for PCIe generations 1-6 (line code included).
double lane_mbps(double gen) {
  constexpr std::array<double, 7> kRate{0, 250, 500, 985, 1969, 3938, 7877};
  const int g = static_cast<int>(gen);
  return g >= 1 && g <= 6 ? kRate[static_cast<size_t>(g)] : 0;
}

AuditItem check_power_limit(const GpuCheckInput& g, const CheckThresholds& t) {
  const DeviceSample& s = g.second;
  const Reading& enforced = s[Field::kPowerLimitEnforced];
  const Reading& def = s[Field::kPowerLimitDefault];
  if (!enforced.has_value() || !def.has_value() || def.value() <= 0)
    return item("info", "power_limit",
                fmt::format("power limits not readable (enforced: {}, default: {})",
                            enforced.has_value() ? fmt::format("{:.0f} W", enforced.value())
                                                 : why(enforced),
                            def.has_value() ? fmt::format("{:.0f} W", def.value()) : why(def)));
  const double e = enforced.value(), d = def.value();
  if (e < t.power_limit_ratio * d) {
    std::string msg = fmt::format(
        "enforced power limit {:.0f} W is below the board's default {:.0f} W ({:.0f} %): the GPU "
        "is held to less power than it was built for",
        e, d, 100 * e / d);
    const Reading& set = s[Field::kPowerLimit];
    if (set.has_value() && set.value() >= t.power_limit_ratio * d) {
      msg += fmt::format("; the board's own limit is {:.0f} W, so another limit is in force",
                         set.value());
      return item("fail", "power_limit", msg,
                  "check the server's power policy (BMC, DCGM or datacenter power capping) and "
                  "that every power cable of the GPU is connected");
    }
    return item("fail", "power_limit", msg,
                fmt::format("restore the default: sudo nvidia-smi -i {} -pl {:.0f} (needs root); "
                            "if a power policy lowered it on purpose, expect slower steps",
                            g.info.index, d));
  }
  if (e > d + 0.5)
    return item("pass", "power_limit",
                fmt::format("enforced power limit {:.0f} W, above the default {:.0f} W", e, d));
  return item("pass", "power_limit",
              fmt::format("enforced power limit {:.0f} W = the board's default", e));
}

AuditItem check_persistence(const GpuCheckInput& g) {
  const auto& pm = g.info.persistence_mode;
  if (!pm)
    return item("info", "persistence_mode",
                "persistence mode not supported on this GPU or driver: not applicable");
  if (*pm) return item("pass", "persistence_mode", "persistence mode on");
  return item("warn", "persistence_mode",
              "persistence mode off: the driver tears the GPU down whenever no process holds it, "
              "so each job start pays the initialisation again and clock settings and volatile "
              "ECC counts reset",
              fmt::format("sudo nvidia-smi -i {} -pm 1, or run the nvidia-persistenced daemon "
                          "(needs root)",
                          g.info.index));
}

std::optional<uint64_t> union_mask(const GpuCheckInput& g) {
  const auto a = reasons_mask(g.first[Field::kClockEventReasons]);
  const auto b = reasons_mask(g.second[Field::kClockEventReasons]);
  if (!a && !b) return std::nullopt;
  return a.value_or(0) | b.value_or(0);
}

// The reasons set in both samples (0 when one is not readable).
uint64_t both_mask(const GpuCheckInput& g) {
  const auto a = reasons_mask(g.first[Field::kClockEventReasons]);
  const auto b = reasons_mask(g.second[Field::kClockEventReasons]);
  return a && b ? *a & *b : 0;
}

AuditItem check_clock_settings(const GpuCheckInput& g, const CheckThresholds& t) {
  const DeviceSample& s = g.second;
  const auto app_sm = opt_value(s[Field::kClockAppSm]);
  const auto app_mem = opt_value(s[Field::kClockAppMem]);
  const auto def_sm = opt_value(g.health.app_clock_default_sm_mhz);
  const auto def_mem = opt_value(g.health.app_clock_default_mem_mhz);
  const auto max_sm = opt_value(s[Field::kClockSmMax]);
  const auto mask = union_mask(g);
  const bool app_reason = mask && (*mask & kAppClocksBit);
  const unsigned idx = g.info.index;

  const bool low_sm_default = app_sm && def_sm && *app_sm < *def_sm - 1;
  const bool low_mem_default = app_mem && def_mem && *app_mem < *def_mem - 1;
  if (low_sm_default || low_mem_default) {
    std::vector<std::string> parts;
    if (low_sm_default)
      parts.push_back(fmt::format("SM {:.0f} MHz (default {:.0f})", *app_sm, *def_sm));
    if (low_mem_default)
      parts.push_back(fmt::format("memory {:.0f} MHz (default {:.0f})", *app_mem, *def_mem));
    return item(
        "fail", "clock_settings",
        fmt::format("application clocks set below their defaults: {}", fmt::join(parts, ", ")),
        fmt::format("reset them: sudo nvidia-smi -i {} -rac (needs root)", idx));
  }
  // Without the default application clock (simulator, old driver): a clock below the maximum
  // counts as set only when the GPU itself says a clock setting holds it.
  if (!def_sm && app_sm && max_sm && *app_sm < *max_sm - 1 && app_reason)
    return item("fail", "clock_settings",
                fmt::format("application clocks set to {:.0f} MHz, below the maximum {:.0f} MHz, "
                            "and holding the clocks (clock event reason 'applications clocks "
                            "setting')",
                            *app_sm, *max_sm),
                fmt::format("reset them: sudo nvidia-smi -i {} -rac (needs root)", idx));
  if (app_reason)
    return item("warn", "clock_settings",
                "a clock setting holds the clocks (clock event reason 'applications clocks "
                "setting') while the application clocks are at their defaults: locked clocks "
                "(nvidia-smi -lgc / -lmc) are the likely cause",
                fmt::format("unlock them: sudo nvidia-smi -i {0} -rgc and sudo nvidia-smi -i {0} "
                            "-rmc (needs root)",
                            idx));
  if (!app_sm)
    return item("info", "clock_settings",
                fmt::format("application clocks not readable ({}); no clock setting reported",
                            why(s[Field::kClockAppSm])));
  // Locked clocks (-lgc) show only as reason 0x2 while the GPU works: idle, it cannot be told.
  const auto util = opt_value(s[Field::kUtilGpu]);
  if (!util || *util < t.idle_util_pct)
    return item("info", "clock_settings",
                fmt::format("application clocks at {} ({:.0f} MHz SM); the GPU is {}, so "
                            "locked clocks (nvidia-smi -lgc), which show only under load, "
                            "cannot be ruled out",
                            def_sm ? "their defaults" : "the maximum", *app_sm,
                            util ? "idle" : "not known to be busy (no GPU-Util)"),
                "rerun the check while a job runs");
  if (!def_sm && max_sm && *app_sm < *max_sm - 1)
    return item("pass", "clock_settings",
                fmt::format("application clock {:.0f} MHz of {:.0f} MHz maximum (the board's "
                            "default is not known) and no clock setting holding the GPU",
                            *app_sm, *max_sm));
  std::string what = fmt::format("application clocks at {} ({:.0f} MHz SM",
                                 def_sm ? "their defaults" : "the maximum", *app_sm);
  if (app_mem) what += fmt::format(", {:.0f} MHz memory", *app_mem);
  what += "), no clock lock holding the GPU";
  return item("pass", "clock_settings", what);
}

AuditItem check_pcie(const GpuCheckInput& g, const CheckThresholds& t) {
  const DeviceSample& s = g.second;
  const auto gen = opt_value(s[Field::kPcieGen]), gen_max = opt_value(s[Field::kPcieGenMax]);
  const auto width = opt_value(s[Field::kPcieWidth]);
  const auto width_max = opt_value(s[Field::kPcieWidthMax]);
  if (!gen || !width)
    return item("info", "pcie_link",
                fmt::format("PCIe link not readable (generation: {}, width: {})",
                            why(s[Field::kPcieGen]), why(s[Field::kPcieWidth])));
  const std::string now = fmt::format("Gen{:.0f} x{:.0f}", *gen, *width);
  if (!gen_max || !width_max)
    return item("info", "pcie_link", fmt::format("{} (the maximum is not reported)", now));
  const std::string max = fmt::format("Gen{:.0f} x{:.0f}", *gen_max, *width_max);
  if (*gen >= *gen_max && *width >= *width_max)
    return item("pass", "pcie_link", fmt::format("{}, the maximum", now));
  const auto util = opt_value(s[Field::kUtilGpu]);
  if (!util || *util < t.idle_util_pct)
    return item("info", "pcie_link",
                fmt::format("{} now, maximum {}: cannot be judged while the GPU is idle (util "
                            "{}), links drop to a lower speed at idle to save power",
                            now, max, util ? fmt::format("{:.0f} %", *util) : "n/a"),
                "run `gpudoctor check` again while a job keeps this GPU busy");
  std::string msg = fmt::format("{} under load (util {:.0f} %), maximum {}", now, *util, max);
  const double have = lane_mbps(*gen) * *width, could = lane_mbps(*gen_max) * *width_max;
  if (have > 0 && could > 0)
    msg += fmt::format(": copies between CPU and GPU get about {:.0f} % of the link's bandwidth",
                       100 * have / could);
  return item("warn", "pcie_link", msg,
              "reseat the card; check that the slot is wired for the full width, the BIOS PCIe "
              "speed setting and any riser or retimer; compare LnkCap with LnkSta in "
              "`sudo lspci -vv`");
}

AuditItem not_from_source(const char* code, const char* what) {
  return item("info", code, fmt::format("{} not available from this source", what));
}

AuditItem check_ecc(const GpuCheckInput& g) {
  const DeviceHealth& h = g.health;
  const unsigned idx = g.info.index;
  if (!h.read) return not_from_source("ecc_errors", "ECC state");
  const auto mode = opt_value(h.ecc_mode_current), pending = opt_value(h.ecc_mode_pending);
  const auto vu = opt_value(h.ecc_volatile_uncorrected),
             au = opt_value(h.ecc_aggregate_uncorrected);
  const auto vc = opt_value(h.ecc_volatile_corrected), ac = opt_value(h.ecc_aggregate_corrected);
  const std::string reset_fix = fmt::format(
      "stop jobs on this GPU; read `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER -i {0}` "
      "and dmesg (Xid 48, 63, 64, 94, 95); reset it (sudo nvidia-smi -i {0} -r) or reboot; if "
      "errors come back, have the board replaced",
      idx);
  if (vu && *vu > 0)
    return item("fail", "ecc_errors",
                fmt::format("{} uncorrectable ECC error{} since the driver loaded{}", n(*vu),
                            *vu == 1 ? "" : "s",
                            au ? fmt::format(" ({} in the board's lifetime)", n(*au)) : ""),
                reset_fix);
  if (mode && pending && *mode != *pending)
    return item(
        "warn", "ecc_errors",
        fmt::format("ECC mode change pending: {} now, {} after the next reboot or GPU "
                    "reset",
                    *mode > 0 ? "enabled" : "disabled", *pending > 0 ? "enabled" : "disabled"),
        fmt::format("reboot, or reset the GPU when it is free (sudo nvidia-smi -i {} -r)", idx));
  if (au && *au > 0)
    return item("warn", "ecc_errors",
                fmt::format("no uncorrectable ECC error since the driver loaded, but {} in the "
                            "board's lifetime",
                            n(*au)),
                "watch the count (nvidia-smi -q -d ECC); replace the board if it keeps growing");
  if (mode && *mode == 0)
    return item("info", "ecc_errors", "ECC is disabled on this GPU: memory errors go undetected",
                fmt::format("if it should be on: sudo nvidia-smi -i {} -e 1, then reboot", idx));
  if (vu || au) {
    std::string msg = "no uncorrectable ECC errors";
    const double corrected = std::max(vc.value_or(0), ac.value_or(0));
    if (corrected > 0)
      msg += fmt::format(
          "; {} corrected since the driver loaded, {} in the board's lifetime "
          "(fixed in hardware, harmless unless they keep growing)",
          vc ? n(*vc) : "n/a", ac ? n(*ac) : "n/a");
    return item("pass", "ecc_errors", msg);
  }
  if (not_supported(h.ecc_mode_current) && not_supported(h.ecc_volatile_uncorrected))
    return item("info", "ecc_errors",
                "ECC not supported on this GPU (usual for GeForce boards): not applicable");
  return item("info", "ecc_errors",
              fmt::format("ECC error counts not readable ({})", why(h.ecc_volatile_uncorrected)));
}

AuditItem check_retired_pages(const GpuCheckInput& g) {
  const DeviceHealth& h = g.health;
  if (!h.read) return not_from_source("retired_pages", "retired memory pages");
  const auto sbe = opt_value(h.retired_pages_sbe), dbe = opt_value(h.retired_pages_dbe);
  const auto pending = opt_value(h.retired_pages_pending);
  if (pending && *pending > 0)
    return item("fail", "retired_pages",
                fmt::format("memory pages wait to be retired{}: until the driver reloads, the "
                            "faulty pages are still in use",
                            sbe || dbe ? fmt::format(" ({} retired so far)",
                                                     n(sbe.value_or(0) + dbe.value_or(0)))
                                       : ""),
                fmt::format("drain the GPU and reset it (sudo nvidia-smi -i {} -r) or reboot",
                            g.info.index));
  if (sbe || dbe) {
    const double total = sbe.value_or(0) + dbe.value_or(0);
    if (total > 0)
      return item("warn", "retired_pages",
                  fmt::format("{} memory page{} retired ({} for repeated single-bit errors, {} for "
                              "double-bit errors): the board has had memory errors",
                              n(total), total == 1 ? "" : "s", sbe ? n(*sbe) : "n/a",
                              dbe ? n(*dbe) : "n/a"),
                  "watch the count (nvidia-smi -q -d PAGE_RETIREMENT); replace the board if it "
                  "keeps growing");
    return item("pass", "retired_pages", "no retired memory pages, none pending");
  }
  if (not_supported(h.retired_pages_sbe))
    return item("info", "retired_pages",
                "page retirement not supported on this GPU (Ampere and newer datacenter GPUs "
                "remap rows instead; GeForce boards have neither): not applicable");
  return item("info", "retired_pages",
              fmt::format("retired pages not readable ({})", why(h.retired_pages_sbe)));
}

AuditItem check_row_remapping(const GpuCheckInput& g) {
  const DeviceHealth& h = g.health;
  if (!h.read) return not_from_source("row_remapping", "row remapping");
  const auto corr = opt_value(h.remapped_rows_corrected);
  const auto unc = opt_value(h.remapped_rows_uncorrected);
  const auto pending = opt_value(h.remap_pending), failure = opt_value(h.remap_failure);
  const unsigned idx = g.info.index;
  if (failure && *failure > 0)
    return item("fail", "row_remapping",
                "a row remapping failed: the memory has errors it can no longer repair",
                fmt::format("take the GPU out of service and have the board replaced (see "
                            "nvidia-smi -q -d ROW_REMAPPER -i {})",
                            idx));
  if (pending && *pending > 0)
    return item(
        "fail", "row_remapping",
        "a row remapping waits for a GPU reset: until then the faulty row is still in use",
        fmt::format("drain the GPU and reset it (sudo nvidia-smi -i {} -r) or reboot", idx));
  if (unc && *unc > 0)
    return item("warn", "row_remapping",
                fmt::format("{} row{} remapped after uncorrectable errors ({} after correctable "
                            "ones): spare rows replaced failing memory",
                            n(*unc), *unc == 1 ? "" : "s", corr ? n(*corr) : "n/a"),
                "watch the count (nvidia-smi -q -d ROW_REMAPPER); replace the board if remaps "
                "keep coming");
  if (corr || unc) {
    if (corr && *corr > 0)
      return item("pass", "row_remapping",
                  fmt::format("{} row{} remapped after correctable errors, none pending or failed",
                              n(*corr), *corr == 1 ? "" : "s"));
    return item("pass", "row_remapping", "no remapped rows, none pending");
  }
  if (not_supported(h.remapped_rows_corrected))
    return item("info", "row_remapping",
                "row remapping not supported on this GPU (it is on Ampere and newer datacenter "
                "GPUs): not applicable");
  return item("info", "row_remapping",
              fmt::format("row remapping not readable ({})", why(h.remapped_rows_corrected)));
}

AuditItem check_mig(const GpuCheckInput& g) {
  const auto& mig = g.info.mig_mode;
  if (!mig) return item("info", "mig_mode", "MIG not supported on this GPU: not applicable");
  if (const auto pending = opt_value(g.health.mig_mode_pending); pending && (*pending != 0) != *mig)
    return item("warn", "mig_mode",
                fmt::format("MIG {} now, {} after the next GPU reset: a mode change is pending",
                            *mig ? "on" : "off", *mig ? "off" : "on"),
                fmt::format("reset the GPU when it is free (sudo nvidia-smi -i {0} -r) or reboot; "
                            "or undo the change (sudo nvidia-smi -i {0} -mig {1})",
                            g.info.index, *mig ? 1 : 0));
  if (!*mig) return item("pass", "mig_mode", "MIG off: jobs get the whole GPU");
  return item("warn", "mig_mode",
              "MIG on: each job gets one GPU instance, a slice of the GPU; whole-GPU "
              "utilization and power mix all instances",
              fmt::format("if jobs should get the whole GPU: sudo nvidia-smi -i {} -mig 0 (needs "
                          "root and a GPU reset)",
                          g.info.index));
}

AuditItem check_reasons(const GpuCheckInput& g, const CheckThresholds& t) {
  const auto mask = union_mask(g);
  if (!mask)
    return item("info", "clock_event_reasons",
                fmt::format("clock event reasons not readable ({})",
                            why(g.second[Field::kClockEventReasons])));
  const uint64_t m = *mask;
  const std::string active = fmt::format("{}", fmt::join(decode_clock_reasons(m), ", "));
  const char* power_fix =
      "check the power supply and every GPU power cable, the server's power-brake and BMC event "
      "log (nvidia-smi -q -d PERFORMANCE)";
  if (m & kHwPowerBrakeBit)
    return item(
        "fail", "clock_event_reasons",
        fmt::format("the board's power brake is cutting the clocks: {} (0x{:x})", active, m),
        power_fix);
  // HW slowdown comes with HW thermal slowdown when the cause is heat; without it, in both
  // samples, it is the power supply's (a warm GPU's SW thermal slowdown does not excuse it).
  if (m & kHwThermalBit)
    return item("warn", "clock_event_reasons",
                fmt::format("thermal slowdown active: {} (0x{:x})", active, m),
                "improve cooling: airflow, fan curves, room temperature, dust filters");
  if (both_mask(g) & kHwSlowdownBit)
    return item(
        "fail", "clock_event_reasons",
        fmt::format("hardware is cutting the clocks in both samples: {} (0x{:x})", active, m),
        fmt::format("{}; and cooling", power_fix));
  if (m & kHwSlowdownBit)
    return item("warn", "clock_event_reasons",
                fmt::format("HW slowdown seen, but not in both samples: {} (0x{:x}); NVML also "
                            "reports it briefly during P-state or clock changes",
                            active, m),
                "rerun the check (a longer --interval) to see whether it holds");
  if (m & kThermalBits)
    return item("warn", "clock_event_reasons",
                fmt::format("thermal slowdown active: {} (0x{:x})", active, m),
                "improve cooling: airflow, fan curves, room temperature, dust filters");
  if (m & kAppClocksBit)
    return item("warn", "clock_event_reasons",
                fmt::format("a clock setting holds the clocks: {} (0x{:x})", active, m),
                "see clock_settings above");
  if (m & kSwPowerCapBit) {
    const Reading& e = g.second[Field::kPowerLimitEnforced];
    const Reading& d = g.second[Field::kPowerLimitDefault];
    if (e.has_value() && d.has_value() && e.value() < t.power_limit_ratio * d.value())
      return item("warn", "clock_event_reasons",
                  fmt::format("the lowered power limit holds the clocks: {} (0x{:x})", active, m),
                  "see power_limit above");
    return item("pass", "clock_event_reasons",
                fmt::format("{} (0x{:x}): at the default power limit this is normal for dense "
                            "math",
                            active, m));
  }
  if (m == 0) return item("pass", "clock_event_reasons", "none active");
  return item("pass", "clock_event_reasons",
              fmt::format("nothing limiting: {} (0x{:x})", active, m));
}

AuditItem check_thermal(const GpuCheckInput& g, const CheckThresholds& t) {
  const DeviceSample& s = g.second;
  const auto temp = opt_value(s[Field::kTemp]);
  const auto slowdown = opt_value(s[Field::kTempSlowdown]);
  const char* cooling =
      "improve cooling: airflow, fan curves, blanking panels, room temperature, dust filters "
      "(nvidia-smi -q -d TEMPERATURE)";
  if (!temp)
    return item("info", "thermal_margin",
                fmt::format("temperature not readable ({})", why(s[Field::kTemp])));
  const auto util = opt_value(s[Field::kUtilGpu]);
  const std::string idle_note = !util || *util < t.idle_util_pct
                                    ? " (idle now: run the check under load to see the margin "
                                      "at work)"
                                    : "";
  if (slowdown) {
    const double margin = *slowdown - *temp;
    if (margin <= 0)
      return item("fail", "thermal_margin",
                  fmt::format("{:.0f} °C: at the slowdown temperature ({:.0f} °C), the GPU cuts "
                              "its clocks",
                              *temp, *slowdown),
                  cooling);
    if (margin < t.thermal_margin_c)
      return item("warn", "thermal_margin",
                  fmt::format("{:.0f} °C, only {:.0f} °C below the slowdown temperature "
                              "({:.0f} °C)",
                              *temp, margin, *slowdown),
                  cooling);
    return item("pass", "thermal_margin",
                fmt::format("{:.0f} °C, {:.0f} °C below the slowdown temperature ({:.0f} °C){}",
                            *temp, margin, *slowdown, idle_note));
  }
  if (*temp >= t.hot_temp_c)
    return item("warn", "thermal_margin",
                fmt::format("{:.0f} °C (slowdown temperature not reported; {:.0f} °C and more "
                            "risks throttling)",
                            *temp, t.hot_temp_c),
                cooling);
  return item("pass", "thermal_margin",
              fmt::format("{:.0f} °C (slowdown temperature not reported){}", *temp, idle_note));
}

AuditItem check_numa(const GpuCheckInput& g) {
  if (g.numa_warning) return *g.numa_warning;
  if (!g.numa_node)
    return item("info", "numa_affinity",
                fmt::format("NUMA node not known (no /sys entry for PCI device {})",
                            g.info.pci_bus_id.empty() ? "?" : g.info.pci_bus_id));
  if (*g.numa_node < 0 && g.numa_nodes > 1)
    return item("info", "numa_affinity",
                fmt::format("the firmware reports no NUMA node for this GPU on a machine with {} "
                            "nodes: which CPUs are near it is not known",
                            g.numa_nodes),
                "nvidia-smi topo -m shows the GPU's CPU affinity; pin jobs to it (numactl)");
  if (*g.numa_node < 0)
    return item("pass", "numa_affinity",
                "no NUMA node reported for this GPU (a single-node machine): nothing to pin");
  return item("pass", "numa_affinity",
              fmt::format("on NUMA node {0}, whose CPUs this shell may use (pin each job near its "
                          "GPU: numactl --cpunodebind={0})",
                          *g.numa_node));
}

}  // namespace

int CheckResult::count(const std::string& level) const {
  int c = 0;
  for (const auto& i : machine) c += i.level == level;
  for (const auto& g : gpus)
    for (const auto& i : g.items) c += i.level == level;
  return c;
}

std::string CheckResult::overall() const {
  if (count("fail") > 0) return "fail";
  if (count("warn") > 0) return "warn";
  return "pass";
}

std::vector<AuditItem> check_gpu(const GpuCheckInput& g, const CheckThresholds& t) {
  if (g.second.lost)
    return {item("fail", "gpu_reachable",
                 "the GPU fell off the bus (GPU_IS_LOST): nothing else can be checked",
                 "read dmesg for Xid 79 and the like; reset the GPU or reboot; reseat it and check "
                 "its power and cooling")};
  if (g.second[Field::kUtilGpu].state() == Reading::State::kError &&
      g.second[Field::kUtilGpu].code() == nvml_code::kTimeout)
    return {item("fail", "gpu_reachable",
                 "NVML calls on this GPU did not answer in time: nothing else can be checked",
                 "read dmesg for Xid errors; a GPU whose driver calls hang usually needs a reset "
                 "or a reboot")};
  return {check_power_limit(g, t), check_persistence(g), check_clock_settings(g, t),
          check_pcie(g, t),        check_ecc(g),         check_retired_pages(g),
          check_row_remapping(g),  check_mig(g),         check_reasons(g, t),
          check_thermal(g, t),     check_numa(g)};
}

CheckResult check_machine(const CheckInput& in, const CheckThresholds& t) {
  CheckResult out;
  const SystemInfo& sys = in.system;
  if (sys.driver_version.empty())
    out.machine.push_back(item("info", "driver_version", "NVIDIA driver version not reported"));
  else
    out.machine.push_back(item(
        "info", "driver_version",
        sys.nvml_version.empty()
            ? fmt::format("NVIDIA driver {}", sys.driver_version)
            : fmt::format("NVIDIA driver {} (NVML {})", sys.driver_version, sys.nvml_version)));
  if (sys.cuda_driver_version.empty())
    out.machine.push_back(item("info", "cuda_driver_version", "CUDA driver version not reported"));
  else
    out.machine.push_back(item(
        "info", "cuda_driver_version",
        fmt::format("CUDA {}: the newest CUDA runtime this driver runs", sys.cuda_driver_version)));
  if (in.governor_warning)
    out.machine.push_back(*in.governor_warning);
  else if (in.cpu_governors.empty())
    out.machine.push_back(item("info", "cpu_governor",
                               "CPU frequency governor not visible (no cpufreq in /sys: a VM or "
                               "a container?)"));
  else
    out.machine.push_back(
        item("pass", "cpu_governor",
             fmt::format("CPU frequency governor: {}", fmt::join(in.cpu_governors, ", "))));
  for (const auto& g : in.gpus) {
    GpuCheckResult r;
    r.index = g.info.index;
    r.name = g.info.name;
    r.uuid = g.info.uuid;
    r.pci_bus_id = g.info.pci_bus_id;
    r.items = check_gpu(g, t);
    out.gpus.push_back(std::move(r));
  }
  if (in.gpus.empty())
    out.machine.push_back(item(
        "fail", "gpus_found", "NVML answers but lists no GPU (or none of those --gpus named)",
        "see nvidia-smi and dmesg (Xid 79: fallen off the bus): a reset or reboot brings a lost "
        "GPU back; in a container, pass the GPUs in (docker --gpus all)"));
  return out;
}

}  // namespace gpudoctor
