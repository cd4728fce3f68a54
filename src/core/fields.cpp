#include "core/fields.hpp"

#include <algorithm>
#include <cctype>

namespace gpudoctor {
namespace {

constexpr std::array<FieldInfo, kFieldCount> kTable{{
#define GPUDOCTOR_FIELD(e, id, unit, cadence, meaning, nvml, smi, dcgm, dcgm_id, scale, prom, \
                        help)                                                                 \
  {Field::e, id,   Unit::unit, Cadence::cadence, meaning, nvml, smi, dcgm, dcgm_id,           \
   scale,    prom, help},
#include "core/fields.def"
#undef GPUDOCTOR_FIELD
}};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string_view unit_symbol(Unit u) {
  switch (u) {
    case Unit::kPercent:
      return "%";
    case Unit::kWatt:
      return "W";
    case Unit::kMillijoule:
      return "mJ";
    case Unit::kCelsius:
      return "C";
    case Unit::kMegahertz:
      return "MHz";
    case Unit::kMebibyte:
      return "MiB";
    case Unit::kMebibytePerSecond:
      return "MiB/s";
    case Unit::kPstateNumber:
      return "";
    case Unit::kBitmask:
      return "";
    case Unit::kGeneration:
      return "";
    case Unit::kLanes:
      return "lanes";
    case Unit::kCount:
    case Unit::kCode:
      return "";
  }
  return "";
}

std::string_view cadence_name(Cadence c) {
  switch (c) {
    case Cadence::kSample:
      return "sample";
    case Cadence::kStatic:
      return "static";
    case Cadence::kSlow:
      return "slow";
  }
  return "";
}

std::string_view unit_name(Unit u) {
  switch (u) {
    case Unit::kPercent:
      return "percent";
    case Unit::kWatt:
      return "watt";
    case Unit::kMillijoule:
      return "millijoule";
    case Unit::kCelsius:
      return "celsius";
    case Unit::kMegahertz:
      return "megahertz";
    case Unit::kMebibyte:
      return "mebibyte";
    case Unit::kMebibytePerSecond:
      return "mebibyte_per_second";
    case Unit::kPstateNumber:
      return "pstate";
    case Unit::kBitmask:
      return "bitmask";
    case Unit::kGeneration:
      return "generation";
    case Unit::kLanes:
      return "lanes";
    case Unit::kCount:
      return "count";
    case Unit::kCode:
      return "code";
  }
  return "";
}

std::span<const FieldInfo> all_fields() {
  return kTable;
}
const FieldInfo& info(Field f) {
  return kTable[index_of(f)];
}

std::optional<Field> field_by_id(std::string_view id) {
  for (const auto& fi : kTable)
    if (fi.id == id) return fi.field;
  return std::nullopt;
}

std::optional<Field> field_by_smi_name(std::string_view name) {
  for (const auto& fi : kTable) {
    std::string_view rest = fi.smi_names;
    while (!rest.empty()) {
      const size_t bar = rest.find('|');
      if (iequals(rest.substr(0, bar), name)) return fi.field;
      rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
    }
  }
  return std::nullopt;
}

std::optional<Field> field_by_dcgm_name(std::string_view name) {
  for (const auto& fi : kTable)
    if (!fi.dcgm_name.empty() && iequals(fi.dcgm_name, name)) return fi.field;
  return std::nullopt;
}

std::optional<Field> field_by_dcgm_id(uint16_t id) {
  for (const auto& fi : kTable)
    if (fi.dcgm_id != 0 && fi.dcgm_id == id) return fi.field;
  return std::nullopt;
}

std::string_view canonical_smi_name(Field f) {
  const std::string_view names = info(f).smi_names;
  return names.substr(0, names.find('|'));
}

}  // namespace gpudoctor
