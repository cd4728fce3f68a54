#include "formats/log_units.hpp"

#include <array>
#include <vector>

namespace gpudoctor::csv {
namespace {

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
    {"percentage", 0, Unit::kPercent, 1, "%"},
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
    {"tib", 0, Unit::kMebibyte, kMiB, "TiB"},
    {"tb", 0, Unit::kMebibyte, kMiB, "TiB"},
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
    {"x", 0, Unit::kLanes, 1, "x"},
    {"lanes", 0, Unit::kLanes, 1, "lanes"},
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

}  // namespace

std::string normalise(std::string_view s, bool camel) {
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

namespace {

// The field units' rows of kUnits by unit, so a reader's per-cell question scans a few rows.
struct UnitsByUnit {
  std::array<std::vector<const UnitToken*>, static_cast<size_t>(Unit::kCode) + 1> of;
  UnitsByUnit() {
    for (const auto& t : kUnits)
      if (t.kind == 0) of[static_cast<size_t>(t.unit)].push_back(&t);
  }
};

}  // namespace

std::optional<double> unit_factor(Unit u, std::string_view written) {
  if (written.empty()) return 1.0;
  static const UnitsByUnit by_unit;
  // What tools print nearly always: a label as written ("W", "MiB", "%", "MHz", "C").
  for (const UnitToken* t : by_unit.of[static_cast<size_t>(u)])
    if (t->label == written) return t->factor;
  if (written.size() > 24) return std::nullopt;
  const UnitToken* t = unit_joined(normalise(written));
  if (t == nullptr || t->kind != 0 || t->unit != u) return std::nullopt;
  return t->factor;
}

}  // namespace gpudoctor::csv
