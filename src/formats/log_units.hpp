// Units and column-name normalising for the log readers: the unit words a column name, a bracket
// or a cell may carry ("_mw", "(MiB/s)", "152 W"), each with its factor to the field's unit, and
// the normalised form names are compared in ("Power Draw (mW)" -> "power_draw_mw").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/fields.hpp"

namespace gpudoctor::csv {

// kind: 0 a field's unit (factor to the field's unit), 1 time (seconds per unit), 2 "utc" (a time
// zone).
struct UnitToken {
  std::string_view token;
  uint8_t kind;
  Unit unit;
  double factor;
  std::string_view label;
};
inline constexpr double kMiB = 1048576.0;

inline bool is_upper(char c) {
  return c >= 'A' && c <= 'Z';
}
inline bool is_lower(char c) {
  return c >= 'a' && c <= 'z';
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline char lower(char c) {
  return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c;
}

// Lower case; '%' becomes "pct", 'µ' 'u', '°' nothing; any other run of non-alphanumerics one '_';
// no '_' at either end. camel: also '_' at camelCase word starts ("gpuUtil" -> gpu_util).
std::string normalise(std::string_view s, bool camel = false);
// raw (a catalogue name: letters, digits, '.', '_') equals the normalised n.
bool norm_equals(std::string_view raw, std::string_view n);

// The unit of one normalised token ("mw"), nullptr when none.
const UnitToken* unit_exact(std::string_view tok);
// A unit word, or words run together: "mib_s", "mi_b" (camelCase "MiB" -> "MiB").
const UnitToken* unit_joined(std::string_view n);
// A unit written as normalised text: "mw", "mib_s", "mi_b" (camelCase "MiB"), "unix_ms" (its last
// word).
const UnitToken* unit_of(std::string_view n);

// The one unit table as every reader asks it: the factor that turns a value written in `written`
// (as a tool prints it: "mW", "MiB/s", "°C", "%", "kW", "MB", "GiB", "x") into the field unit u;
// "" is u itself (factor 1); nullopt when `written` is no unit of u. The spellings tools print
// ("W", "MiB", "%") are found without normalising.
std::optional<double> unit_factor(Unit u, std::string_view written);

}  // namespace gpudoctor::csv
