// The generic CSV reader's rows: records from the text or a table of cells, their times, the GPU
// each belongs to, and their cells as values (markers of no value, units in the cells, reasons).
#include "formats/generic_csv.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
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
#include "formats/generic_csv_reader.hpp"
#include "formats/log_time.hpp"
#include "formats/log_units.hpp"
#include "formats/no_value.hpp"
#include "text/text.hpp"

namespace gpudoctor::generic_csv_reader {

using text::contains_ci;

// Markers of "no value": the one rule (formats/no_value).
Cell classify_marker(std::string_view v) {
  switch (csv::no_value(v)) {
    case csv::NoValue::kNone:
      return Cell::kBad;
    case csv::NoValue::kNotSupported:
      return Cell::kNotSupported;
    case csv::NoValue::kNoPermission:
      return Cell::kNoPermission;
    case csv::NoValue::kMissing:
    case csv::NoValue::kError:
      return Cell::kMissing;
  }
  return Cell::kBad;
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
  constexpr size_t kN = std::size(kCodes);
  // Each code's NVML bit (0 for none), looked up once.
  static const std::array<uint64_t, kN> kBits = [] {
    std::array<uint64_t, kN> b{};
    for (size_t i = 0; i < kN; ++i)
      for (const auto& r : clock_reasons())
        if (!kCodes[i].nvml.empty() && r.code == kCodes[i].nvml) b[i] = r.bit;
    return b;
  }();
  uint64_t mask = 0;
  if (const auto n = text::parse_int(v)) {
    if (*n < 0 || *n > 0xFFFF) return Cell::kBad;
    for (size_t i = 0; i < kN; ++i)
      if (static_cast<uint64_t>(*n) & kCodes[i].gpuz) mask |= kBits[i];
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
    for (size_t k = 0; k < kN; ++k)
      if (iequals(v.substr(i, j - i), kCodes[k].word)) {
        ++known;
        mask |= kBits[k];
      }
    i = j;
  }
  if (words == 0 || known != words) return classify_marker(v);
  out = static_cast<double>(mask);
  return Cell::kValue;
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
  // A number followed by a unit ("152.34 W", "45 %": nvidia-smi without nounits): read once,
  // as such, rather than tried as a bare number first.
  const char first = v.front(), last = v.back();
  const bool suffixed =
      (is_digit(first) || first == '-' || first == '.') &&
      (last == '%' || (last >= 'A' && last <= 'Z') || (last >= 'a' && last <= 'z'));
  if (suffixed && cell_with_unit(col, u, v, out, cell_unit)) return Cell::kValue;
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
  if (!suffixed && cell_with_unit(col, u, v, out, cell_unit)) return Cell::kValue;
  return Cell::kBad;
}

// The common case of a column whose cells carry their unit: the unit of the column's last such
// cell again ("152.34 W" under "150.00 W"), read without asking the unit table.
bool Reader::same_unit_cell(size_t col, Unit u, std::string_view v, double& out) const {
  const auto& [unit_text, token] = cell_units_[col];
  const size_t n = v.size(), k = unit_text.size();
  if (k == 0 || n <= k || token == nullptr || token->kind != 0 || token->unit != u ||
      !text::equal_small(v.substr(n - k), unit_text))
    return false;
  const std::string_view number = v.substr(0, n - k);
  if (number.back() != ' ' && !is_digit(number.back()) && number.back() != '.') return false;
  if (!text::parse_double(number, out)) return false;
  out = text::scaled(out, token->factor);
  return true;
}

// A value with its unit: "152.3 W", "45 %", "30512 MiB", in the field's unit.
bool Reader::cell_with_unit(size_t col, Unit u, std::string_view v, double& out, bool& cell_unit) {
  const auto nu = text::parse_number_with_unit(v);
  if (!nu || nu->unit.empty()) return false;
  // A column's cells say their unit the same way row after row: looked up once.
  auto& [unit_text, token] = cell_units_[col];
  if (unit_text != nu->unit) {
    unit_text.assign(nu->unit);
    token = unit_of(normalise(nu->unit));
  }
  const UnitToken* t = token;
  if (t == nullptr || t->kind != 0 || t->unit != u) return false;
  out = text::scaled(nu->value, t->factor);
  cell_unit = true;
  return true;
}

void Reader::decide_time(const std::vector<std::string_view>& cells) {
  const Column& tc = cols_[static_cast<size_t>(time_col_)];
  const std::string_view v = cells[static_cast<size_t>(time_col_)];
  if (v.empty()) return;
  bool zoned = false;
  if (parse_datetime(v, zoned)) {
    mode_ = TimeMode::kDateTime;
  } else if (date_col_ >= 0 && parse_compact_date(cells[static_cast<size_t>(date_col_)]) &&
             parse_time_of_day(v)) {
    mode_ = TimeMode::kDateAndTod;
  } else if (parse_time_of_day(v)) {
    mode_ = TimeMode::kTimeOfDay;
  } else if (double x = 0; parse_num(v, x)) {
    const double a = std::fabs(x);
    if (tc.m.time_unit_s > 0) {
      ms_per_unit_ = tc.m.time_unit_s * 1000;
      time_unit_named_ = true;
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
  if (have_last_time_ && text::equal_small(v, last_time_text_.view()) &&
      text::equal_small(date, last_date_text_.view())) {
    ms = last_time_ms_;
    return true;
  }
  const bool read = row_time_of(cells, v, line_no, ms);
  have_last_time_ = read && last_time_text_.keep(v) && last_date_text_.keep(date);
  last_time_ms_ = ms;
  return read;
}

namespace {

// An ISO date and a time to the second, "2024/03/14 10:15:02" or "2024-03-14T10:15:02.123" (a
// fraction of up to three digits, after '.' or ','; no zone): where its seconds start, and the
// milliseconds from there on. What parse_timestamp_ms adds to the minute for them, exactly.
bool iso_seconds(std::string_view s, size_t& at, int64_t& ms) {
  const size_t n = s.size();
  if (n < 19 || (s[4] != '-' && s[4] != '/')) return false;
  size_t digits = 0;
  while (digits < 4 && is_digit(s[n - 1 - digits])) ++digits;
  size_t end = n;  // of the seconds' two digits
  int64_t frac = 0;
  if (digits == 2 && s[n - 3] == ':') {
    end = n;
  } else if (digits >= 1 && digits <= 3 && (s[n - 1 - digits] == '.' || s[n - 1 - digits] == ',')) {
    end = n - 1 - digits;
    for (size_t k = 0; k < 3; ++k) frac = frac * 10 + (k < digits ? s[end + 1 + k] - '0' : 0);
  } else {
    return false;
  }
  if (end < 6 || s[end - 3] != ':' || s[end - 6] != ':' || !is_digit(s[end - 2]) ||
      !is_digit(s[end - 1]))
    return false;
  const int64_t sec = (s[end - 2] - '0') * 10 + (s[end - 1] - '0');
  if (sec > 60) return false;  // (parse_timestamp_ms takes a leap second, no more)
  at = end - 2;
  ms = sec * 1000 + frac;
  return true;
}

}  // namespace

bool Reader::row_time_of(const std::vector<std::string_view>& cells, std::string_view v,
                         size_t line_no, double& ms) {
  bool ok = false;
  switch (mode_) {
    case TimeMode::kUndecided:
      break;
    case TimeMode::kDateTime: {
      // Most times of a log differ from the last only in their seconds: read from its minute.
      const std::string_view s = text::trim(v);
      size_t at = 0;
      int64_t sec_ms = 0;
      const bool has_seconds = iso_seconds(s, at, sec_ms);
      if (has_seconds && minute_len_ == at && std::memcmp(s.data(), minute_text_, at) == 0) {
        ms = static_cast<double>(minute_ms_ + sec_ms);
        ok = true;
        break;
      }
      bool zoned = false;
      if (const auto x = parse_datetime(v, zoned)) {
        ms = static_cast<double>(*x);
        any_unzoned_ = any_unzoned_ || !zoned;
        ok = true;
        if (has_seconds && !zoned && at <= sizeof minute_text_) {
          std::memcpy(minute_text_, s.data(), at);
          minute_len_ = at;
          minute_ms_ = *x - sec_ms;
        }
      }
      break;
    }
    case TimeMode::kDateAndTod: {
      const auto d = parse_compact_date(cells[static_cast<size_t>(date_col_)]);
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
        // Whole milliseconds (no binary fraction of a second or minute), but the microseconds of
        // a finer unit (DCGM stamps its values in microseconds) are kept.
        ms = ms_per_unit_ >= 1 ? std::round(x * ms_per_unit_) : x * ms_per_unit_;
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
  if (!ok && mode_ == TimeMode::kDateAndTod) {
    problem(bad_time_, line_no, "cannot read the date and time \"{} {}\"",
            cells[static_cast<size_t>(date_col_)], v);
    return false;
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
    // Rows usually go round the GPUs in order. (Not `% n`: a division per row.)
    const size_t next = last_slot_ + 1 < n ? last_slot_ + 1 : 0;
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

void Reader::read_cells(GpuState& g, double t, int wide, const std::vector<std::string_view>& cells,
                        size_t line_no) {
  const auto& fields = fields_of_[static_cast<size_t>(wide + 1)];
  const size_t row_no = g.series.size();
  if (last_cells_.size() < fields_.size()) last_cells_.resize(fields_.size());
  for (const size_t k : fields) {
    const FieldCol& fc = fields_[k];
    const Column& c = cols_[fc.col];
    const std::string_view v = cells[fc.col];
    double x = 0;
    bool cell_unit = false;
    const size_t fi = index_of(fc.field);
    LastCell& last = last_cells_[k];
    Cell kind;
    if (last.col == fc.col && text::equal_small(v, last.view())) {
      kind = last.kind, x = last.x, cell_unit = last.cell_unit;
    } else {
      kind = !cell_units_[fc.col].first.empty() && same_unit_cell(fc.col, fc.unit, v, x)
                 ? (cell_unit = true, Cell::kValue)
                 : parse_cell(fc.col, fc.unit, v, x, cell_unit);
      if (kind != Cell::kBad)
        last.keep(fc.col, v, kind, x, cell_unit);
      else
        last.col = SIZE_MAX;
    }
    switch (kind) {
      case Cell::kValue: {
        double& cell = row_[fi];
        if (!g.series.columns[fi]) {
          g.series.columns[fi] = FieldColumn::constant(kMissing, row_no);
          g.present.push_back(static_cast<uint8_t>(fi));
        }
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
      case Cell::kNoPermission:
        ++g.counts.no_permission[fi];
        break;
      case Cell::kBad:
        problem(bad_cell_, line_no, "{}: cannot read \"{}\"", c.name, v);
        break;
    }
  }
  TimeColumn& times = g.series.time_s;
  if (times.size() == times.capacity()) times.reserve(rows_ahead(row_no, row_no + 1));
  // The row: a value or NaN in each of the GPU's columns (those this row had no cell for
  // included), and row_ NaN again for the next.
  times.push_back(t);
  const size_t room = times.capacity();
  for (const uint8_t fi : g.present) {
    g.series.columns[fi].push_back(row_[fi], room);
    row_[fi] = kMissing;
  }
  for (const size_t k : infos_of_[static_cast<size_t>(wide + 1)]) {
    const InfoCol& ic = infos_[k];
    DeviceInfo& d = g.series.info;
    if (ic.role == Role::kPersistence || ic.role == Role::kMigMode) {
      auto& mode = ic.role == Role::kPersistence ? d.persistence_mode : d.mig_mode;
      if (!mode) mode = text::parse_enabled(cells[ic.col]);
      continue;
    }
    std::string* target = ic.role == Role::kName     ? &d.name
                          : ic.role == Role::kUuid   ? &d.uuid
                          : ic.role == Role::kSerial ? &d.serial
                                                     : &d.pci_bus_id;
    if (!target->empty()) continue;
    const std::string_view v = cells[ic.col];
    if (classify_marker(v) == Cell::kBad) *target = std::string(v);
  }
}

size_t Reader::rows_ahead(size_t n, size_t need) const {
  const size_t doubled = std::max(need, 2 * n);
  // A guess from the first few rows is off by what makes them unlike the rest (a header, longer
  // first values): doublings up to a thousand rows (8 KiB a column), a guess from there on (a
  // chunk's reader: from its 16th row, below).
  double read = 0, all = 0;
  // (A chunk's reader guesses from its chunk: the rows it will read, not the text's.)
  const std::string_view span = chunk_ ? chunk_->text : body_;
  if (table_) {
    read = static_cast<double>(table_read_), all = static_cast<double>(table_->rows());
  } else if (read_to_ != nullptr && read_to_ > span.data() &&
             read_to_ <= span.data() + span.size()) {
    read = static_cast<double>(read_to_ - span.data()), all = static_cast<double>(span.size());
  }
  // (A chunk has no header, and its reader may meet 64 GPUs' rows in it: its guess comes sooner.)
  if (n < (chunk_ ? 16U : 1024U) || read <= 0) return doubled;
  // As many rows per byte (or table row) in the rest as in what is read, and a tenth more: a
  // guess too high costs address space only (pages never written are never mapped), one too low
  // a copy of the column (as a doubling would). Never less than half as much again: a GPU first
  // seen late would otherwise grow by a tenth at a time. The worst guess is a file sorted by GPU:
  // the first GPU's rows come at the rate of all of them, and it reserves the file's rows (the
  // GPUs after it guess from bytes that held the others' rows, low, and grow by halves).
  const double guess = static_cast<double>(n) * all / read;
  return std::max({need, n + n / 2, static_cast<size_t>(guess * 1.1)});
}

void Reader::reset_rows() {
  // The last cells too: parsing a cell says things about the text (decimal commas) that a
  // second reading must learn again.
  last_cells_.clear();
  gpus_.clear();
  slots_.clear();
  last_slot_ = 0;
  read_to_ = nullptr;
  table_read_ = 0;
  minute_len_ = 0;
  cached_host_.clear();
  wide_slots_.clear();
  wide_slots_valid_ = false;
  mode_ = TimeMode::kUndecided;
  have_last_time_ = false;
  have_first_ = have_tod_ = any_unzoned_ = decimal_comma_ = time_unit_named_ = false;
  first_ms_ = tod_offset_ms_ = tod_last_ms_ = 0;
  round_ = 0;
  timed_rows_ = 0;
  row_times_.clear();
  times_in_series_ = true;
  times_slot_ = std::string_view::npos;
  header_changes_ = 0;
  data_lines_ = rows_read_ = header_repeats_ = 0;
  wrong_count_ = malformed_ = bad_time_ = bad_gpu_ = not_increasing_ = bad_cell_ = too_many_gpus_ =
      truncated_ = {};
  stats_ = {};
}

void Reader::read_rows() {
  const std::string_view rows = table_ ? std::string_view() : body_.substr(rows_offset_);
  if (table_ || !read_in_chunks(rows)) read_span(rows, rows_line_before_, true);
  after_rows();
}

size_t Reader::read_span(std::string_view rows, size_t line_before, bool last) {
  Records records(rows, sep_, line_before, opt_.read_as);
  // (A chunk's text may start inside a quoted cell: from a chunk with a quote on, the text is read
  // in one pass.)
  if (chunk_) records.stop_at_quotes();
  size_t ncols = cols_.size();
  bool empty_last_name = !header_.empty() && header_.back().empty();
  const bool cut_at_end = last && text::ends_inside_a_line(body_);
  size_t line_no = 0, table_row = 0;
  std::string_view raw;
  const bool table_lets_go = table_ && no_pass_after_this();
  while (true) {
    Records::Next next = Records::Next::kRecord;
    bool footer = false, header_again = false, cut_row = false;
    if (table_) {
      if (table_row >= table_->rows()) break;
      const size_t r = table_row++;
      table_read_ = table_row;
      // (A GPU column that numbers rows, read again without it: none has two rows.)
      if (table_lets_go && rows_read_ > gpus_.size()) table_->done_before(r);
      table_->row(r, cells_);
      line_no = table_->line(r);
      if (table_->is_header(r)) {  // the rows below are read by it
        if (!is_header_again(cells_) && change_header(cells_, {}, line_no)) {
          ncols = cols_.size();
          empty_last_name = !header_.empty() && header_.back().empty();
        }
        continue;
      }
      if (skipped_as_in_csv(cells_)) continue;
      footer = r == footer_row_;
      header_again = is_header_again(cells_);
      cut_row = r + 1 == table_->rows() && table_->last_row_cut();
    } else {
      next = records.next(cells_, line_no, raw);
      read_to_ = rows.data() + records.position();
      if (next == Records::Next::kEnd) break;
      if (next == Records::Next::kQuote) {  // (chunk_ only)
        chunk_->stopped = true;
        invalid_utf8_ = invalid_utf8_ || records.invalid_utf8();
        return records.line();
      }
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
    if (cut_row || (cut_at_end && records.at_end())) {
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
    if (!table_ && (cells_.size() != ncols || !is_digit(text::trim(cells_.front()).front())) &&
        !cells_.front().empty() && is_new_header(cells_)) {
      if (chunk_) {  // the layout changes: the rows from here on are read in order, not here
        chunk_->stopped = true;
        invalid_utf8_ = invalid_utf8_ || records.invalid_utf8();
        return records.line();
      }
      if (change_header(cells_, raw, line_no)) {
        --data_lines_;
        ncols = cols_.size();
        empty_last_name = !header_.empty() && header_.back().empty();
        continue;
      }
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
      // The start is a whole millisecond; times finer than that count from it.
      first_ms_ = std::floor(ms);
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
        read_cells(g, t, static_cast<int>(w), cells_, line_no);
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
    bool time_kept = true;  // (a row's time for the rounds: kept, or in the series if read)
    if (key_col_ >= 0) {
      id = cells_[static_cast<size_t>(key_col_)];
      if (classify_marker(id) != Cell::kBad) {
        problem(bad_gpu_, line_no, "no GPU in column {}",
                cols_[static_cast<size_t>(key_col_)].name);
        continue;
      }
    } else if (timed) {
      const size_t k = timed_rows_++;
      if (positions_.empty()) {
        if (times_in_series_)
          time_kept = false;
        else
          time_not_in_series((ms - first_ms_) / 1000.0);
      } else {
        // A round longer than most (the GPU count is the rounds' usual size): its extra rows
        // belong to no GPU known.
        const uint32_t p = k < positions_.size() ? positions_[k] : UINT32_MAX;
        if (p >= position_ids_.size()) {
          problem(bad_gpu_, line_no, "a row past the {} GPUs of a sampling round",
                  position_ids_.size());
          continue;
        }
        id = position_ids_[p];
      }
    }
    const size_t slot = slot_for(host, id, -1);
    if (slot == std::string_view::npos) {
      if (!time_kept) time_not_in_series((ms - first_ms_) / 1000.0);
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
      if (!time_kept) time_not_in_series(t);
      problem(not_increasing_, line_no, "time {} s is not after the GPU's previous row ({} s)", t,
              g.last_t);
      continue;
    }
    if (!time_kept) {  // (the row is read: its time is its series')
      if (times_slot_ == std::string_view::npos) times_slot_ = slot;
      if (times_slot_ != slot) time_not_in_series(t);
    }
    g.last_t = t;
    read_cells(g, t, -1, cells_, line_no);
    ++rows_read_;
  }
  invalid_utf8_ = invalid_utf8_ || records.invalid_utf8();
  return records.line();
}

const TimeColumn& Reader::row_times() const {
  static const TimeColumn kNone;
  if (!times_in_series_) return row_times_;
  return times_slot_ == std::string_view::npos ? kNone : gpus_[times_slot_].series.time_s;
}

void Reader::time_not_in_series(double t) {
  if (times_in_series_) {
    row_times_ = row_times();
    times_in_series_ = false;
  }
  // (Room as a column's: a guess from the text read, not doublings that copy.)
  if (row_times_.size() == row_times_.capacity())
    row_times_.reserve(rows_ahead(row_times_.size(), row_times_.size() + 1));
  row_times_.push_back(t);
}

bool Reader::no_pass_after_this() const {
  // The passes that may follow (finish_reading, after_rows): a time column whose values may be
  // training epochs; neither a GPU column nor a column per GPU (sampling rounds); a header row
  // that changes the columns; a GPU column that numbers rows (no GPU with two rows: the caller's
  // to see).
  if (table_ && table_->has_header_rows()) return false;
  if (key_col_ < 0 && !wide_) return false;
  if (time_col_ >= 0) {
    const Column& tc = cols_[static_cast<size_t>(time_col_)];
    if (tc.m.rule == Rule::kEpochOnly && !tc.mapped) return false;
  }
  return true;
}

void Reader::after_rows() {
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
    const std::string key_name = cols_[static_cast<size_t>(key_col_)].name;
    restore_first_header();
    for (auto& c : cols_)
      if (c.name == key_name && is_identity(c.m.role)) c.m.role = Role::kIgnore;
    key_col_ = -1;
    key_role_ = Role::kUnknown;
    reset_rows();
    read_rows();
  }
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

}  // namespace gpudoctor::generic_csv_reader
