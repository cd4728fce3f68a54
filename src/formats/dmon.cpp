#include "formats/dmon.hpp"

#include <ctime>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/column_catalogue.hpp"
#include "formats/finish.hpp"
#include "formats/flat_table.hpp"  // log_reader::CellRows
#include "formats/generic_csv.hpp"
#include "formats/log_time.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using text::iequals;
using text::split_ws;

// ---------------------------------------------------------------------------------------------
// The header pair

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

// The units of the identity columns: gpu "Idx", Date "YYYYMMDD", Time "HH:MM:SS".
bool is_identity_unit(std::string_view u) {
  return iequals(u, "Idx") || iequals(u, "YYYYMMDD") || iequals(u, "HH:MM:SS");
}

bool is_units_line(const std::vector<std::string_view>& tokens) {
  return !tokens.empty() && std::any_of(tokens.begin(), tokens.end(),
                                        [](std::string_view t) { return is_identity_unit(t); });
}

// pmon's header ("# gpu  pid  type  sm  mem ... command"): per-process, not per-device.
bool is_pmon_header(const std::vector<std::string_view>& tokens) {
  return std::any_of(tokens.begin(), tokens.end(),
                     [](std::string_view t) { return iequals(t, "pid") || iequals(t, "command"); });
}

bool is_names_line(const std::vector<std::string_view>& tokens) {
  return std::any_of(tokens.begin(), tokens.end(),
                     [](std::string_view t) { return iequals(t, "gpu"); });
}

// A dmon name the column catalogue reads as a GPU metric ("pwr", "smutil", "mmaact").
bool is_metric_name(std::string_view name) {
  return csv::resolve(name).m.role == csv::Role::kField;
}

// The column's name for the catalogue: dmon's name without spaces ("sm util" is "smutil"), with its
// unit from the units line in brackets where the catalogue reads the name as a metric ("pwr [W]";
// dmon's "GPM:" prefix dropped), so that the one unit table decides and a printed unit wins over
// what a name alone would mean (dcgmi dmon's "smocc" is a 0-1 ratio, dmon's a percent).
std::string column_name(std::string_view name, std::string_view unit) {
  std::string n;
  for (const char c : name)
    if (!text::is_space(c)) n += c;
  if (text::istarts_with(unit, "GPM:")) unit.remove_prefix(4);
  if (unit.empty() || is_identity_unit(unit) || !is_metric_name(n)) return n;
  return fmt::format("{} [{}]", n, unit);
}

std::string names_key(const std::vector<std::string_view>& tokens) {
  std::string k;
  for (const auto t : tokens) {
    if (!k.empty()) k += ' ';
    for (const char c : t) k += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return k;
}

// The k-th whitespace-separated token of a line ("" past its end).
std::string_view nth_token(std::string_view t, size_t k) {
  size_t n = 0, i = 0;
  while (true) {
    while (i < t.size() && text::is_space(t[i])) ++i;
    if (i == t.size()) return {};
    const size_t start = i;
    while (i < t.size() && !text::is_space(t[i])) ++i;
    if (n++ == k) return t.substr(start, i - start);
  }
}

// ---------------------------------------------------------------------------------------------
// Framing: dmon's lines as a table of cells for the column catalogue's reader (formats/
// generic_csv), each header pair that changes the columns a header row of it. What only the
// framing sees (rows before any header, other '#' comments, a units line that does not fit)
// becomes notes after the read.

using log_reader::Problem;

class Framing {
 public:
  Framing(std::string_view body, const std::string& origin) : body_(body), origin_(origin) {}

  void run();
  bool any_header() const { return any_header_; }
  bool pmon() const { return pmon_; }
  const log_reader::LineRows& table() const { return table_; }
  void add_notes(Recording& rec) const;

 private:
  struct Header {
    std::string key;                          // the names, lower case, one space apart
    std::string_view names_line, units_line;  // trimmed; units_line empty until one is read
    std::vector<std::string_view> names;      // merged by the units line where names hold spaces
    std::vector<std::string_view> units;      // one per name, or none
    size_t line = 0;
    bool emitted = false;  // in the table (as its header or a header row)
    int date = -1, time = -1, gpu = -1;
  };
  void header_line(std::string_view t, size_t line_no);
  void units_line(std::string_view t, size_t line_no);
  void emit_header();
  void data_line(std::string_view t, size_t line_no, bool cut);
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, line_no, f, std::forward<Args>(args)...);
  }

  std::string_view body_;
  const std::string& origin_;
  log_reader::LineRows table_;
  Header h_;
  bool valid_ = false, any_header_ = false, pmon_ = false;
  std::vector<std::string_view> tokens_, merged_;
  std::string_view first_date_;  // -o D without T: the date of the first row
  bool untimed_ = false;         // a header without a time column had rows
  Problem before_header_, other_comment_, units_mismatch_;
};

void Framing::run() {
  const bool unterminated = !body_.empty() && body_.back() != '\n';
  text::LineReader lines(body_);
  std::string_view line;
  while (lines.next(line)) {
    const std::string_view t = text::trim(line);
    if (t.empty()) continue;
    const size_t line_no = lines.line_number();
    if (t.front() == '#') {
      // The header pair, repeated every screenful: skipped at the cost of one comparison.
      if (valid_ && (t == h_.names_line || t == h_.units_line)) continue;
      header_line(t, line_no);
      continue;
    }
    data_line(t, line_no, unterminated && lines.rest().empty());
  }
  if (valid_ && !table_.has_header()) emit_header();  // a header and no rows: the reader says so
}

void Framing::header_line(std::string_view t, size_t line_no) {
  split_ws(t.substr(1), tokens_);
  if (tokens_.empty()) return;  // a bare "#"
  if (is_units_line(tokens_)) {
    units_line(t, line_no);
    return;
  }
  if (is_pmon_header(tokens_)) {
    pmon_ = true;
    valid_ = false;
    return;
  }
  if (!is_names_line(tokens_)) {
    problem(other_comment_, line_no, "not a dmon header: \"{}\"", t.substr(0, 60));
    return;
  }
  any_header_ = true;
  std::string key = names_key(tokens_);
  if (valid_ && key == h_.key) {
    h_.names_line = t;  // the same columns, spaced differently
    return;
  }
  h_ = {};
  h_.key = std::move(key);
  h_.names_line = t;
  h_.names = tokens_;
  h_.line = line_no;
  valid_ = true;
}

// The units line under a names line: lines up names that hold spaces, and gives each column its
// unit.
void Framing::units_line(std::string_view t, size_t line_no) {
  if (!valid_ || h_.emitted) return;
  split_ws(t.substr(1), tokens_);
  if (tokens_.size() != h_.names.size()) {
    // Positions count from the '#' both lines start with.
    if (tokens_.size() < h_.names.size() &&
        merge_names(h_.names_line, h_.names, t, tokens_, merged_)) {
      h_.names = merged_;
    } else {
      problem(units_mismatch_, line_no, "{} units under {} column names", tokens_.size(),
              h_.names.size());
      return;
    }
  }
  h_.units_line = t;
  h_.units = tokens_;
}

// The current header into the table, before its first row: its names for the catalogue. A date
// column without a time column (-o D) is left out: the rows' dates alone do not time them.
void Framing::emit_header() {
  std::vector<std::string> names;
  h_.date = h_.time = h_.gpu = -1;
  for (size_t i = 0; i < h_.names.size(); ++i) {
    if (iequals(h_.names[i], "gpu")) h_.gpu = static_cast<int>(i);
    if (iequals(h_.names[i], "date")) h_.date = static_cast<int>(i);
    if (iequals(h_.names[i], "time")) h_.time = static_cast<int>(i);
  }
  for (size_t i = 0; i < h_.names.size(); ++i) {
    if (static_cast<int>(i) == h_.date && h_.time < 0) continue;
    names.push_back(column_name(h_.names[i], h_.units.empty() ? "" : h_.units[i]));
  }
  untimed_ = untimed_ || h_.time < 0;
  table_.add_header(std::move(names), h_.line);
  h_.emitted = true;
}

void Framing::data_line(std::string_view t, size_t line_no, bool cut) {
  if (!valid_) {
    if (!pmon_) problem(before_header_, line_no, "a row before any dmon header line");
    return;
  }
  if (!h_.emitted) emit_header();
  const int drop = h_.time < 0 ? h_.date : -1;
  if (drop >= 0 && first_date_.empty()) {
    if (const auto d = nth_token(t, static_cast<size_t>(drop)); csv::parse_compact_date(d))
      first_date_ = d;
  }
  table_.add_row(t, line_no, h_.gpu, drop);
  // dmon ends every line: a last line without an end was cut, perhaps mid-value.
  if (cut) table_.set_last_row_cut();
}

void Framing::add_notes(Recording& rec) const {
  if (untimed_)
    log_reader::add_note(rec,
                         "dmon's interval (-d, 1 s unless set) is not in its log: if it ran with "
                         "another, the times are off by that factor");
  if (!first_date_.empty())
    log_reader::add_note(
        rec,
        fmt::format("date only (dmon -o D): the rows start on {}; their time of day is unknown",
                    first_date_));
  log_reader::note_skipped(rec, before_header_, "before the first dmon header");
  log_reader::note_skipped(rec, other_comment_, "of '#' comments that are not dmon's header");
  if (units_mismatch_.count > 0)
    log_reader::add_note(
        rec, fmt::format("{} units line(s) do not match their header (first: {}); the units are "
                         "told by the names",
                         units_mismatch_.count, units_mismatch_.first));
}

Result<Recording> read(std::string_view text, const std::string& origin, const DmonOptions& opt) {
  const std::string_view body = text::strip_bom(text);
  if (auto e = text::check_input(body, origin, "nvidia-smi dmon output", opt.power_limit_w))
    return std::move(*e);
  Framing framing(body, origin);
  framing.run();
  if (!framing.any_header()) {
    if (framing.pmon())
      return usage_error(fmt::format(
          "{}: nvidia-smi pmon output (per-process), not nvidia-smi dmon (per-device)", origin));
    return usage_error(fmt::format(
        "{}: no nvidia-smi dmon header line (\"# gpu   pwr  gtemp ...\"); is this dmon output?",
        origin));
  }
  // A header and no rows (the file may end inside the header pair): said before the catalogue
  // would look for a column in a header cut short.
  if (framing.table().rows() == 0)
    return log_reader::no_readable_rows(origin, "a header line",
                                        fmt::to_string(framing.table().header_line()), 0, body, {});
  auto rec = read_tool_table(framing.table(), origin,
                             {"nvidia-smi dmon", "'-'", {}, opt.power_limit_w, &opt.map});
  if (rec.ok()) framing.add_notes(*rec);
  return rec;
}

}  // namespace

bool looks_like_dmon(std::string_view head) {
  std::vector<std::string_view> tokens;
  size_t other = 0;
  return log_reader::by_first_lines(head, 64, [&](std::string_view t) -> std::optional<bool> {
    // (A '#' line of names with commas is a CSV's header written as a comment, not dmon's.)
    if (t.front() == '#' && t.find(',') == std::string_view::npos) {
      split_ws(t.substr(1), tokens);
      if (is_pmon_header(tokens)) return false;
      if (is_names_line(tokens) && std::any_of(tokens.begin(), tokens.end(), is_metric_name))
        return true;
      if (is_units_line(tokens)) return std::nullopt;
    } else {
      // dmon rows (a file cut from the middle of a log) hold numbers, '-', dates and times.
      split_ws(t, tokens);
      const bool row_like = std::all_of(tokens.begin(), tokens.end(), [](std::string_view s) {
        return s == "-" || (s.front() >= '0' && s.front() <= '9');
      });
      if (row_like) return std::nullopt;
    }
    if (++other > 3) return false;
    return std::nullopt;
  });
}

Result<Recording> read_dmon(std::string_view text, const std::string& origin,
                            const DmonOptions& opt) {
  return log_reader::guarded_read(origin, "nvidia-smi dmon log",
                                  [&] { return read(text, origin, opt); });
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
      const ColumnView col = c.field ? g.column(*c.field) : nullptr;
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
