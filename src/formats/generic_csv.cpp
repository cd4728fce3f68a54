#include "formats/generic_csv.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "core/reading.hpp"
#include "formats/finish.hpp"
#include "formats/text.hpp"

namespace gpudoctor {
namespace {

using text::iequals;

// ---------------------------------------------------------------------------------------------
// Column names

enum class Role : uint8_t {
  kUnknown,  // not a name gpudoctor reads: ignored, listed in a note
  kIgnore,   // --map COLUMN=ignore, or made redundant by another column
  kField,
  kTime,
  kDate,  // a date that may go with a time-of-day column
  kGpu,   // a GPU index or other GPU id
  kUuid,
  kBusId,
  kName,
  kHost,
};

// How a column's numbers become the field's unit when neither its name nor its cells say.
enum class Rule : uint8_t {
  kAsIs,            // in the field's unit
  kPercentOrRatio,  // % unless every value lies in 0..1 and some have a fraction: a ratio, x100
  kWattsOrMilli,    // W unless most values exceed 3000 (no GPU draws that many W): mW, x1e-3
  kMibOrBytes,      // MiB unless a value exceeds 1e6 (976 GiB, more than any GPU has): bytes
};

struct Alias {
  std::string_view name;  // normalised: lower case, '_' between words (see normalise())
  Role role;
  Field field;
  Rule rule;
};

// The alias table: the names home-made loggers, pandas, pynvml and dcgm-exporter scripts give
// their columns, each with the field (or role) it stands for and how its unit is found. Besides
// these, every catalogue field id ("power_w", exact unit), its stem without the unit ("power",
// unit by rule), every nvidia-smi --query-gpu name, every DCGM name (DCGM's scale: ratios x100) and
// every gpudoctor Prometheus name are aliases too (lookup_base). A unit may follow any name as a
// suffix ("power_mw", "mem_used_bytes", "elapsed_ms") or in brackets ("power (mW)").
constexpr Field kNoField{};
constexpr Alias kAliases[] = {
    // Time. Epoch s / ms / us / ns, ISO 8601, time of day or elapsed seconds: told by the values.
    {"time", Role::kTime, kNoField, Rule::kAsIs},
    {"timestamp", Role::kTime, kNoField, Rule::kAsIs},
    {"time_stamp", Role::kTime, kNoField, Rule::kAsIs},
    {"ts", Role::kTime, kNoField, Rule::kAsIs},
    {"datetime", Role::kTime, kNoField, Rule::kAsIs},
    {"date_time", Role::kTime, kNoField, Rule::kAsIs},
    {"t", Role::kTime, kNoField, Rule::kAsIs},
    {"elapsed", Role::kTime, kNoField, Rule::kAsIs},
    {"elapsed_time", Role::kTime, kNoField, Rule::kAsIs},
    {"epoch", Role::kTime, kNoField, Rule::kAsIs},
    {"epoch_time", Role::kTime, kNoField, Rule::kAsIs},
    {"unix", Role::kTime, kNoField, Rule::kAsIs},
    {"unix_time", Role::kTime, kNoField, Rule::kAsIs},
    {"unixtime", Role::kTime, kNoField, Rule::kAsIs},
    {"time_unix", Role::kTime, kNoField, Rule::kAsIs},
    {"unix_timestamp", Role::kTime, kNoField, Rule::kAsIs},
    {"wall_time", Role::kTime, kNoField, Rule::kAsIs},
    {"walltime", Role::kTime, kNoField, Rule::kAsIs},
    {"sample_time", Role::kTime, kNoField, Rule::kAsIs},
    {"date", Role::kDate, kNoField, Rule::kAsIs},
    // GPU identity.
    {"gpu", Role::kGpu, kNoField, Rule::kAsIs},
    {"gpu_id", Role::kGpu, kNoField, Rule::kAsIs},
    {"gpu_index", Role::kGpu, kNoField, Rule::kAsIs},
    {"gpu_idx", Role::kGpu, kNoField, Rule::kAsIs},
    {"gpu_num", Role::kGpu, kNoField, Rule::kAsIs},
    {"gpu_number", Role::kGpu, kNoField, Rule::kAsIs},
    {"index", Role::kGpu, kNoField, Rule::kAsIs},
    {"idx", Role::kGpu, kNoField, Rule::kAsIs},
    {"device", Role::kGpu, kNoField, Rule::kAsIs},
    {"device_id", Role::kGpu, kNoField, Rule::kAsIs},
    {"device_index", Role::kGpu, kNoField, Rule::kAsIs},
    {"dev", Role::kGpu, kNoField, Rule::kAsIs},
    {"cuda_device", Role::kGpu, kNoField, Rule::kAsIs},
    {"minor_number", Role::kGpu, kNoField, Rule::kAsIs},
    {"uuid", Role::kUuid, kNoField, Rule::kAsIs},
    {"gpu_uuid", Role::kUuid, kNoField, Rule::kAsIs},
    {"device_uuid", Role::kUuid, kNoField, Rule::kAsIs},
    {"pci_bus_id", Role::kBusId, kNoField, Rule::kAsIs},
    {"bus_id", Role::kBusId, kNoField, Rule::kAsIs},
    {"pci_bus", Role::kBusId, kNoField, Rule::kAsIs},
    {"gpu_bus_id", Role::kBusId, kNoField, Rule::kAsIs},
    {"name", Role::kName, kNoField, Rule::kAsIs},
    {"gpu_name", Role::kName, kNoField, Rule::kAsIs},
    {"model", Role::kName, kNoField, Rule::kAsIs},
    {"gpu_model", Role::kName, kNoField, Rule::kAsIs},
    {"model_name", Role::kName, kNoField, Rule::kAsIs},
    {"product", Role::kName, kNoField, Rule::kAsIs},
    {"product_name", Role::kName, kNoField, Rule::kAsIs},
    {"device_name", Role::kName, kNoField, Rule::kAsIs},
    {"gpu_type", Role::kName, kNoField, Rule::kAsIs},
    {"host", Role::kHost, kNoField, Rule::kAsIs},
    {"hostname", Role::kHost, kNoField, Rule::kAsIs},
    {"node", Role::kHost, kNoField, Rule::kAsIs},
    {"node_name", Role::kHost, kNoField, Rule::kAsIs},
    {"nodename", Role::kHost, kNoField, Rule::kAsIs},
    {"machine", Role::kHost, kNoField, Rule::kAsIs},
    {"server", Role::kHost, kNoField, Rule::kAsIs},
    {"instance", Role::kHost, kNoField, Rule::kAsIs},
    // Power and energy. pynvml's power calls return mW: the rule tells them from W by size.
    {"power", Role::kField, Field::kPower, Rule::kWattsOrMilli},
    {"power_draw", Role::kField, Field::kPower, Rule::kWattsOrMilli},
    {"power_usage", Role::kField, Field::kPower, Rule::kWattsOrMilli},
    {"power_used", Role::kField, Field::kPower, Rule::kWattsOrMilli},
    {"gpu_power", Role::kField, Field::kPower, Rule::kWattsOrMilli},
    {"board_power", Role::kField, Field::kPower, Rule::kWattsOrMilli},
    {"pwr", Role::kField, Field::kPower, Rule::kWattsOrMilli},
    {"power_instant", Role::kField, Field::kPowerInstant, Rule::kWattsOrMilli},
    {"instant_power", Role::kField, Field::kPowerInstant, Rule::kWattsOrMilli},
    {"power_draw_instant", Role::kField, Field::kPowerInstant, Rule::kWattsOrMilli},
    {"total_energy", Role::kField, Field::kEnergy, Rule::kAsIs},
    {"energy_consumption", Role::kField, Field::kEnergy, Rule::kAsIs},
    {"total_energy_consumption", Role::kField, Field::kEnergy, Rule::kAsIs},
    {"power_management_limit", Role::kField, Field::kPowerLimit, Rule::kWattsOrMilli},
    {"enforced_power_limit", Role::kField, Field::kPowerLimitEnforced, Rule::kWattsOrMilli},
    {"default_power_limit", Role::kField, Field::kPowerLimitDefault, Rule::kWattsOrMilli},
    {"tdp", Role::kField, Field::kPowerLimitDefault, Rule::kWattsOrMilli},
    // Utilization: percent, or a 0-1 ratio (told by the values).
    {"util", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio},
    {"utilization", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio},
    {"gpu_util", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio},
    {"gpu_utilization", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio},
    {"utilization_gpu", Role::kField, Field::kUtilGpu, Rule::kPercentOrRatio},
    {"mem_util", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio},
    {"memory_util", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio},
    {"mem_utilization", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio},
    {"memory_utilization", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio},
    {"utilization_memory", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio},
    {"mem_copy_util", Role::kField, Field::kUtilMem, Rule::kPercentOrRatio},
    {"fan", Role::kField, Field::kFan, Rule::kPercentOrRatio},
    {"fan_speed", Role::kField, Field::kFan, Rule::kPercentOrRatio},
    // DCGM profiling style activities (DCGM writes them as 0-1 ratios).
    {"sm_active", Role::kField, Field::kGpmSmUtil, Rule::kPercentOrRatio},
    {"sm_activity", Role::kField, Field::kGpmSmUtil, Rule::kPercentOrRatio},
    {"sm_occupancy", Role::kField, Field::kGpmSmOccupancy, Rule::kPercentOrRatio},
    {"tensor_active", Role::kField, Field::kGpmTensorAny, Rule::kPercentOrRatio},
    {"tensor_activity", Role::kField, Field::kGpmTensorAny, Rule::kPercentOrRatio},
    {"tensor_util", Role::kField, Field::kGpmTensorAny, Rule::kPercentOrRatio},
    {"pipe_tensor_active", Role::kField, Field::kGpmTensorAny, Rule::kPercentOrRatio},
    {"dram_active", Role::kField, Field::kGpmDramBw, Rule::kPercentOrRatio},
    {"dram_activity", Role::kField, Field::kGpmDramBw, Rule::kPercentOrRatio},
    {"dram_util", Role::kField, Field::kGpmDramBw, Rule::kPercentOrRatio},
    {"gr_engine_active", Role::kField, Field::kGpmGraphicsUtil, Rule::kPercentOrRatio},
    {"graphics_active", Role::kField, Field::kGpmGraphicsUtil, Rule::kPercentOrRatio},
    {"fp64_active", Role::kField, Field::kGpmFp64, Rule::kPercentOrRatio},
    {"fp32_active", Role::kField, Field::kGpmFp32, Rule::kPercentOrRatio},
    {"fp16_active", Role::kField, Field::kGpmFp16, Rule::kPercentOrRatio},
    {"nvlink_rx", Role::kField, Field::kGpmNvlinkRx, Rule::kAsIs},
    {"nvlink_tx", Role::kField, Field::kGpmNvlinkTx, Rule::kAsIs},
    // Temperature, clocks, performance state.
    {"temp", Role::kField, Field::kTemp, Rule::kAsIs},
    {"temperature", Role::kField, Field::kTemp, Rule::kAsIs},
    {"gpu_temp", Role::kField, Field::kTemp, Rule::kAsIs},
    {"gpu_temperature", Role::kField, Field::kTemp, Rule::kAsIs},
    {"temperature_gpu", Role::kField, Field::kTemp, Rule::kAsIs},
    {"sm_clock", Role::kField, Field::kClockSm, Rule::kAsIs},
    {"graphics_clock", Role::kField, Field::kClockSm, Rule::kAsIs},
    {"gr_clock", Role::kField, Field::kClockSm, Rule::kAsIs},
    {"clocks_sm", Role::kField, Field::kClockSm, Rule::kAsIs},
    {"sm_clk", Role::kField, Field::kClockSm, Rule::kAsIs},
    {"gpu_clock", Role::kField, Field::kClockSm, Rule::kAsIs},
    {"core_clock", Role::kField, Field::kClockSm, Rule::kAsIs},
    {"mem_clock", Role::kField, Field::kClockMem, Rule::kAsIs},
    {"memory_clock", Role::kField, Field::kClockMem, Rule::kAsIs},
    {"clocks_mem", Role::kField, Field::kClockMem, Rule::kAsIs},
    {"mem_clk", Role::kField, Field::kClockMem, Rule::kAsIs},
    {"max_sm_clock", Role::kField, Field::kClockSmMax, Rule::kAsIs},
    {"max_mem_clock", Role::kField, Field::kClockMemMax, Rule::kAsIs},
    {"perf_state", Role::kField, Field::kPstate, Rule::kAsIs},
    {"performance_state", Role::kField, Field::kPstate, Rule::kAsIs},
    // Clock event ("throttle") reasons: NVML's bitmask, decimal or 0x hex.
    {"throttle_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs},
    {"throttle_reason", Role::kField, Field::kClockEventReasons, Rule::kAsIs},
    {"throttle", Role::kField, Field::kClockEventReasons, Rule::kAsIs},
    {"clocks_throttle_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs},
    {"clock_throttle_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs},
    {"clocks_event_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs},
    {"event_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs},
    {"clock_reasons", Role::kField, Field::kClockEventReasons, Rule::kAsIs},
    // Memory: MiB, or bytes (told by the name or the values).
    {"memory_used", Role::kField, Field::kMemUsed, Rule::kMibOrBytes},
    {"used_memory", Role::kField, Field::kMemUsed, Rule::kMibOrBytes},
    {"fb_used", Role::kField, Field::kMemUsed, Rule::kMibOrBytes},
    {"gpu_mem_used", Role::kField, Field::kMemUsed, Rule::kMibOrBytes},
    {"vram_used", Role::kField, Field::kMemUsed, Rule::kMibOrBytes},
    {"memory_total", Role::kField, Field::kMemTotal, Rule::kMibOrBytes},
    {"total_memory", Role::kField, Field::kMemTotal, Rule::kMibOrBytes},
    {"fb_total", Role::kField, Field::kMemTotal, Rule::kMibOrBytes},
    {"vram_total", Role::kField, Field::kMemTotal, Rule::kMibOrBytes},
    // PCIe.
    {"pcie_tx_throughput", Role::kField, Field::kPcieTx, Rule::kAsIs},
    {"pcie_rx_throughput", Role::kField, Field::kPcieRx, Rule::kAsIs},
    {"pcie_gen", Role::kField, Field::kPcieGen, Rule::kAsIs},
    {"pcie_width", Role::kField, Field::kPcieWidth, Rule::kAsIs},
};

// Units, as a name's suffix or bracket ("_mw", "(MiB/s)"), or after a value ("152 W"), after
// normalising. kind: 0 a field's unit (factor to the field's unit), 1 time (seconds per unit),
// 2 "utc" (a time zone).
struct UnitToken {
  std::string_view token;
  uint8_t kind;
  Unit unit;
  double factor;
  std::string_view label;
};
constexpr double kMiB = 1048576.0;
constexpr UnitToken kUnits[] = {
    {"w", 0, Unit::kWatt, 1, "W"},
    {"watt", 0, Unit::kWatt, 1, "W"},
    {"watts", 0, Unit::kWatt, 1, "W"},
    {"mw", 0, Unit::kWatt, 1e-3, "mW"},
    {"milliwatt", 0, Unit::kWatt, 1e-3, "mW"},
    {"milliwatts", 0, Unit::kWatt, 1e-3, "mW"},
    {"kw", 0, Unit::kWatt, 1e3, "kW"},
    {"pct", 0, Unit::kPercent, 1, "%"},
    {"percent", 0, Unit::kPercent, 1, "%"},
    {"perc", 0, Unit::kPercent, 1, "%"},
    {"ratio", 0, Unit::kPercent, 100, "0-1 ratio"},
    {"frac", 0, Unit::kPercent, 100, "0-1 ratio"},
    {"fraction", 0, Unit::kPercent, 100, "0-1 ratio"},
    {"0_1", 0, Unit::kPercent, 100, "0-1 ratio"},
    {"c", 0, Unit::kCelsius, 1, "C"},
    {"degc", 0, Unit::kCelsius, 1, "C"},
    {"celsius", 0, Unit::kCelsius, 1, "C"},
    {"mhz", 0, Unit::kMegahertz, 1, "MHz"},
    {"ghz", 0, Unit::kMegahertz, 1e3, "GHz"},
    {"khz", 0, Unit::kMegahertz, 1e-3, "kHz"},
    {"hz", 0, Unit::kMegahertz, 1e-6, "Hz"},
    {"mib", 0, Unit::kMebibyte, 1, "MiB"},
    {"mb", 0, Unit::kMebibyte, 1, "MiB"},
    {"gib", 0, Unit::kMebibyte, 1024, "GiB"},
    {"gb", 0, Unit::kMebibyte, 1024, "GiB"},
    {"kib", 0, Unit::kMebibyte, 1 / 1024.0, "KiB"},
    {"kb", 0, Unit::kMebibyte, 1 / 1024.0, "KiB"},
    {"bytes", 0, Unit::kMebibyte, 1 / kMiB, "bytes"},
    {"byte", 0, Unit::kMebibyte, 1 / kMiB, "bytes"},
    {"b", 0, Unit::kMebibyte, 1 / kMiB, "bytes"},
    {"mibs", 0, Unit::kMebibytePerSecond, 1, "MiB/s"},
    {"mib_s", 0, Unit::kMebibytePerSecond, 1, "MiB/s"},
    {"mb_s", 0, Unit::kMebibytePerSecond, 1, "MiB/s"},
    {"kibs", 0, Unit::kMebibytePerSecond, 1 / 1024.0, "KiB/s"},
    {"kib_s", 0, Unit::kMebibytePerSecond, 1 / 1024.0, "KiB/s"},
    {"kb_s", 0, Unit::kMebibytePerSecond, 1 / 1024.0, "KiB/s"},
    {"gib_s", 0, Unit::kMebibytePerSecond, 1024, "GiB/s"},
    {"gb_s", 0, Unit::kMebibytePerSecond, 1024, "GiB/s"},
    {"bytes_s", 0, Unit::kMebibytePerSecond, 1 / kMiB, "bytes/s"},
    {"b_s", 0, Unit::kMebibytePerSecond, 1 / kMiB, "bytes/s"},
    {"mj", 0, Unit::kMillijoule, 1, "mJ"},
    {"j", 0, Unit::kMillijoule, 1e3, "J"},
    {"joules", 0, Unit::kMillijoule, 1e3, "J"},
    {"kj", 0, Unit::kMillijoule, 1e6, "kJ"},
    {"s", 1, Unit{}, 1, "s"},
    {"sec", 1, Unit{}, 1, "s"},
    {"secs", 1, Unit{}, 1, "s"},
    {"seconds", 1, Unit{}, 1, "s"},
    {"ms", 1, Unit{}, 1e-3, "ms"},
    {"msec", 1, Unit{}, 1e-3, "ms"},
    {"millis", 1, Unit{}, 1e-3, "ms"},
    {"milliseconds", 1, Unit{}, 1e-3, "ms"},
    {"us", 1, Unit{}, 1e-6, "us"},
    {"usec", 1, Unit{}, 1e-6, "us"},
    {"micros", 1, Unit{}, 1e-6, "us"},
    {"microseconds", 1, Unit{}, 1e-6, "us"},
    {"ns", 1, Unit{}, 1e-9, "ns"},
    {"nsec", 1, Unit{}, 1e-9, "ns"},
    {"nanos", 1, Unit{}, 1e-9, "ns"},
    {"nanoseconds", 1, Unit{}, 1e-9, "ns"},
    {"utc", 2, Unit{}, 1, "UTC"},
};

bool is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}
bool is_lower(char c) {
  return c >= 'a' && c <= 'z';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
char lower(char c) {
  return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c;
}

// Lower case; '%' becomes "pct", 'µ' 'u', '°' nothing; any other run of non-alphanumerics one '_';
// no '_' at either end. camel: also '_' at camelCase word starts ("gpuUtil" -> gpu_util).
std::string normalise(std::string_view s, bool camel = false) {
  std::string out;
  out.reserve(s.size() + 4);
  auto sep = [&] {
    if (!out.empty() && out.back() != '_') out += '_';
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0u;
    if (is_lower(c) || is_digit(c)) {
      out += c;
    } else if (is_upper(c)) {
      if (camel && i > 0 &&
          (is_lower(s[i - 1]) || (is_upper(s[i - 1]) && is_lower(static_cast<char>(next)))))
        sep();
      out += lower(c);
    } else if (c == '%') {
      sep();
      out += "pct";
      sep();
    } else if ((u == 0xC2 && next == 0xB5) || (u == 0xCE && next == 0xBC)) {  // micro sign, mu
      out += 'u';
      ++i;
    } else if (u == 0xC2 && next == 0xB0) {  // degree sign
      ++i;
    } else {
      sep();
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

// raw (a catalogue name: letters, digits, '.', '_') equals the normalised n.
bool norm_equals(std::string_view raw, std::string_view n) {
  if (raw.size() != n.size()) return false;
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i] == '.' || raw[i] == '-' || raw[i] == ' ' ? '_' : lower(raw[i]);
    if (c != n[i]) return false;
  }
  return true;
}

const UnitToken* unit_exact(std::string_view tok) {
  for (const auto& u : kUnits)
    if (u.token == tok) return &u;
  return nullptr;
}

// A unit word, or words run together: "mib_s", "mi_b" (camelCase "MiB" -> "MiB").
const UnitToken* unit_joined(std::string_view n) {
  if (const auto* u = unit_exact(n)) return u;
  if (n.find('_') == std::string_view::npos) return nullptr;
  std::string joined;
  for (const char c : n)
    if (c != '_') joined += c;
  return unit_exact(joined);
}

// A unit written as normalised text: "mw", "mib_s", "mi_b" (camelCase "MiB"), "unix_ms" (its last
// word).
const UnitToken* unit_of(std::string_view n) {
  if (n.empty()) return nullptr;
  if (const auto* u = unit_joined(n)) return u;
  const size_t us = n.rfind('_');
  if (us != std::string_view::npos) return unit_exact(n.substr(us + 1));
  return nullptr;
}

Rule rule_for(Unit u) {
  switch (u) {
    case Unit::kPercent:
      return Rule::kPercentOrRatio;
    case Unit::kWatt:
      return Rule::kWattsOrMilli;
    case Unit::kMebibyte:
      return Rule::kMibOrBytes;
    default:
      return Rule::kAsIs;
  }
}

// What a column name means.
struct Meaning {
  Role role = Role::kUnknown;
  Field field{};
  Rule rule = Rule::kAsIs;
  double factor = 1;
  bool unit_named = false;  // the name fixes the unit (field id, smi / DCGM name, unit suffix)
  bool dcgm = false;
  double time_unit_s = 0;  // time columns: seconds per unit, where the name says; 0: by the values
  bool utc = false;
  std::string_view unit_label;
};

Meaning field_meaning(Field f, Rule rule, double factor, bool unit_named) {
  Meaning m;
  m.role = Role::kField;
  m.field = f;
  m.rule = rule;
  m.factor = factor;
  m.unit_named = unit_named;
  return m;
}

// A catalogue id without its unit word: "power_w" -> "power", "util_gpu_pct" -> "util_gpu".
std::string_view id_stem(const FieldInfo& fi) {
  const size_t us = fi.id.rfind('_');
  if (us == std::string_view::npos) return {};
  const UnitToken* u = unit_exact(fi.id.substr(us + 1));
  if (u == nullptr || u->kind != 0 || u->unit != fi.unit || u->factor != 1) return {};
  return fi.id.substr(0, us);
}

std::optional<Meaning> lookup_base(std::string_view n) {
  if (n.empty()) return std::nullopt;
  for (const auto& fi : all_fields())
    if (fi.id == n) return field_meaning(fi.field, Rule::kAsIs, 1, true);
  for (const auto& a : kAliases) {
    if (a.name != n) continue;
    if (a.role == Role::kField) return field_meaning(a.field, a.rule, 1, false);
    Meaning m;
    m.role = a.role;
    return m;
  }
  for (const auto& fi : all_fields())
    if (const auto stem = id_stem(fi); !stem.empty() && stem == n)
      return field_meaning(fi.field, rule_for(fi.unit), 1, false);
  for (const auto& fi : all_fields()) {
    std::string_view rest = fi.smi_names;
    while (!rest.empty()) {
      const size_t bar = rest.find('|');
      if (norm_equals(rest.substr(0, bar), n)) return field_meaning(fi.field, Rule::kAsIs, 1, true);
      rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
    }
  }
  for (const auto& fi : all_fields()) {
    if (!fi.dcgm_name.empty() && norm_equals(fi.dcgm_name, n)) {
      Meaning m = field_meaning(fi.field, Rule::kAsIs, fi.dcgm_scale, true);
      m.dcgm = true;
      if (fi.dcgm_scale == 100) m.unit_label = "DCGM 0-1 ratio";
      return m;
    }
  }
  for (const auto& fi : all_fields())
    if (norm_equals(fi.prom_name, n))
      return field_meaning(fi.field, Rule::kAsIs, prom_scale(fi), true);
  return std::nullopt;
}

// Applies a unit (from a suffix, a bracket or --map) to what a name means; false when it does
// not fit (a time unit on a power column, "%" on a temperature).
bool apply_unit(Meaning& m, const UnitToken& u) {
  if (m.role == Role::kField && u.kind == 0 && u.unit == info(m.field).unit) {
    m.factor = u.factor;
    m.rule = Rule::kAsIs;
    m.unit_named = true;
    m.dcgm = false;
    m.unit_label = u.label;
    return true;
  }
  if ((m.role == Role::kTime || m.role == Role::kDate) && u.kind == 1) {
    m.time_unit_s = u.factor;
    m.unit_label = u.label;
    return true;
  }
  if ((m.role == Role::kTime || m.role == Role::kDate) && u.kind == 2) {
    m.utc = true;
    return true;
  }
  return false;
}

// A normalised name, with an optional unit suffix of one or two words ("power_draw_mw",
// "mem_used_mi_b", "pcie_tx_mib_s", "elapsed_ms").
std::optional<Meaning> lookup(std::string_view n) {
  if (auto m = lookup_base(n)) return m;
  size_t pos = n.size();
  for (int words = 1; words <= 2; ++words) {
    if (pos == 0) break;
    pos = n.rfind('_', pos - 1);
    if (pos == std::string_view::npos || pos == 0) break;
    const UnitToken* u = unit_joined(n.substr(pos + 1));
    if (u == nullptr) continue;
    if (auto m = lookup_base(n.substr(0, pos)); m && apply_unit(*m, *u)) return m;
  }
  return std::nullopt;
}

// One column per GPU: "GPU0", "gpu_1", "cuda0", "gpu0_power", "gpu1_power_w", "power_gpu0".
struct WideName {
  int gpu = -1;
  std::string_view rest;  // the quantity, "" for a bare "GPU0"
};

std::optional<WideName> match_wide(std::string_view n) {
  static constexpr std::string_view kPrefixes[] = {"device", "nvidia", "cuda", "gpu", "dev"};
  auto number = [](std::string_view digits) {
    int v = 0;
    for (const char c : digits) v = v * 10 + (c - '0');
    return v;
  };
  for (const auto p : kPrefixes) {
    if (!n.starts_with(p)) continue;
    size_t i = p.size();
    if (i < n.size() && n[i] == '_') ++i;
    size_t j = i;
    while (j < n.size() && is_digit(n[j])) ++j;
    if (j == i || j - i > 4) continue;
    WideName w;
    w.gpu = number(n.substr(i, j - i));
    if (j == n.size()) return w;
    if (n[j] == '_') ++j;
    w.rest = n.substr(j);
    if (w.rest.empty()) continue;
    return w;
  }
  size_t b = n.size();
  while (b > 0 && is_digit(n[b - 1])) --b;
  if (b == n.size() || n.size() - b > 4) return std::nullopt;
  size_t k = b;
  if (k > 0 && n[k - 1] == '_') --k;
  for (const auto p : kPrefixes) {
    if (k <= p.size() + 1 || n.substr(k - p.size(), p.size()) != p || n[k - p.size() - 1] != '_')
      continue;
    WideName w;
    w.gpu = number(n.substr(b));
    w.rest = n.substr(0, k - p.size() - 1);
    return w;
  }
  return std::nullopt;
}

// "power (W)" -> base "power", annotation "W"; also "power [mW]".
void split_annotation(std::string_view s, std::string_view& base, std::string_view& ann) {
  s = text::trim(s);
  base = s;
  ann = {};
  if (s.size() < 3) return;
  const char close = s.back();
  if (close != ')' && close != ']') return;
  const size_t open = s.rfind(close == ')' ? '(' : '[');
  if (open == std::string_view::npos || open == 0) return;
  base = text::trim(s.substr(0, open));
  ann = text::trim(s.substr(open + 1, s.size() - open - 2));
  if (base.empty()) {
    base = s;
    ann = {};
  }
}

struct Column {
  Meaning m;
  int gpu = -1;       // the GPU number the name gives (one column per GPU); -1: none
  bool bare = false;  // "GPU0": a GPU number and no quantity
  bool mapped = false;
  bool unit_mismatch = false;
  const UnitToken* ann_unit = nullptr;  // the unit in brackets
  std::string name;                     // as written, trimmed and unquoted
  std::string base;                     // name without the bracket annotation
};

// The name's meaning, with camelCase words split as a fallback; c.gpu and c.bare for one column
// per GPU.
bool resolve_name(std::string_view name, Column& c) {
  std::string prev;
  for (const bool camel : {false, true}) {
    const std::string n = normalise(name, camel);
    if (camel && n == prev) break;
    prev = n;
    c.gpu = -1;
    if (auto m = lookup(n)) {
      c.m = *m;
      return true;
    }
    if (const auto w = match_wide(n)) {
      c.gpu = w->gpu;
      if (w->rest.empty()) {
        c.bare = true;
        return true;
      }
      if (auto m = lookup(w->rest)) {
        c.m = *m;
        return true;
      }
    }
  }
  c.gpu = -1;
  return false;
}

Column resolve(std::string_view raw) {
  Column c;
  c.name = std::string(text::trim(raw));
  std::string_view base, ann;
  split_annotation(c.name, base, ann);
  c.base = std::string(base);
  if (!ann.empty()) c.ann_unit = unit_joined(normalise(ann));
  bool found = false;
  if (!ann.empty() && c.ann_unit == nullptr) {
    // Not a unit: part of the name ("power (GPU 0)", "time (unix ms)"); else, of several words,
    // a remark ("power_w (avg over 1 s)"); else a unit gpudoctor does not read ("temp (F)").
    found = resolve_name(c.base + "_" + std::string(ann), c);
    if (!found && resolve_name(c.base, c)) {
      found = true;
      if (normalise(ann).find('_') == std::string::npos && c.m.role == Role::kField) {
        c.unit_mismatch = true;
        c.m.role = Role::kUnknown;
        return c;
      }
    }
  } else {
    found = resolve_name(c.base, c);
  }
  if (!found || c.bare) return c;
  if (c.m.role == Role::kGpu || c.m.role == Role::kTime || c.m.role == Role::kDate ||
      c.m.role == Role::kHost)
    c.gpu = -1;  // "gpu0_time": the time is the row's, whatever the column says
  if (c.ann_unit != nullptr && !apply_unit(c.m, *c.ann_unit)) {
    c.unit_mismatch = c.m.role == Role::kField;
    if (c.unit_mismatch) c.m.role = Role::kUnknown;
  }
  return c;
}

bool is_identity(Role r) {
  return r == Role::kTime || r == Role::kDate || r == Role::kGpu || r == Role::kUuid ||
         r == Role::kBusId || r == Role::kHost || r == Role::kName;
}

// Case-insensitive glob with '*' and '?'.
bool glob_match(std::string_view pat, std::string_view s) {
  size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && (pat[p] == '?' || lower(pat[p]) == lower(s[i]))) {
      ++p;
      ++i;
    } else if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

bool has_wildcard(std::string_view s) {
  return s.find_first_of("*?") != std::string_view::npos;
}

// ---------------------------------------------------------------------------------------------
// CSV records

char detect_separator(std::string_view line) {
  size_t comma = 0, semi = 0, tab = 0;
  bool quoted = false;
  for (const char c : line) {
    if (c == '"') quoted = !quoted;
    if (quoted) continue;
    comma += c == ',';
    semi += c == ';';
    tab += c == '\t';
  }
  if (semi > comma && semi >= tab) return ';';
  if (tab > comma && tab > semi) return '\t';
  return ',';
}

// Splits a text into records of trimmed, unquoted cells: RFC 4180 quotes (a quoted cell may hold
// the separator, doubled quotes and line breaks). Blank lines and '#' comment lines are skipped.
class Records {
 public:
  enum class Next { kRecord, kMalformed, kEnd };

  Records(std::string_view text, char sep, size_t line_before)
      : text_(text), sep_(sep), line_(line_before) {}

  // line_no: the line the record starts on; raw: its text, trimmed.
  Next next(std::vector<std::string_view>& cells, size_t& line_no, std::string_view& raw) {
    while (pos_ < text_.size()) {
      const std::string_view rest = text_.substr(pos_);
      const void* nl = std::memchr(rest.data(), '\n', rest.size());
      const size_t len = nl != nullptr
                             ? static_cast<size_t>(static_cast<const char*>(nl) - rest.data())
                             : rest.size();
      const std::string_view line = rest.substr(0, len);
      line_no = ++line_;
      const std::string_view t = text::trim(line);
      if (t.empty() || t.front() == '#') {
        pos_ = std::min(text_.size(), pos_ + len + 1);
        continue;
      }
      if (std::memchr(line.data(), '"', line.size()) == nullptr) {
        pos_ = std::min(text_.size(), pos_ + len + 1);
        raw = t;
        text::split_trimmed(line, sep_, cells);
        return Next::kRecord;
      }
      size_t consumed = 0;
      if (!split_quoted(rest, consumed, cells)) {
        pos_ = std::min(text_.size(), pos_ + len + 1);  // an unclosed quote: this line only
        raw = t;
        return Next::kMalformed;
      }
      pos_ += consumed;
      raw = text::trim(rest.substr(0, consumed));
      return Next::kRecord;
    }
    return Next::kEnd;
  }

  // Bytes consumed so far, and the number of the last line read.
  size_t position() const { return pos_; }
  bool at_end() const { return pos_ >= text_.size(); }
  size_t line() const { return line_; }

 private:
  struct Span {
    size_t b, n;
    bool own;
  };

  bool split_quoted(std::string_view s, size_t& consumed, std::vector<std::string_view>& cells) {
    own_.clear();
    spans_.clear();
    size_t pos = 0, newlines = 0;
    auto blank = [&](char c) { return c == ' ' || (c == '\t' && sep_ != '\t') || c == '\r'; };
    while (true) {
      while (pos < s.size() && blank(s[pos])) ++pos;
      if (pos < s.size() && s[pos] == '"') {
        ++pos;
        const size_t b = own_.size();
        while (true) {
          if (pos >= s.size()) return false;
          const char c = s[pos];
          if (c == '"') {
            if (pos + 1 < s.size() && s[pos + 1] == '"') {
              own_ += '"';
              pos += 2;
              continue;
            }
            ++pos;
            break;
          }
          newlines += c == '\n';
          own_ += c;
          ++pos;
        }
        // Anything between the closing quote and the separator is not RFC 4180: dropped.
        while (pos < s.size() && s[pos] != sep_ && s[pos] != '\n') ++pos;
        spans_.push_back({b, own_.size() - b, true});
      } else {
        const size_t b = pos;
        while (pos < s.size() && s[pos] != sep_ && s[pos] != '\n') ++pos;
        spans_.push_back({b, pos - b, false});
      }
      if (pos < s.size() && s[pos] == sep_) {
        ++pos;
        continue;
      }
      if (pos < s.size()) ++pos;  // the '\n' that ends the record
      break;
    }
    consumed = pos;
    line_ += newlines;
    cells.clear();
    for (const auto& sp : spans_)
      cells.push_back(
          text::trim(sp.own ? std::string_view(own_).substr(sp.b, sp.n) : s.substr(sp.b, sp.n)));
    return true;
  }

  std::string_view text_;
  char sep_;
  size_t line_;
  size_t pos_ = 0;
  std::string own_;
  std::vector<Span> spans_;
};

// ---------------------------------------------------------------------------------------------
// Times

// ISO 8601 and similar: "2024-05-14T10:31:07.412Z", "2024-05-14 10:31:07+02:00", "...-0500",
// "... UTC", "2024/05/14 10:31:07.412" (no zone). Milliseconds since the epoch; zoned: the text
// gave a zone (else it is read as UTC).
std::optional<int64_t> parse_datetime(std::string_view s, bool& zoned) {
  s = text::trim(s);
  zoned = false;
  if (s.size() < 16 || !is_digit(s[0]) || (s[4] != '-' && s[4] != '/')) return std::nullopt;
  int64_t offset_min = 0;
  if (s.back() == 'Z' || s.back() == 'z') {
    zoned = true;
    s.remove_suffix(1);
  } else if (s.size() > 22 &&
             (iequals(s.substr(s.size() - 3), "UTC") || iequals(s.substr(s.size() - 3), "GMT"))) {
    zoned = true;
    s = text::trim(s.substr(0, s.size() - 3));
  } else {
    const size_t p = s.find_last_of("+-");
    if (p != std::string_view::npos && p > 10) {
      std::string_view z = s.substr(p + 1);
      int64_t hh = 0, mm = 0;
      auto two = [&](std::string_view d, int64_t& out) {
        if (d.size() < 2 || !is_digit(d[0]) || !is_digit(d[1])) return false;
        out = (d[0] - '0') * 10 + (d[1] - '0');
        return true;
      };
      if (!two(z, hh)) return std::nullopt;
      z.remove_prefix(2);
      if (!z.empty() && z.front() == ':') z.remove_prefix(1);
      if (!z.empty()) {
        if (z.size() != 2 || !two(z, mm)) return std::nullopt;
      }
      if (hh > 23 || mm > 59) return std::nullopt;
      offset_min = (s[p] == '-' ? -1 : 1) * (hh * 60 + mm);
      zoned = true;
      s = text::trim(s.substr(0, p));
    }
  }
  char buf[64];
  if (s.size() == 16 && s[13] == ':') {  // "2024-05-14T10:31": no seconds
    std::memcpy(buf, s.data(), 16);
    std::memcpy(buf + 16, ":00", 3);
    s = std::string_view(buf, 19);
  }
  const auto ms = text::parse_timestamp_ms(s);
  if (!ms) return std::nullopt;
  return *ms - offset_min * 60000;
}

// "10:31:07" or "10:31:07.412": milliseconds since midnight.
std::optional<int64_t> parse_time_of_day(std::string_view s) {
  s = text::trim(s);
  if (s.size() < 8 || s.size() > 40 || s[2] != ':' || s[5] != ':') return std::nullopt;
  char buf[64] = "1970-01-01 ";
  std::memcpy(buf + 11, s.data(), s.size());
  return text::parse_timestamp_ms(std::string_view(buf, 11 + s.size()));
}

// "2024-05-14" or "2024/05/14": milliseconds since the epoch at midnight.
std::optional<int64_t> parse_date(std::string_view s) {
  s = text::trim(s);
  if (s.size() != 10) return std::nullopt;
  char buf[32];
  std::memcpy(buf, s.data(), 10);
  std::memcpy(buf + 10, " 00:00:00", 9);
  return text::parse_timestamp_ms(std::string_view(buf, 19));
}

constexpr double kDayMs = 86400000.0;

// ---------------------------------------------------------------------------------------------
// Cells

enum class Cell : uint8_t { kValue, kMissing, kNotSupported, kBad };

bool contains_ci(std::string_view s, std::string_view needle) {
  for (size_t i = 0; i + needle.size() <= s.size(); ++i)
    if (iequals(s.substr(i, needle.size()), needle)) return true;
  return false;
}

// Markers of "no value" that loggers, pandas and nvidia-smi write.
Cell classify_marker(std::string_view v) {
  if (v.empty()) return Cell::kMissing;
  if (contains_ci(v, "not supported") || contains_ci(v, "notsupported")) return Cell::kNotSupported;
  if (v.front() == '[') return Cell::kMissing;
  static constexpr std::string_view kMarkers[] = {"nan",   "-nan",    "na",  "n/a", "none", "null",
                                                  "nil",   "-",       "--",  "?",   "inf",  "-inf",
                                                  "error", "unknown", "err", "#n/a"};
  for (const auto m : kMarkers)
    if (iequals(v, m)) return Cell::kMissing;
  return Cell::kBad;
}

struct GpuState {
  std::string host, id;  // the key: host ("" without a host column) and GPU id or number
  int wide = -1;         // one column per GPU: the position of its number in wide_numbers_
  bool index_known = false;
  GpuSeries series;
  double last_t = 0;
  uint32_t seen_round = 0;
  log_reader::FieldCounts counts;
  std::array<bool, kFieldCount> scaled{};
};

using log_reader::Problem;

// Per field, for the rules that tell units apart by the values.
struct Stats {
  size_t n = 0, over_3000 = 0;
  double max = -std::numeric_limits<double>::infinity();
  bool fraction = false;
  bool cell_unit = false;  // some cell gave its unit: no guessing
};

// "GPU0" -> "GPU*": the --map pattern a message suggests for one-column-per-GPU names.
std::string wide_pattern(std::string_view name) {
  size_t b = name.size();
  while (b > 0 && is_digit(name[b - 1])) --b;
  if (b == name.size()) return std::string(name);
  return std::string(name.substr(0, b)) + "*";
}

// The GPU number in an id cell: "0", "GPU0", "gpu 1", "cuda:2", "/dev/nvidia3".
std::optional<unsigned> gpu_number(std::string_view v) {
  v = text::trim(v);
  if (const auto n = text::parse_int(v)) {
    if (*n >= 0 && *n <= 1000000) return static_cast<unsigned>(*n);
    return std::nullopt;
  }
  if (const auto x = text::parse_double(v); x && *x >= 0 && *x <= 1000000 && *x == std::floor(*x))
    return static_cast<unsigned>(*x);  // "0.0": pandas wrote an integer column with gaps
  size_t b = v.size();
  while (b > 0 && is_digit(v[b - 1])) --b;
  if (b == v.size() || b == 0 || v.size() - b > 6) return std::nullopt;
  const std::string_view prefix = v.substr(0, b);
  for (const char c : prefix)
    if (!(is_lower(c) || is_upper(c) || c == ':' || c == ' ' || c == '_' || c == '/' || c == '-'))
      return std::nullopt;
  if (!(contains_ci(prefix, "gpu") || contains_ci(prefix, "cuda") || contains_ci(prefix, "dev") ||
        contains_ci(prefix, "nvidia")))
    return std::nullopt;
  return static_cast<unsigned>(text::parse_int(v.substr(b)).value_or(0));
}

// ---------------------------------------------------------------------------------------------
// Reader

enum class TimeMode : uint8_t { kUndecided, kDateTime, kDateAndTod, kTimeOfDay, kEpoch, kElapsed };

struct FieldCol {
  size_t col;
  Field field;
  int wide;  // -1, or the position of the column's GPU number in wide_numbers_
};

struct InfoCol {
  size_t col;
  Role role;
  int wide;
};

class Reader {
 public:
  Reader(std::string_view text, const std::string& origin, const GenericCsvOptions& opt)
      : text_(text), origin_(origin), opt_(opt) {}

  Result<Recording> run();

 private:
  std::optional<Error> find_header();
  std::optional<Error> make_layout();
  void read_rows();
  void reset_rows();
  bool row_time(const std::vector<std::string_view>& cells, size_t line_no, double& ms);
  void decide_time(const std::vector<std::string_view>& cells);
  size_t slot_for(std::string_view host, std::string_view id, int wide);
  void read_cells(GpuState& g, size_t row, int wide, const std::vector<std::string_view>& cells,
                  size_t line_no);
  Cell parse_cell(const Column& c, std::string_view v, double& out, bool& cell_unit);
  std::optional<double> parse_num(std::string_view v);
  void finish();
  void note(std::string n) { log_reader::add_note(rec_, std::move(n)); }
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, line_no, f, std::forward<Args>(args)...);
  }

  std::string_view text_;
  const std::string& origin_;
  const GenericCsvOptions& opt_;

  // Header and layout.
  std::string_view body_;
  char sep_ = ',';
  size_t rows_offset_ = 0, rows_line_before_ = 0, header_line_no_ = 0;
  std::vector<std::string> header_;
  std::string header_raw_;
  std::vector<Column> cols_;
  int time_col_ = -1, date_col_ = -1, key_col_ = -1, host_col_ = -1;
  Role key_role_ = Role::kUnknown;
  bool wide_ = false;
  std::vector<int> wide_numbers_;  // ascending
  std::vector<FieldCol> fields_;
  std::vector<InfoCol> infos_;
  // The fields_ and infos_ each GPU position of one column per GPU reads (index position + 1;
  // index 0: files with one GPU per row), so that a row of thousands of GPUs costs its cells.
  std::vector<std::vector<size_t>> fields_of_, infos_of_;
  std::vector<std::string> unknown_, ignored_notes_;
  std::vector<std::pair<std::string, std::string>> duplicates_;  // (ignored, kept)
  bool key_is_row_number_ = false;

  // Rows.
  std::vector<std::string_view> cells_;
  std::vector<GpuState> gpus_;
  std::unordered_map<std::string, size_t> slots_;  // host '\0' GPU id -> gpus_
  std::string lookup_;
  size_t last_slot_ = 0;
  std::string cached_host_;
  std::vector<size_t> wide_slots_;
  bool wide_slots_valid_ = false;
  TimeMode mode_ = TimeMode::kUndecided;
  double ms_per_unit_ = 1000;
  bool have_first_ = false;
  double first_ms_ = 0;
  double tod_offset_ms_ = 0, tod_last_ms_ = 0;
  bool have_tod_ = false;
  bool any_unzoned_ = false, decimal_comma_ = false;
  uint32_t round_ = 0;
  size_t data_lines_ = 0, rows_read_ = 0, header_repeats_ = 0;
  Problem wrong_count_, malformed_, bad_time_, bad_gpu_, not_increasing_, bad_cell_, too_many_gpus_,
      truncated_;
  std::array<Stats, kFieldCount> stats_{};
  std::array<bool, kFieldCount> field_in_log_{};
  Recording rec_;
};

std::optional<Error> Reader::find_header() {
  text::LineReader lines(body_);
  std::string_view line, comment;
  size_t comment_line = 0;
  bool found = false, explicit_sep = false;
  while (lines.next(line)) {
    const std::string_view t = text::trim(line);
    if (t.empty()) continue;
    if (t.size() == 5 && text::istarts_with(t, "sep=")) {  // Excel's separator hint
      sep_ = t[4];
      explicit_sep = true;
      continue;
    }
    if (t.front() == '#') {
      comment = t;
      comment_line = lines.line_number();
      continue;
    }
    found = true;
    break;
  }
  if (!found)
    return usage_error(fmt::format("{}: no header line (only blank or '#' lines)", origin_));
  if (!explicit_sep) sep_ = detect_separator(line);
  const size_t line_no = lines.line_number();
  const auto offset = static_cast<size_t>(line.data() - body_.data());

  std::vector<std::string_view> cells;
  size_t rec_line = 0;
  std::string_view raw;
  Records header(body_.substr(offset), sep_, line_no - 1);
  if (header.next(cells, rec_line, raw) != Records::Next::kRecord)
    return usage_error(fmt::format("{}:{}: cannot read the header line (a quote is never closed)",
                                   origin_, line_no));
  rows_offset_ = offset + header.position();
  rows_line_before_ = header.line();
  header_line_no_ = line_no;
  header_raw_ = std::string(raw);
  header_.assign(cells.begin(), cells.end());

  // A header written as a '#' comment ("# time,power_w,..."): taken when the line below names no
  // column gpudoctor reads and the comment does, with as many cells.
  auto recognised = [](const std::vector<std::string>& names) {
    return std::any_of(names.begin(), names.end(), [](const std::string& n) {
      const Column c = resolve(n);
      return c.m.role == Role::kField || c.bare;
    });
  };
  if (!comment.empty() && !recognised(header_)) {
    Records cr(comment.substr(1), sep_, comment_line - 1);
    std::vector<std::string_view> cc;
    size_t cl = 0;
    std::string_view craw;
    if (cr.next(cc, cl, craw) == Records::Next::kRecord && cc.size() == header_.size() &&
        cc.size() >= 2) {
      std::vector<std::string> names(cc.begin(), cc.end());
      if (recognised(names)) {
        header_ = std::move(names);
        header_raw_ = std::string(craw);
        header_line_no_ = comment_line;
        rows_offset_ = offset;
        rows_line_before_ = line_no - 1;
      }
    }
  }
  return std::nullopt;
}

std::optional<Error> Reader::make_layout() {
  cols_.clear();
  cols_.reserve(header_.size());
  for (const auto& h : header_) cols_.push_back(resolve(h));

  // --map COLUMN=FIELD: the last entry that names a column wins.
  for (const auto& [pattern, target] : opt_.map) {
    const std::string_view pat = text::trim(pattern);
    const std::string_view tgt = text::trim(target);
    if (pat.empty() || tgt.empty())
      return usage_error(fmt::format(
          "--map {}={}: expected COLUMN=FIELD (e.g. --map 'GPU*=power_w')", pattern, target));
    Meaning m;
    if (iequals(tgt, "ignore") || iequals(tgt, "skip") || iequals(tgt, "none") || tgt == "-") {
      m.role = Role::kIgnore;
    } else if (const auto f = field_by_id(tgt)) {
      m = field_meaning(*f, Rule::kAsIs, 1, true);
    } else if (auto lm = lookup(normalise(tgt))) {
      m = *lm;
    } else if (auto cm = lookup(normalise(tgt, true))) {
      m = *cm;
    } else {
      return usage_error(fmt::format(
          "--map {}={}: \"{}\" is not a field id (gpudoctor fields lists them) nor one of time, "
          "gpu, uuid, pci_bus_id, name, host, ignore",
          pattern, target, tgt));
    }
    const bool glob = has_wildcard(pat);
    const std::string npat = glob ? std::string() : normalise(pat);
    bool matched = false;
    for (auto& c : cols_) {
      const bool hit = glob_match(pat, c.name) || glob_match(pat, c.base) ||
                       (!glob && !npat.empty() && npat == normalise(c.base));
      if (!hit) continue;
      if (glob && !c.mapped && is_identity(c.m.role)) continue;  // "GPU*" is not for gpu_index
      matched = true;
      c.m = m;
      c.mapped = true;
      c.bare = false;
      c.unit_mismatch = false;
      if (m.role != Role::kField) c.gpu = -1;
      if (c.ann_unit != nullptr && m.role == Role::kField && !m.dcgm)
        apply_unit(c.m, *c.ann_unit);  // "GPU0 (mW)" mapped to power_w: still mW
    }
    if (!matched) {
      std::vector<std::string_view> names;
      for (const auto& c : cols_) names.push_back(c.name);
      return usage_error(fmt::format("--map {}={}: no column {} in the header ({})", pattern,
                                     target, pat, fmt::join(names, ", ")));
    }
  }

  // Columns that name GPUs but not the quantity.
  std::vector<std::string_view> bare;
  for (const auto& c : cols_)
    if (c.bare) bare.push_back(c.name);

  // Time, date, host, GPU key: the first of each kind; later ones are noted and ignored.
  std::array<int, 16> first{};
  first.fill(-1);
  bool any_wide = false, any_field = false;
  for (const auto& c : cols_) {
    if (c.m.role != Role::kField) continue;
    any_field = true;
    any_wide = any_wide || c.gpu >= 0;
  }
  if (!any_field) {
    std::vector<std::string_view> names;
    for (const auto& c : cols_) names.push_back(c.name);
    if (!bare.empty())
      return usage_error(fmt::format(
          "{}:{}: columns {} hold one value per GPU but their names do not say which quantity; "
          "give it with --map, e.g. --map '{}=power_w'",
          origin_, header_line_no_, fmt::join(bare, ", "), wide_pattern(bare.front())));
    return usage_error(fmt::format(
        "{}:{}: no column gpudoctor recognises in the header ({}); name the columns with --map "
        "COLUMN=FIELD (field ids: gpudoctor fields)",
        origin_, header_line_no_, fmt::join(names, ", ")));
  }
  wide_ = any_wide;
  if (!bare.empty())
    ignored_notes_.push_back(fmt::format(
        "columns {} ignored: one value per GPU, but their names do not say which quantity (give "
        "it with --map '{}=FIELD')",
        fmt::join(bare, ", "), wide_pattern(bare.front())));

  std::vector<int> first_field(kFieldCount, -1);
  std::map<std::pair<int, Field>, size_t> wide_first;  // (GPU number, field) -> column
  for (size_t i = 0; i < cols_.size(); ++i) {
    Column& c = cols_[i];
    const auto role = static_cast<size_t>(c.m.role);
    if (c.m.role == Role::kUnknown) {
      if (c.unit_mismatch)
        ignored_notes_.push_back(
            fmt::format("column {} ignored: its unit is not one gpudoctor reads for {} ({})",
                        c.name, info(c.m.field).id, unit_name(info(c.m.field).unit)));
      else if (!c.name.empty() && !c.bare)
        unknown_.push_back(c.name);
      continue;
    }
    if (c.m.role == Role::kIgnore) continue;
    if (c.m.role == Role::kField) {
      field_in_log_[index_of(c.m.field)] = true;
      if (c.gpu < 0) {
        if (wide_) {
          ignored_notes_.push_back(
              fmt::format("column {} ignored: the file has one column per GPU and {} names no GPU",
                          c.name, c.name));
          c.m.role = Role::kIgnore;
          continue;
        }
        int& f = first_field[index_of(c.m.field)];
        if (f >= 0) {
          duplicates_.emplace_back(c.name, cols_[static_cast<size_t>(f)].name);
          c.m.role = Role::kIgnore;
          continue;
        }
        f = static_cast<int>(i);
        fields_.push_back({i, c.m.field, -1});
      } else {
        const auto [it, added] = wide_first.emplace(std::make_pair(c.gpu, c.m.field), i);
        if (!added) {
          duplicates_.emplace_back(c.name, cols_[it->second].name);
          c.m.role = Role::kIgnore;
          continue;
        }
        fields_.push_back({i, c.m.field, c.gpu});  // number for now; position below
      }
      continue;
    }
    if (c.gpu >= 0 &&
        (c.m.role == Role::kName || c.m.role == Role::kUuid || c.m.role == Role::kBusId)) {
      infos_.push_back({i, c.m.role, c.gpu});
      continue;
    }
    int& f = first[role];
    if (f >= 0 && c.m.role != Role::kName && c.m.role != Role::kUuid && c.m.role != Role::kBusId) {
      duplicates_.emplace_back(c.name, cols_[static_cast<size_t>(f)].name);
      c.m.role = Role::kIgnore;
      continue;
    }
    if (f < 0) f = static_cast<int>(i);
  }
  time_col_ = first[static_cast<size_t>(Role::kTime)];
  date_col_ = first[static_cast<size_t>(Role::kDate)];
  if (time_col_ < 0) std::swap(time_col_, date_col_);  // a "date" column holding date-times
  host_col_ = first[static_cast<size_t>(Role::kHost)];
  if (!wide_) {
    for (const Role r : {Role::kGpu, Role::kBusId, Role::kUuid}) {
      if (first[static_cast<size_t>(r)] >= 0) {
        key_col_ = first[static_cast<size_t>(r)];
        key_role_ = r;
        break;
      }
    }
    // Identity columns besides the key fill in each GPU's details.
    for (size_t i = 0; i < cols_.size(); ++i) {
      const Role r = cols_[i].m.role;
      if (static_cast<int>(i) == key_col_ && r != Role::kUuid && r != Role::kBusId) continue;
      if (r == Role::kName || r == Role::kUuid || r == Role::kBusId) infos_.push_back({i, r, -1});
    }
  } else {
    for (const Role r : {Role::kGpu, Role::kBusId, Role::kUuid}) {
      const int at = first[static_cast<size_t>(r)];
      if (at >= 0 && cols_[static_cast<size_t>(at)].gpu < 0) {
        if (r == Role::kGpu)
          ignored_notes_.push_back(fmt::format("column {} ignored: the file has one column per GPU",
                                               cols_[static_cast<size_t>(at)].name));
      }
    }
    // A GPU name column without a GPU number applies to every GPU.
    for (size_t i = 0; i < cols_.size(); ++i)
      if (cols_[i].m.role == Role::kName && cols_[i].gpu < 0)
        infos_.push_back({i, Role::kName, -1});
    for (const auto& fc : fields_) wide_numbers_.push_back(fc.wide);
    std::sort(wide_numbers_.begin(), wide_numbers_.end());
    wide_numbers_.erase(std::unique(wide_numbers_.begin(), wide_numbers_.end()),
                        wide_numbers_.end());
    auto position = [&](int number) {
      const auto it = std::lower_bound(wide_numbers_.begin(), wide_numbers_.end(), number);
      return it != wide_numbers_.end() && *it == number
                 ? static_cast<int>(it - wide_numbers_.begin())
                 : static_cast<int>(wide_numbers_.size());
    };
    for (auto& fc : fields_) fc.wide = position(fc.wide);
    std::vector<InfoCol> kept;
    for (auto& ic : infos_) {
      if (ic.wide < 0) {
        kept.push_back(ic);
        continue;
      }
      const int p = position(ic.wide);
      if (p < static_cast<int>(wide_numbers_.size())) kept.push_back({ic.col, ic.role, p});
    }
    infos_ = std::move(kept);
  }
  fields_of_.assign(wide_numbers_.size() + 1, {});
  infos_of_.assign(wide_numbers_.size() + 1, {});
  for (size_t k = 0; k < fields_.size(); ++k)
    fields_of_[static_cast<size_t>(fields_[k].wide + 1)].push_back(k);
  for (size_t k = 0; k < infos_.size(); ++k) {
    if (infos_[k].wide < 0) {
      for (auto& list : infos_of_) list.push_back(k);
    } else if (static_cast<size_t>(infos_[k].wide) < wide_numbers_.size()) {
      infos_of_[static_cast<size_t>(infos_[k].wide + 1)].push_back(k);
    }
    // (Else a "gpu0_uuid" column in a file with one GPU per row: it has an entry without a
    // position too, and is read as every row's GPU's.)
  }
  return std::nullopt;
}

std::optional<double> Reader::parse_num(std::string_view v) {
  if (const auto x = text::parse_double(v)) return x;
  // "152,3" in a ';' or tab separated file: a decimal comma.
  if (sep_ == ',' || v.size() > 60) return std::nullopt;
  const size_t comma = v.find(',');
  if (comma == std::string_view::npos || v.find(',', comma + 1) != std::string_view::npos ||
      v.find('.') != std::string_view::npos)
    return std::nullopt;
  char buf[64];
  std::memcpy(buf, v.data(), v.size());
  buf[comma] = '.';
  const auto x = text::parse_double(std::string_view(buf, v.size()));
  if (x) decimal_comma_ = true;
  return x;
}

Cell Reader::parse_cell(const Column& c, std::string_view v, double& out, bool& cell_unit) {
  cell_unit = false;
  if (v.empty()) return Cell::kMissing;
  const Unit u = info(c.m.field).unit;
  if (u == Unit::kBitmask) {
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
      if (const auto h = text::parse_hex(v)) {
        out = static_cast<double>(*h);
        return Cell::kValue;
      }
      return Cell::kBad;
    }
    if (const auto x = text::parse_double(v)) {
      if (*x < 0 || *x != std::floor(*x) || *x >= 18446744073709551616.0) return Cell::kBad;
      out = *x;
      return Cell::kValue;
    }
    return classify_marker(v);
  }
  if (const auto x = parse_num(v)) {
    out = text::scaled(*x, c.m.factor);
    return Cell::kValue;
  }
  if (u == Unit::kPstateNumber && (v.front() == 'P' || v.front() == 'p')) {
    const auto n = text::parse_int(v.substr(1));
    if (!n || *n < 0 || *n > 32) return Cell::kBad;
    out = static_cast<double>(*n);
    return Cell::kValue;
  }
  const Cell marker = classify_marker(v);
  if (marker != Cell::kBad) return marker;
  // A value with its unit: "152.3 W", "45 %", "30512 MiB".
  if (const auto nu = text::parse_number_with_unit(v); nu && !nu->unit.empty()) {
    const UnitToken* t = unit_of(normalise(nu->unit));
    if (t != nullptr && t->kind == 0 && t->unit == u) {
      out = text::scaled(nu->value, t->factor);
      cell_unit = true;
      return Cell::kValue;
    }
  }
  return Cell::kBad;
}

void Reader::decide_time(const std::vector<std::string_view>& cells) {
  const Column& tc = cols_[static_cast<size_t>(time_col_)];
  const std::string_view v = cells[static_cast<size_t>(time_col_)];
  if (v.empty()) return;
  bool zoned = false;
  if (parse_datetime(v, zoned)) {
    mode_ = TimeMode::kDateTime;
  } else if (date_col_ >= 0 && parse_date(cells[static_cast<size_t>(date_col_)]) &&
             parse_time_of_day(v)) {
    mode_ = TimeMode::kDateAndTod;
  } else if (parse_time_of_day(v)) {
    mode_ = TimeMode::kTimeOfDay;
  } else if (const auto x = parse_num(v)) {
    const double a = std::fabs(*x);
    if (tc.m.time_unit_s > 0) {
      ms_per_unit_ = tc.m.time_unit_s * 1000;
      mode_ = a * tc.m.time_unit_s >= 1e8 ? TimeMode::kEpoch : TimeMode::kElapsed;
    } else if (a < 1e8) {
      ms_per_unit_ = 1000;
      mode_ = TimeMode::kElapsed;
    } else {
      mode_ = TimeMode::kEpoch;
      ms_per_unit_ = a < 1e11 ? 1000 : a < 1e14 ? 1 : a < 1e17 ? 1e-3 : 1e-6;
    }
  }
}

bool Reader::row_time(const std::vector<std::string_view>& cells, size_t line_no, double& ms) {
  if (mode_ == TimeMode::kUndecided) decide_time(cells);
  const std::string_view v = cells[static_cast<size_t>(time_col_)];
  bool ok = false;
  switch (mode_) {
    case TimeMode::kUndecided:
      break;
    case TimeMode::kDateTime: {
      bool zoned = false;
      if (const auto x = parse_datetime(v, zoned)) {
        ms = static_cast<double>(*x);
        any_unzoned_ = any_unzoned_ || !zoned;
        ok = true;
      }
      break;
    }
    case TimeMode::kDateAndTod: {
      const auto d = parse_date(cells[static_cast<size_t>(date_col_)]);
      const auto t = parse_time_of_day(v);
      if (d && t) {
        ms = static_cast<double>(*d + *t);
        ok = true;
      }
      break;
    }
    case TimeMode::kTimeOfDay:
      if (const auto t = parse_time_of_day(v)) {
        ms = static_cast<double>(*t) + tod_offset_ms_;
        // Time of day only: past midnight the clock goes back about a day.
        if (have_tod_ && ms < tod_last_ms_ - kDayMs / 2) {
          tod_offset_ms_ += kDayMs;
          ms += kDayMs;
        }
        have_tod_ = true;
        tod_last_ms_ = ms;
        ok = true;
      }
      break;
    case TimeMode::kEpoch:
      if (const auto x = parse_num(v)) {
        ms = std::round(*x * ms_per_unit_);
        ok = std::fabs(ms) < 1e16;
      }
      break;
    case TimeMode::kElapsed:
      if (const auto x = parse_num(v)) {
        ms = *x * ms_per_unit_;
        ok = std::fabs(ms) < 1e16;
      }
      break;
  }
  if (!ok) {
    problem(bad_time_, line_no, "cannot read the time \"{}\"", v);
    return false;
  }
  return true;
}

// The slot of a GPU; npos past kMaxGpus GPUs (the caller counts the row in too_many_gpus_).
size_t Reader::slot_for(std::string_view host, std::string_view id, int wide) {
  const size_t n = gpus_.size();
  if (n > 0) {
    const size_t next = (last_slot_ + 1) % n;  // rows usually go round the GPUs in order
    if (gpus_[next].id == id && gpus_[next].host == host) return last_slot_ = next;
  }
  lookup_.assign(host);
  lookup_ += '\0';
  lookup_ += id;
  if (const auto it = slots_.find(lookup_); it != slots_.end()) return last_slot_ = it->second;
  if (n >= log_reader::kMaxGpus) return std::string_view::npos;
  slots_.emplace(lookup_, n);
  GpuState g;
  g.host = std::string(host);
  g.id = std::string(id);
  g.wide = wide;
  if (wide >= 0) {
    g.series.info.index = static_cast<unsigned>(wide_numbers_[static_cast<size_t>(wide)]);
    g.index_known = true;
  } else if (key_role_ == Role::kGpu) {
    if (const auto num = gpu_number(id)) {
      g.series.info.index = *num;
      g.index_known = true;
    }
    if (text::istarts_with(id, "GPU-") || text::istarts_with(id, "MIG-"))
      g.series.info.uuid = std::string(id);
  } else if (key_role_ == Role::kUuid) {
    g.series.info.uuid = std::string(id);
  } else if (key_role_ == Role::kBusId) {
    g.series.info.pci_bus_id = std::string(id);
  }
  gpus_.push_back(std::move(g));
  return last_slot_ = n;
}

void Reader::read_cells(GpuState& g, size_t row, int wide,
                        const std::vector<std::string_view>& cells, size_t line_no) {
  for (const size_t k : fields_of_[static_cast<size_t>(wide + 1)]) {
    const FieldCol& fc = fields_[k];
    const Column& c = cols_[fc.col];
    const std::string_view v = cells[fc.col];
    double x = 0;
    bool cell_unit = false;
    const size_t fi = index_of(fc.field);
    switch (parse_cell(c, v, x, cell_unit)) {
      case Cell::kValue: {
        g.series.column_for_write(fc.field)[row] = x;
        ++g.counts.value[fi];
        if (c.m.rule != Rule::kAsIs) {
          Stats& s = stats_[fi];
          if (cell_unit) {
            s.cell_unit = true;
          } else {
            ++s.n;
            s.max = std::max(s.max, x);
            s.fraction = s.fraction || x != std::floor(x);
            s.over_3000 += x > 3000;
          }
        }
        break;
      }
      case Cell::kMissing:
        break;
      case Cell::kNotSupported:
        ++g.counts.not_supported[fi];
        break;
      case Cell::kBad:
        problem(bad_cell_, line_no, "{}: cannot read \"{}\"", c.name, v);
        break;
    }
  }
  for (const size_t k : infos_of_[static_cast<size_t>(wide + 1)]) {
    const InfoCol& ic = infos_[k];
    DeviceInfo& d = g.series.info;
    std::string* target = ic.role == Role::kName   ? &d.name
                          : ic.role == Role::kUuid ? &d.uuid
                                                   : &d.pci_bus_id;
    if (!target->empty()) continue;
    const std::string_view v = cells[ic.col];
    if (classify_marker(v) == Cell::kBad) *target = std::string(v);
  }
}

void Reader::reset_rows() {
  gpus_.clear();
  slots_.clear();
  last_slot_ = 0;
  cached_host_.clear();
  wide_slots_.clear();
  wide_slots_valid_ = false;
  mode_ = TimeMode::kUndecided;
  have_first_ = have_tod_ = any_unzoned_ = decimal_comma_ = false;
  first_ms_ = tod_offset_ms_ = tod_last_ms_ = 0;
  round_ = 0;
  data_lines_ = rows_read_ = header_repeats_ = 0;
  wrong_count_ = malformed_ = bad_time_ = bad_gpu_ = not_increasing_ = bad_cell_ = too_many_gpus_ =
      truncated_ = {};
  stats_ = {};
}

void Reader::read_rows() {
  Records records(body_.substr(rows_offset_), sep_, rows_line_before_);
  const size_t ncols = cols_.size();
  const bool empty_last_name = !header_.empty() && header_.back().empty();
  const bool cut_at_end = text::ends_inside_a_line(body_);
  size_t line_no = 0;
  std::string_view raw;
  while (true) {
    const auto next = records.next(cells_, line_no, raw);
    if (next == Records::Next::kEnd) break;
    ++data_lines_;
    if (next == Records::Next::kMalformed) {
      problem(malformed_, line_no, "a quote that is never closed");
      continue;
    }
    if (cut_at_end && records.at_end()) {
      // A last line without an end was cut, perhaps mid-value (programs end every line).
      problem(truncated_, line_no, "the last line is cut short ({} of {} cells, no line end)",
              cells_.size(), ncols);
      continue;
    }
    if (raw == header_raw_) {  // the header again (a logger restarted, files concatenated)
      ++header_repeats_;
      --data_lines_;
      continue;
    }
    // "a,b,c," under "a,b,c" (a trailing separator), and the reverse.
    if (cells_.size() == ncols + 1 && cells_.back().empty()) cells_.pop_back();
    if (cells_.size() + 1 == ncols && empty_last_name) cells_.push_back({});
    if (cells_.size() != ncols) {
      problem(wrong_count_, line_no, "expected {} cells, found {}", ncols, cells_.size());
      continue;
    }
    if (time_col_ >= 0 && !cells_[static_cast<size_t>(time_col_)].empty() &&
        !is_digit(cells_[static_cast<size_t>(time_col_)].front()) &&
        iequals(cells_[static_cast<size_t>(time_col_)], header_[static_cast<size_t>(time_col_)])) {
      ++header_repeats_;
      --data_lines_;
      continue;
    }
    double ms = 0;
    bool timed = time_col_ >= 0;
    if (timed && !row_time(cells_, line_no, ms)) continue;
    if (timed && !have_first_) {
      have_first_ = true;
      first_ms_ = ms;
    }
    const std::string_view host =
        host_col_ >= 0 ? cells_[static_cast<size_t>(host_col_)] : std::string_view{};

    if (wide_) {
      if (!wide_slots_valid_ || host != cached_host_) {
        wide_slots_.clear();
        for (size_t w = 0; w < wide_numbers_.size(); ++w)
          wide_slots_.push_back(
              slot_for(host, fmt::format("{}", wide_numbers_[w]), static_cast<int>(w)));
        cached_host_ = std::string(host);
        wide_slots_valid_ = true;
        if (std::find(wide_slots_.begin(), wide_slots_.end(), std::string_view::npos) !=
            wide_slots_.end()) {
          wide_slots_valid_ = false;
          problem(too_many_gpus_, line_no, "host \"{}\"", host);
          continue;
        }
      }
      double t = timed ? (ms - first_ms_) / 1000.0 : 0;
      if (!timed) {
        GpuState& g0 = gpus_[wide_slots_.front()];
        t = g0.series.time_s.empty() ? 0 : g0.last_t + 1;
      }
      bool any = false;
      for (size_t w = 0; w < wide_slots_.size(); ++w) {
        GpuState& g = gpus_[wide_slots_[w]];
        if (!g.series.time_s.empty() && !(t > g.last_t)) continue;
        g.last_t = t;
        const size_t row = g.series.append_row(t);
        read_cells(g, row, static_cast<int>(w), cells_, line_no);
        any = true;
      }
      if (!any) {
        problem(not_increasing_, line_no, "time {} s is not after the previous row's", t);
        continue;
      }
      ++rows_read_;
      continue;
    }

    std::string_view id;
    if (key_col_ >= 0) {
      id = cells_[static_cast<size_t>(key_col_)];
      if (classify_marker(id) != Cell::kBad) {
        problem(bad_gpu_, line_no, "no GPU in column {}",
                cols_[static_cast<size_t>(key_col_)].name);
        continue;
      }
    }
    const size_t slot = slot_for(host, id, -1);
    if (slot == std::string_view::npos) {
      problem(too_many_gpus_, line_no, "GPU \"{}\"", id);
      continue;
    }
    GpuState& g = gpus_[slot];
    double t = 0;
    if (timed) {
      t = (ms - first_ms_) / 1000.0;
    } else {
      // No time column: a round ends when a GPU comes round again; rounds 1 s apart.
      if (g.seen_round == round_ + 1) ++round_;
      g.seen_round = round_ + 1;
      t = static_cast<double>(round_);
    }
    if (!g.series.time_s.empty() && !(t > g.last_t)) {
      problem(not_increasing_, line_no, "time {} s is not after the GPU's previous row ({} s)", t,
              g.last_t);
      continue;
    }
    g.last_t = t;
    const size_t row = g.series.append_row(t);
    read_cells(g, row, -1, cells_, line_no);
    ++rows_read_;
  }
  // A "GPU" column that numbers the rows (pandas' reset_index writes "index"): many GPUs of one
  // row each. Read again without it.
  // (A snapshot of many GPUs, one row each at one time, is not that: the times must differ.)
  auto numbers_rows = [&] {
    if (key_is_row_number_ || key_col_ < 0 || gpus_.size() <= 8 || time_col_ < 0 ||
        cols_[static_cast<size_t>(key_col_)].mapped)
      return false;
    std::vector<double> times;
    for (const auto& g : gpus_) {
      if (g.series.size() > 1) return false;
      if (g.series.size() == 1) times.push_back(g.series.time_s.front());
    }
    std::sort(times.begin(), times.end());
    return std::adjacent_find(times.begin(), times.end()) == times.end();
  };
  if (numbers_rows()) {
    key_is_row_number_ = true;
    ignored_notes_.push_back(
        fmt::format("column {} ignored: its values never repeat, so it numbers rows, not GPUs",
                    cols_[static_cast<size_t>(key_col_)].name));
    cols_[static_cast<size_t>(key_col_)].m.role = Role::kIgnore;
    key_col_ = -1;
    key_role_ = Role::kUnknown;
    reset_rows();
    read_rows();
  }
}

Result<Recording> Reader::run() {
  body_ = text::strip_bom(text_);
  if (auto e = text::check_input(body_, origin_, "a CSV log", opt_.power_limit_w))
    return std::move(*e);
  if (auto e = find_header()) return std::move(*e);
  if (auto e = make_layout()) return std::move(*e);
  read_rows();
  if (rows_read_ == 0) {
    if (data_lines_ == 0)
      return usage_error(fmt::format("{}:{}: a header line but no data rows{}", origin_,
                                     header_line_no_, text::cut_short_suffix(text_)));
    for (const Problem* p :
         {&wrong_count_, &bad_time_, &bad_gpu_, &malformed_, &truncated_, &not_increasing_})
      if (p->count > 0)
        return usage_error(fmt::format("{}: no readable rows ({})", origin_, p->first));
    return usage_error(fmt::format("{}: no readable rows", origin_));
  }
  finish();
  return std::move(rec_);
}

void Reader::finish() {
  Recording& rec = rec_;
  rec.source = "csv: " + origin_;
  const bool absolute =
      mode_ == TimeMode::kDateTime || mode_ == TimeMode::kDateAndTod || mode_ == TimeMode::kEpoch;
  rec.start_unix_ms = absolute ? std::llround(first_ms_) : 0;

  // Times.
  if (time_col_ >= 0) {
    const std::string& tn = cols_[static_cast<size_t>(time_col_)].name;
    switch (mode_) {
      case TimeMode::kDateTime:
        if (any_unzoned_)
          note(fmt::format("times in column {} have no time zone: read as UTC", tn));
        break;
      case TimeMode::kDateAndTod:
        note(fmt::format("dates in column {} and times in column {} have no time zone: read as UTC",
                         cols_[static_cast<size_t>(date_col_)].name, tn));
        break;
      case TimeMode::kTimeOfDay:
        note(
            fmt::format("column {} gives the time of day only: times are relative to the first "
                        "row and the start time is unknown",
                        tn));
        break;
      case TimeMode::kEpoch:
        note(fmt::format("times in column {} read as Unix epoch {}", tn,
                         ms_per_unit_ == 1000   ? "seconds"
                         : ms_per_unit_ == 1    ? "milliseconds"
                         : ms_per_unit_ == 1e-3 ? "microseconds"
                                                : "nanoseconds"));
        break;
      case TimeMode::kElapsed:
        note(fmt::format("times in column {} read as elapsed {}: the start time is unknown", tn,
                         ms_per_unit_ == 1000   ? "seconds"
                         : ms_per_unit_ == 1    ? "milliseconds"
                         : ms_per_unit_ == 1e-3 ? "microseconds"
                                                : "nanoseconds"));
        break;
      case TimeMode::kUndecided:
        break;
    }
    if (date_col_ >= 0 && mode_ != TimeMode::kDateAndTod)
      ignored_notes_.push_back(fmt::format("column {} ignored: the times come from column {}",
                                           cols_[static_cast<size_t>(date_col_)].name, tn));
  } else {
    note(
        "no time column: rows taken as 1 s apart (one round of GPUs per second); the start time "
        "is unknown");
  }
  if (decimal_comma_) note("decimal commas read as decimal points");

  // Units told by the values.
  std::array<double, kFieldCount> auto_factor;
  auto_factor.fill(1);
  std::array<std::string, kFieldCount> auto_how{};
  for (const auto& fc : fields_) {
    const Column& c = cols_[fc.col];
    const size_t fi = index_of(fc.field);
    if (c.m.rule == Rule::kAsIs) continue;
    const Stats& s = stats_[fi];
    if (s.cell_unit || s.n == 0) continue;
    switch (c.m.rule) {
      case Rule::kPercentOrRatio:
        if (s.max <= 1.0 && s.fraction) {
          auto_factor[fi] = 100;
          auto_how[fi] = "values 0-1: a ratio, x100";
        }
        break;
      case Rule::kWattsOrMilli:
        if (s.over_3000 * 2 > s.n) {
          auto_factor[fi] = 1e-3;
          auto_how[fi] = "mW: most values exceed 3000";
        }
        break;
      case Rule::kMibOrBytes:
        if (s.max > 1e6) {
          auto_factor[fi] = 1 / kMiB;
          auto_how[fi] = "bytes: values exceed any GPU's memory in MiB";
        }
        break;
      case Rule::kAsIs:
        break;
    }
    if (auto_factor[fi] == 1) continue;
    for (auto& g : gpus_) {
      if (fc.wide >= 0 && g.wide != fc.wide) continue;
      if (g.scaled[fi]) continue;
      g.scaled[fi] = true;
      if (auto* col = g.series.columns[fi].get())
        for (auto& v : *col) v = text::scaled(v, auto_factor[fi]);
    }
  }

  // What each column was read as, where the name is not the field id itself.
  std::vector<std::pair<std::string, std::vector<std::string_view>>> read_as;
  for (const auto& fc : fields_) {
    const Column& c = cols_[fc.col];
    const size_t fi = index_of(fc.field);
    const std::string_view id = info(fc.field).id;
    std::vector<std::string> how;
    if (c.m.unit_named && !c.m.unit_label.empty() && c.m.factor != 1)
      how.emplace_back(c.m.unit_label);
    if (!auto_how[fi].empty()) how.push_back(auto_how[fi]);
    if (c.mapped) how.emplace_back("--map");
    if (how.empty() && c.gpu < 0 && c.name == id) continue;
    std::string key(id);
    if (fc.wide >= 0) key += " of each GPU";
    if (!how.empty()) key += fmt::format(" ({})", fmt::join(how, ", "));
    auto it =
        std::find_if(read_as.begin(), read_as.end(), [&](const auto& e) { return e.first == key; });
    if (it == read_as.end()) {
      read_as.emplace_back(key, std::vector<std::string_view>{});
      it = read_as.end() - 1;
    }
    it->second.push_back(c.name);
  }
  if (!read_as.empty()) {
    std::vector<std::string> parts;
    for (const auto& [key, names] : read_as)
      parts.push_back(fmt::format("{} -> {}", fmt::join(names, ", "), key));
    note(fmt::format("columns read as: {}", fmt::join(parts, "; ")));
  }
  for (const auto& fc : fields_) {
    const size_t fi = index_of(fc.field);
    if (auto_factor[fi] == 100) {
      const Column& c = cols_[fc.col];
      note(
          fmt::format("{}: all values between 0 and 1, read as a 0-1 ratio; if they are percent "
                      "give --map '{}={}'",
                      c.name, c.name, info(fc.field).id));
    }
  }

  // GPUs: several hosts in one file are numbered in host order.
  std::vector<std::string_view> hosts;
  std::unordered_set<std::string_view> seen_hosts;
  for (const auto& g : gpus_)
    if (seen_hosts.insert(g.host).second) hosts.push_back(g.host);
  if (hosts.size() == 1 && !hosts.front().empty()) rec.system.hostname = std::string(hosts.front());
  const bool all_known =
      std::all_of(gpus_.begin(), gpus_.end(), [](const GpuState& g) { return g.index_known; });
  if (!all_known || hosts.size() > 1) {
    if (!all_known)
      for (size_t i = 0; i < gpus_.size(); ++i)
        gpus_[i].series.info.index = static_cast<unsigned>(i);
    std::stable_sort(gpus_.begin(), gpus_.end(), [](const GpuState& a, const GpuState& b) {
      return a.host != b.host ? a.host < b.host : a.series.info.index < b.series.info.index;
    });
    if (hosts.size() > 1) {
      std::vector<std::string> parts;
      for (size_t i = 0; i < gpus_.size(); ++i) {
        if (i < 64)
          parts.push_back(fmt::format("{} {} = GPU {}", gpus_[i].host,
                                      gpus_[i].id.empty() ? "-" : gpus_[i].id, i));
        gpus_[i].series.info.index = static_cast<unsigned>(i);
      }
      if (gpus_.size() > parts.size())
        parts.push_back(fmt::format("and {} more", gpus_.size() - parts.size()));
      note(fmt::format("{} hosts in one file: GPUs numbered in host order ({})", hosts.size(),
                       fmt::join(parts, ", ")));
    }
  } else {
    std::stable_sort(gpus_.begin(), gpus_.end(), [](const GpuState& a, const GpuState& b) {
      return a.series.info.index < b.series.info.index;
    });
  }
  if (!wide_ && key_col_ < 0)
    note(
        "no GPU column (gpu, gpu_index, index, uuid, pci_bus_id ...): all rows read as one GPU; "
        "name it with --map COLUMN=gpu if there is one");

  // Unsupported and empty fields, architecture, power limit.
  log_reader::FinishOptions fo;
  fo.power_limit_w = opt_.power_limit_w;
  for (const auto& fc : fields_) fo.columns.emplace_back(fc.field, cols_[fc.col].name);
  std::vector<log_reader::GpuToFinish> to_finish;
  for (auto& g : gpus_) to_finish.push_back({&g.series, &g.counts});
  log_reader::finish_gpus(rec, to_finish, fo);

  if (!unknown_.empty()) {
    const std::vector<std::string_view> names(unknown_.begin(), unknown_.end());
    note(
        fmt::format("ignored columns gpudoctor does not read: {} (name them with --map "
                    "COLUMN=FIELD)",
                    log_reader::join_names(names)));
  }
  // (The first few: a header of thousands of columns would make thousands of notes.)
  for (size_t i = 0; i < ignored_notes_.size() && i < 20; ++i) note(std::move(ignored_notes_[i]));
  for (size_t i = 0; i < duplicates_.size() && i < 20; ++i)
    note(fmt::format("column {} ignored: the same quantity as {}", duplicates_[i].first,
                     duplicates_[i].second));
  if (header_repeats_ > 0)
    note(fmt::format("the header line repeats {} time(s) mid-file: skipped", header_repeats_));
  auto skipped = [&](const Problem& p, std::string_view what) {
    log_reader::note_skipped(rec, p, what);
  };
  skipped(wrong_count_, "with the wrong number of cells");
  skipped(malformed_, "with a broken quote");
  skipped(bad_time_, "with an unreadable time");
  skipped(bad_gpu_, "without a GPU");
  skipped(not_increasing_, "whose time did not advance for their GPU");
  skipped(truncated_, "cut short at the end of the file");
  skipped(too_many_gpus_, log_reader::kTooManyGpus);
  log_reader::note_unreadable(rec, bad_cell_);

  rec.gpus.reserve(gpus_.size());
  for (auto& g : gpus_) rec.gpus.push_back(std::move(g.series));
  // A row of an earlier GPU may carry a later time than the first row of the file.
  rebase_times(rec, absolute);
}

// nvidia-smi --query-gpu CSV has its own reader: a header with its dotted query names.
bool is_smi_header(const std::vector<std::string_view>& cells) {
  for (const auto cell : cells) {
    std::string_view base, ann;
    split_annotation(cell, base, ann);
    if (base.find('.') == std::string_view::npos) continue;
    if (field_by_smi_name(base) || iequals(base, "pci.bus_id") ||
        text::istarts_with(base, "clocks_throttle_reasons.") ||
        text::istarts_with(base, "clocks_event_reasons.") || iequals(base, "mig.mode.current"))
      return true;
  }
  return false;
}

}  // namespace

bool looks_like_generic_csv(std::string_view head) {
  try {
    head = text::strip_bom(head);
    if (head.empty() || text::looks_binary(head.substr(0, 4096))) return false;
    const std::string_view t = text::trim_left(head);
    if (t.empty() || t.front() == '{' || t.front() == '[') return false;
    text::LineReader lines(head);
    std::string_view line, comment;
    char sep = 0;
    while (lines.next(line)) {
      const std::string_view l = text::trim(line);
      if (l.empty()) continue;
      if (l.size() == 5 && text::istarts_with(l, "sep=")) {
        sep = l[4];
        continue;
      }
      if (l.front() == '#') {
        comment = l;
        continue;
      }
      break;
    }
    line = text::trim(line);
    if (line.empty() || line.front() == '#') return false;
    if (sep == 0) sep = detect_separator(line);
    auto usable = [&](std::string_view l) {
      std::vector<std::string_view> cells;
      size_t ln = 0;
      std::string_view raw;
      Records r(l, sep, 0);
      if (r.next(cells, ln, raw) != Records::Next::kRecord || cells.size() < 2) return false;
      // (nvidia-smi writes commas: its header with another separator is this reader's.)
      if (sep == ',' && is_smi_header(cells)) return false;
      // Prometheus exposition ("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",...} 99"), key=value logs.
      for (const auto c : cells)
        if (c.find_first_of("{}=") != std::string_view::npos) return false;
      return std::any_of(cells.begin(), cells.end(), [](std::string_view c) {
        const Column col = resolve(c);
        return col.m.role == Role::kField || col.bare;
      });
    };
    // nvidia-smi --query-gpu without a dotted name ("timestamp, name, pstate"): its timestamps.
    std::string_view row;
    while (lines.next(row) && (text::is_blank(row) || text::trim(row).front() == '#')) {
    }
    const std::string_view first_cell = text::trim(line.substr(0, line.find(sep)));
    const std::string_view row_cell = text::trim(row.substr(0, row.find(sep)));
    if (sep == ',' && iequals(first_cell, "timestamp") && row_cell.size() == 23 &&
        row_cell[4] == '/' && row_cell[19] == '.' && text::parse_timestamp_ms(row_cell))
      return false;
    if (usable(line)) return true;
    return !comment.empty() && usable(comment.substr(1));
  } catch (const std::exception&) {
    return false;
  }
}

Result<Recording> read_generic_csv(std::string_view text, const std::string& origin,
                                   const GenericCsvOptions& opt) {
  try {
    Reader reader(text, origin, opt);
    return reader.run();
  } catch (const std::exception& e) {
    return failure(fmt::format("{}: cannot read the CSV log: {}", origin, e.what()));
  }
}

}  // namespace gpudoctor
