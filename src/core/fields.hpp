// The field catalogue: one table (core/fields.def) describes every quantity gpudoctor reads, with
// its unit, its NVML source, its nvidia-smi and DCGM names and its Prometheus name. Sources,
// readers, writers, exporters and docs/metrics.md all read this table; none keeps its own list.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gpudoctor {

enum class Unit : uint8_t {
  kPercent,
  kWatt,
  kMillijoule,
  kCelsius,
  kMegahertz,
  kMebibyte,
  kMebibytePerSecond,
  kPstateNumber,
  kBitmask,
  kGeneration,
  kLanes,
  kCount,  // events counted since the driver was loaded (PCIe replays, remapped rows): a counter
  kCode,   // a number that names something, not a quantity: an XID, a 0/1 flag
};

// "%", "W", "mJ", "°C" ... as printed after a value; "" for dimensionless units.
std::string_view unit_symbol(Unit u);
// "percent", "watt" ... as written in docs and JSON.
std::string_view unit_name(Unit u);

// kStatic fields are read once when a device is probed and copied into every sample after.
// kSlow fields change rarely (error counters, license state): read at most every
// kSlowCadenceSeconds and held in the samples between.
enum class Cadence : uint8_t { kSample, kStatic, kSlow };
inline constexpr double kSlowCadenceSeconds = 10.0;
// "sample", "static", "slow" as written in docs.
std::string_view cadence_name(Cadence c);

enum class Field : uint16_t {
#define GPUDOCTOR_FIELD(e, ...) e,
#include "core/fields.def"
#undef GPUDOCTOR_FIELD
};

inline constexpr size_t kFieldCount = 0
#define GPUDOCTOR_FIELD(...) +1
#include "core/fields.def"
#undef GPUDOCTOR_FIELD
    ;

struct FieldInfo {
  Field field;
  std::string_view id;
  Unit unit;
  Cadence cadence;
  std::string_view meaning;
  std::string_view nvml_source;
  std::string_view smi_names;  // '|'-separated, canonical first; "" when nvidia-smi has none
  std::string_view dcgm_name;
  uint16_t dcgm_id;
  double dcgm_scale;
  std::string_view prom_name;
  std::string_view prom_help;
};

// The whole table, in declaration order (Field values index it).
std::span<const FieldInfo> all_fields();
const FieldInfo& info(Field f);
// Our value = value under prom_name * prom_scale(fi): Prometheus' base units are ours except
// energy, which it counts in joules where NVML gives millijoules.
inline double prom_scale(const FieldInfo& fi) {
  return fi.unit == Unit::kMillijoule ? 1000.0 : 1.0;
}
// A field that only ever grows while the driver is loaded (energy, counted events): a Prometheus
// counter under either name (gpudoctor's own names end in _total), a gauge otherwise.
inline bool is_counter(const FieldInfo& fi) {
  return fi.unit == Unit::kMillijoule || fi.unit == Unit::kCount;
}
inline size_t index_of(Field f) {
  return static_cast<size_t>(f);
}

std::optional<Field> field_by_id(std::string_view id);
// Any of the nvidia-smi --query-gpu names (case-insensitive).
std::optional<Field> field_by_smi_name(std::string_view name);
std::optional<Field> field_by_dcgm_name(std::string_view name);
std::optional<Field> field_by_dcgm_id(uint16_t id);
// The canonical (first) nvidia-smi name, "" when none.
std::string_view canonical_smi_name(Field f);

}  // namespace gpudoctor
