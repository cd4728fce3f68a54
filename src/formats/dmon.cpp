#include "formats/dmon.hpp"

#include <ctime>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <exception>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/finish.hpp"
#include "formats/log_time.hpp"
#include "formats/log_units.hpp"
#include "formats/no_value.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using text::iequals;

// ---------------------------------------------------------------------------------------------
// Columns

enum class Kind : uint8_t {
  kUnknown,    // not a dmon name gpudoctor knows: ignored, listed in a note
  kIgnored,    // a dmon column with no gpudoctor field (jpg, pviol, bar1, ...): listed in a note
  kDuplicate,  // a second column for a quantity an earlier column already gives
  kGpu,
  kDate,
  kTime,
  kField,
};

struct Name {
  std::string_view key;  // lower case, without spaces or underscores
  Kind kind;
  Field field;
};

// dmon's column names, by -s letter. Where a name differs between driver versions all spellings
// are listed; names are compared case-insensitively, ignoring spaces and underscores ("sm util").
constexpr Name kNames[] = {
    {"gpu", Kind::kGpu, Field{}},
    {"date", Kind::kDate, Field{}},
    {"time", Kind::kTime, Field{}},
    // -s p: power and temperatures. Drivers before the memory temperature wrote "temp".
    {"pwr", Kind::kField, Field::kPower},
    {"gtemp", Kind::kField, Field::kTemp},
    {"temp", Kind::kField, Field::kTemp},
    {"mtemp", Kind::kField, Field::kTempMem},
    // -s u: utilization. dmon's "sm" column is NVML's utilization.gpu, i.e. nvidia-smi's GPU-Util:
    // the share of the sample period in which any kernel ran. It is not SM activity (how many SMs
    // were busy); that is GPM's smutil below.
    {"sm", Kind::kField, Field::kUtilGpu},
    {"mem", Kind::kField, Field::kUtilMem},
    {"enc", Kind::kField, Field::kUtilEnc},
    {"dec", Kind::kField, Field::kUtilDec},
    {"jpg", Kind::kIgnored, Field{}},
    {"ofa", Kind::kIgnored, Field{}},
    // -s c: clocks. pclk is the graphics/SM ("processor") clock.
    {"mclk", Kind::kField, Field::kClockMem},
    {"pclk", Kind::kField, Field::kClockSm},
    // -s v: power / thermal violation (% of time, and a flag): no gpudoctor field.
    {"pviol", Kind::kIgnored, Field{}},
    {"tviol", Kind::kIgnored, Field{}},
    // -s m: memory. dmon's "MB" are MiB (NVML's bytes / 2^20).
    {"fb", Kind::kField, Field::kMemUsed},
    {"bar1", Kind::kIgnored, Field{}},
    {"ccpm", Kind::kIgnored, Field{}},
    // -s e: ECC and PCIe replay error counts.
    {"sbecc", Kind::kIgnored, Field{}},
    {"dbecc", Kind::kIgnored, Field{}},
    {"pci", Kind::kIgnored, Field{}},
    // -s t: PCIe throughput. dmon's "MB/s" are MiB/s (NVML's KB/s / 1024).
    {"rxpci", Kind::kField, Field::kPcieRx},
    {"txpci", Kind::kField, Field::kPcieTx},
    // --gpm-metrics (units "GPM:%", "GPM:MiB/s"): 1 gract, 2 smutil, 3 smocc, 4 intutil, 5 mmaact
    // (any tensor pipe), 10 dram, 11-13 fp64/fp32/fp16, 20/21 pcitx/pcirx, 60/61 nvlrx/nvltx.
    {"gract", Kind::kField, Field::kGpmGraphicsUtil},
    {"smutil", Kind::kField, Field::kGpmSmUtil},
    {"smact", Kind::kField, Field::kGpmSmUtil},
    {"smocc", Kind::kField, Field::kGpmSmOccupancy},
    {"mmaact", Kind::kField, Field::kGpmTensorAny},
    {"tensor", Kind::kField, Field::kGpmTensorAny},
    {"tensorutil", Kind::kField, Field::kGpmTensorAny},
    {"anytensor", Kind::kField, Field::kGpmTensorAny},
    {"dram", Kind::kField, Field::kGpmDramBw},
    {"dramact", Kind::kField, Field::kGpmDramBw},
    {"fp64", Kind::kField, Field::kGpmFp64},
    {"fp32", Kind::kField, Field::kGpmFp32},
    {"fp16", Kind::kField, Field::kGpmFp16},
    {"pcitx", Kind::kField, Field::kGpmPcieTx},
    {"pcirx", Kind::kField, Field::kGpmPcieRx},
    {"nvlrx", Kind::kField, Field::kGpmNvlinkRx},
    {"nvltx", Kind::kField, Field::kGpmNvlinkTx},
    {"intutil", Kind::kIgnored, Field{}},
};

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// raw equals key, case-insensitively, ignoring spaces and underscores in raw.
bool name_is(std::string_view raw, std::string_view key) {
  size_t k = 0;
  for (const char c : raw) {
    if (c == ' ' || c == '\t' || c == '_') continue;
    if (k >= key.size() || lower(c) != key[k]) return false;
    ++k;
  }
  return k == key.size();
}

const Name* find_name(std::string_view raw) {
  for (const auto& n : kNames)
    if (name_is(raw, n.key)) return &n;
  return nullptr;
}

using text::is_space;
using text::split_ws;

// The factor that turns a value in dmon's unit into the field's unit (the one unit table, after
// dmon's "GPM:" prefix); nullopt: a unit no reader knows.
std::optional<double> unit_factor(Unit u, std::string_view s) {
  if (text::istarts_with(s, "GPM:")) s.remove_prefix(4);
  return csv::unit_factor(u, s);
}

struct Column {
  Kind kind = Kind::kUnknown;
  Field field{};
  std::string_view name;  // as written
  double scale = 1;       // dmon's unit to the field's
  int dup_of = -1;        // kDuplicate: the column kept
};

struct Layout {
  std::vector<Column> cols;
  std::string key;                          // the names, lower case, one space apart
  std::string_view names_line, units_line;  // trimmed; units_line empty until one applied
  int gpu = -1, date = -1, time = -1;
  bool valid() const { return !cols.empty(); }
};

std::string names_key(const std::vector<std::string_view>& tokens) {
  std::string k;
  for (const auto t : tokens) {
    if (!k.empty()) k += ' ';
    for (const char c : t) k += lower(c);
  }
  return k;
}

// cols from names; key from the tokens of the names line (the same for names merged by
// merge_names, so a repeated header compares equal).
Layout make_layout(const std::vector<std::string_view>& names, std::string_view names_line,
                   std::string key) {
  Layout L;
  L.names_line = names_line;
  L.key = std::move(key);
  L.cols.reserve(names.size());
  std::array<int, kFieldCount> first{};
  first.fill(-1);
  for (const auto raw : names) {
    Column c;
    c.name = raw;
    if (const Name* n = find_name(raw)) {
      c.kind = n->kind;
      c.field = n->field;
    }
    const int at = static_cast<int>(L.cols.size());
    int* slot = nullptr;
    switch (c.kind) {
      case Kind::kField:
        slot = &first[index_of(c.field)];
        break;
      case Kind::kGpu:
        slot = &L.gpu;
        break;
      case Kind::kDate:
        slot = &L.date;
        break;
      case Kind::kTime:
        slot = &L.time;
        break;
      default:
        break;
    }
    if (slot != nullptr) {
      if (*slot >= 0) {
        c.kind = Kind::kDuplicate;
        c.dup_of = *slot;
      } else {
        *slot = at;
      }
    }
    L.cols.push_back(c);
  }
  return L;
}

// The names of a header whose names hold spaces ("sm util"): dmon right-aligns every name over its
// column, so the units line (whose tokens never hold spaces) says where each column ends. Returns
// false when the two lines do not line up.
bool merge_names(std::string_view names_line, const std::vector<std::string_view>& names,
                 std::string_view units_line, const std::vector<std::string_view>& units,
                 std::vector<std::string_view>& out) {
  out.clear();
  size_t j = 0;
  for (const auto u : units) {
    const size_t end = static_cast<size_t>(u.data() - units_line.data()) + u.size();
    const size_t first = j;
    while (j < names.size() &&
           static_cast<size_t>(names[j].data() - names_line.data()) + names[j].size() <= end)
      ++j;
    if (j == first) return false;
    const size_t b = static_cast<size_t>(names[first].data() - names_line.data());
    const size_t e =
        static_cast<size_t>(names[j - 1].data() - names_line.data()) + names[j - 1].size();
    out.push_back(names_line.substr(b, e - b));
  }
  return j == names.size();
}

bool is_units_line(const std::vector<std::string_view>& tokens) {
  if (tokens.empty()) return false;
  if (iequals(tokens[0], "YYYYMMDD") || iequals(tokens[0], "HH:MM:SS")) return true;
  for (const auto t : tokens)
    if (iequals(t, "Idx")) return true;
  return false;
}

// pmon's header ("# gpu  pid  type  sm  mem ... command"): per-process, not per-device.
bool is_pmon_header(const std::vector<std::string_view>& tokens) {
  for (const auto t : tokens)
    if (iequals(t, "pid") || iequals(t, "command")) return true;
  return false;
}

bool is_names_line(const std::vector<std::string_view>& tokens) {
  for (const auto t : tokens)
    if (iequals(t, "gpu")) return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Dates and times

// Dates and times are log_time's: "20240314" (dmon -o D), "2024/03/14", "23:59:57" (-o T).
constexpr int64_t kDayMs = static_cast<int64_t>(csv::kDayMs);

// ---------------------------------------------------------------------------------------------
// Reader

struct GpuState {
  unsigned index = 0;
  GpuSeries series;
  double last_t = 0;
  uint32_t seen_round = 0;  // round number + 1 of the last row, for logs without times
  log_reader::FieldCounts counts;
};

using log_reader::Problem;

class Reader {
 public:
  Reader(std::string_view text, const std::string& origin, const DmonOptions& opt)
      : text_(text), origin_(origin), opt_(opt) {}

  Result<Recording> run();

 private:
  void header_line(std::string_view t, size_t line_no);
  void apply_units(std::string_view t, size_t line_no);
  void activate(const Layout& L);
  void data_line(std::string_view t, size_t line_no, bool last_unterminated);
  size_t slot_for(unsigned index, size_t line_no);
  void finish();
  void note(std::string n) { log_reader::add_note(rec_, std::move(n)); }
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, line_no, f, std::forward<Args>(args)...);
  }
  void add_unread(std::string_view name) { unread_.add(name); }

  std::string_view text_;
  const std::string& origin_;
  const DmonOptions& opt_;

  Layout L_;
  bool active_ = false;  // L_ has read a row (its columns are in the notes)
  std::vector<std::string_view> cells_, names_, units_, merged_;
  std::vector<GpuState> gpus_;
  std::unordered_map<unsigned, size_t> slots_;  // GPU index -> gpus_
  size_t last_slot_ = 0;

  // Times: absolute (-o DT), time of day only (-o T), or none (rounds 1 s apart).
  bool any_abs_ = false, any_tod_ = false, any_none_ = false;
  bool have_abs_start_ = false, have_tod_ = false;
  int64_t abs_start_ms_ = 0, tod_start_ms_ = 0, tod_last_ms_ = 0, tod_offset_ms_ = 0;
  std::string_view first_date_;  // -o D without T: the date of the first row
  std::string_view first_tod_;   // -o T without D: the time of the first row
  uint32_t round_ = 0;

  bool any_header_ = false, pmon_ = false;
  size_t first_header_line_ = 0;
  size_t data_lines_ = 0, rows_read_ = 0, header_changes_ = 0;
  Problem before_header_, wrong_count_, truncated_, bad_gpu_, bad_time_, not_increasing_,
      bad_value_, other_comment_, units_mismatch_, too_many_gpus_;
  log_reader::UniqueNames unread_;  // ignored and unknown column names, in order
  std::vector<std::pair<std::string_view, std::string_view>> duplicates_;  // (ignored, kept)
  std::vector<std::string> unit_notes_;
  std::array<bool, kFieldCount> field_in_log_{};
  std::array<std::string_view, kFieldCount> field_column_{};  // the dmon name of each field
  Recording rec_;
};

// A layout comes into use: remember what it reads and ignores, for the notes.
void Reader::activate(const Layout& L) {
  for (const Column& c : L.cols) {
    switch (c.kind) {
      case Kind::kUnknown:
      case Kind::kIgnored:
        add_unread(c.name);
        break;
      case Kind::kField:
        field_in_log_[index_of(c.field)] = true;
        if (field_column_[index_of(c.field)].empty()) field_column_[index_of(c.field)] = c.name;
        break;
      case Kind::kDuplicate: {
        const auto d = std::make_pair(c.name, L.cols[static_cast<size_t>(c.dup_of)].name);
        // (The first few: every line may be a header of its own.)
        if (duplicates_.size() < 20 &&
            std::find(duplicates_.begin(), duplicates_.end(), d) == duplicates_.end())
          duplicates_.push_back(d);
        break;
      }
      default:
        break;
    }
  }
}

void Reader::header_line(std::string_view t, size_t line_no) {
  split_ws(t.substr(1), names_);
  if (names_.empty()) return;  // a bare "#"
  if (is_units_line(names_)) {
    apply_units(t, line_no);
    return;
  }
  if (is_pmon_header(names_)) {
    pmon_ = true;
    L_ = {};
    return;
  }
  if (!is_names_line(names_)) {
    problem(other_comment_, line_no, "not a dmon header: \"{}\"", t.substr(0, 60));
    return;
  }
  if (!any_header_) first_header_line_ = line_no;
  any_header_ = true;
  std::string key = names_key(names_);
  if (L_.valid()) {
    if (key == L_.key) {
      L_.names_line = t;  // the same columns, spaced differently
      return;
    }
    if (active_) ++header_changes_;
  }
  L_ = make_layout(names_, t, std::move(key));
  active_ = false;  // activated by its first row, once a units line may have merged names
}

// The units line under a names line: checks each field's unit (and scales the few a future dmon
// might print differently); lines up names that hold spaces.
void Reader::apply_units(std::string_view t, size_t line_no) {
  if (!L_.valid()) return;
  split_ws(t.substr(1), units_);
  if (units_.size() != L_.cols.size()) {
    // Positions count from the '#' both lines start with.
    split_ws(L_.names_line.substr(1), names_);
    if (!active_ && units_.size() < names_.size() &&
        merge_names(L_.names_line, names_, t, units_, merged_)) {
      std::string key = std::move(L_.key);
      L_ = make_layout(merged_, L_.names_line, std::move(key));
    } else {
      problem(units_mismatch_, line_no, "{} units under {} column names", units_.size(),
              L_.cols.size());
      return;
    }
  }
  L_.units_line = t;
  for (size_t i = 0; i < L_.cols.size(); ++i) {
    Column& c = L_.cols[i];
    if (c.kind != Kind::kField) continue;
    const Unit u = info(c.field).unit;
    if (const auto k = unit_factor(u, units_[i])) {
      c.scale = *k;
    } else {
      c.scale = 1;
      std::string n = fmt::format("column {}: unit \"{}\" not recognised, values read as {}",
                                  c.name, units_[i], unit_symbol(u));
      // (A few: a file of garbage may have a units line of its own for every row.)
      if (unit_notes_.size() < 20 &&
          std::find(unit_notes_.begin(), unit_notes_.end(), n) == unit_notes_.end())
        unit_notes_.push_back(std::move(n));
    }
  }
}

// The slot of a GPU; npos past kMaxGpus GPUs (the row is counted in too_many_gpus_).
size_t Reader::slot_for(unsigned index, size_t line_no) {
  // dmon repeats the GPU order every round: try the one after the last row's first.
  const size_t n = gpus_.size();
  if (n > 0 && gpus_[(last_slot_ + 1) % n].index == index) return last_slot_ = (last_slot_ + 1) % n;
  if (const auto it = slots_.find(index); it != slots_.end()) return last_slot_ = it->second;
  if (n >= log_reader::kMaxGpus) {
    problem(too_many_gpus_, line_no, "GPU {}", index);
    return std::string_view::npos;
  }
  GpuState g;
  g.index = index;
  g.series.info.index = index;
  gpus_.push_back(std::move(g));
  slots_.emplace(index, n);
  return last_slot_ = n;
}

void Reader::data_line(std::string_view t, size_t line_no, bool last_unterminated) {
  if (!L_.valid()) {
    problem(before_header_, line_no, "a row before any dmon header line");
    return;
  }
  if (!active_) {
    activate(L_);
    active_ = true;
  }
  ++data_lines_;
  split_ws(t, cells_);
  if (last_unterminated) {
    // dmon ends every line: a last line without an end was cut, perhaps mid-value.
    problem(truncated_, line_no, "the last line is cut short ({} of {} columns, no line end)",
            cells_.size(), L_.cols.size());
    return;
  }
  if (cells_.size() != L_.cols.size()) {
    problem(wrong_count_, line_no, "expected {} columns, found {}", L_.cols.size(), cells_.size());
    return;
  }
  unsigned index = 0;
  if (L_.gpu >= 0) {
    const auto n = text::parse_int(cells_[static_cast<size_t>(L_.gpu)]);
    if (!n || *n < 0 || *n > 1000000) {
      problem(bad_gpu_, line_no, "not a GPU index: \"{}\"", cells_[static_cast<size_t>(L_.gpu)]);
      return;
    }
    index = static_cast<unsigned>(*n);
  }

  double time_s = 0;
  enum class Mode { kAbs, kTod, kNone } mode = Mode::kNone;
  int64_t ms = 0;
  if (L_.time >= 0) {
    const std::string_view tv = cells_[static_cast<size_t>(L_.time)];
    const auto tod = csv::parse_time_of_day(tv);
    if (!tod) {
      problem(bad_time_, line_no, "cannot read the time \"{}\"", tv);
      return;
    }
    if (L_.date >= 0) {
      const std::string_view dv = cells_[static_cast<size_t>(L_.date)];
      const auto day_ms = csv::parse_compact_date(dv);
      if (!day_ms) {
        problem(bad_time_, line_no, "cannot read the date \"{}\"", dv);
        return;
      }
      mode = Mode::kAbs;
      ms = *day_ms + *tod;
    } else {
      mode = Mode::kTod;
      ms = *tod + tod_offset_ms_;
      // Time of day only: past midnight the clock goes back about a day.
      if (have_tod_ && ms < tod_last_ms_ - kDayMs / 2) ms += kDayMs;
    }
  } else if (L_.date >= 0) {
    const std::string_view dv = cells_[static_cast<size_t>(L_.date)];
    if (!csv::parse_compact_date(dv)) {
      problem(bad_time_, line_no, "cannot read the date \"{}\"", dv);
      return;
    }
    if (first_date_.empty()) first_date_ = dv;
  }

  const size_t slot = slot_for(index, line_no);
  if (slot == std::string_view::npos) return;
  GpuState& g = gpus_[slot];
  switch (mode) {
    case Mode::kAbs:
      if (!have_abs_start_) {
        have_abs_start_ = true;
        abs_start_ms_ = ms;
      }
      time_s = static_cast<double>(ms - abs_start_ms_) / 1000.0;
      break;
    case Mode::kTod:
      if (!have_tod_) tod_start_ms_ = ms;
      time_s = static_cast<double>(ms - tod_start_ms_) / 1000.0;
      break;
    case Mode::kNone:
      // A round ends when a GPU comes round again; rounds are dmon's default 1 s apart.
      if (g.seen_round == round_ + 1) ++round_;
      g.seen_round = round_ + 1;
      time_s = static_cast<double>(round_);
      break;
  }
  if (!g.series.time_s.empty() && !(time_s > g.last_t)) {
    problem(not_increasing_, line_no, "time {} s is not after GPU {}'s previous row ({} s)", time_s,
            g.index, g.last_t);
    return;
  }
  if (mode == Mode::kTod) {
    if (!have_tod_) first_tod_ = cells_[static_cast<size_t>(L_.time)];
    have_tod_ = true;
    tod_offset_ms_ = ms - ms % kDayMs;
    tod_last_ms_ = ms;
  }
  switch (mode) {
    case Mode::kAbs:
      any_abs_ = true;
      break;
    case Mode::kTod:
      any_tod_ = true;
      break;
    case Mode::kNone:
      any_none_ = true;
      break;
  }
  g.last_t = time_s;
  const size_t row = g.series.append_row(time_s);
  for (size_t i = 0; i < L_.cols.size(); ++i) {
    const Column& c = L_.cols[i];
    if (c.kind != Kind::kField) continue;
    const std::string_view v = cells_[i];
    if (const auto x = text::parse_double(v)) {
      g.series.column_for_write(c.field)[row] = text::scaled(*x, c.scale);
      ++g.counts.value[index_of(c.field)];
    } else if (csv::no_value(v) != csv::NoValue::kNone) {
      continue;  // dmon's "-" (not supported or not read), or any other marker of no value
    } else {
      problem(bad_value_, line_no, "{}: cannot read \"{}\"", c.name, v);
    }
  }
  ++rows_read_;
}

Result<Recording> Reader::run() {
  const std::string_view body = text::strip_bom(text_);
  if (auto e = text::check_input(body, origin_, "nvidia-smi dmon output", opt_.power_limit_w))
    return std::move(*e);

  const bool unterminated = body.back() != '\n';
  text::LineReader lines(body);
  std::string_view line;
  while (lines.next(line)) {
    const std::string_view t = text::trim(line);
    if (t.empty()) continue;
    const size_t line_no = lines.line_number();
    if (t.front() == '#') {
      // The header pair, repeated every screenful: skipped at the cost of one comparison.
      if (t == L_.names_line || t == L_.units_line) continue;
      header_line(t, line_no);
      continue;
    }
    data_line(t, line_no, unterminated && lines.rest().empty());
  }

  if (!any_header_) {
    if (pmon_)
      return usage_error(fmt::format(
          "{}: nvidia-smi pmon output (per-process), not nvidia-smi dmon (per-device)", origin_));
    return usage_error(fmt::format(
        "{}: no nvidia-smi dmon header line (\"# gpu   pwr  gtemp ...\"); is this dmon output?",
        origin_));
  }
  if (rows_read_ == 0)
    return log_reader::no_readable_rows(
        origin_, "a dmon header", fmt::to_string(first_header_line_), data_lines_, text_,
        {&wrong_count_, &bad_gpu_, &bad_time_, &truncated_, &not_increasing_});
  finish();
  return std::move(rec_);
}

void Reader::finish() {
  Recording& rec = rec_;
  rec.source = "nvidia-smi dmon: " + origin_;
  rec.start_unix_ms = any_abs_ ? abs_start_ms_ : 0;

  if (any_abs_)
    note(
        "Date/Time columns are the local time of the machine that ran nvidia-smi dmon, read as "
        "UTC (the log does not say its time zone), to the whole second");
  if (any_tod_)
    note(
        fmt::format("time of day only (dmon -o T): the date is unknown, so times are relative "
                    "to the first row ({}, the local time of the machine that ran dmon) and the "
                    "start time is unknown",
                    first_tod_));
  if (any_none_) {
    note(
        "no Date/Time columns (dmon without -o DT): rows taken as 1 s apart per round of GPUs, "
        "dmon's default interval; the interval it ran with (-d) is not in the log, so it is "
        "unknown, and so is the start time");
    if (!first_date_.empty())
      note(fmt::format("date only (dmon -o D): the rows start on {}; their time of day is unknown",
                       first_date_));
  }

  // Empty fields, GPM support, power limit (dmon logs neither a limit nor the GPU's name).
  log_reader::FinishOptions fo;
  fo.power_limit_w = opt_.power_limit_w;
  fo.placeholder = "'-'";
  for (size_t fi = 0; fi < kFieldCount; ++fi)
    if (field_in_log_[fi])
      fo.columns.emplace_back(static_cast<Field>(fi), std::string(field_column_[fi]));
  std::vector<log_reader::GpuToFinish> to_finish;
  for (auto& g : gpus_) to_finish.push_back({&g.series, &g.counts});
  log_reader::finish_gpus(rec, to_finish, fo);

  if (!unread_.empty())
    note(fmt::format("dmon columns gpudoctor does not read, ignored: {}",
                     log_reader::join_names(unread_.list)));
  for (const auto& [dup, kept] : duplicates_)
    note(fmt::format("column {} ignored: the same quantity as {}", dup, kept));
  for (auto& n : unit_notes_) note(std::move(n));
  if (header_changes_ > 0)
    note(
        fmt::format("the header's columns change {} time(s) mid-file; each part read with its "
                    "own columns",
                    header_changes_));
  auto skipped = [&](const Problem& p, std::string_view what) {
    log_reader::note_skipped(rec, p, what);
  };
  skipped(before_header_, "before the first dmon header");
  skipped(wrong_count_, "that are not rows of the header's columns");
  skipped(bad_gpu_, "without a GPU index");
  skipped(too_many_gpus_, log_reader::kTooManyGpus);
  skipped(bad_time_, "with an unreadable date or time");
  skipped(not_increasing_, "whose time did not advance for their GPU");
  skipped(truncated_, "cut short at the end of the file");
  skipped(other_comment_, "of '#' comments that are not dmon's header");
  if (units_mismatch_.count > 0)
    note(fmt::format("{} units line(s) do not match their header (first: {}); units not checked",
                     units_mismatch_.count, units_mismatch_.first));
  log_reader::note_unreadable(rec, bad_value_);

  std::stable_sort(gpus_.begin(), gpus_.end(),
                   [](const GpuState& a, const GpuState& b) { return a.index < b.index; });
  rec.gpus.reserve(gpus_.size());
  for (auto& g : gpus_) rec.gpus.push_back(std::move(g.series));
  // A row of an earlier GPU may carry a later time than the first row of the file.
  rebase_times(rec);
}

}  // namespace

bool looks_like_dmon(std::string_view head) {
  return log_reader::guarded_check([&] {
    head = text::strip_bom(head);
    if (head.empty() || text::looks_binary(head.substr(0, 4096))) return false;
    text::LineReader lines(head);
    std::string_view line;
    std::vector<std::string_view> tokens;
    size_t other = 0, scanned = 0;
    while (lines.next(line) && scanned < 64) {
      const std::string_view t = text::trim(line);
      if (t.empty()) continue;
      ++scanned;
      if (t.front() == '#') {
        split_ws(t.substr(1), tokens);
        if (is_pmon_header(tokens)) return false;
        if (is_names_line(tokens)) {
          size_t known = 0;
          for (const auto tok : tokens)
            if (const Name* n = find_name(tok);
                n && n->kind != Kind::kGpu && n->kind != Kind::kDate && n->kind != Kind::kTime)
              ++known;
          if (known > 0) return true;
        }
        if (is_units_line(tokens)) continue;
      } else {
        // dmon rows (a file cut from the middle of a log) hold numbers, '-', dates and times.
        split_ws(t, tokens);
        const bool row_like = std::all_of(tokens.begin(), tokens.end(), [](std::string_view s) {
          return s == "-" || (s.front() >= '0' && s.front() <= '9');
        });
        if (row_like) continue;
      }
      if (++other > 3) return false;
    }
    return false;
  });
}

Result<Recording> read_dmon(std::string_view text, const std::string& origin,
                            const DmonOptions& opt) {
  return log_reader::guarded_read(origin, "nvidia-smi dmon log", [&] {
    Reader reader(text, origin, opt);
    return reader.run();
  });
}

std::string write_dmon(const Recording& rec) {
  struct Col {
    const char* name;
    const char* unit;
    std::optional<Field> field;
  };
  static const Col kCols[] = {
      {"pwr", "W", Field::kPower},       {"gtemp", "C", Field::kTemp},
      {"mtemp", "C", std::nullopt},      {"sm", "%", Field::kUtilGpu},
      {"mem", "%", Field::kUtilMem},     {"enc", "%", std::nullopt},
      {"dec", "%", std::nullopt},        {"jpg", "%", std::nullopt},
      {"ofa", "%", std::nullopt},        {"mclk", "MHz", Field::kClockMem},
      {"pclk", "MHz", Field::kClockSm},  {"fb", "MB", Field::kMemUsed},
      {"bar1", "MB", std::nullopt},      {"ccpm", "MB", std::nullopt},
      {"rxpci", "MB/s", Field::kPcieRx}, {"txpci", "MB/s", Field::kPcieTx},
  };
  std::string names = "#Date       Time        gpu", units = "#YYYYMMDD  HH:MM:SS    Idx";
  for (const Col& c : kCols) {
    names += fmt::format(" {:>6}", c.name);
    units += fmt::format(" {:>6}", c.unit);
  }
  names += "\n";
  units += "\n";
  // Rows in time order, GPUs interleaved as dmon prints them.
  std::vector<std::pair<double, size_t>> order;
  for (size_t g = 0; g < rec.gpus.size(); ++g)
    for (size_t r = 0; r < rec.gpus[g].size(); ++r)
      order.emplace_back(rec.gpus[g].time_s[r], g * (1u << 24) + r);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  size_t rows = 0;
  for (const auto& [t, key] : order) {
    const GpuSeries& g = rec.gpus[key >> 24];
    const size_t r = key & ((1u << 24) - 1);
    if (rows++ % 20 == 0) out += names + units;
    const std::time_t secs =
        static_cast<std::time_t>((rec.start_unix_ms + std::llround(t * 1000)) / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    out += fmt::format(" {:04}{:02}{:02}  {:02}:{:02}:{:02} {:>5}", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, g.info.index);
    for (const Col& c : kCols) {
      const std::vector<double>* col = c.field ? g.column(*c.field) : nullptr;
      if (!col || is_missing((*col)[r]))
        out += fmt::format(" {:>6}", "-");
      else
        out += fmt::format(" {:>6.0f}", (*col)[r]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace gpudoctor
