#include "formats/smi_csv.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <exception>
#include <iterator>
#include <limits>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "core/clock_reasons.hpp"
#include "core/reading.hpp"
#include "formats/finish.hpp"
#include "formats/log_time.hpp"
#include "formats/log_units.hpp"
#include "formats/no_value.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using log_reader::Problem;
using text::iequals;

// ---------------------------------------------------------------------------------------------
// Columns

enum class Kind : uint8_t {
  kUnknown,    // not a name gpudoctor reads: ignored, listed in a note
  kIgnored,    // a known name gpudoctor has no use for (clocks_throttle_reasons.supported)
  kDuplicate,  // a second column for a quantity an earlier column already gives
  kTimestamp,
  kIndex,
  kName,
  kUuid,
  kBusId,
  kSerial,
  kDriver,
  kPersistence,
  kMig,
  kField,
  kReasonBit,  // one clocks_throttle_reasons.<reason> column: "Active" / "Not Active"
};

struct Column {
  Kind kind = Kind::kUnknown;
  Field field{};
  uint64_t bit = 0;
  std::string_view name;  // as written, without the unit annotation
};

// nvidia-smi's individual reason columns (clocks_throttle_reasons.X / clocks_event_reasons.X) and
// the core/clock_reasons code of the bit each stands for.
struct ReasonColumn {
  std::string_view suffix;
  std::string_view code;
};
constexpr std::array<ReasonColumn, 9> kReasonColumns{{
    {"gpu_idle", "gpu_idle"},
    {"applications_clocks_setting", "applications_clocks"},
    {"sw_power_cap", "sw_power_cap"},
    {"hw_slowdown", "hw_slowdown"},
    {"sync_boost", "sync_boost"},
    {"sw_thermal_slowdown", "sw_thermal"},
    {"hw_thermal_slowdown", "hw_thermal"},
    {"hw_power_brake_slowdown", "hw_power_brake"},
    {"display_clock_setting", "display_clocks"},
}};

uint64_t bit_of_reason(std::string_view code) {
  for (const auto& r : clock_reasons())
    if (r.code == code) return r.bit;
  return 0;
}

// "power.draw [W]" -> "power.draw".
std::string_view strip_annotation(std::string_view cell) {
  cell = text::trim(cell);
  if (!cell.empty() && cell.back() == ']') {
    const size_t open = cell.rfind('[');
    if (open != std::string_view::npos && open > 0) return text::trim(cell.substr(0, open));
  }
  return cell;
}

Column resolve(std::string_view raw) {
  Column c;
  c.name = strip_annotation(raw);
  const std::string_view n = c.name;
  if (n.empty()) return c;
  auto is = [&](std::string_view a) { return iequals(n, a); };
  if (is("timestamp")) {
    c.kind = Kind::kTimestamp;
  } else if (is("index")) {
    c.kind = Kind::kIndex;
  } else if (is("name") || is("gpu_name")) {
    c.kind = Kind::kName;
  } else if (is("uuid") || is("gpu_uuid")) {
    c.kind = Kind::kUuid;
  } else if (is("pci.bus_id") || is("gpu_bus_id")) {
    c.kind = Kind::kBusId;
  } else if (is("serial") || is("gpu_serial")) {
    c.kind = Kind::kSerial;
  } else if (is("driver_version")) {
    c.kind = Kind::kDriver;
  } else if (is("persistence_mode")) {
    c.kind = Kind::kPersistence;
  } else if (is("mig.mode.current")) {
    c.kind = Kind::kMig;
  } else if (const auto f = field_by_smi_name(n)) {
    c.kind = Kind::kField;
    c.field = *f;
  } else {
    std::string_view suffix;
    if (text::istarts_with(n, "clocks_throttle_reasons."))
      suffix = n.substr(24);
    else if (text::istarts_with(n, "clocks_event_reasons."))
      suffix = n.substr(21);
    if (!suffix.empty()) {
      if (iequals(suffix, "supported")) c.kind = Kind::kIgnored;
      for (const auto& r : kReasonColumns) {
        if (iequals(suffix, r.suffix)) {
          c.kind = Kind::kReasonBit;
          c.bit = bit_of_reason(r.code);
        }
      }
    }
  }
  return c;
}

// Names common enough in other CSV files that they alone do not make a header nvidia-smi's.
bool is_generic(const Column& c) {
  switch (c.kind) {
    case Kind::kTimestamp:
    case Kind::kIndex:
    case Kind::kName:
    case Kind::kUuid:
    case Kind::kSerial:
      return c.name.find_first_of("._") == std::string_view::npos;
    default:
      return false;
  }
}

bool known(const Column& c) {
  return c.kind != Kind::kUnknown;
}

// The header nvidia-smi wrote: at least one cell that is a --query-gpu name (strong: one no other
// CSV would use).
bool is_header(const std::vector<std::string_view>& cells, bool strong) {
  for (const auto cell : cells) {
    const Column c = resolve(cell);
    if (known(c) && (!strong || !is_generic(c))) return true;
  }
  return false;
}

struct Layout {
  std::vector<Column> cols;
  std::string_view header_line;  // trimmed; empty when the layout came from --columns
  int ts = -1;
  int key = -1;  // the column telling GPUs apart: index, else pci.bus_id, else uuid; -1: none
  Kind key_kind = Kind::kUnknown;
  bool reason_bits = false;  // individual reason columns in use (no clocks_*_reasons.active)
  std::vector<std::string_view> unknown;
  std::vector<std::pair<std::string_view, std::string_view>> duplicates;  // (ignored, kept)
};

Layout make_layout(const std::vector<std::string_view>& names, std::string_view header_line) {
  Layout L;
  L.header_line = header_line;
  L.cols.reserve(names.size());
  std::array<int, 16> first_of_kind;
  first_of_kind.fill(-1);
  std::array<int, kFieldCount> first_of_field;
  first_of_field.fill(-1);
  bool active = false;
  for (const auto raw : names) {
    Column c = resolve(raw);
    const int at = static_cast<int>(L.cols.size());
    if (c.kind == Kind::kField) {
      int& first = first_of_field[index_of(c.field)];
      if (first >= 0) {
        L.duplicates.emplace_back(c.name, L.cols[static_cast<size_t>(first)].name);
        c.kind = Kind::kDuplicate;
      } else {
        first = at;
        if (c.field == Field::kClockEventReasons) active = true;
      }
    } else if (c.kind != Kind::kUnknown && c.kind != Kind::kIgnored && c.kind != Kind::kReasonBit) {
      int& first = first_of_kind[static_cast<size_t>(c.kind)];
      if (first >= 0)
        c.kind = Kind::kDuplicate;
      else
        first = at;
    }
    if (c.kind == Kind::kUnknown && !c.name.empty()) L.unknown.push_back(c.name);
    L.cols.push_back(c);
  }
  for (auto& c : L.cols) {
    if (c.kind != Kind::kReasonBit) continue;
    if (active)
      c.kind = Kind::kIgnored;  // the bitmask column says it all
    else
      L.reason_bits = true;
  }
  L.ts = first_of_kind[static_cast<size_t>(Kind::kTimestamp)];
  for (const Kind k : {Kind::kIndex, Kind::kBusId, Kind::kUuid}) {
    if (first_of_kind[static_cast<size_t>(k)] >= 0) {
      L.key = first_of_kind[static_cast<size_t>(k)];
      L.key_kind = k;
      break;
    }
  }
  return L;
}

// ---------------------------------------------------------------------------------------------
// Cells

enum class Missing : uint8_t { kOther, kNotSupported, kNoPermission };

// "No value" is the one rule of formats/no_value ("[N/A]", "[Not Supported]", "-", "nan" ...).
bool is_marker(std::string_view v) {
  return csv::no_value(v) != csv::NoValue::kNone;
}

Missing classify(std::string_view v) {
  switch (csv::no_value(v)) {
    case csv::NoValue::kNotSupported:
      return Missing::kNotSupported;
    case csv::NoValue::kNoPermission:
      return Missing::kNoPermission;
    default:
      return Missing::kOther;
  }
}

std::optional<double> parse_value(Field f, std::string_view v) {
  const Unit u = info(f).unit;
  if (u == Unit::kPstateNumber) {
    if (!v.empty() && (v.front() == 'P' || v.front() == 'p')) v.remove_prefix(1);
    const auto n = text::parse_int(v);
    if (!n || *n < 0 || *n > 32) return std::nullopt;
    return static_cast<double>(*n);
  }
  if (u == Unit::kBitmask) {
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
      const auto h = text::parse_hex(v);
      if (!h) return std::nullopt;
      return static_cast<double>(*h);
    }
    const auto n = text::parse_int(v);
    if (!n || *n < 0) return std::nullopt;
    return static_cast<double>(*n);
  }
  const auto nu = text::parse_number_with_unit(v);
  if (!nu) return std::nullopt;
  const auto k = csv::unit_factor(u, nu->unit);
  if (!k) return std::nullopt;
  return text::scaled(nu->value, *k);
}

std::optional<bool> parse_enabled(std::string_view v) {
  if (iequals(v, "Enabled") || iequals(v, "On") || iequals(v, "1")) return true;
  if (iequals(v, "Disabled") || iequals(v, "Off") || iequals(v, "0")) return false;
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Reader state

struct GpuKey {
  Kind kind = Kind::kUnknown;  // kIndex, kBusId, kUuid; kUnknown: by position
  std::string value;
  uint32_t position = 0;
};

struct GpuState {
  GpuKey key;
  GpuSeries series;
  double last_t = 0;
  uint32_t seen_round = 0;  // round number + 1 of the last row, for logs without timestamps
  bool index_set = false;
  log_reader::FieldCounts counts;
};

// Rows of a log without an identity column, told apart by position within each sampling round:
// the rounds are found from the gaps between successive timestamps (short within a round, about
// the sampling interval between rounds). Returns the position of every row, all 0 when no
// consistent round structure shows (then every row is one GPU's).
std::vector<uint32_t> positions_from_times(const std::vector<double>& t, uint32_t& gpus) {
  std::vector<uint32_t> pos(t.size(), 0);
  gpus = 1;
  if (t.size() < 3) return pos;
  std::vector<double> gaps(t.size() - 1);
  for (size_t i = 0; i + 1 < t.size(); ++i) gaps[i] = std::max(t[i + 1] - t[i], 0.0005);
  std::vector<double> sorted = gaps;
  std::sort(sorted.begin(), sorted.end());
  double best_ratio = 0, threshold = 0;
  for (size_t i = 0; i + 1 < sorted.size(); ++i) {
    const double r = sorted[i + 1] / sorted[i];
    if (r > best_ratio) {
      best_ratio = r;
      threshold = std::sqrt(sorted[i + 1] * sorted[i]);
    }
  }
  if (best_ratio < 4) return pos;
  std::vector<uint32_t> sizes;
  uint32_t in_round = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i > 0 && gaps[i - 1] > threshold) {
      sizes.push_back(in_round);
      in_round = 0;
    }
    pos[i] = in_round++;
  }
  sizes.push_back(in_round);
  // The most common round size; the rounds must mostly agree on it (the last may be cut short).
  std::vector<uint32_t> s = sizes;
  std::sort(s.begin(), s.end());
  uint32_t mode = s[0], best = 0;
  for (size_t i = 0; i < s.size();) {
    size_t j = i;
    while (j < s.size() && s[j] == s[i]) ++j;
    if (j - i > best) {
      best = static_cast<uint32_t>(j - i);
      mode = s[i];
    }
    i = j;
  }
  if (mode <= 1 || best * 10 < sizes.size() * 8) {
    std::fill(pos.begin(), pos.end(), 0);
    return pos;
  }
  gpus = mode;
  return pos;
}

class Reader {
 public:
  Reader(std::string_view text, const std::string& origin, const SmiCsvOptions& opt)
      : text_(text), origin_(origin), opt_(opt) {}

  Result<Recording> run();

 private:
  void pass(bool prepass);
  size_t slot_for(const Layout& L, const std::vector<std::string_view>& cells, size_t line_no);
  void read_row(GpuState& g, size_t row, const Layout& L,
                const std::vector<std::string_view>& cells, size_t line_no);
  void field_cell(GpuState& g, Field f, size_t row, std::string_view v, std::string_view col,
                  size_t line_no);
  void finish(Recording& rec);
  void note_once(Recording& rec, std::string note) { log_reader::add_note(rec, std::move(note)); }
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, line_no, f, std::forward<Args>(args)...);
  }

  std::string_view text_;
  const std::string& origin_;
  const SmiCsvOptions& opt_;

  std::vector<std::string_view> column_names_;  // from --columns
  Layout initial_;
  bool header_from_file_ = false;
  size_t header_line_no_ = 0;

  std::vector<GpuState> gpus_;
  std::unordered_map<std::string, size_t> slots_;  // key kind and value -> gpus_
  std::string lookup_;
  size_t last_slot_ = 0;
  std::vector<std::string_view> cells_;

  bool have_start_ = false;
  int64_t start_ms_ = 0;
  std::string_view epoch_unit_;  // timestamps written as epoch numbers: their unit
  uint32_t round_ = 0;
  bool any_ts_ = false, any_no_ts_ = false, any_position_ = false;

  std::vector<double> position_times_;
  std::vector<uint32_t> positions_;
  size_t position_cursor_ = 0;
  uint32_t position_gpus_ = 1;

  size_t data_lines_ = 0, rows_read_ = 0, header_changes_ = 0;
  Problem wrong_count_, bad_time_, not_increasing_, bad_cell_, too_many_gpus_, truncated_;
  log_reader::UniqueNames unknown_;
  std::vector<std::pair<std::string_view, std::string_view>> duplicates_;
  std::array<bool, kFieldCount> field_in_log_{};
  Recording rec_;
};

// The slot of a row's GPU; npos past kMaxGpus GPUs (the row is counted in too_many_gpus_).
size_t Reader::slot_for(const Layout& L, const std::vector<std::string_view>& cells,
                        size_t line_no) {
  GpuKey key;
  if (L.key >= 0) {
    key.kind = L.key_kind;
    const std::string_view v = cells[static_cast<size_t>(L.key)];
    // nvidia-smi repeats the GPU order every round: try the one after the last row's first.
    const size_t n = gpus_.size();
    if (n > 0) {
      const size_t next = (last_slot_ + 1) % n;
      if (gpus_[next].key.kind == key.kind && gpus_[next].key.value == v) return last_slot_ = next;
    }
    key.value = std::string(v);
  } else {
    key.position = position_cursor_ < positions_.size() ? positions_[position_cursor_] : 0;
    ++position_cursor_;
  }
  lookup_.assign(1, static_cast<char>(key.kind));
  if (key.kind == Kind::kUnknown)
    lookup_ += std::to_string(key.position);
  else
    lookup_ += key.value;
  if (const auto it = slots_.find(lookup_); it != slots_.end()) return last_slot_ = it->second;
  if (gpus_.size() >= log_reader::kMaxGpus) {
    problem(too_many_gpus_, line_no, "GPU {}",
            key.kind == Kind::kUnknown ? std::to_string(key.position) : key.value);
    return std::string_view::npos;
  }
  GpuState g;
  g.key = std::move(key);
  g.series.info.index = static_cast<unsigned>(gpus_.size());
  if (g.key.kind == Kind::kUnknown) g.series.info.index = g.key.position;
  slots_.emplace(lookup_, gpus_.size());
  gpus_.push_back(std::move(g));
  return last_slot_ = gpus_.size() - 1;
}

void Reader::field_cell(GpuState& g, Field f, size_t row, std::string_view v, std::string_view col,
                        size_t line_no) {
  const size_t fi = index_of(f);
  if (const auto x = parse_value(f, v)) {
    g.series.column_for_write(f)[row] = *x;
    ++g.counts.value[fi];
    return;
  }
  if (is_marker(v)) {
    switch (classify(v)) {
      case Missing::kNotSupported:
        ++g.counts.not_supported[fi];
        break;
      case Missing::kNoPermission:
        ++g.counts.no_permission[fi];
        break;
      case Missing::kOther:
        ++g.counts.other[fi];
        break;
    }
    return;
  }
  ++g.counts.other[fi];
  problem(bad_cell_, line_no, "{}: cannot read \"{}\"", col, v);
}

void Reader::read_row(GpuState& g, size_t row, const Layout& L,
                      const std::vector<std::string_view>& cells, size_t line_no) {
  uint64_t mask = 0;
  bool mask_known = false;
  std::optional<Missing> mask_missing;
  for (size_t i = 0; i < L.cols.size(); ++i) {
    const Column& c = L.cols[i];
    const std::string_view v = cells[i];
    switch (c.kind) {
      case Kind::kField:
        field_cell(g, c.field, row, v, c.name, line_no);
        break;
      case Kind::kReasonBit:
        if (iequals(v, "Active")) {
          mask |= c.bit;
          mask_known = true;
        } else if (iequals(v, "Not Active")) {
          mask_known = true;
        } else if (!mask_missing) {
          mask_missing = is_marker(v) ? classify(v) : Missing::kOther;
          if (!is_marker(v)) problem(bad_cell_, line_no, "{}: cannot read \"{}\"", c.name, v);
        }
        break;
      case Kind::kIndex:
        if (!g.index_set) {
          if (const auto n = text::parse_int(v); n && *n >= 0 && *n <= 1000000) {
            g.series.info.index = static_cast<unsigned>(*n);
            g.index_set = true;
          }
        }
        break;
      case Kind::kName:
        if (g.series.info.name.empty() && !is_marker(v)) g.series.info.name = std::string(v);
        break;
      case Kind::kUuid:
        if (g.series.info.uuid.empty() && !is_marker(v)) g.series.info.uuid = std::string(v);
        break;
      case Kind::kBusId:
        if (g.series.info.pci_bus_id.empty() && !is_marker(v))
          g.series.info.pci_bus_id = std::string(v);
        break;
      case Kind::kSerial:
        if (g.series.info.serial.empty() && !is_marker(v)) g.series.info.serial = std::string(v);
        break;
      case Kind::kDriver:
        if (rec_.system.driver_version.empty() && !is_marker(v))
          rec_.system.driver_version = std::string(v);
        break;
      case Kind::kPersistence:
        if (!g.series.info.persistence_mode) g.series.info.persistence_mode = parse_enabled(v);
        break;
      case Kind::kMig:
        if (!g.series.info.mig_mode) g.series.info.mig_mode = parse_enabled(v);
        break;
      case Kind::kUnknown:
      case Kind::kIgnored:
      case Kind::kDuplicate:
      case Kind::kTimestamp:
        break;
    }
  }
  if (L.reason_bits) {
    const size_t fi = index_of(Field::kClockEventReasons);
    if (mask_known) {
      g.series.column_for_write(Field::kClockEventReasons)[row] = static_cast<double>(mask);
      ++g.counts.value[fi];
    } else if (mask_missing == Missing::kNotSupported) {
      ++g.counts.not_supported[fi];
    } else if (mask_missing == Missing::kNoPermission) {
      ++g.counts.no_permission[fi];
    } else {
      ++g.counts.other[fi];
    }
  }
}

// One pass over the lines. The prepass only collects the timestamps of rows that have no GPU
// identity column (to find the sampling rounds); the main pass reads every row.
void Reader::pass(bool prepass) {
  text::LineReader lines(text::strip_bom(text_));
  const bool cut_at_end = text::ends_inside_a_line(text_);
  Layout L = initial_;
  std::string_view line;
  round_ = 0;
  position_cursor_ = 0;
  while (lines.next(line)) {
    const std::string_view t = text::trim(line);
    if (t.empty()) continue;
    const size_t line_no = lines.line_number();
    if (!L.header_line.empty() && t == L.header_line)
      continue;  // the header, or the header repeated (logs appended to, restarted loggers)
    text::split_trimmed(t, ',', cells_);
    const std::string_view c0 = cells_[0];
    // Data rows never start with a column name (query names start with a letter and hold no
    // space, which rules out GPU names, values and markers cheaply); a line with another column
    // count is checked in full (it would be skipped anyway).
    const bool letter =
        !c0.empty() && ((c0[0] >= 'a' && c0[0] <= 'z') || (c0[0] >= 'A' && c0[0] <= 'Z'));
    const bool maybe_header = (letter && strip_annotation(c0).find(' ') == std::string_view::npos &&
                               known(resolve(c0))) ||
                              (cells_.size() != L.cols.size() && is_header(cells_, false));
    if (maybe_header) {
      // A different header mid-file (two logs concatenated): read on with its columns.
      L = make_layout(cells_, t);
      if (!prepass) {
        ++header_changes_;
        for (const auto u : L.unknown) unknown_.add(u);
        // (The first few: every line may be a header of its own.)
        for (const auto& d : L.duplicates)
          if (duplicates_.size() < 20 &&
              std::find(duplicates_.begin(), duplicates_.end(), d) == duplicates_.end())
            duplicates_.push_back(d);
        for (const auto& c : L.cols) {
          if (c.kind == Kind::kField) field_in_log_[index_of(c.field)] = true;
          if (c.kind == Kind::kReasonBit) field_in_log_[index_of(Field::kClockEventReasons)] = true;
        }
      }
      continue;
    }
    if (!prepass) ++data_lines_;
    if (cut_at_end && lines.rest().empty()) {
      // nvidia-smi ends every line: a last line without an end was cut, perhaps mid-value.
      if (!prepass)
        problem(truncated_, line_no, "the last line is cut short ({} of {} columns, no line end)",
                cells_.size(), L.cols.size());
      continue;
    }
    if (cells_.size() != L.cols.size()) {
      if (!prepass)
        problem(wrong_count_, line_no, "expected {} columns, found {}", L.cols.size(),
                cells_.size());
      continue;
    }
    double time_s = 0;
    if (L.ts >= 0) {
      auto ms = text::parse_timestamp_ms(cells_[static_cast<size_t>(L.ts)]);
      if (!ms) {
        // A shell loop's `date +%s` in front of nvidia-smi's values: epoch seconds (or ms ...).
        std::string_view unit;
        ms = csv::parse_epoch_ms(cells_[static_cast<size_t>(L.ts)], &unit);
        if (ms && epoch_unit_.empty()) epoch_unit_ = unit;
      }
      if (!ms) {
        if (!prepass)
          problem(bad_time_, line_no, "cannot read the timestamp \"{}\"",
                  cells_[static_cast<size_t>(L.ts)]);
        continue;
      }
      if (!have_start_) {
        have_start_ = true;
        start_ms_ = *ms;
      }
      time_s = static_cast<double>(*ms - start_ms_) / 1000.0;
    }
    if (prepass) {
      if (L.key < 0 && L.ts >= 0) position_times_.push_back(time_s);
      continue;
    }
    const size_t slot = slot_for(L, cells_, line_no);
    if (slot == std::string_view::npos) continue;
    if (L.key < 0) any_position_ = true;
    GpuState& g = gpus_[slot];
    if (L.ts >= 0) {
      any_ts_ = true;
    } else {
      // No timestamps: a round ends when a GPU comes round again; rounds are 1 s apart.
      any_no_ts_ = true;
      if (g.seen_round == round_ + 1) ++round_;
      g.seen_round = round_ + 1;
      time_s = static_cast<double>(round_);
    }
    if (!g.series.time_s.empty() && !(time_s > g.last_t)) {
      problem(not_increasing_, line_no, "time {} s is not after the GPU's previous row ({} s)",
              time_s, g.last_t);
      continue;
    }
    g.last_t = time_s;
    const size_t row = g.series.append_row(time_s);
    read_row(g, row, L, cells_, line_no);
    ++rows_read_;
  }
}

Result<Recording> Reader::run() {
  const std::string_view body = text::strip_bom(text_);
  if (auto e =
          text::check_input(body, origin_, "an nvidia-smi --query-gpu CSV log", opt_.power_limit_w))
    return std::move(*e);

  // The first non-blank line: nvidia-smi's header, or (noheader) the first row.
  text::LineReader lines(body);
  std::string_view first;
  while (lines.next(first) && text::is_blank(first)) {
  }
  first = text::trim(first);
  header_line_no_ = lines.line_number();
  text::split_trimmed(first, ',', cells_);
  header_from_file_ = is_header(cells_, false);
  if (header_from_file_) {
    initial_ = make_layout(cells_, first);
    if (!opt_.columns.empty())
      rec_.notes.push_back("--columns ignored: the file has its own header line");
  } else {
    // nvidia-smi's header with another separator (a spreadsheet saved it again): not this
    // reader's layout, but the generic CSV reader's.
    for (const char sep : {';', '\t'}) {
      std::vector<std::string_view> cells;
      text::split_trimmed(first, sep, cells);
      if (cells.size() > 1 && is_header(cells, false))
        return usage_error(fmt::format(
            "{}:{}: the columns are separated by '{}', not by the commas nvidia-smi writes; read "
            "the file with --input-format generic-csv",
            origin_, lines.line_number(), sep == '\t' ? "\\t" : ";"));
    }
    if (opt_.columns.empty())
      return usage_error(
          fmt::format("{}:{}: no nvidia-smi --query-gpu header line; for a log written with "
                      "--format=csv,noheader give its query list with --columns (e.g. --columns "
                      "timestamp,index,power.draw,utilization.gpu)",
                      origin_, lines.line_number()));
    std::vector<std::string_view> parts;
    for (const auto& entry : opt_.columns) {
      text::split_trimmed(entry, ',', parts);
      for (const auto p : parts)
        if (!p.empty()) column_names_.push_back(p);
    }
    initial_ = make_layout(column_names_, {});
    if (std::none_of(initial_.cols.begin(), initial_.cols.end(), known))
      return usage_error(fmt::format(
          "--columns: none of \"{}\" is an nvidia-smi --query-gpu name (see gpudoctor fields)",
          fmt::join(column_names_, ",")));
  }
  for (const auto u : initial_.unknown) unknown_.add(u);
  duplicates_ = initial_.duplicates;
  for (const auto& c : initial_.cols) {
    if (c.kind == Kind::kField) field_in_log_[index_of(c.field)] = true;
    if (c.kind == Kind::kReasonBit) field_in_log_[index_of(Field::kClockEventReasons)] = true;
  }

  // Logs without an identity column: find the sampling rounds first. (A later header that drops
  // the identity column reads its rows as one GPU.)
  if (initial_.key < 0) {
    have_start_ = false;
    pass(true);
    positions_ = positions_from_times(position_times_, position_gpus_);
    have_start_ = false;
  }
  pass(false);

  if (rows_read_ == 0)
    return log_reader::no_readable_rows(origin_, "a header line", fmt::to_string(header_line_no_),
                                        data_lines_, text_,
                                        {&wrong_count_, &bad_time_, &truncated_, &not_increasing_});
  finish(rec_);
  return std::move(rec_);
}

void Reader::finish(Recording& rec) {
  rec.source = "nvidia-smi csv: " + origin_;
  rec.start_unix_ms = have_start_ ? start_ms_ : 0;
  std::vector<std::string> notes = std::move(rec.notes);
  rec.notes.clear();

  if (any_ts_ && !epoch_unit_.empty())
    note_once(rec, fmt::format("timestamps read as Unix epoch {}", epoch_unit_));
  else if (any_ts_)
    note_once(rec,
              "timestamps are the local time of the machine that ran nvidia-smi, read as UTC "
              "(the log does not say its time zone)");
  if (any_no_ts_)
    note_once(rec,
              "no timestamp column: samples taken as 1 s apart (one sampling round per second); "
              "the start time is unknown");
  if (any_position_) {
    if (gpus_.size() > 1)
      note_once(rec, fmt::format("no GPU identity column (index, pci.bus_id or uuid): {} GPUs told "
                                 "apart by their position within each sampling round",
                                 gpus_.size()));
    else
      note_once(rec,
                "no GPU identity column (index, pci.bus_id or uuid): all rows read as one GPU");
  }

  // Unsupported and empty fields, architecture, power limit.
  log_reader::FinishOptions fo;
  fo.power_limit_w = opt_.power_limit_w;
  fo.placeholder = "[N/A]";
  for (size_t fi = 0; fi < kFieldCount; ++fi)
    if (field_in_log_[fi])
      fo.columns.emplace_back(static_cast<Field>(fi),
                              std::string(canonical_smi_name(static_cast<Field>(fi))));
  std::vector<log_reader::GpuToFinish> to_finish;
  for (auto& g : gpus_) to_finish.push_back({&g.series, &g.counts});
  log_reader::finish_gpus(rec, to_finish, fo);

  if (!unknown_.empty())
    note_once(rec, fmt::format("ignored columns gpudoctor does not read: {}",
                               log_reader::join_names(unknown_.list)));
  for (const auto& [dup, kept] : duplicates_)
    note_once(rec, fmt::format("column {} ignored: the same quantity as {}", dup, kept));
  if (header_changes_ > 0)
    note_once(rec, fmt::format("the header line changes {} time(s) mid-file; each part read "
                               "with its own columns",
                               header_changes_));
  auto skipped = [&](const Problem& p, std::string_view what) {
    log_reader::note_skipped(rec, p, what);
  };
  skipped(wrong_count_, "with the wrong number of columns");
  skipped(bad_time_, "with an unreadable timestamp");
  skipped(not_increasing_, "whose time did not advance for their GPU");
  skipped(truncated_, "cut short at the end of the file");
  skipped(too_many_gpus_, log_reader::kTooManyGpus);
  log_reader::note_unreadable(rec, bad_cell_);
  for (auto& n : notes) note_once(rec, std::move(n));

  // GPUs in index order where the log gives indexes, else in order of appearance.
  std::stable_sort(gpus_.begin(), gpus_.end(), [](const GpuState& a, const GpuState& b) {
    return a.series.info.index < b.series.info.index;
  });
  rec.gpus.reserve(gpus_.size());
  for (auto& g : gpus_) rec.gpus.push_back(std::move(g.series));
  // A row of an earlier GPU may carry a later time than the first row of the file.
  rebase_times(rec);
}

// ---------------------------------------------------------------------------------------------
// Writer

std::string_view header_unit(Unit u) {
  switch (u) {
    case Unit::kPercent:
      return " [%]";
    case Unit::kWatt:
      return " [W]";
    case Unit::kMegahertz:
      return " [MHz]";
    case Unit::kMebibyte:
      return " [MiB]";
    case Unit::kMebibytePerSecond:
      return " [MiB/s]";
    case Unit::kMillijoule:
      return " [mJ]";
    default:
      return "";
  }
}

std::string_view value_unit(Unit u) {
  switch (u) {
    case Unit::kPercent:
      return " %";
    case Unit::kWatt:
      return " W";
    case Unit::kMegahertz:
      return " MHz";
    case Unit::kMebibyte:
      return " MiB";
    case Unit::kMebibytePerSecond:
      return " MiB/s";
    case Unit::kMillijoule:
      return " mJ";
    default:
      return "";
  }
}

void write_value(fmt::memory_buffer& out, Field f, double v, bool units) {
  auto it = std::back_inserter(out);
  const Unit u = info(f).unit;
  if (std::isnan(v) || !std::isfinite(v)) {
    fmt::format_to(it, "[N/A]");
    return;
  }
  switch (u) {
    case Unit::kPstateNumber:
      if (v >= 0 && v <= 32 && v == std::floor(v))
        fmt::format_to(it, "P{}", static_cast<int>(v));
      else
        fmt::format_to(it, "[N/A]");
      return;
    case Unit::kBitmask:
      if (const auto m = reasons_mask(Reading::of(v)))
        fmt::format_to(it, "0x{:016x}", *m);
      else
        fmt::format_to(it, "[N/A]");
      return;
    case Unit::kWatt:
      fmt::format_to(it, "{:.2f}", v);
      break;
    default:
      if (std::fabs(v) < 9e15)
        fmt::format_to(it, "{}", static_cast<long long>(std::llround(v)));
      else
        fmt::format_to(it, "{:.0f}", v);
      break;
  }
  if (units) fmt::format_to(it, "{}", value_unit(u));
}

std::string_view missing_marker(const GpuSeries& g, Field f) {
  const auto it = g.unsupported.find(f);
  if (it == g.unsupported.end()) return "[N/A]";
  if (it->second == nvml_code::kNoPermission) return "[Insufficient Permissions]";
  if (it->second == nvml_code::kNotSupported) return "[Not Supported]";
  return "[N/A]";
}

std::string_view or_na(const std::string& s) {
  return s.empty() ? std::string_view("[N/A]") : std::string_view(s);
}

}  // namespace

bool looks_like_smi_csv(std::string_view head) {
  return log_reader::guarded_check([&] {
    head = text::strip_bom(head);
    if (text::looks_binary(head.substr(0, 4096))) return false;
    text::LineReader lines(head);
    std::string_view line;
    while (lines.next(line) && text::is_blank(line)) {
    }
    line = text::trim(line);
    if (line.empty()) return false;
    std::vector<std::string_view> cells;
    text::split_trimmed(line, ',', cells);
    if (is_header(cells, true)) return true;
    // Headerless (noheader): rows that start with nvidia-smi's own timestamp layout.
    return cells.size() >= 2 && cells[0].size() >= 19 && cells[0][4] == '/' &&
           text::parse_timestamp_ms(cells[0]).has_value();
  });
}

Result<Recording> read_smi_csv(std::string_view text, const std::string& origin,
                               const SmiCsvOptions& opt) {
  return log_reader::guarded_read(origin, "nvidia-smi log", [&] {
    Reader reader(text, origin, opt);
    return reader.run();
  });
}

std::string write_smi_csv(const Recording& rec, bool units) {
  std::vector<Field> fields;
  for (const auto& fi : all_fields()) {
    if (canonical_smi_name(fi.field).empty()) continue;
    const bool present = std::any_of(rec.gpus.begin(), rec.gpus.end(), [&](const GpuSeries& g) {
      return g.has(fi.field) || g.unsupported.count(fi.field) > 0;
    });
    if (present) fields.push_back(fi.field);
  }
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "timestamp, index, name, pci.bus_id, uuid");
  for (const Field f : fields)
    fmt::format_to(it, ", {}{}", canonical_smi_name(f), header_unit(info(f).unit));
  fmt::format_to(it, "\n");

  // Rows in time order, GPUs in order within one time, as nvidia-smi writes them.
  std::vector<std::tuple<int64_t, size_t, size_t>> rows;  // (unix ms, gpu, row)
  size_t total = 0;
  for (const auto& g : rec.gpus) total += g.size();
  rows.reserve(total);
  for (size_t gi = 0; gi < rec.gpus.size(); ++gi) {
    const auto& ts = rec.gpus[gi].time_s;
    for (size_t r = 0; r < ts.size(); ++r)
      rows.emplace_back(rec.start_unix_ms + static_cast<int64_t>(std::llround(ts[r] * 1000)), gi,
                        r);
  }
  std::sort(rows.begin(), rows.end());
  for (const auto& [ms, gi, r] : rows) {
    const GpuSeries& g = rec.gpus[gi];
    fmt::format_to(it, "{}, {}, {}, {}, {}", text::format_timestamp_ms(ms), g.info.index,
                   or_na(g.info.name), or_na(g.info.pci_bus_id), or_na(g.info.uuid));
    for (const Field f : fields) {
      fmt::format_to(it, ", ");
      if (const auto* col = g.column(f))
        write_value(out, f, (*col)[r], units);
      else
        fmt::format_to(it, "{}", missing_marker(g, f));
    }
    fmt::format_to(it, "\n");
  }
  return fmt::to_string(out);
}

}  // namespace gpudoctor
