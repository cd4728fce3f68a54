#include "formats/dcgm.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <exception>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/reading.hpp"
#include "formats/column_catalogue.hpp"
#include "formats/dcgm_scrape.hpp"
#include "formats/dcgm_values.hpp"
#include "formats/finish.hpp"
#include "formats/no_value.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using text::iequals;

// ---------------------------------------------------------------------------------------------
// DCGM's field table

// Identity fields: strings that fill DeviceInfo / SystemInfo rather than a column.
enum class Ident : uint8_t { kNone, kName, kSerial, kUuid, kBusId, kDriver };

// What DCGM calls each field gpudoctor reads (dcgmlib/src/dcgm_fields.cpp): its numeric id and its
// tag (the "Long Name" of `dcgmi dmon -l`, which DCGM's field-value samples print). The short
// names (dcgmi dmon's column headers) are the column catalogue's "dcgmi dmon" rows
// (formats/column_catalogue). `name` is a DCGM_FI_ name the catalogue does not know: the
// identity fields', and the name DCGM used for field 112 before 3.3 (the catalogue has the new
// DCGM_FI_DEV_CLOCKS_EVENT_REASONS). Catalogue fields map id -> Field through field_by_dcgm_id.
struct DcgmField {
  uint16_t id;
  std::string_view tag;
  std::string_view name;
  Ident ident;
};

// clang-format off
constexpr DcgmField kDcgmFields[] = {
    {1,    "driver_version",                 "DCGM_FI_DRIVER_VERSION", Ident::kDriver},
    {50,   "name",                           "DCGM_FI_DEV_NAME",       Ident::kName},
    {53,   "serial_number",                  "DCGM_FI_DEV_SERIAL",     Ident::kSerial},
    {54,   "uuid",                           "DCGM_FI_DEV_UUID",       Ident::kUuid},
    {57,   "pci_busid",                      "DCGM_FI_DEV_PCI_BUSID",  Ident::kBusId},
    {100,  "sm_clock",                       "", Ident::kNone},
    {101,  "memory_clock",                   "", Ident::kNone},
    {110,  "sm_app_clock",                   "", Ident::kNone},
    {111,  "mem_app_clock",                  "", Ident::kNone},
    {112,  "current_clock_throttle_reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", Ident::kNone},
    {113,  "sm_max_clock",                   "", Ident::kNone},
    {114,  "memory_max_clock",               "", Ident::kNone},
    {150,  "gpu_temp",                       "", Ident::kNone},
    {155,  "power_usage",                    "", Ident::kNone},
    {156,  "total_energy_consumption",       "", Ident::kNone},
    {157,  "power_usage_instant",            "", Ident::kNone},
    {158,  "slowdown_temp",                  "", Ident::kNone},
    {160,  "power_management_limit",         "", Ident::kNone},
    {161,  "power_management_limit_min",     "", Ident::kNone},
    {162,  "power_management_limit_max",     "", Ident::kNone},
    {163,  "power_management_limit_default", "", Ident::kNone},
    {164,  "enforced_power_limit",           "", Ident::kNone},
    {190,  "pstate",                         "", Ident::kNone},
    {191,  "fan_speed",                      "", Ident::kNone},
    {200,  "pcie_tx_throughput",             "", Ident::kNone},
    {201,  "pcie_rx_throughput",             "", Ident::kNone},
    {203,  "gpu_utilization",                "", Ident::kNone},
    {204,  "mem_copy_utilization",           "", Ident::kNone},
    {235,  "pcie_max_link_gen",              "", Ident::kNone},
    {236,  "pcie_max_link_width",            "", Ident::kNone},
    {237,  "pcie_link_gen",                  "", Ident::kNone},
    {238,  "pcie_link_width",                "", Ident::kNone},
    {250,  "fb_total",                       "", Ident::kNone},
    {252,  "fb_used",                        "", Ident::kNone},
    {1001, "gr_engine_active",               "", Ident::kNone},
    {1002, "sm_active",                      "", Ident::kNone},
    {1003, "sm_occupancy",                   "", Ident::kNone},
    {1004, "tensor_active",                  "", Ident::kNone},
    {1005, "dram_active",                    "", Ident::kNone},
    {1006, "fp64_active",                    "", Ident::kNone},
    {1007, "fp32_active",                    "", Ident::kNone},
    {1008, "fp16_active",                    "", Ident::kNone},
    {1009, "pcie_tx_bytes",                  "", Ident::kNone},
    {1010, "pcie_rx_bytes",                  "", Ident::kNone},
    {1011, "nvlink_tx_bytes",                "", Ident::kNone},
    {1012, "nvlink_rx_bytes",                "", Ident::kNone},
};
// clang-format on

struct Target {
  enum class Kind : uint8_t { kUnknown, kField, kIdent };
  Kind kind = Kind::kUnknown;
  Field field{};
  Ident ident = Ident::kNone;
};

Target target_of_id(int64_t id) {
  if (id <= 0 || id > std::numeric_limits<uint16_t>::max()) return {};
  if (const auto f = field_by_dcgm_id(static_cast<uint16_t>(id)))
    return {Target::Kind::kField, *f, Ident::kNone};
  for (const auto& d : kDcgmFields)
    if (d.id == id && d.ident != Ident::kNone) return {Target::Kind::kIdent, Field{}, d.ident};
  return {};
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A long dump's Field cell: a numeric id ("155"), a DCGM_FI_ name or a DCGM field tag.
Target target_of_field_cell(std::string_view s) {
  if (all_digits(s)) {
    const auto id = text::parse_int(s);
    return id ? target_of_id(*id) : Target{};
  }
  if (text::istarts_with(s, "DCGM_FI_")) {
    if (const auto f = field_by_dcgm_name(s)) return {Target::Kind::kField, *f, Ident::kNone};
    for (const auto& d : kDcgmFields)
      if (!d.name.empty() && iequals(d.name, s)) return target_of_id(d.id);
    return {};
  }
  for (const auto& d : kDcgmFields)
    if (iequals(d.tag, s)) return target_of_id(d.id);
  return {};
}

// ---------------------------------------------------------------------------------------------
// Values

enum class Cell : uint8_t { kValue, kMissing, kNotSupported, kNoPermission, kBad };

// DCGM's blanks (dcgm_structs.h). A blank is the base value, or base + 1 (not found), + 2 (not
// supported), + 3 (no permission), ... up to + 15.
constexpr int64_t kInt32Blank = 0x7ffffff0;
constexpr int64_t kInt64Blank = 0x7ffffffffffffff0;
constexpr int64_t kFp64BlankInt = int64_t{1} << 47;
constexpr double kFp64Blank = 140737488355328.0;  // 2^47

Cell blank_kind(int64_t offset) {
  if (offset == 2) return Cell::kNotSupported;
  if (offset == 3) return Cell::kNoPermission;
  return Cell::kMissing;
}

// One value as DCGM printed it, in DCGM's unit. Integers are read exactly so that the int64
// blanks (beyond a double's precision) are recognised: an integer is blank in the INT32 and FP64
// blank windows (base .. base + 15) and from the INT64 base up; any other number from 2^47 up is
// an FP64 blank. Integers beyond 2^31 are real values (energy in mJ, byte rates).
Cell read_cell(std::string_view v, double& out) {
  // The one no-value rule ("N/A", <<<NOT_SUPPORTED>>>, <<<NULL>>> ...); numbers, nearly every
  // cell, go straight to the number below (DCGM's integers can be long: no marker scan for them).
  if (v.empty() || !(v.front() >= '0' && v.front() <= '9')) {
    switch (csv::no_value(v)) {
      case csv::NoValue::kNone:
        break;
      case csv::NoValue::kNotSupported:
        return Cell::kNotSupported;
      case csv::NoValue::kNoPermission:
        return Cell::kNoPermission;
      case csv::NoValue::kMissing:
      case csv::NoValue::kError:
        return Cell::kMissing;
    }
  }
  if (const auto i = text::parse_int(v)) {
    if (*i >= kInt64Blank) return blank_kind(*i - kInt64Blank);
    if (*i >= kInt32Blank && *i <= kInt32Blank + 15) return blank_kind(*i - kInt32Blank);
    if (*i >= kFp64BlankInt && *i <= kFp64BlankInt + 15) return blank_kind(*i - kFp64BlankInt);
    out = static_cast<double>(*i);
    return Cell::kValue;
  }
  if (const auto d = text::parse_double(v)) {
    if (*d >= kFp64Blank) {
      const double off = *d - kFp64Blank;
      return off < 16 ? blank_kind(static_cast<int64_t>(off)) : Cell::kMissing;
    }
    out = *d;
    return Cell::kValue;
  }
  return Cell::kBad;
}

}  // namespace

std::optional<std::string_view> dcgm::blank(std::string_view v) {
  // Every blank is a number of 10 digits or more (0x7ffffff0 is 2147483632).
  if (v.size() < 10 || !(v.front() >= '0' && v.front() <= '9')) return std::nullopt;
  double x = 0;
  switch (read_cell(v, x)) {
    case Cell::kValue:
    case Cell::kBad:
      return std::nullopt;
    case Cell::kNotSupported:
      return "<<<NOT_SUPPORTED>>>";
    case Cell::kNoPermission:
      return "<<<NO_PERMISSION>>>";
    case Cell::kMissing:
      return "N/A";
  }
  return std::nullopt;
}

namespace {

// The value in the field's unit; pstate 32 (NVML's "unknown") and others beyond P15 are missing.
Cell field_value(Field f, std::string_view v, double& out) {
  const Cell c = read_cell(v, out);
  if (c != Cell::kValue) return c;
  out = text::scaled(out, info(f).dcgm_scale);
  if (f == Field::kPstate && !(out >= 0 && out <= 15)) return Cell::kMissing;
  return Cell::kValue;
}

// A string value (name, UUID ...), "" when DCGM had none.
std::string_view string_value(std::string_view v) {
  if (csv::no_value(v) != csv::NoValue::kNone) return {};
  return v;
}

// A number to two decimals, without trailing zeros ("152.34", "400").
std::string fmt_number(double x) {
  return fmt::format("{}", std::round(x * 100) / 100);
}

// ---------------------------------------------------------------------------------------------
// What both readers share: per-GPU state, problems, and the finishing notes.

using log_reader::Problem;

// One value of a long dump, before rows are merged into samples.
struct Entry {
  int64_t ts_us;
  uint32_t seq;  // order in the file, for a stable sort
  uint16_t field;
  Cell cell;
  double value;
};

struct GpuState {
  unsigned index = 0;
  GpuSeries series;
  std::vector<Entry> entries;  // long dump
  log_reader::FieldCounts counts;

  void count(Field f, Cell c) {
    const size_t fi = index_of(f);
    switch (c) {
      case Cell::kValue:
        ++counts.value[fi];
        break;
      case Cell::kNotSupported:
        ++counts.not_supported[fi];
        break;
      case Cell::kNoPermission:
        ++counts.no_permission[fi];
        break;
      case Cell::kMissing:
      case Cell::kBad:
        ++counts.other[fi];
        break;
    }
  }
};

class Common {
 public:
  Common(const std::string& origin, const DcgmOptions& opt) : origin_(origin), opt_(opt) {}

 protected:
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, line_no, f, std::forward<Args>(args)...);
  }
  void note(std::string n) { log_reader::add_note(rec_, std::move(n)); }
  void skipped(const Problem& p, std::string_view what) { log_reader::note_skipped(rec_, p, what); }
  std::optional<Error> check_input(std::string_view body, std::string_view what) const {
    return text::check_input(body, origin_, what, opt_.power_limit_w);
  }

  // The GPU of a row; null past kMaxGpus GPUs (the row is counted in too_many_gpus_).
  GpuState* gpu(unsigned index, size_t line_no) {
    // Rows come round in the same GPU order: try the one after the last first.
    const size_t n = gpus_.size();
    if (n > 0) {
      const size_t next = (last_slot_ + 1) % n;
      if (gpus_[next].index == index) return &gpus_[last_slot_ = next];
    }
    if (const auto it = slots_.find(index); it != slots_.end())
      return &gpus_[last_slot_ = it->second];
    if (n >= log_reader::kMaxGpus) {
      problem(too_many_gpus_, line_no, "GPU {}", index);
      return nullptr;
    }
    GpuState g;
    g.index = index;
    g.series.info.index = index;
    gpus_.push_back(std::move(g));
    slots_.emplace(index, n);
    last_slot_ = n;
    return &gpus_.back();
  }

  void set_ident(GpuState& g, Ident id, std::string_view raw) {
    const std::string_view v = string_value(raw);
    if (v.empty()) return;
    DeviceInfo& d = g.series.info;
    switch (id) {
      case Ident::kName:
        if (d.name.empty()) d.name = std::string(v);
        break;
      case Ident::kSerial:
        if (d.serial.empty()) d.serial = std::string(v);
        break;
      case Ident::kUuid:
        if (d.uuid.empty()) d.uuid = std::string(v);
        break;
      case Ident::kBusId:
        if (d.pci_bus_id.empty()) d.pci_bus_id = std::string(v);
        break;
      case Ident::kDriver:
        if (rec_.system.driver_version.empty()) rec_.system.driver_version = std::string(v);
        break;
      case Ident::kNone:
        break;
    }
  }

  void mark_field(Field f, std::string_view label) {
    field_in_log_[index_of(f)] = true;
    if (field_label_[index_of(f)].empty()) field_label_[index_of(f)] = label;
  }

  // Unsupported fields, empty fields, GPM support, architecture, power limit; GPUs into rec_ in
  // index order.
  void finish_gpus(std::string_view placeholder) {
    // A GPU with identity rows only (a long dump's name or UUID) has no samples.
    std::vector<unsigned> no_samples;
    for (const auto& g : gpus_)
      if (g.series.size() == 0) no_samples.push_back(g.index);
    if (!no_samples.empty()) {
      gpus_.erase(std::remove_if(gpus_.begin(), gpus_.end(),
                                 [](const GpuState& g) { return g.series.size() == 0; }),
                  gpus_.end());
      note(fmt::format("GPU(s) {} left out: no values of fields gpudoctor reads",
                       fmt::join(no_samples, ", ")));
    }
    log_reader::FinishOptions fo;
    fo.power_limit_w = opt_.power_limit_w;
    fo.placeholder = placeholder;
    for (size_t fi = 0; fi < kFieldCount; ++fi)
      if (field_in_log_[fi])
        fo.columns.emplace_back(static_cast<Field>(fi), std::string(field_label_[fi]));
    std::vector<log_reader::GpuToFinish> to_finish;
    for (auto& g : gpus_) to_finish.push_back({&g.series, &g.counts});
    log_reader::finish_gpus(rec_, to_finish, fo);

    std::stable_sort(gpus_.begin(), gpus_.end(),
                     [](const GpuState& a, const GpuState& b) { return a.index < b.index; });
    rec_.gpus.reserve(gpus_.size());
    for (auto& g : gpus_) rec_.gpus.push_back(std::move(g.series));
  }

  const std::string& origin_;
  const DcgmOptions& opt_;
  Recording rec_;
  std::vector<GpuState> gpus_;
  std::unordered_map<unsigned, size_t> slots_;  // GPU index -> gpus_
  size_t last_slot_ = 0;
  std::array<bool, kFieldCount> field_in_log_{};
  std::array<std::string_view, kFieldCount> field_label_{};
  log_reader::UniqueNames unread_;
  Problem bad_value_, too_many_gpus_;
};

// ---------------------------------------------------------------------------------------------
// DCGM long field dump

struct LongHeader {
  int gpu = -1, ts = -1, field = -1, value = -1;
  size_t cols = 0;
  bool valid() const { return gpu >= 0 && ts >= 0 && field >= 0 && value >= 0; }
};

LongHeader long_header(const std::vector<std::string_view>& cells) {
  LongHeader h;
  h.cols = cells.size();
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string_view c = cells[i];
    const int at = static_cast<int>(i);
    auto is = [&](std::string_view a) { return iequals(c, a); };
    if (is("GPUId") || is("gpu_id") || is("gpu") || is("EntityId")) {
      if (h.gpu < 0) h.gpu = at;
    } else if (is("TimeStampUs") || is("timestamp_us") || is("ts_us")) {
      if (h.ts < 0) h.ts = at;
    } else if (is("Field") || is("FieldId") || is("FieldName") || is("field_id")) {
      if (h.field < 0) h.field = at;
    } else if (is("Values") || is("Value")) {
      if (h.value < 0) h.value = at;
    }
  }
  return h;
}

class LongReader : Common {
 public:
  LongReader(std::string_view text, const std::string& origin, const DcgmOptions& opt)
      : Common(origin, opt), text_(text) {}

  Result<Recording> run();

 private:
  void read_line(std::string_view t, size_t line_no, bool last_unterminated);
  void build(GpuState& g, int64_t start_us);

  std::string_view text_;
  LongHeader H_;
  std::string_view header_line_;
  size_t header_line_no_ = 0;
  uint32_t seq_ = 0;
  size_t rows_read_ = 0, data_lines_ = 0, duplicates_ = 0;
  int64_t max_spread_us_ = 0, max_window_us_ = 0;  // of samples merged from different times
  std::vector<std::string_view> cells_;
  std::unordered_map<std::string_view, Target> targets_;
  Problem before_header_, wrong_count_, truncated_, bad_gpu_, bad_time_;
};

void LongReader::read_line(std::string_view t, size_t line_no, bool last_unterminated) {
  ++data_lines_;
  text::split_trimmed(t, ',', cells_);
  if (last_unterminated) {
    // DCGM's dumps end every line: a last line without an end was cut, perhaps mid-value.
    problem(truncated_, line_no, "the last line is cut short ({} of {} columns, no line end)",
            cells_.size(), H_.cols);
    return;
  }
  if (cells_.size() < H_.cols) {
    problem(wrong_count_, line_no, "expected {} columns, found {}", H_.cols, cells_.size());
    return;
  }
  std::string_view value = cells_[static_cast<size_t>(H_.value)];
  if (cells_.size() > H_.cols) {
    // A string value holding commas: the rest of the line, when the value is the last column.
    if (static_cast<size_t>(H_.value) != H_.cols - 1) {
      problem(wrong_count_, line_no, "expected {} columns, found {}", H_.cols, cells_.size());
      return;
    }
    const size_t at = static_cast<size_t>(value.data() - t.data());
    value = text::trim(t.substr(at));
  }
  const std::string_view gv = cells_[static_cast<size_t>(H_.gpu)];
  const auto gid = text::parse_int(gv);
  if (!gid || *gid < 0 || *gid > 1000000) {
    problem(bad_gpu_, line_no, "not a GPU id: \"{}\"", gv);
    return;
  }
  const std::string_view tv = cells_[static_cast<size_t>(H_.ts)];
  const auto ts = text::parse_int(tv);
  // Microseconds since 1970: after 2001 and before 2286 (anything else is not TimeStampUs).
  if (!ts || *ts < 1000000000LL * 1000000 || *ts > 9999999999LL * 1000000) {
    problem(bad_time_, line_no, "not a time in microseconds since 1970: \"{}\"", tv);
    return;
  }
  const std::string_view fv = cells_[static_cast<size_t>(H_.field)];
  Target tg;
  if (const auto it = targets_.find(fv); it != targets_.end()) {
    tg = it->second;
  } else {
    tg = target_of_field_cell(fv);
    targets_.emplace(fv, tg);
    if (tg.kind == Target::Kind::kUnknown) unread_.add(fv);
    if (tg.kind == Target::Kind::kField) mark_field(tg.field, fv);
  }
  ++rows_read_;
  if (tg.kind == Target::Kind::kUnknown) return;
  GpuState* gp = gpu(static_cast<unsigned>(*gid), line_no);
  if (gp == nullptr) return;
  GpuState& g = *gp;
  if (tg.kind == Target::Kind::kIdent) {
    set_ident(g, tg.ident, value);
    return;
  }
  double x = 0;
  const Cell cell = field_value(tg.field, value, x);
  if (cell == Cell::kBad) problem(bad_value_, line_no, "{}: cannot read \"{}\"", fv, value);
  g.entries.push_back(
      {*ts, seq_++, static_cast<uint16_t>(index_of(tg.field)), cell, cell == Cell::kValue ? x : 0});
}

// Merges a GPU's values into samples: in time order, a value joins the current sample when it was
// taken within half the sampling interval of the sample's first value and its field is not in the
// sample yet. DCGM stamps each field when it read it, so one round's fields differ by a little.
void LongReader::build(GpuState& g, int64_t start_us) {
  auto& E = g.entries;
  std::sort(E.begin(), E.end(), [](const Entry& a, const Entry& b) {
    return a.ts_us != b.ts_us ? a.ts_us < b.ts_us : a.seq < b.seq;
  });
  // The sampling interval: the median gap between successive values of one field.
  std::array<int64_t, kFieldCount> last{};
  last.fill(-1);
  std::vector<int64_t> gaps;
  for (const Entry& e : E) {
    if (last[e.field] >= 0 && e.ts_us > last[e.field]) gaps.push_back(e.ts_us - last[e.field]);
    last[e.field] = e.ts_us;
  }
  int64_t tol = 500000;  // one round only: half of DCGM's usual 1 s
  if (!gaps.empty()) {
    auto mid = gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2);
    std::nth_element(gaps.begin(), mid, gaps.end());
    tol = *mid / 2;
  }
  std::array<uint32_t, kFieldCount> gen{};
  std::array<int64_t, kFieldCount> in_sample_ts{};
  uint32_t cur = 0;
  int64_t first_ts = 0;
  size_t row = 0;
  int64_t spread = 0;
  for (const Entry& e : E) {
    const Field f = static_cast<Field>(e.field);
    const bool seen = cur > 0 && gen[e.field] == cur;
    if (seen && in_sample_ts[e.field] == e.ts_us) {
      ++duplicates_;
      continue;
    }
    if (cur == 0 || seen || e.ts_us - first_ts > tol) {
      ++cur;
      first_ts = e.ts_us;
      row = g.series.append_row(static_cast<double>(e.ts_us - start_us) / 1e6);
    } else {
      spread = std::max(spread, e.ts_us - first_ts);
    }
    gen[e.field] = cur;
    in_sample_ts[e.field] = e.ts_us;
    g.count(f, e.cell);
    if (e.cell == Cell::kValue) g.series.column_for_write(f)[row] = e.value;
  }
  if (spread > 0) {
    max_spread_us_ = std::max(max_spread_us_, spread);
    max_window_us_ = std::max(max_window_us_, tol);
  }
  E.clear();
  E.shrink_to_fit();
}

Result<Recording> LongReader::run() {
  const std::string_view body = text::strip_bom(text_);
  if (auto e = check_input(body, "a DCGM field dump")) return *e;

  const bool unterminated = body.back() != '\n';
  text::LineReader lines(body);
  std::string_view line;
  size_t first_line = 0;
  while (lines.next(line)) {
    const std::string_view t = text::trim(line);
    if (t.empty()) continue;
    const size_t line_no = lines.line_number();
    if (first_line == 0) first_line = line_no;
    if (!H_.valid()) {
      // Lines before the header: what the dumping program wrote to stderr (its configuration).
      text::split_trimmed(t, ',', cells_);
      H_ = long_header(cells_);
      if (H_.valid()) {
        header_line_ = t;
        header_line_no_ = line_no;
      } else
        problem(before_header_, line_no, "not the dump's header: \"{}\"", t.substr(0, 60));
      continue;
    }
    if (t == header_line_) continue;  // the header again (dumps appended to one file)
    read_line(t, line_no, unterminated && lines.rest().empty());
  }

  if (!H_.valid())
    return usage_error(fmt::format(
        "{}:{}: no DCGM dump header line (\"GPUId,TimeStampUs,Field,Values\"); is this a DCGM "
        "field dump?",
        origin_, first_line));
  if (data_lines_ == 0 || rows_read_ == 0)
    return log_reader::no_readable_rows(origin_, "a DCGM dump header",
                                        fmt::to_string(header_line_no_), data_lines_, text_,
                                        {&wrong_count_, &bad_gpu_, &bad_time_, &truncated_});

  int64_t start_us = std::numeric_limits<int64_t>::max();
  for (const auto& g : gpus_)
    for (const Entry& e : g.entries) start_us = std::min(start_us, e.ts_us);
  if (start_us == std::numeric_limits<int64_t>::max())
    return usage_error(
        fmt::format("{}: no values of fields gpudoctor reads (fields in the file: {})", origin_,
                    log_reader::join_names(unread_.list, 10)));
  rec_.start_unix_ms = start_us / 1000;
  const int64_t start_ms_us = rec_.start_unix_ms * 1000;
  for (auto& g : gpus_) build(g, start_ms_us);

  rec_.source = "dcgm dump: " + origin_;
  if (max_spread_us_ > 0)
    note(
        fmt::format("DCGM stamps each field when it reads it: values of one GPU up to {} ms apart "
                    "merged into one sample (those within half the sampling interval, {} ms, of "
                    "the sample's first)",
                    fmt_number(static_cast<double>(max_spread_us_) / 1000.0),
                    fmt_number(static_cast<double>(max_window_us_) / 1000.0)));
  finish_gpus("N/A or DCGM blanks");
  if (!unread_.empty())
    note(fmt::format("DCGM fields gpudoctor does not read, ignored: {}",
                     log_reader::join_names(unread_.list)));
  if (duplicates_ > 0)
    note(fmt::format("{} repeated value(s) (same GPU, field and time) ignored", duplicates_));
  skipped(before_header_, "before the header");
  skipped(wrong_count_, "with the wrong number of columns");
  skipped(bad_gpu_, "without a GPU id");
  skipped(too_many_gpus_, log_reader::kTooManyGpus);
  skipped(bad_time_, "with an unreadable time");
  skipped(truncated_, "cut short at the end of the file");
  log_reader::note_unreadable(rec_, bad_value_);
  return std::move(rec_);
}

}  // namespace

bool looks_like_dcgm_long(std::string_view head) {
  if (looks_like_dcgm_scrape(head)) return true;  // (read_dcgm_long hands it on)
  return log_reader::guarded_check([&] {
    head = text::strip_bom(head);
    if (head.empty() || text::looks_binary(head.substr(0, 4096))) return false;
    text::LineReader lines(head);
    std::string_view line;
    std::vector<std::string_view> cells;
    size_t scanned = 0;
    while (lines.next(line) && scanned < 16) {
      const std::string_view t = text::trim(line);
      if (t.empty()) continue;
      ++scanned;
      text::split_trimmed(t, ',', cells);
      if (long_header(cells).valid()) return true;
    }
    return false;
  });
}

Result<Recording> read_dcgm_long(std::string_view text, const std::string& origin,
                                 const DcgmOptions& opt) {
  if (looks_like_dcgm_scrape(text.substr(0, 4096))) {
    GenericCsvOptions o;
    o.power_limit_w = opt.power_limit_w;
    return read_dcgm_scrape(text, origin, o);
  }
  return log_reader::guarded_read(origin, "DCGM field dump", [&] {
    LongReader reader(text, origin, opt);
    return reader.run();
  });
}

}  // namespace gpudoctor
