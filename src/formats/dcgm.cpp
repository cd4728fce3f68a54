#include "formats/dcgm.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <exception>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
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
#include "formats/flat_table.hpp"
#include "formats/generic_csv.hpp"
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

// DCGM's blanks (dcgm_structs.h). A blank is the base value, or base + 1 (not found), + 2 (not
// supported), + 3 (no permission), ... up to + 15.
constexpr int64_t kInt32Blank = 0x7ffffff0;
constexpr int64_t kInt64Blank = 0x7ffffffffffffff0;
constexpr int64_t kFp64BlankInt = int64_t{1} << 47;
constexpr double kFp64Blank = 140737488355328.0;  // 2^47

std::string_view blank_marker(int64_t offset) {
  if (offset == 2) return "<<<NOT_SUPPORTED>>>";
  if (offset == 3) return "<<<NO_PERMISSION>>>";
  return "N/A";
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

}  // namespace

// Integers are read exactly so that the int64 blanks (beyond a double's precision) are
// recognised: an integer is blank in the INT32 and FP64 blank windows (base .. base + 15) and from
// the INT64 base up; any other number from 2^47 up is an FP64 blank. Integers beyond 2^31 are real
// values (energy in mJ, byte rates).
std::optional<std::string_view> dcgm::blank(std::string_view v) {
  // Every blank is a number of 10 digits or more (0x7ffffff0 is 2147483632).
  if (v.size() < 10 || !(v.front() >= '0' && v.front() <= '9')) return std::nullopt;
  if (const auto i = text::parse_int(v)) {
    if (*i >= kInt64Blank) return blank_marker(*i - kInt64Blank);
    if (*i >= kInt32Blank && *i <= kInt32Blank + 15) return blank_marker(*i - kInt32Blank);
    if (*i >= kFp64BlankInt && *i <= kFp64BlankInt + 15) return blank_marker(*i - kFp64BlankInt);
    return std::nullopt;
  }
  if (const auto d = text::parse_double(v); d && *d >= kFp64Blank) {
    const double off = *d - kFp64Blank;
    return off < 16 ? blank_marker(static_cast<int64_t>(off)) : "N/A";
  }
  return std::nullopt;
}

namespace {

// ---------------------------------------------------------------------------------------------
// The long field dump on the one reading pipeline: a framing that reads the dump's lines (one
// value each), merges the values of one GPU sampled together into one row, and hands that table to
// the column catalogue's reader (formats/generic_csv) under DCGM's field names
// (DCGM_FI_DEV_POWER_USAGE: the catalogue's DCGM names, with DCGM's scale). What only the framing
// sees (lines before the header, fields gpudoctor does not read, values merged from different
// times, repeated values) becomes notes after the read.

using log_reader::Problem;

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

// The table's columns: the GPU, the time, the identity strings, then the fields in the order the
// dump first names them. The names are the catalogue's.
constexpr size_t kGpuColumn = 0, kTimeColumn = 1;
constexpr std::array<std::string_view, 6> kIdentColumn = {
    "", "name", "serial", "uuid", "pci_bus_id", "driver_version"};  // by Ident

// One value of the dump, in its GPU's samples once merged: 20 bytes in 32-bit pieces (the values
// are most of what the framing holds). The value itself is found again where it begins: to the
// next comma, or to the line's end when the value is the last column.
struct Entry {
  uint32_t ts_lo, ts_hi;  // microseconds since 1970
  uint32_t at_lo;         // where the value begins in the text (48 bits)
  uint16_t at_hi;
  uint16_t column;  // in the table
  uint32_t line;    // the file's line (past 2^32 lines: the last), also the order in the file

  Entry(int64_t ts, uint64_t at, size_t file_line, uint16_t col)
      : ts_lo(static_cast<uint32_t>(ts)),
        ts_hi(static_cast<uint32_t>(static_cast<uint64_t>(ts) >> 32)),
        at_lo(static_cast<uint32_t>(at)),
        at_hi(static_cast<uint16_t>(at >> 32)),
        column(col),
        line(static_cast<uint32_t>(std::min<size_t>(file_line, UINT32_MAX))) {}
  Entry() = default;  // (uninitialised: a block of them is not written until used)
  int64_t ts_us() const {
    return static_cast<int64_t>((static_cast<uint64_t>(ts_hi) << 32) | ts_lo);
  }
  uint64_t at() const { return (static_cast<uint64_t>(at_hi) << 32) | at_lo; }
};
static_assert(sizeof(Entry) == 20);

struct DumpGpu {
  unsigned index = 0;
  std::string_view id;                                        // the GPUId cell as written
  std::array<std::string_view, kIdentColumn.size()> ident{};  // the first value of each
  // Its values, in time order once merged, and how they merge into samples: the sampling
  // interval's half and how many samples. Each sample's first value (a sample: the values up to
  // the next sample's) is found when the table's reader first asks for a row of the GPU.
  // Mutable: made, and let go as the reader passes them (done_before), while the table is read.
  mutable log_reader::StableBlocks<Entry> entries;
  int64_t tolerance_us = 0;
  size_t sample_count = 0;
  mutable log_reader::StableBlocks<size_t> samples;
};

// How a GPU's values (in time order) merge into samples: a value joins the current sample when it
// was taken within `tolerance` of the sample's first value and its field is not in the sample yet;
// a value repeated in a sample (same field and time) is left to its first. at_sample(i) for each
// sample's first value.
struct SampleWalk {
  size_t samples = 0, repeats = 0;
  int64_t spread = 0;  // the widest span of a sample's times
};
template <class AtSample>
SampleWalk walk_samples(const log_reader::StableBlocks<Entry>& E, size_t columns, int64_t tolerance,
                        AtSample at_sample) {
  SampleWalk w;
  std::vector<int64_t> in_sample_ts(columns, -1);  // -1: not in the current sample
  int64_t first_ts = 0;
  for (size_t i = 0; i < E.size(); ++i) {
    const Entry& e = E[i];
    const int64_t ts = e.ts_us();
    const bool seen = w.samples != 0 && in_sample_ts[e.column] >= 0;
    if (seen && in_sample_ts[e.column] == ts) {
      ++w.repeats;
      continue;
    }
    if (w.samples == 0 || seen || ts - first_ts > tolerance) {
      ++w.samples;
      at_sample(i);
      first_ts = ts;
      std::fill(in_sample_ts.begin(), in_sample_ts.end(), -1);
    } else {
      w.spread = std::max(w.spread, ts - first_ts);
    }
    in_sample_ts[e.column] = ts;
  }
  return w;
}

// The framing, and the table it makes: a row per GPU and sample, the GPUs in index order. A row
// is made of its sample's entries when read (a table of cells held 16 bytes for each of the
// dump's fields per row, most of them empty: each field is sampled at its own times).
class LongFraming : public log_reader::CellRows {
 public:
  LongFraming(std::string_view body, const std::string& origin) : body_(body), origin_(origin) {
    table_names_ = {"gpu", "timestamp_us"};
    field_column_.fill(0);
    ident_column_.fill(0);
  }

  // Reads the dump into the table, or says why it holds no rows to read.
  std::optional<Error> run();
  void add_notes(Recording& rec) const;

  size_t columns() const override { return table_names_.size(); }
  std::string_view name(size_t column) const override { return table_names_[column]; }
  size_t rows() const override { return rows_; }
  void row(size_t r, std::vector<std::string_view>& cells) const override;
  size_t header_line() const override { return header_line_no_; }
  size_t line(size_t r) const override;
  void done_before(size_t r) const override;

 private:
  void read_line(std::string_view t, size_t line_no, bool last_unterminated);
  DumpGpu* gpu(unsigned index, std::string_view id, size_t line_no);
  uint16_t column(const Target& tg);
  void merge(DumpGpu& g);
  // Row r's GPU and sample, the GPU's samples found.
  std::pair<const DumpGpu*, size_t> sample_of(size_t r) const;
  std::string_view value(const Entry& e) const {
    const std::string_view rest = body_.substr(e.at());
    return text::trim(rest.substr(0, rest.find(value_last_ ? '\n' : ',')));
  }
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, line_no, f, std::forward<Args>(args)...);
  }

  std::string_view body_;
  const std::string& origin_;
  LongHeader H_;
  std::string_view header_line_;
  size_t header_line_no_ = 0;
  size_t rows_read_ = 0, data_lines_ = 0, duplicates_ = 0;
  int64_t max_spread_us_ = 0, max_window_us_ = 0;  // of samples merged from different times
  std::vector<std::string_view> cells_;
  std::unordered_map<std::string_view, Target> targets_;
  std::vector<DumpGpu> gpus_;
  std::unordered_map<unsigned, size_t> slots_;  // GPU index -> gpus_
  size_t last_slot_ = 0;
  std::vector<std::string> table_names_;
  std::array<uint16_t, kFieldCount> field_column_;  // 0: none yet
  std::array<uint16_t, kIdentColumn.size()> ident_column_;
  std::vector<bool> pstate_column_;   // per column: the P-state (32 is NVML's "unknown")
  std::vector<unsigned> no_samples_;  // GPUs with identity values only
  std::string_view driver_;
  bool value_last_ = false;  // the value is the line's last column (it may hold commas)
  size_t rows_ = 0;
  std::vector<size_t> gpu_rows_;             // per GPU with samples: its first row, in order
  std::vector<const DumpGpu*> gpu_of_rows_;  // and the GPU
  mutable std::atomic<size_t> gpu_hint_{0};  // the GPU sample_of found last
  mutable size_t gpus_done_ = 0;             // GPUs whose values are let go
  mutable char time_[24];                    // the row's time, as text
  log_reader::UniqueNames unread_;
  Problem before_header_, wrong_count_, truncated_, bad_gpu_, bad_time_, too_many_gpus_;
};

// The GPU of a row; null past kMaxGpus GPUs (the row is counted in too_many_gpus_).
DumpGpu* LongFraming::gpu(unsigned index, std::string_view id, size_t line_no) {
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
  gpus_.push_back({index, id, {}, {}, 0, 0, {}});
  slots_.emplace(index, n);
  last_slot_ = n;
  return &gpus_.back();
}

// The table's column of a field or identity string, added when the dump first names it.
uint16_t LongFraming::column(const Target& tg) {
  uint16_t& c = tg.kind == Target::Kind::kField ? field_column_[index_of(tg.field)]
                                                : ident_column_[static_cast<size_t>(tg.ident)];
  if (c == 0) {
    c = static_cast<uint16_t>(table_names_.size());
    table_names_.emplace_back(tg.kind == Target::Kind::kField
                                  ? info(tg.field).dcgm_name
                                  : kIdentColumn[static_cast<size_t>(tg.ident)]);
    pstate_column_.resize(table_names_.size());
    pstate_column_[c] = tg.kind == Target::Kind::kField && tg.field == Field::kPstate;
  }
  return c;
}

void LongFraming::read_line(std::string_view t, size_t line_no, bool last_unterminated) {
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
  auto [it, added] = targets_.try_emplace(fv);
  if (added) {
    it->second = target_of_field_cell(fv);
    if (it->second.kind == Target::Kind::kUnknown) unread_.add(fv);
  }
  const Target tg = it->second;
  ++rows_read_;
  if (tg.kind == Target::Kind::kUnknown) return;
  DumpGpu* g = gpu(static_cast<unsigned>(*gid), gv, line_no);
  if (g == nullptr) return;
  if (tg.kind == Target::Kind::kIdent) {
    const std::string_view v = string_value(value);
    std::string_view& slot =
        tg.ident == Ident::kDriver ? driver_ : g->ident[static_cast<size_t>(tg.ident)];
    if (slot.empty()) slot = v;
    column(tg);
    return;
  }
  if (body_.size() >> 48 != 0) throw std::length_error("a DCGM dump of 256 TiB or more");
  g->entries.push_back(
      {*ts, static_cast<uint64_t>(value.data() - body_.data()), line_no, column(tg)});
}

// Sorts a GPU's values in time order and finds how they merge into samples, the rows of the table
// (walk_samples). DCGM stamps each field when it read it, so one round's fields differ by a
// little: values within half the sampling interval are one sample.
void LongFraming::merge(DumpGpu& g) {
  auto& E = g.entries;
  const auto before = [](const Entry& a, const Entry& b) {
    return a.ts_us() != b.ts_us() ? a.ts_us() < b.ts_us() : a.line < b.line;
  };
  if (!std::is_sorted(E.begin(), E.end(), before)) std::sort(E.begin(), E.end(), before);
  const size_t ncols = table_names_.size();
  // The sampling interval: the median gap between successive values of one field (gaps held in 32
  // bits, those of 71 minutes or more apart: they are the largest).
  std::vector<int64_t> last(ncols, -1);
  std::vector<uint32_t> gaps;
  std::vector<int64_t> long_gaps;
  gaps.reserve(E.size());  // (its pages written only as used; no doubling to copy)
  for (const Entry& e : E) {
    const int64_t ts = e.ts_us();
    if (const int64_t was = last[e.column]; was >= 0 && ts > was) {
      if (ts - was <= UINT32_MAX)
        gaps.push_back(static_cast<uint32_t>(ts - was));
      else
        long_gaps.push_back(ts - was);
    }
    last[e.column] = ts;
  }
  int64_t tol = 500000;  // one round only: half of DCGM's usual 1 s
  if (const size_t k = (gaps.size() + long_gaps.size()) / 2; k < gaps.size()) {
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(k), gaps.end());
    tol = gaps[k] / 2;
  } else if (!long_gaps.empty()) {
    const auto mid = long_gaps.begin() + static_cast<std::ptrdiff_t>(k - gaps.size());
    std::nth_element(long_gaps.begin(), mid, long_gaps.end());
    tol = *mid / 2;
  }
  gaps = {};
  g.tolerance_us = tol;
  const SampleWalk w = walk_samples(E, ncols, tol, [](size_t) {});
  g.sample_count = w.samples;
  duplicates_ += w.repeats;
  if (w.spread > 0) {
    max_spread_us_ = std::max(max_spread_us_, w.spread);
    max_window_us_ = std::max(max_window_us_, tol);
  }
}

std::pair<const DumpGpu*, size_t> LongFraming::sample_of(size_t r) const {
  const size_t k = log_reader::run_holding(gpu_rows_, r, gpu_hint_, [](size_t row) { return row; });
  const DumpGpu* g = gpu_of_rows_[k];
  if (g->samples.size() == 0)
    walk_samples(g->entries, table_names_.size(), g->tolerance_us,
                 [&](size_t i) { g->samples.push_back(i); });
  return {g, r - gpu_rows_[k]};
}

void LongFraming::done_before(size_t r) const {
  if (r >= rows_) return;
  const auto [g, s] = sample_of(r);
  for (; gpu_of_rows_[gpus_done_] != g; ++gpus_done_) {
    gpu_of_rows_[gpus_done_]->entries.release_before(SIZE_MAX);
    gpu_of_rows_[gpus_done_]->samples.release_before(SIZE_MAX);
  }
  g->entries.release_before(g->samples[s]);
  g->samples.release_before(s);
}

size_t LongFraming::line(size_t r) const {
  const auto [g, s] = sample_of(r);
  return g->entries[g->samples[s]].line;
}

void LongFraming::row(size_t r, std::vector<std::string_view>& cells) const {
  const auto [g, s] = sample_of(r);
  cells.assign(table_names_.size(), {});
  // The identity cells every row of the GPU repeats.
  cells[kGpuColumn] = g->id;
  for (size_t i = 1; i < kIdentColumn.size(); ++i)
    if (ident_column_[i] != 0)
      cells[ident_column_[i]] = i == static_cast<size_t>(Ident::kDriver) ? driver_ : g->ident[i];
  const size_t begin = g->samples[s];
  const size_t end = s + 1 < g->samples.size() ? g->samples[s + 1] : g->entries.size();
  const Entry& first = g->entries[begin];
  const auto t = fmt::format_to_n(time_, sizeof time_, "{}", first.ts_us());
  cells[kTimeColumn] = std::string_view(time_, t.size);
  // (The samples follow the text, most often: the text behind the first may go.)
  text::passed(body_.data() + first.at());
  for (size_t i = end; i-- > begin;) {  // (a repeated value: its first is read)
    const Entry& e = g->entries[i];
    // DCGM's blank sentinels are no value (the catalogue's reader would take them for numbers),
    // and neither is a P-state beyond P15 (NVML's "unknown" is 32).
    std::string_view v = value(e);
    if (const auto b = dcgm::blank(v)) {
      v = *b;
    } else if (pstate_column_[e.column]) {
      if (const auto p = text::parse_int(v); p && (*p < 0 || *p > 15)) v = "N/A";
    }
    cells[e.column] = v;
  }
}

std::optional<Error> LongFraming::run() {
  const bool unterminated = !body_.empty() && body_.back() != '\n';
  text::LineReader lines(body_);
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
        value_last_ = static_cast<size_t>(H_.value) + 1 == H_.cols;
        header_line_ = t;
        header_line_no_ = line_no;
      } else {
        problem(before_header_, line_no, "not the dump's header: \"{}\"", t.substr(0, 60));
      }
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
                                        fmt::to_string(header_line_no_), data_lines_, body_,
                                        {&wrong_count_, &bad_gpu_, &bad_time_, &truncated_});
  // GPUs in index order, those with identity values only left out.
  std::stable_sort(gpus_.begin(), gpus_.end(),
                   [](const DumpGpu& a, const DumpGpu& b) { return a.index < b.index; });
  for (const DumpGpu& g : gpus_)
    if (g.entries.size() == 0) no_samples_.push_back(g.index);
  if (no_samples_.size() == gpus_.size())
    return usage_error(
        fmt::format("{}: no values of fields gpudoctor reads (fields in the file: {})", origin_,
                    log_reader::join_names(unread_.list, 10)));
  for (DumpGpu& g : gpus_) {
    if (g.entries.size() == 0) continue;
    merge(g);
    gpu_rows_.push_back(rows_);
    gpu_of_rows_.push_back(&g);
    rows_ += g.sample_count;
  }
  return std::nullopt;
}

void LongFraming::add_notes(Recording& rec) const {
  if (max_spread_us_ > 0)
    log_reader::add_note(
        rec,
        fmt::format("DCGM stamps each field when it reads it: values of one GPU up to {} ms apart "
                    "merged into one sample (those within half the sampling interval, {} ms, of "
                    "the sample's first)",
                    fmt_number(static_cast<double>(max_spread_us_) / 1000.0),
                    fmt_number(static_cast<double>(max_window_us_) / 1000.0)));
  if (!no_samples_.empty())
    log_reader::add_note(rec, fmt::format("GPU(s) {} left out: no values of fields gpudoctor reads",
                                          fmt::join(no_samples_, ", ")));
  if (!unread_.empty())
    log_reader::add_note(rec, fmt::format("DCGM fields gpudoctor does not read, ignored: {}",
                                          log_reader::join_names(unread_.list)));
  if (duplicates_ > 0)
    log_reader::add_note(
        rec, fmt::format("{} repeated value(s) (same GPU, field and time) ignored", duplicates_));
  log_reader::note_skipped(rec, before_header_, "before the header");
  log_reader::note_skipped(rec, wrong_count_, "with the wrong number of columns");
  log_reader::note_skipped(rec, bad_gpu_, "without a GPU id");
  log_reader::note_skipped(rec, too_many_gpus_, log_reader::kTooManyGpus);
  log_reader::note_skipped(rec, bad_time_, "with an unreadable time");
  log_reader::note_skipped(rec, truncated_, "cut short at the end of the file");
}

Result<Recording> read_long(std::string_view text, const std::string& origin,
                            const DcgmOptions& opt) {
  const std::string_view body = text::strip_bom(text);
  if (auto e = text::check_input(body, origin, "a DCGM field dump", opt.power_limit_w))
    return std::move(*e);
  LongFraming framing(body, origin);
  if (auto e = framing.run()) return std::move(*e);
  auto rec = read_tool_table(
      framing, origin,
      {"DCGM field dump", "N/A or DCGM blanks", "dcgm dump", opt.power_limit_w, &opt.map});
  if (rec.ok()) framing.add_notes(*rec);
  return rec;
}

}  // namespace

bool looks_like_dcgm_long(std::string_view head) {
  if (looks_like_dcgm_scrape(head)) return true;  // (read_dcgm_long hands it on)
  std::vector<std::string_view> cells;
  return log_reader::by_first_lines(head, 16, [&](std::string_view t) -> std::optional<bool> {
    text::split_trimmed(t, ',', cells);
    if (long_header(cells).valid()) return true;
    return std::nullopt;
  });
}

Result<Recording> read_dcgm_long(std::string_view text, const std::string& origin,
                                 const DcgmOptions& opt) {
  if (looks_like_dcgm_scrape(text.substr(0, 4096))) {
    GenericCsvOptions o;
    o.power_limit_w = opt.power_limit_w;
    o.map = opt.map;
    return read_dcgm_scrape(text, origin, o);
  }
  return log_reader::guarded_read(origin, "DCGM field dump",
                                  [&] { return read_long(text, origin, opt); });
}

}  // namespace gpudoctor
