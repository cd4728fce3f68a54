#include "formats/column_catalogue.hpp"

#include "core/clock_reasons.hpp"
#include "text/text.hpp"

namespace gpudoctor::csv {

Meaning field_meaning(Field f, Rule rule, double factor, bool unit_named) {
  Meaning m;
  m.role = Role::kField;
  m.field = f;
  m.rule = rule;
  m.factor = factor;
  m.unit_named = unit_named;
  return m;
}

namespace {

Rule rule_for(Unit u) {
  switch (u) {
    case Unit::kPercent:
      return Rule::kPercentOrRatio;
    case Unit::kWatt:
      return Rule::kWattsOrMilli;
    case Unit::kMebibyte:
      return Rule::kMibOrBytes;
    case Unit::kMegahertz:
      return Rule::kMhzOrGhz;
    default:
      return Rule::kAsIs;
  }
}

// A catalogue id without its unit word: "power_w" -> "power", "util_gpu_pct" -> "util_gpu".
std::string_view id_stem(const FieldInfo& fi) {
  const size_t us = fi.id.rfind('_');
  if (us == std::string_view::npos) return {};
  const UnitToken* u = unit_exact(fi.id.substr(us + 1));
  if (u == nullptr || u->kind != 0 || u->unit != fi.unit || u->factor != 1) return {};
  return fi.id.substr(0, us);
}

std::string_view factor_label(const CatalogueEntry& a) {
  if (a.factor == 100) return "0-1 ratio";
  if (a.factor == 1 / kMiB) return a.field == Field::kMemUsed ? "bytes" : "bytes/s";
  if (a.factor == 1 / 1024.0) return "KiB/s";
  if (a.factor == 1e6 / kMiB) return "MB of 10^6 bytes";
  return {};
}

uint64_t bit_of_reason(std::string_view code) {
  for (const auto& r : clock_reasons())
    if (r.code == code) return r.bit;
  return 0;
}

Meaning entry_meaning(const CatalogueEntry& a) {
  Meaning m;
  if (a.role == Role::kField) {
    m = field_meaning(a.field, a.rule, a.factor, a.factor != 1);
    if (a.factor != 1) m.unit_label = factor_label(a);
  } else {
    m.role = a.role;
    m.rule = a.rule;
  }
  if (a.role == Role::kReason) {
    m.field = Field::kClockEventReasons;
    m.reasons = a.reasons;
    m.bit = bit_of_reason(a.reason);
  }
  m.tool = a.tool;
  return m;
}

// after_gpu: n followed a GPU number ("gpu.0.gpu"), where the per-GPU entries come first.
std::optional<Meaning> lookup_base(std::string_view n, bool after_gpu) {
  if (n.empty()) return std::nullopt;
  for (const auto& fi : all_fields())
    if (fi.id == n) return field_meaning(fi.field, Rule::kAsIs, 1, true);
  if (after_gpu)
    for (const auto& a : catalogue())
      if (a.per_gpu && a.name == n) return entry_meaning(a);
  for (const auto& a : catalogue())
    if (!a.per_gpu && a.name == n) return entry_meaning(a);
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

}  // namespace

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

std::optional<Meaning> lookup(std::string_view n, bool after_gpu) {
  if (auto m = lookup_base(n, after_gpu)) return m;
  size_t pos = n.size();
  for (int words = 1; words <= 2; ++words) {
    if (pos == 0) break;
    pos = n.rfind('_', pos - 1);
    if (pos == std::string_view::npos || pos == 0) break;
    const UnitToken* u = unit_joined(n.substr(pos + 1));
    if (u == nullptr) continue;
    if (auto m = lookup_base(n.substr(0, pos), after_gpu); m && apply_unit(*m, *u)) return m;
  }
  return std::nullopt;
}

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

namespace {

// One column per GPU: "GPU0", "gpu_1", "cuda0", "gpu0_power", "gpu1_power_w", "power_gpu0".
struct WideName {
  int gpu = -1;
  std::string_view rest;  // the quantity, "" for a bare "GPU0"
};

std::optional<WideName> match_wide(std::string_view n) {
  if (n.starts_with("system_")) n.remove_prefix(7);  // W&B's "system.gpu.0.gpu", MLflow's
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
      if (auto m = lookup(w->rest, true)) {
        c.m = *m;
        return true;
      }
      if (c.unknown_wide_gpu < 0) c.unknown_wide_gpu = w->gpu;
    }
  }
  c.gpu = -1;
  // "DeviceStatsMonitor.on_train_batch_end/utilization.gpu" (Lightning): the last part.
  if (const size_t slash = name.rfind('/');
      slash != std::string_view::npos && slash + 1 < name.size())
    return resolve_name(name.substr(slash + 1), c);
  return false;
}

}  // namespace

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

bool never_read(std::string_view name) {
  const Column c = resolve(name);
  return c.m.role == Role::kUnknown && !c.bare && c.unknown_wide_gpu < 0 && !c.unit_mismatch;
}

bool is_identity(Role r) {
  return r == Role::kTime || r == Role::kDate || r == Role::kGpu || r == Role::kUuid ||
         r == Role::kBusId || r == Role::kHost || r == Role::kName || r == Role::kSerial ||
         r == Role::kDriver || r == Role::kPersistence || r == Role::kMigMode;
}

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
// "GPU0" -> "GPU*": the --map pattern a message suggests for one-column-per-GPU names.
std::string wide_pattern(std::string_view name) {
  size_t b = name.size();
  while (b > 0 && is_digit(name[b - 1])) --b;
  if (b == name.size()) return std::string(name);
  return std::string(name.substr(0, b)) + "*";
}

const CatalogueEntry* dcgm_short_tag(std::string_view tag) {
  const std::string n = normalise(tag);
  // Each name is in the table once: POWER and UUID# are the rows power and uuid, which home-made
  // loggers use too. A name without a GPU number only ("gpu.0.gpu" is not GPUTL).
  for (const auto& e : catalogue())
    if (!e.per_gpu && e.name == n) return &e;
  return nullptr;
}

std::string_view role_name(Role r) {
  switch (r) {
    case Role::kUnknown:
      return "unknown";
    case Role::kIgnore:
      return "ignored";
    case Role::kField:
      return "field";
    case Role::kTime:
      return "time";
    case Role::kDate:
      return "date";
    case Role::kGpu:
      return "GPU id";
    case Role::kUuid:
      return "GPU uuid";
    case Role::kBusId:
      return "PCI bus id";
    case Role::kName:
      return "GPU name";
    case Role::kHost:
      return "host";
    case Role::kReason:
      return "clock-event reason";
    case Role::kSerial:
      return "GPU serial";
    case Role::kDriver:
      return "driver version";
    case Role::kPersistence:
      return "persistence mode";
    case Role::kMigMode:
      return "MIG mode";
  }
  return "unknown";
}

}  // namespace gpudoctor::csv
