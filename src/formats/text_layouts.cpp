#include "formats/text_layouts.hpp"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/column_catalogue.hpp"
#include "formats/encoding.hpp"
#include "formats/finish.hpp"
#include "formats/flat_table.hpp"
#include "formats/log_time.hpp"
#include "text/text.hpp"

namespace gpudoctor {

namespace {

using text::iequals;

// The first line that is not blank.
std::string_view first_line(std::string_view head) {
  text::LineReader lines(head);
  std::string_view line;
  while (lines.next(line))
    if (!text::is_blank(line)) return text::trim(line);
  return {};
}

// ---------------------------------------------------------------------------------------------
// MSI Afterburner .hml

// A graph's name with its unit: "Power [W]"; a power graph in % is the power percent ("GPU1 power"
// in % -> "GPU1 power percent [%]"), not watts.
std::string unit_named(const std::string& name, std::string_view unit) {
  const std::string_view n = name;
  if (unit == "%" && n.size() >= 5 && iequals(n.substr(n.size() - 5), "power"))
    return fmt::format("{} percent [%]", name);
  return fmt::format("{} [{}]", name, unit);
}

// The GPUs' names from the 01 line as columns: "name" when no graph is numbered ("GPU temperature":
// the first GPU's), else "GPU<n> name" for each GPU number the graphs use ("GPU1 usage").
void name_columns(const std::vector<std::string>& names, const std::vector<std::string>& gpu_names,
                  std::vector<std::pair<std::string, std::string>>& out) {
  out.clear();
  if (gpu_names.empty()) return;
  std::vector<size_t> numbers;
  for (const auto& n : names) {
    if (n.size() < 4 || !iequals(std::string_view(n).substr(0, 3), "gpu")) continue;
    size_t k = 3, v = 0;
    while (k < n.size() && n[k] >= '0' && n[k] <= '9')
      v = v * 10 + static_cast<size_t>(n[k++] - '0');
    if (k > 3 && k < n.size() && n[k] == ' ' &&
        std::find(numbers.begin(), numbers.end(), v) == numbers.end())
      numbers.push_back(v);
  }
  if (numbers.empty()) {
    out.emplace_back("name", gpu_names.front());
    return;
  }
  for (const size_t v : numbers)
    if (v >= 1 && v <= gpu_names.size())
      out.emplace_back(fmt::format("GPU{} name", v), gpu_names[v - 1]);
}

bool ascii(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return (c & 0x80) != 0; });
}

// A data line: "80, DATE, ..." with at least three cells (as a line split at its commas would
// show).
bool data_line(std::string_view line) {
  const std::string_view t = text::trim(line);
  if (!t.starts_with("80")) return false;
  const size_t comma = t.find(',');
  return comma != std::string_view::npos && text::trim(t.substr(0, comma)) == "80" &&
         t.find(',', comma + 1) != std::string_view::npos;
}

// Afterburner's data lines ("80, DATE, v1, v2, ..."), kept as lines and cut at commas when read
// (a table of cells held 16 bytes for each of a line's hundred-odd graphs, twice the text): the
// "80" left out, a cell for each graph named, then the GPUs' names. A Windows-1252 text's line is
// decoded where it has a byte past ASCII, into a buffer the cells view until the next row.
class AfterburnerRows : public log_reader::LineRows {
 public:
  AfterburnerRows(size_t graphs, std::vector<std::string> gpu_names, bool windows_1252)
      : graphs_(graphs), gpu_names_(std::move(gpu_names)), windows_1252_(windows_1252) {}

 protected:
  void split(size_t, std::string_view line, std::vector<std::string_view>& cells) const override {
    if (windows_1252_ && !ascii(line))
      line = text::decode_to_utf8(line, text::Encoding::kWindows1252, decoded_);
    text::split_trimmed(line, ',', cells);
    cells.erase(cells.begin());
    cells.resize(graphs_ + 1);
    for (const auto& n : gpu_names_) cells.emplace_back(n);
  }

 private:
  size_t graphs_;
  std::vector<std::string> gpu_names_;
  bool windows_1252_;
  mutable std::string decoded_;
};

Result<Recording> afterburner(std::string_view text, const std::string& origin,
                              const GenericCsvOptions& opt) {
  // The bytes as load_text found them (text::ReadAs): UTF-8 (checked here, line by line, where
  // asked: a line that is not sends the text back to be decoded whole) or Windows-1252 (each line
  // decoded where it needs it).
  const bool check_utf8 = opt.read_as == text::ReadAs::kCheckUtf8;
  const bool windows_1252 = opt.read_as == text::ReadAs::kWindows1252;
  text::LineReader lines(text);
  std::string_view line;
  std::string decoded;
  std::vector<std::string_view> cells;
  std::vector<std::string> names, gpu_names;
  std::vector<std::pair<std::string, std::string>> name_cols;  // (column, the GPU's name)
  std::optional<AfterburnerRows> rows;
  bool header = false;
  size_t names_line = 0;
  auto header_names = [&] {
    std::vector<std::string> h{"time"};
    h.insert(h.end(), names.begin(), names.end());
    for (const auto& c : name_cols) h.push_back(c.first);
    return h;
  };
  while (lines.next(line)) {
    if (text::is_blank(line)) continue;
    if (check_utf8 && !text::valid_utf8(line))
      return Error{Error::Kind::kFailure, origin + ": not UTF-8 text", Error::Code::kNotUtf8};
    // A data line is kept as it is, and cut when read (AfterburnerRows).
    if (header && data_line(line)) {
      if (!rows) {
        // The units of 03 lines come before the first data line: the header, with them.
        name_columns(names, gpu_names, name_cols);
        std::vector<std::string> values;
        for (const auto& c : name_cols) values.push_back(c.second);
        rows.emplace(names.size(), std::move(values), windows_1252);
        rows->add_header(header_names(), names_line);
      }
      rows->add_row(line, lines.line_number());
      continue;
    }
    if (windows_1252 && !ascii(line))
      line = text::decode_to_utf8(line, text::Encoding::kWindows1252, decoded);
    text::split_trimmed(line, ',', cells);
    if (cells.size() < 3) continue;
    if (cells[0] == "02" && !header) {
      // "02, DATE, GPU temperature, GPU usage, ...": the column names.
      names.assign(cells.begin() + 2, cells.end());
      for (auto& n : names) {
        // The limit flags (0/1): "Power limit [flag]" is a clock-event reason in the catalogue,
        // not the power limit in W.
        if (n.size() > 6 && iequals(std::string_view(n).substr(n.size() - 6), " limit"))
          n += " [flag]";
      }
      names_line = lines.line_number();
      header = true;
      continue;
    }
    if (cells[0] == "01" && gpu_names.empty()) {
      // "01, DATE, NVIDIA GeForce GTX 1650, Intel(R) UHD Graphics": the GPUs, GPU1 first.
      for (size_t i = 2; i < cells.size(); ++i)
        if (!cells[i].empty()) gpu_names.emplace_back(cells[i]);
      continue;
    }
    if (cells[0] == "03" && header && !rows && cells.size() >= 3) {
      // The unit of a graph, added as a bracket: "03, DATE, INDEX, UNIT, min, max, ..." as
      // Afterburner writes it, or "03, NAME, UNIT, min, max, ...".
      std::string* n = nullptr;
      std::string_view unit;
      if (const auto i = text::parse_int(cells[2]);
          i && cells.size() >= 4 && *i >= 0 && static_cast<size_t>(*i) < names.size()) {
        n = &names[static_cast<size_t>(*i)];
        unit = cells[3];
      } else {
        for (auto& name : names)
          if (name == cells[1]) n = &name;
        unit = cells[2];
      }
      if (n != nullptr && !unit.empty() && n->find('[') == std::string::npos)
        *n = unit_named(*n, unit);
      continue;
    }
  }
  if (!header)
    return usage_error(
        fmt::format("{}: an MSI Afterburner log without its 02 line (the column "
                    "names)",
                    origin));
  if (!rows) {  // (no data line: the reader says so, under the header as named)
    rows.emplace(names.size(), std::vector<std::string>{}, windows_1252);
    rows->add_header(header_names(), names_line);
  }
  GenericCsvOptions o = opt;
  o.read_as = text::ReadAs::kUtf8;  // (the rows give UTF-8 cells)
  return read_layout_rows(*rows, origin, o, "msi afterburner");
}

// ---------------------------------------------------------------------------------------------
// key: value blocks

// "=== 2024-01-01 12:00:00 ===", "---- 2024-01-01T12:00:00Z ----": the time between the rules.
std::optional<std::string_view> block_time(std::string_view line) {
  line = text::trim(line);
  if (line.size() < 12 || (line.front() != '=' && line.front() != '-')) return std::nullopt;
  const char rule = line.front();
  size_t b = 0, e = line.size();
  while (b < e && (line[b] == rule || line[b] == ' ')) ++b;
  while (e > b && (line[e - 1] == rule || line[e - 1] == ' ')) --e;
  if (b < 2) return std::nullopt;
  const std::string_view t = line.substr(b, e - b);
  bool zoned = false;
  if (!csv::parse_datetime(t, zoned)) return std::nullopt;
  return t;
}

// The key of a memory pair's total ("GPU Memory" -> "GPU Memory total", "Memory Used" ->
// "Memory total"), kept in `totals`; nullopt for pairs of other quantities.
std::optional<std::string_view> memory_total_key(std::string_view key,
                                                 std::deque<std::string>& totals) {
  std::string_view stem = key;
  if (stem.size() > 5 && iequals(stem.substr(stem.size() - 5), " used"))
    stem = stem.substr(0, stem.size() - 5);
  if (stem.size() < 6 || !iequals(stem.substr(stem.size() - 6), "memory")) return std::nullopt;
  const std::string name = std::string(stem) + " total";
  for (const auto& t : totals)
    if (t == name) return std::string_view(t);
  return std::string_view(totals.emplace_back(name));
}

Result<Recording> key_value_blocks(std::string_view text, const std::string& origin,
                                   const GenericCsvOptions& opt) {
  std::deque<std::string> totals;  // the total keys' names (the keys are views of them)
  // A row per GPU of a block, its cells set as its lines come (a flat table: the keys are found
  // as they come, and a row holds the keys it has, 8 bytes each), its line the GPU's line or
  // the block's first value's.
  log_reader::FlatTable flat;
  if (opt.map.empty()) flat.unread_columns(csv::never_read);
  text::LineReader lines(text);
  std::string_view line, time;
  bool in_block = false, row_of_block = false, gpu_lines = false;
  auto begin_row = [&](size_t line_no) {
    if (flat.rows() == 0) flat.set_header_line(line_no);  // (no header line in the file)
    flat.at_line(line_no);
    flat.begin_row();
    flat.set_view("time", time);
    row_of_block = true;
  };
  while (lines.next(line)) {
    if (text::is_blank(line)) continue;
    if (const auto t = block_time(line)) {
      time = *t;
      in_block = true;
      row_of_block = false;
      continue;
    }
    if (!in_block) continue;
    const std::string_view l = text::trim(line);
    const size_t colon = l.find(':');
    if (colon == std::string_view::npos || colon == 0) continue;
    const std::string_view key = text::trim(l.substr(0, colon));
    const std::string_view value = text::trim(l.substr(colon + 1));
    // "GPU 0: NVIDIA ...": another GPU of the block.
    if (key.size() > 3 && text::istarts_with(key, "gpu") &&
        text::parse_int(text::trim(key.substr(3)))) {
      begin_row(lines.line_number());
      flat.set_view("gpu", text::trim(key.substr(3)));
      flat.set_view("name", value);
      gpu_lines = true;
      continue;
    }
    if (!row_of_block) begin_row(lines.line_number());
    // "1234MB / 24576MB": the first of the pair; of memory, the second is the total ("GPU
    // Memory: 0.0MB / 6144.0MB (0.0%)" -> "GPU Memory" and "GPU Memory total").
    std::string_view v = value;
    if (const size_t slash = v.find(" / "); slash != std::string_view::npos) {
      v = text::trim(v.substr(0, slash));
      if (const auto total = memory_total_key(key, totals)) {
        std::string_view t = text::trim(value.substr(slash + 3));
        t = text::trim(t.substr(0, t.find(" (")));
        flat.set_view(*total, t);
      }
    }
    // A key named as a column of the block's own ("time: 12.5") is a column of its own, after
    // the block's (the reader reads the first of two of a kind, and says so), not the block's.
    if (key == "time" || key == "gpu" || key == "name")
      flat.set_view(fmt::format("{} (a key of the block)", key), v);
    else
      flat.set_view(key, v);
  }
  if (flat.rows() == 0)
    return usage_error(fmt::format("{}: no \"=== time ===\" block with values", origin));
  // Blocks without "GPU N: NAME" lines are of one GPU: no GPU and name columns then.
  flat.put_first(gpu_lines ? std::vector<std::string_view>{"time", "gpu", "name"}
                           : std::vector<std::string_view>{"time"});
  return read_layout_rows(flat, origin, opt, "key-value blocks");
}

// ---------------------------------------------------------------------------------------------
// whitespace-aligned tables

// A rule: a line of '=' or '-' (and spaces), at least 8 of them.
bool is_rule(std::string_view l) {
  l = text::trim(l);
  if (l.size() < 8) return false;
  return l.find_first_not_of("=- +") == std::string_view::npos;
}

// Header cells: split at runs of two or more spaces (or tabs) when the line has any, else at
// every space ("GPU Util(%)  Power(W)" keeps its words together).
void split_header(std::string_view l, std::vector<std::string_view>& out) {
  out.clear();
  l = text::trim(l);
  const bool wide_gaps =
      l.find("  ") != std::string_view::npos || l.find('\t') != std::string_view::npos;
  if (!wide_gaps) {
    text::split_ws(l, out);
    return;
  }
  size_t i = 0;
  while (i < l.size()) {
    size_t j = i;
    while (j < l.size() && l[j] != '\t' && !(l[j] == ' ' && j + 1 < l.size() && l[j + 1] == ' '))
      ++j;
    out.push_back(text::trim(l.substr(i, j - i)));
    while (j < l.size() && (l[j] == ' ' || l[j] == '\t')) ++j;
    i = j;
  }
}

// Row cells: whitespace-separated, a date and a time of day side by side ("2024-05-01 10:00:00")
// taken as one cell. last_date: the last cell found to be a date (rows of a day share it).
void split_row(std::string_view l, std::vector<std::string_view>& out, std::string& last_date) {
  text::split_ws(l, out);
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    const bool date = (!last_date.empty() && out[i] == last_date) ||
                      (out[i].size() >= 8 && csv::parse_date(out[i]));  // (D.M.YYYY at least)
    if (date && out[i] != last_date) last_date.assign(out[i]);
    if (date && csv::parse_time_of_day(out[i + 1])) {
      const char* b = out[i].data();
      out[i] = std::string_view(b, static_cast<size_t>(out[i + 1].data() + out[i + 1].size() - b));
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
  }
}

// The header of a whitespace table in the first lines: a line of at least two cells, one of them
// a column the catalogue reads, with a row of as many cells below it (rules between are skipped).
// Its offset in the text.
std::optional<size_t> ws_header(std::string_view text) {
  text::LineReader lines(text);
  std::string_view line;
  std::vector<std::string_view> h, r;
  bool any_rule = false;
  for (int n = 0; n < 12 && lines.next(line); ++n) {
    if (text::is_blank(line)) continue;
    if (is_rule(line)) {
      any_rule = true;
      continue;
    }
    if (line.find_first_of(",;|") != std::string_view::npos) continue;
    split_header(line, h);
    if (h.size() < 2) continue;
    const bool known = std::any_of(h.begin(), h.end(), [](std::string_view c) {
      const auto col = csv::resolve(c);
      return col.m.role == csv::Role::kField || col.m.role == csv::Role::kReason;
    });
    if (!known) continue;
    text::LineReader after(lines.rest());
    std::string_view next;
    while (after.next(next) && (text::is_blank(next) || is_rule(next))) any_rule = true;
    std::string last_date;
    split_row(next, r, last_date);
    // A title over the header ("GPU Utilization Monitor - Press Ctrl+C to stop") names a column
    // too, but what follows it is no row of numbers: the header is further down.
    const bool numbers =
        std::any_of(r.begin(), r.end(), [](std::string_view c) { return text::parse_double(c); });
    if (!numbers) continue;
    if (r.size() == h.size() && any_rule) return static_cast<size_t>(line.data() - text.data());
    return std::nullopt;
  }
  return std::nullopt;
}

// A whitespace table's rows, kept as lines and split when read (a table of cells held 16 bytes a
// cell, more than the text): the header again where it is repeated, for the reader to count.
class WsRows : public log_reader::LineRows {
 public:
  explicit WsRows(std::string header) : header_(std::move(header)) {}

 protected:
  void split(size_t, std::string_view line, std::vector<std::string_view>& cells) const override {
    if (text::trim(line) == header_)
      split_header(line, cells);
    else
      split_row(line, cells, last_date_);  // (a cache: the same cells in any order of rows)
  }

 private:
  std::string header_;
  mutable std::string last_date_;
};

Result<Recording> ws_table(std::string_view text, const std::string& origin,
                           const GenericCsvOptions& opt) {
  const auto at = ws_header(text);
  if (!at) return usage_error(fmt::format("{}: no header line of a whitespace table", origin));
  text::LineReader lines(text.substr(*at));
  // The lines above the header (title, rules).
  const auto before = static_cast<size_t>(
      std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(*at), '\n'));
  std::string_view line;
  std::vector<std::string_view> cells;
  lines.next(line);
  split_header(line, cells);
  WsRows rows{std::string(text::trim(line))};
  rows.add_header(std::vector<std::string>(cells.begin(), cells.end()),
                  before + lines.line_number());
  while (lines.next(line))
    if (!text::is_blank(line) && !is_rule(line)) rows.add_row(line, before + lines.line_number());
  return read_layout_rows(rows, origin, opt, "whitespace table");
}

}  // namespace

Result<Recording> read_layout_rows(const log_reader::CellRows& rows, const std::string& origin,
                                   const GenericCsvOptions& opt, std::string_view layout) {
  auto rec = read_generic_csv(rows, origin, opt);
  if (rec.ok()) rec->source = fmt::format("{}: {}", layout, origin);
  return rec;
}

bool looks_like_afterburner(std::string_view head) {
  const std::string_view l = first_line(text::strip_bom(head));
  return l.starts_with("00,") && head.find("\n02,") != std::string_view::npos;
}

bool looks_like_key_value_blocks(std::string_view head) {
  const std::string_view l = first_line(text::strip_bom(head));
  return block_time(l).has_value() && head.find(':', l.size()) != std::string_view::npos;
}

bool looks_like_ws_table(std::string_view head) {
  return log_reader::guarded_check([&] { return ws_header(text::strip_bom(head)).has_value(); });
}

Result<Recording> read_ws_table(std::string_view text, const std::string& origin,
                                const GenericCsvOptions& opt) {
  return log_reader::guarded_read(origin, "whitespace table",
                                  [&] { return ws_table(text::strip_bom(text), origin, opt); });
}

Result<Recording> read_afterburner(std::string_view text, const std::string& origin,
                                   const GenericCsvOptions& opt) {
  return log_reader::guarded_read(origin, "MSI Afterburner log",
                                  [&] { return afterburner(text::strip_bom(text), origin, opt); });
}

Result<Recording> read_key_value_blocks(std::string_view text, const std::string& origin,
                                        const GenericCsvOptions& opt) {
  return log_reader::guarded_read(origin, "key: value blocks", [&] {
    return key_value_blocks(text::strip_bom(text), origin, opt);
  });
}

}  // namespace gpudoctor
