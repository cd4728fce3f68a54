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

#include "core/clock_reasons.hpp"
#include "core/reading.hpp"
#include "formats/column_catalogue.hpp"
#include "formats/column_groups.hpp"
#include "formats/csv_frame.hpp"
#include "formats/finish.hpp"
#include "formats/log_time.hpp"
#include "formats/log_units.hpp"
#include "formats/text.hpp"

// The reader of CSV logs by column name: the framing layer (csv_frame) gives records of cells,
// the column catalogue (column_catalogue) says what each header cell means, log_time and
// log_units read times and units; this file builds the Recording.

namespace gpudoctor {
namespace {

using namespace csv;  // NOLINT: this reader is the catalogue's client
using text::iequals;

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
  // No marker starts with a digit, and "not supported" needs 12 bytes: "93%", "21234MB" are none.
  if (v.front() >= '0' && v.front() <= '9' && v.size() < 12) return Cell::kBad;
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

// A reason column's cell as clock-event reason bits: a flag column ("Active", "Yes", 1) gives its
// bit; GPU-Z's PerfCap Reason gives its own code (1 Pwr, 2 Thrm, 4 VRel, 8 VOp, 16 Util, 0 none,
// or the words), of which power, thermal and utilisation have an NVML reason.
Cell parse_reason(const Meaning& m, std::string_view v, double& out) {
  if (m.reasons == Reasons::kFlag) {
    static constexpr std::string_view kOn[] = {"active", "yes", "1", "true", "on"};
    static constexpr std::string_view kOff[] = {"not active", "no", "0", "false", "off"};
    for (const auto w : kOn)
      if (iequals(v, w)) {
        out = static_cast<double>(m.bit);
        return Cell::kValue;
      }
    for (const auto w : kOff)
      if (iequals(v, w)) {
        out = 0;
        return Cell::kValue;
      }
    if (const auto x = text::parse_double(v); x && (*x == 0 || *x == 1)) {  // "1.000" (Afterburner)
      out = *x == 1 ? static_cast<double>(m.bit) : 0;
      return Cell::kValue;
    }
    return classify_marker(v);
  }
  struct Code {
    uint64_t gpuz;
    std::string_view word, nvml;
  };
  static constexpr Code kCodes[] = {
      {1, "pwr", "sw_power_cap"}, {2, "thrm", "sw_thermal"}, {4, "vrel", ""}, {8, "vop", ""},
      {16, "util", "gpu_idle"},   {0, "idle", "gpu_idle"}};
  auto bit = [](std::string_view code) -> uint64_t {
    for (const auto& r : clock_reasons())
      if (r.code == code) return r.bit;
    return 0;
  };
  uint64_t mask = 0;
  if (const auto n = text::parse_int(v)) {
    if (*n < 0 || *n > 0xFFFF) return Cell::kBad;
    for (const auto& k : kCodes)
      if (k.gpuz != 0 && (static_cast<uint64_t>(*n) & k.gpuz) && !k.nvml.empty())
        mask |= bit(k.nvml);
    out = static_cast<double>(mask);
    return Cell::kValue;
  }
  // Words: "Pwr", "Thrm, VRel", "VRel.VOp".
  size_t words = 0, known = 0;
  for (size_t i = 0; i < v.size();) {
    while (i < v.size() && !(is_lower(v[i]) || is_upper(v[i]))) ++i;
    size_t j = i;
    while (j < v.size() && (is_lower(v[j]) || is_upper(v[j]))) ++j;
    if (j == i) break;
    ++words;
    for (const auto& k : kCodes)
      if (iequals(v.substr(i, j - i), k.word)) {
        ++known;
        if (!k.nvml.empty()) mask |= bit(k.nvml);
      }
    i = j;
  }
  if (words == 0 || known != words) return classify_marker(v);
  out = static_cast<double>(mask);
  return Cell::kValue;
}

// ---------------------------------------------------------------------------------------------
// Reader

enum class TimeMode : uint8_t { kUndecided, kDateTime, kDateAndTod, kTimeOfDay, kEpoch, kElapsed };

// Identity columns that fill in a GPU's details.
bool is_info(Role r) {
  return r == Role::kName || r == Role::kUuid || r == Role::kBusId || r == Role::kSerial;
}

struct FieldCol {
  size_t col;
  Field field;
  int wide;  // -1, or the position of the column's GPU number in wide_numbers_
  Unit unit = info(field).unit;
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
  // A table already split into cells (flattened JSON, W&B run files, the framing variants): read
  // as its CSV text would be, without the text.
  Reader(const log_reader::CellRows& table, const std::string& origin, const GenericCsvOptions& opt)
      : origin_(origin), opt_(opt), table_(&table) {}

  Result<Recording> run();

 private:
  Result<Recording> finish_reading();
  std::optional<Error> find_header();
  void table_header();
  bool skipped_as_in_csv(const std::vector<std::string_view>& cells) const;
  bool is_header_again(const std::vector<std::string_view>& cells) const;
  std::optional<Error> make_layout();
  void find_footer();
  void split_side_by_side();
  void read_rows();
  void reset_rows();
  bool row_time(const std::vector<std::string_view>& cells, size_t line_no, double& ms);
  bool row_time_of(const std::vector<std::string_view>& cells, std::string_view v, size_t line_no,
                   double& ms);
  void decide_time(const std::vector<std::string_view>& cells);
  size_t slot_for(std::string_view host, std::string_view id, int wide);
  void read_cells(GpuState& g, size_t row, int wide, const std::vector<std::string_view>& cells,
                  size_t line_no);
  Cell parse_cell(size_t col, Unit u, std::string_view v, double& out, bool& cell_unit);
  bool parse_num(std::string_view v, double& out);
  void finish();
  void note(std::string n) { log_reader::add_note(rec_, std::move(n)); }
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, file_line(line_no), f, std::forward<Args>(args)...);
  }
  // The file's line of a record (a table's rows carry the file's own lines already).
  static size_t file_line(size_t n) { return n; }

  std::string_view text_;
  const std::string& origin_;
  const GenericCsvOptions& opt_;
  const log_reader::CellRows* table_ = nullptr;  // set: the rows come from it, not from text_

  // Header and layout.
  std::string_view body_;
  char sep_ = ',';
  size_t rows_offset_ = 0, rows_line_before_ = 0, header_line_no_ = 0;
  std::vector<std::string> header_;
  std::string header_raw_;
  std::vector<Column> cols_;
  int time_col_ = -1, date_col_ = -1, key_col_ = -1, host_col_ = -1, driver_col_ = -1;
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
  // The footer line naming each column's group (HWiNFO's sensor groups), and the names of the
  // GPUs read from side-by-side columns of the same name (by GPU number).
  std::string footer_raw_;
  size_t footer_row_ = SIZE_MAX;  // a table's footer row
  std::vector<std::string> groups_;
  std::map<int, std::string> group_names_;

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
  bool have_last_time_ = false;  // the last row's time, and the text it was read from
  std::string last_time_text_, last_date_text_;
  double last_time_ms_ = 0;
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
  std::vector<std::pair<std::string, const UnitToken*>> cell_units_;  // per column: the last unit
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
                                   origin_, file_line(line_no)));
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
      return c.m.role == Role::kField || c.m.role == Role::kReason || c.bare;
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
  cell_units_.assign(cols_.size(), {});

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
      if (m.role == Role::kField && c.gpu < 0) c.gpu = c.unknown_wide_gpu;  // per_gpu.0=power_w
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

  find_footer();
  split_side_by_side();

  // Columns that name GPUs but not the quantity.
  std::vector<std::string_view> bare;
  for (const auto& c : cols_)
    if (c.bare) bare.push_back(c.name);

  // Time, date, host, GPU key: the first of each kind; later ones are noted and ignored.
  std::array<int, 16> first{};
  first.fill(-1);
  bool any_wide = false, any_field = false;
  for (const auto& c : cols_) {
    if (c.m.role != Role::kField && c.m.role != Role::kReason) continue;
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
          origin_, file_line(header_line_no_), fmt::join(bare, ", "), wide_pattern(bare.front())));
    return usage_error(fmt::format(
        "{}:{}: no column gpudoctor recognises in the header ({}); name the columns with --map "
        "COLUMN=FIELD (field ids: gpudoctor fields)",
        origin_, file_line(header_line_no_), fmt::join(names, ", ")));
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
    if (c.m.role == Role::kReason) {  // one of several: ORed into clock_event_reasons, no duplicate
      field_in_log_[index_of(Field::kClockEventReasons)] = true;
      if (wide_ && c.gpu < 0) {
        ignored_notes_.push_back(
            fmt::format("column {} ignored: the file has one column per GPU and {} names no GPU",
                        c.name, c.name));
        c.m.role = Role::kIgnore;
        continue;
      }
      fields_.push_back({i, Field::kClockEventReasons, wide_ ? c.gpu : -1});
      continue;
    }
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
    if (c.gpu >= 0 && is_info(c.m.role)) {
      infos_.push_back({i, c.m.role, c.gpu});
      continue;
    }
    int& f = first[role];
    if (f >= 0 && !is_info(c.m.role)) {
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
  driver_col_ = first[static_cast<size_t>(Role::kDriver)];
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
      if (is_info(r)) infos_.push_back({i, r, -1});
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

bool is_quantity(Role r) {
  return r == Role::kField || r == Role::kReason;
}

// The last line of the file, when it names each column's group: HWiNFO writes each column's
// sensor group ("GPU [#0]: NVIDIA GeForce RTX 4090") on a line under the data. Taken as such when
// it has the header's number of cells, nothing under the time and date and, under every quantity,
// text that is neither a number nor a no-value marker.
void Reader::find_footer() {
  std::vector<std::string_view> cells;
  std::string_view raw;
  Records r({}, sep_, 0);
  if (table_) {
    if (table_->rows() == 0) return;
    table_->row(table_->rows() - 1, cells);
    if (skipped_as_in_csv(cells) || is_header_again(cells)) return;
  } else {
    const std::string_view rest = body_.substr(std::min(rows_offset_, body_.size()));
    size_t end = rest.size();
    while (end > 0 && (rest[end - 1] == '\n' || rest[end - 1] == '\r' || rest[end - 1] == ' ' ||
                       rest[end - 1] == '\t'))
      --end;
    if (end == 0) return;
    const size_t nl = rest.rfind('\n', end - 1);
    const size_t begin = nl == std::string_view::npos ? 0 : nl + 1;
    r = Records(rest.substr(begin, end - begin), sep_, 0);
    size_t ln = 0;
    if (r.next(cells, ln, raw) != Records::Next::kRecord || raw == header_raw_) return;
  }
  const size_t ncols = cols_.size();
  if (cells.size() == ncols + 1 && cells.back().empty()) cells.pop_back();
  if (cells.size() + 1 == ncols && !header_.empty() && header_.back().empty()) cells.push_back({});
  if (cells.size() != ncols) return;
  bool any = false;
  for (size_t i = 0; i < ncols; ++i) {
    const Role role = cols_[i].m.role;
    const std::string_view v = cells[i];
    if (role == Role::kTime || role == Role::kDate) {
      if (!v.empty()) return;
    } else if (is_quantity(role)) {
      if (v.empty() || text::parse_double(v) || classify_marker(v) != Cell::kBad ||
          is_digit(v.front()))
        return;
      any = true;
    }
  }
  if (!any) return;
  if (table_)
    footer_row_ = table_->rows() - 1;
  else
    footer_raw_ = std::string(raw);
  groups_.assign(cells.begin(), cells.end());
}

void Reader::split_side_by_side() {
  SideBySide split = csv::split_side_by_side(cols_, groups_);
  group_names_ = std::move(split.names);
  for (auto& n : split.notes) note(std::move(n));
  for (auto& n : split.ignored) ignored_notes_.push_back(std::move(n));
}

bool Reader::parse_num(std::string_view v, double& out) {
  if (text::parse_double(v, out)) return true;
  // "152,3" in a ';' or tab separated file: a decimal comma.
  if (sep_ == ',' || v.size() > 60) return false;
  const size_t comma = v.find(',');
  if (comma == std::string_view::npos || v.find(',', comma + 1) != std::string_view::npos ||
      v.find('.') != std::string_view::npos)
    return false;
  char buf[64];
  std::memcpy(buf, v.data(), v.size());
  buf[comma] = '.';
  if (!text::parse_double(std::string_view(buf, v.size()), out)) return false;
  decimal_comma_ = true;
  return true;
}

Cell Reader::parse_cell(size_t col, Unit u, std::string_view v, double& out, bool& cell_unit) {
  const Column& c = cols_[col];
  cell_unit = false;
  if (v.empty()) return Cell::kMissing;
  if (c.m.role == Role::kReason) return parse_reason(c.m, v, out);
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
  if (parse_num(v, out)) {
    if (c.m.factor != 1) out = text::scaled(out, c.m.factor);
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
    // A column's cells say their unit the same way row after row: looked up once.
    auto& [unit_text, token] = cell_units_[col];
    if (unit_text != nu->unit) {
      unit_text.assign(nu->unit);
      token = unit_of(normalise(nu->unit));
    }
    const UnitToken* t = token;
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
  } else if (double x = 0; parse_num(v, x)) {
    const double a = std::fabs(x);
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
  // The rows of one sample of several GPUs carry the same time: read once.
  const std::string_view date =
      mode_ == TimeMode::kDateAndTod ? cells[static_cast<size_t>(date_col_)] : std::string_view();
  if (have_last_time_ && v == last_time_text_ && date == last_date_text_) {
    ms = last_time_ms_;
    return true;
  }
  const bool read = row_time_of(cells, v, line_no, ms);
  have_last_time_ = read;
  if (read) {
    last_time_text_.assign(v);
    last_date_text_.assign(date);
    last_time_ms_ = ms;
  }
  return read;
}

bool Reader::row_time_of(const std::vector<std::string_view>& cells, std::string_view v,
                         size_t line_no, double& ms) {
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
      if (double x = 0; parse_num(v, x)) {
        ms = std::round(x * ms_per_unit_);
        ok = std::fabs(ms) < 1e16;
      }
      break;
    case TimeMode::kElapsed:
      if (double x = 0; parse_num(v, x)) {
        ms = x * ms_per_unit_;
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
    if (const auto it = group_names_.find(wide_numbers_[static_cast<size_t>(wide)]);
        it != group_names_.end())
      g.series.info.name = it->second;
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
    switch (parse_cell(fc.col, fc.unit, v, x, cell_unit)) {
      case Cell::kValue: {
        std::vector<double>* column = g.series.columns[fi].get();
        if (column == nullptr) column = &g.series.column_for_write(fc.field);
        double& cell = (*column)[row];
        if (c.m.role == Role::kReason && !is_missing(cell))
          cell = static_cast<double>(static_cast<uint64_t>(cell) | static_cast<uint64_t>(x));
        else
          cell = x;
        ++g.counts.value[fi];
        if (c.m.rule != Rule::kAsIs) {
          Stats& s = stats_[fi];
          if (cell_unit) {
            s.cell_unit = true;
          } else {
            ++s.n;
            s.max = std::max(s.max, x);
            // (A conversion, not floor(): a call per value otherwise. Beyond 2^53 all are whole.)
            s.fraction = s.fraction ||
                         (std::fabs(x) < 9e15 && x != static_cast<double>(static_cast<int64_t>(x)));
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
    std::string* target = ic.role == Role::kName     ? &d.name
                          : ic.role == Role::kUuid   ? &d.uuid
                          : ic.role == Role::kSerial ? &d.serial
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
  have_last_time_ = false;
  have_first_ = have_tod_ = any_unzoned_ = decimal_comma_ = false;
  first_ms_ = tod_offset_ms_ = tod_last_ms_ = 0;
  round_ = 0;
  data_lines_ = rows_read_ = header_repeats_ = 0;
  wrong_count_ = malformed_ = bad_time_ = bad_gpu_ = not_increasing_ = bad_cell_ = too_many_gpus_ =
      truncated_ = {};
  stats_ = {};
}

void Reader::read_rows() {
  Records records(table_ ? std::string_view() : body_.substr(rows_offset_), sep_,
                  rows_line_before_);
  const size_t ncols = cols_.size();
  const bool empty_last_name = !header_.empty() && header_.back().empty();
  const bool cut_at_end = text::ends_inside_a_line(body_);
  size_t line_no = 0, table_row = 0;
  std::string_view raw;
  while (true) {
    Records::Next next = Records::Next::kRecord;
    bool footer = false, header_again = false;
    if (table_) {
      if (table_row >= table_->rows()) break;
      const size_t r = table_row++;
      table_->row(r, cells_);
      line_no = table_->line(r);
      if (skipped_as_in_csv(cells_)) continue;
      footer = r == footer_row_;
      header_again = is_header_again(cells_);
    } else {
      next = records.next(cells_, line_no, raw);
      if (next == Records::Next::kEnd) break;
      footer = !footer_raw_.empty() && raw == footer_raw_;
      header_again = raw == header_raw_;
    }
    ++data_lines_;
    if (footer) {  // the groups' names, read in make_layout
      --data_lines_;
      continue;
    }
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
    if (header_again) {  // the header again (a logger restarted, files concatenated)
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
    if (driver_col_ >= 0 && rec_.system.driver_version.empty() &&
        classify_marker(cells_[static_cast<size_t>(driver_col_)]) == Cell::kBad)
      rec_.system.driver_version = std::string(cells_[static_cast<size_t>(driver_col_)]);

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

// A table's header: its names, as a CSV reader would take them (trimmed).
void Reader::table_header() {
  header_.clear();
  for (size_t i = 0; i < table_->columns(); ++i) header_.emplace_back(text::trim(table_->name(i)));
  header_line_no_ = table_->header_line();
}

// The rows a CSV reader of the table's text would not see: a blank line, a '#' comment.
bool Reader::skipped_as_in_csv(const std::vector<std::string_view>& cells) const {
  if (cells.empty() || (cells.size() == 1 && cells.front().empty())) return true;
  const std::string_view first = cells.front();
  if (first.empty() || first.front() != '#') return false;
  for (const char c : first)  // (a cell with a separator or quote would be quoted: no comment)
    if (c == ',' || c == '"' || c == '\r' || c == '\n') return false;
  return true;
}

bool Reader::is_header_again(const std::vector<std::string_view>& cells) const {
  if (cells.size() != header_.size()) return false;
  for (size_t i = 0; i < cells.size(); ++i)
    if (cells[i] != header_[i]) return false;
  return true;
}

Result<Recording> Reader::run() {
  if (table_) {
    if (opt_.power_limit_w && !(std::isfinite(*opt_.power_limit_w) && *opt_.power_limit_w > 0))
      return usage_error(
          fmt::format("--power-limit: expected watts above 0, got {}", *opt_.power_limit_w));
    table_header();
    if (auto e = make_layout()) return std::move(*e);
    read_rows();
    return finish_reading();
  }
  body_ = text::strip_bom(text_);
  if (auto e = text::check_input(body_, origin_, "a CSV log", opt_.power_limit_w))
    return std::move(*e);
  if (auto e = find_header()) return std::move(*e);
  if (auto e = make_layout()) return std::move(*e);
  read_rows();
  return finish_reading();
}

Result<Recording> Reader::finish_reading() {
  // "epoch" may be a Unix time or a training epoch (Lightning's CSV logs): a time only when its
  // values are Unix times.
  if (time_col_ >= 0) {
    Column& tc = cols_[static_cast<size_t>(time_col_)];
    if (tc.m.rule == Rule::kEpochOnly && !tc.mapped && mode_ != TimeMode::kEpoch) {
      ignored_notes_.push_back(fmt::format(
          "column {} ignored: its values are not Unix times (a training epoch?)", tc.name));
      tc.m.role = Role::kIgnore;
      time_col_ = -1;
      reset_rows();
      read_rows();
    }
  }
  if (rows_read_ == 0) {
    if (data_lines_ == 0)
      return usage_error(fmt::format("{}:{}: a header line but no data rows{}", origin_,
                                     file_line(header_line_no_), text::cut_short_suffix(text_)));
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
      case Rule::kMhzOrGhz:
        if (s.max < 10 && s.fraction) {
          auto_factor[fi] = 1e3;
          auto_how[fi] = "GHz: every value below 10";
        }
        break;
      case Rule::kMibOrBytes:
        if (s.max > 1e6) {
          auto_factor[fi] = 1 / kMiB;
          auto_how[fi] = "bytes: values exceed any GPU's memory in MiB";
        }
        break;
      case Rule::kAsIs:
      case Rule::kEpochOnly:
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
  return log_reader::guarded_check([&] {
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
        return col.m.role == Role::kField || col.m.role == Role::kReason || col.bare;
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
  });
}

Result<Recording> read_generic_csv(std::string_view text, const std::string& origin,
                                   const GenericCsvOptions& opt) {
  return log_reader::guarded_read(origin, "CSV log", [&] {
    Reader reader(text, origin, opt);
    return reader.run();
  });
}

Result<Recording> read_generic_csv(const log_reader::CellRows& rows, const std::string& origin,
                                   const GenericCsvOptions& opt) {
  return log_reader::guarded_read(origin, "CSV log", [&] {
    Reader reader(rows, origin, opt);
    return reader.run();
  });
}

}  // namespace gpudoctor
