// Reader of the embedded GPU model table. See gpu_model_table.hpp and docs/gpu-models.md.
//
// Defaults for the columns a row leaves empty (the simulator's figures are estimates anyway; the
// diagnosis reads the limit, the max clock, the slowdown temperature and the memory, which every
// row gives, the slowdown temperature as a family default where unpublished):
//   limit_min_w / limit_max_w: a laptop's TGP range, else 40 % of the default limit / the default.
//   idle_w: 12 % of the default limit, at least 5 W (P0 idle with a context is 10-20 %).
//   clock_min_mhz: the clock a full load holds at the minimum limit,
//     f_max * sqrt((P_min - P_idle) / (TDP - P_idle)), rounded to 15 MHz, never above the base.
//   mem_clock_mhz: the memory type's usual clock (GDDR6 7001, HBM3 2619, ...).
//   shutdown_c: slowdown + 3 C (the margin nvidia-smi prints on the boards observed).
//   pcie: the architecture's generation (3 to Turing, 4 Ampere and Ada, 5 Hopper and Blackwell),
//     x16.
//   cooling: passive (no fan reading) for data-centre boards and laptops, a fan otherwise.
//   c_per_w: at the default limit with a 30 C inlet the board settles at 70 C (fans, big SXM
//     modules), 78 C (passive PCIe boards in a server), 75 C (laptops).
//   time_constant_s: 25 s for laptops, 45 s from 500 W, else 35 s.
#include "core/gpu_model_table.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "core/gpu_models_tsv.inc"

namespace gpudoctor::detail {
namespace {

enum Col : std::size_t {
  kKey,
  kName,
  kKind,
  kArch,
  kLimit,
  kLimitRange,
  kBoost,
  kBase,
  kMemMib,
  kMemType,
  kMemBandwidth,
  kSlowdown,
  kAliases,
  kSource,
  kLimitMin,
  kLimitMax,
  kIdle,
  kClockMin,
  kMemClock,
  kShutdown,
  kPcie,
  kNvlink,
  kCooling,
  kCPerW,
  kTimeConstant,
  kColumnCount,
};

constexpr std::array<std::string_view, kColumnCount> kColumnNames{
    "key",           "name",        "kind",          "arch",          "limit_w",
    "limit_range_w", "boost_mhz",   "base_mhz",      "mem_mib",       "mem_type",
    "mem_gb_s",      "slowdown_c",  "aliases",       "source",        "limit_min_w",
    "limit_max_w",   "idle_w",      "clock_min_mhz", "mem_clock_mhz", "shutdown_c",
    "pcie",          "nvlink_gb_s", "cooling",       "c_per_w",       "time_constant_s",
};
// Every row gives these.
constexpr std::array kRequired{kKey,  kName,   kKind,    kArch,         kLimit, kBoost,
                               kBase, kMemMib, kMemType, kMemBandwidth, kSource};

struct MemoryType {
  std::string_view name;
  double clock_mhz;
};
constexpr std::array<MemoryType, 9> kMemoryTypes{{
    {"GDDR5", 3504},
    {"GDDR5X", 5005},
    {"GDDR6", 7001},
    {"GDDR6X", 9501},
    {"GDDR7", 14001},
    {"HBM2", 877},
    {"HBM2e", 1512},
    {"HBM3", 2619},
    {"HBM3e", 3201},
}};

std::optional<GpuKind> kind_from(std::string_view s) {
  for (auto k : {GpuKind::kDatacenter, GpuKind::kWorkstation, GpuKind::kConsumer, GpuKind::kLaptop})
    if (gpu_kind_name(k) == s) return k;
  return std::nullopt;
}

std::optional<double> number(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t pos = 0;;) {
    const std::size_t next = s.find(sep, pos);
    out.push_back(
        s.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos));
    if (next == std::string_view::npos) return out;
    pos = next + 1;
  }
}

// "60-115" -> 60, 115.
bool pair_of(std::string_view s, char sep, double& a, double& b) {
  const std::size_t at = s.find(sep);
  if (at == std::string_view::npos) return false;
  const auto x = number(s.substr(0, at));
  const auto y = number(s.substr(at + 1));
  if (!x.has_value() || !y.has_value()) return false;
  a = *x;
  b = *y;
  return true;
}

int default_pcie_gen(Architecture a) {
  switch (a) {
    case Architecture::kAmpere:
    case Architecture::kAda:
      return 4;
    case Architecture::kHopper:
    case Architecture::kBlackwell:
      return 5;
    default:
      return 3;
  }
}

double round_to(double v, double step) {
  return std::round(v / step) * step;
}

// One row's cells to a model; an error names the first thing wrong.
class RowReader {
 public:
  RowReader(const std::vector<std::string_view>& cells, const std::array<int, kColumnCount>& at)
      : cells_(cells), at_(at) {}

  std::string_view text(Col c) const {
    const int i = at_[c];
    return i < 0 || static_cast<std::size_t>(i) >= cells_.size()
               ? std::string_view()
               : cells_[static_cast<std::size_t>(i)];
  }
  // A number > 0 in the column, nothing for an empty cell; a problem for anything else.
  std::optional<double> positive(Col c) {
    const std::string_view t = text(c);
    if (t.empty()) return std::nullopt;
    const auto v = number(t);
    if (!v || *v <= 0) fail(fmt::format("{} \"{}\" is not a number above 0", kColumnNames[c], t));
    return v;
  }
  void fail(std::string what) {
    if (error_.empty()) error_ = std::move(what);
  }
  const std::string& error() const { return error_; }

 private:
  const std::vector<std::string_view>& cells_;
  const std::array<int, kColumnCount>& at_;
  std::string error_;
};

std::optional<GpuModel> read_row(RowReader& r) {
  for (Col c : kRequired)
    if (r.text(c).empty()) r.fail(fmt::format("no {}", kColumnNames[c]));
  GpuModel m;
  m.key = r.text(kKey);
  m.nvml_name = r.text(kName);
  const auto kind = kind_from(r.text(kKind));
  if (!kind)
    r.fail(fmt::format("kind \"{}\" is none of datacenter, workstation, consumer, laptop",
                       r.text(kKind)));
  m.kind = kind.value_or(GpuKind::kDatacenter);
  m.architecture = architecture_from_name(std::string(r.text(kArch)));
  if (m.architecture == Architecture::kUnknown)
    r.fail(fmt::format("arch \"{}\" is no architecture gpudoctor knows", r.text(kArch)));
  m.tdp_w = r.positive(kLimit).value_or(0);
  m.sm_clock_max_mhz = r.positive(kBoost).value_or(0);
  m.sm_clock_base_mhz = r.positive(kBase).value_or(0);
  m.mem_total_mib = r.positive(kMemMib).value_or(0);
  m.dram_bandwidth_gb_s = r.positive(kMemBandwidth).value_or(0);
  m.memory_type = r.text(kMemType);
  const auto* mem = std::find_if(kMemoryTypes.begin(), kMemoryTypes.end(),
                                 [&](const MemoryType& t) { return t.name == m.memory_type; });
  if (mem == kMemoryTypes.end())
    r.fail(
        fmt::format("mem_type \"{}\" is none of GDDR5 ... GDDR7, HBM2 ... HBM3e", m.memory_type));
  m.hbm = m.memory_type.starts_with("HBM");
  m.aliases = r.text(kAliases);
  m.source = r.text(kSource);
  if (m.sm_clock_base_mhz > m.sm_clock_max_mhz) r.fail("base_mhz above boost_mhz");

  // A laptop's range: "60-115".
  if (const std::string_view range = r.text(kLimitRange); !range.empty()) {
    double lo = 0;
    double hi = 0;
    if (!pair_of(range, '-', lo, hi) || lo <= 0 || lo > m.tdp_w || m.tdp_w > hi)
      r.fail(fmt::format("limit_range_w \"{}\" is no MIN-MAX range around limit_w", range));
    else if (m.kind != GpuKind::kLaptop)
      r.fail("limit_range_w on a board that is no laptop's (its limit is set, not chosen)");
    m.limit_range_min_w = lo;
    m.limit_range_max_w = hi;
  } else if (m.kind == GpuKind::kLaptop) {
    r.fail("a laptop row without limit_range_w (the TGP range the laptop's maker picks from)");
  }

  if (const auto s = r.positive(kSlowdown)) {
    m.slowdown_temp_c = *s;
  } else {
    m.slowdown_temp_c = family_slowdown_temp_c(m.kind, m.architecture);
    m.slowdown_is_family_default = true;
  }

  // Simulator figures: the cell, else the documented default (top of the file).
  const bool laptop = m.kind == GpuKind::kLaptop;
  m.power_limit_min_w = r.positive(kLimitMin).value_or(
      laptop ? m.limit_range_min_w : std::max(1.0, round_to(0.4 * m.tdp_w, 1)));
  m.power_limit_max_w = r.positive(kLimitMax).value_or(laptop ? m.limit_range_max_w : m.tdp_w);
  if (m.power_limit_min_w > m.tdp_w || m.tdp_w > m.power_limit_max_w)
    r.fail("limit_w outside limit_min_w..limit_max_w");
  m.idle_w = r.positive(kIdle).value_or(std::max(5.0, round_to(0.12 * m.tdp_w, 1)));
  if (m.idle_w >= m.power_limit_min_w) r.fail("idle_w not below the minimum power limit");
  if (const auto c = r.positive(kClockMin)) {
    m.sm_clock_min_mhz = *c;
  } else {
    const double share = (m.power_limit_min_w - m.idle_w) / std::max(1.0, m.tdp_w - m.idle_w);
    m.sm_clock_min_mhz = std::min(
        m.sm_clock_base_mhz, round_to(m.sm_clock_max_mhz * std::sqrt(std::max(0.0, share)), 15));
    if (m.sm_clock_min_mhz <= 0) m.sm_clock_min_mhz = m.sm_clock_base_mhz;
  }
  m.mem_clock_mhz = r.positive(kMemClock).value_or(mem == kMemoryTypes.end() ? 1 : mem->clock_mhz);
  m.shutdown_temp_c = r.positive(kShutdown).value_or(m.slowdown_temp_c + 3);
  if (m.shutdown_temp_c <= m.slowdown_temp_c) r.fail("shutdown_c not above slowdown_c");

  m.pcie_gen_max = default_pcie_gen(m.architecture);
  m.pcie_width_max = 16;
  if (const std::string_view pcie = r.text(kPcie); !pcie.empty()) {
    double gen = 0;
    double width = 0;
    if (!pair_of(pcie, 'x', gen, width) || gen < 1 || gen > 6 || width < 1 || width > 16) {
      r.fail(fmt::format("pcie \"{}\" is not GENxWIDTH (4x16)", pcie));
    } else {
      m.pcie_gen_max = static_cast<int>(gen);
      m.pcie_width_max = static_cast<int>(width);
    }
  }
  if (const std::string_view nv = r.text(kNvlink); !nv.empty()) {
    const auto v = number(nv);
    if (!v || *v < 0) r.fail(fmt::format("nvlink_gb_s \"{}\" is not a number", nv));
    m.nvlink_gb_s = v.value_or(0);
  }
  const std::string_view cooling = r.text(kCooling);
  if (cooling.empty())
    m.passive_cooling = m.kind == GpuKind::kDatacenter || laptop;
  else if (cooling == "passive" || cooling == "fan")
    m.passive_cooling = cooling == "passive";
  else
    r.fail(fmt::format("cooling \"{}\" is neither passive nor fan", cooling));
  const double settle_c = laptop ? 75 : (m.passive_cooling && m.tdp_w < 400) ? 78 : 70;
  m.thermal_resistance_c_per_w =
      r.positive(kCPerW).value_or(std::round((settle_c - 30) / m.tdp_w * 1000) / 1000);
  m.thermal_time_constant_s = r.positive(kTimeConstant)
                                  .value_or(laptop           ? 25.0
                                            : m.tdp_w >= 500 ? 45.0
                                                             : 35.0);
  if (!r.error().empty()) return std::nullopt;
  return m;
}

std::string_view trim_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

double family_slowdown_temp_c(GpuKind kind, Architecture arch) {
  // NVIDIA publishes no slowdown threshold for most boards; these are the thresholds nvidia-smi
  // prints on observed boards of the same kind and architecture (docs/gpu-models.md).
  if (kind == GpuKind::kLaptop) return 87;  // NVIDIA's laptop spec pages: 87 C max GPU temperature
  if (kind == GpuKind::kDatacenter) {
    switch (arch) {
      case Architecture::kPascal:
        return 85;
      case Architecture::kVolta:
        return 87;
      case Architecture::kTuring:
        return 93;
      case Architecture::kAda:
        return 88;
      default:
        return 89;  // Kepler, Maxwell, Ampere (A100), Hopper, Blackwell
    }
  }
  switch (arch) {
    case Architecture::kMaxwell:
      return 92;
    case Architecture::kPascal:
      return 93;
    case Architecture::kVolta:
      return 90;
    case Architecture::kTuring:
      return 91;
    case Architecture::kAmpere:
      return 95;
    default:
      return 92;  // Ada, Blackwell
  }
}

GpuModelTable read_gpu_model_table(std::string_view tsv) {
  GpuModelTable t;
  std::array<int, kColumnCount> at{};
  at.fill(-1);
  bool header = false;
  std::size_t header_cells = 0;
  std::size_t line_no = 0;
  for (std::string_view raw : split(tsv, '\n')) {
    ++line_no;
    const std::string_view line = trim_cr(raw);
    if (line.empty() || line.front() == '#') continue;
    const auto cells = split(line, '\t');
    if (!header) {
      header = true;
      header_cells = cells.size();
      for (std::size_t i = 0; i < cells.size(); ++i) {
        const auto* c = std::find(kColumnNames.begin(), kColumnNames.end(), cells[i]);
        if (c == kColumnNames.end())
          t.problems.push_back(fmt::format("line {}: unknown column \"{}\"", line_no, cells[i]));
        else
          at[static_cast<std::size_t>(c - kColumnNames.begin())] = static_cast<int>(i);
      }
      for (Col c : kRequired)
        if (at[c] < 0)
          t.problems.push_back(fmt::format("line {}: no column {}", line_no, kColumnNames[c]));
      continue;
    }
    RowReader r(cells, at);
    if (cells.size() > header_cells)
      r.fail(fmt::format("{} cells, more than the header's {}", cells.size(), header_cells));
    auto m = read_row(r);
    const auto same = [&](const GpuModel& o) {
      return o.key == r.text(kKey) || o.nvml_name == r.text(kName);
    };
    if (m && std::any_of(t.models.begin(), t.models.end(), same))
      r.fail("key or name already in the table"), m.reset();
    if (!m) {
      t.problems.push_back(fmt::format("line {} ({}): {}", line_no, r.text(kKey), r.error()));
      continue;
    }
    t.models.push_back(*m);
  }
  if (!header) t.problems.emplace_back("no header line");
  return t;
}

const GpuModelTable& gpu_model_table() {
  static const GpuModelTable table = read_gpu_model_table(embedded::kGpuModelsTsv);
  return table;
}

}  // namespace gpudoctor::detail
