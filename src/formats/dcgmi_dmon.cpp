// `dcgmi dmon` output on the one reading pipeline: a framing that reads dcgmi's "#Entity" header
// pairs and its "GPU 0" entity cells, and hands a table of rows to the column catalogue's reader
// (formats/generic_csv), which knows DCGM's short tags ("POWER", "SMACT": the catalogue's "dcgmi
// dmon" rows, with DCGM's scale). What only the framing sees (rows of entities that are not whole
// GPUs, lines that are no dcgmi output, rows before any header) becomes notes after the read.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/column_catalogue.hpp"
#include "formats/dcgm.hpp"
#include "formats/dcgm_values.hpp"
#include "formats/finish.hpp"
#include "formats/flat_table.hpp"  // log_reader::CellRows
#include "formats/generic_csv.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using log_reader::Problem;
using text::iequals;
using text::is_space;
using text::split_ws;

bool is_dcgmi_entity_header(const std::vector<std::string_view>& tokens) {
  return !tokens.empty() && iequals(tokens[0], "Entity");
}

// One header of the log: its column names for the catalogue, where each name starts in the
// header line (dcgmi left-aligns every value under its name: the rows are sliced there when a
// value holds spaces) and which columns may hold spaces (strings: names, serials).
struct DcgmiHeader {
  std::vector<std::string> names;  // "EntityId", then dcgmi's short tags
  std::vector<size_t> starts;      // per short tag: its offset in the header line
  std::vector<bool> text;          // per short tag: a string column
  std::vector<bool> pstate;        // per short tag: the P-state (32 is NVML's "unknown")
  bool positional = false;         // "#Entity" at column 0: dcgmi's own layout
};

// dcgmi's rows as the lines they are (log_reader::LineRows), split when the reader asks for one:
// the entity group ("GPU") dropped, its number the EntityId cell, DCGM's blank sentinels blanked
// (the catalogue's reader would take them for numbers) and, where a value holds spaces, the line
// sliced at the header's offsets.
class DcgmiRows : public log_reader::LineRows {
 public:
  void add_header(DcgmiHeader h, size_t file_line) {
    LineRows::add_header(h.names, file_line);
    headers_.push_back(std::move(h));
  }
  // The EntityId (the first cell once the group is dropped) must be a GPU's number.
  void add_row(std::string_view line, size_t file_line) { LineRows::add_row(line, file_line, 0); }

 protected:
  void split(size_t header, std::string_view line,
             std::vector<std::string_view>& cells) const override {
    const DcgmiHeader& h = headers_[header];
    split_ws(line, cells);
    if (cells.size() > h.names.size() + 1) slice(h, line, cells);
    if (!cells.empty()) cells.erase(cells.begin());  // the entity group ("GPU")
    // DCGM's blank sentinels are no value (not in string columns: a serial number is none), and
    // neither is a P-state beyond P15 (DCGM prints NVML's "unknown", 32).
    for (size_t i = 1; i < cells.size(); ++i) {
      if (i <= h.text.size() && h.text[i - 1]) continue;
      if (const auto b = dcgm::blank(cells[i])) {
        cells[i] = *b;
      } else if (i <= h.pstate.size() && h.pstate[i - 1]) {
        if (const auto p = text::parse_int(cells[i]); p && (*p < 0 || *p > 15)) cells[i] = "N/A";
      }
    }
  }

 private:
  // Cuts a row at the header's offsets (cells left as split when it does not fit): the entity
  // group and number, then one cell per column; only string columns may hold spaces.
  static void slice(const DcgmiHeader& h, std::string_view line,
                    std::vector<std::string_view>& cells) {
    if (!h.positional || h.starts.empty()) return;
    const size_t n = h.starts.size();
    for (const size_t s : h.starts)
      if (s >= line.size() || s < 2 || !is_space(line[s - 1]) || is_space(line[s])) return;
    std::vector<std::string_view> out;
    split_ws(line.substr(0, h.starts[0]), out);
    if (out.size() != 2) return;
    for (size_t i = 0; i < n; ++i) {
      const size_t s = h.starts[i];
      const size_t e = i + 1 < n ? h.starts[i + 1] : line.size();
      const std::string_view cell = text::trim(line.substr(s, e - s));
      if (!h.text[i] && std::any_of(cell.begin(), cell.end(), is_space)) return;
      out.push_back(cell);
    }
    cells.swap(out);
  }

  std::deque<DcgmiHeader> headers_;  // the layout of each of LineRows' headers
};

class DcgmiFraming {
 public:
  DcgmiFraming(std::string_view body, const std::string& origin) : body_(body), origin_(origin) {}

  void run();
  bool any_header() const { return table_.has_header(); }
  size_t gpu_rows() const { return gpu_rows_; }
  const DcgmiRows& table() const { return table_; }
  // The reader's error when the table has no rows it could read: the framing's own account.
  std::optional<Error> no_rows_error() const;
  void add_notes(Recording& rec) const;

 private:
  void header_line(std::string_view line, std::string_view t, size_t line_no);
  void data_line(std::string_view line, std::string_view t, size_t line_no, bool cut);
  template <class... Args>
  void problem(Problem& p, size_t line_no, fmt::format_string<Args...> f, Args&&... args) {
    log_reader::count_problem(p, origin_, line_no, f, std::forward<Args>(args)...);
  }

  std::string_view body_;
  const std::string& origin_;
  DcgmiRows table_;
  std::string key_;              // the current header's names, one space apart
  std::string_view names_line_;  // the current header as written (trimmed)
  size_t gpu_rows_ = 0;
  std::vector<std::string_view> tokens_;
  std::vector<std::pair<std::string_view, size_t>> other_entities_;  // ("GPU-I", rows)
  std::unordered_map<std::string_view, size_t> entity_slots_;        // group -> other_entities_
  Problem before_header_, other_line_;
};

void DcgmiFraming::run() {
  const bool unterminated = !body_.empty() && body_.back() != '\n';
  text::LineReader lines(body_);
  std::string_view line;
  while (lines.next(line)) {
    const std::string_view t = text::trim(line);
    if (t.empty()) continue;
    const size_t line_no = lines.line_number();
    if (t.front() == '#') {
      if (t == names_line_) continue;  // the header, repeated every 14 rounds
      header_line(line, t, line_no);
      continue;
    }
    // The units line under the names ("ID   W   C ..."; profiling fields have no unit): the
    // catalogue knows each short tag's unit.
    if (t.size() >= 2 && (t.size() == 2 || is_space(t[2])) && iequals(t.substr(0, 2), "ID")) {
      if (!table_.has_header())
        problem(before_header_, line_no, "a units line before any header line");
      continue;
    }
    // dcgmi's own last words on Ctrl-C ("dmon was stopped do to receiving a signal").
    if (text::istarts_with(t, "dmon was stopped")) continue;
    data_line(line, t, line_no, unterminated && lines.rest().empty());
  }
}

void DcgmiFraming::header_line(std::string_view line, std::string_view t, size_t line_no) {
  split_ws(t.substr(1), tokens_);
  if (!is_dcgmi_entity_header(tokens_)) {
    problem(other_line_, line_no, "not a dcgmi dmon header: \"{}\"", t.substr(0, 60));
    return;
  }
  std::string key;
  for (size_t i = 1; i < tokens_.size(); ++i) {
    if (!key.empty()) key += ' ';
    key.append(tokens_[i]);
  }
  names_line_ = t;
  if (table_.has_header() && key == key_) return;  // the same columns, spaced differently
  key_ = std::move(key);
  DcgmiHeader h;
  h.names.emplace_back("EntityId");
  // dcgmi writes "#Entity" at column 0 and every name left-aligned over its column.
  h.positional = !line.empty() && line.front() == '#' && tokens_[0].data() == line.data() + 1;
  for (size_t i = 1; i < tokens_.size(); ++i) {
    h.names.emplace_back(tokens_[i]);
    h.starts.push_back(static_cast<size_t>(tokens_[i].data() - line.data()));
    const csv::CatalogueEntry* e = csv::dcgm_short_tag(tokens_[i]);
    h.text.push_back(e != nullptr && e->role != csv::Role::kField);
    h.pstate.push_back(e != nullptr && e->role == csv::Role::kField && e->field == Field::kPstate);
  }
  table_.add_header(std::move(h), line_no);
}

void DcgmiFraming::data_line(std::string_view line, std::string_view t, size_t line_no, bool cut) {
  split_ws(t, tokens_);
  // "GPU 0", "GPU-I 1", "GPU-CI 3", "Switch 0" ...: an entity group and a number.
  const auto id = tokens_.size() >= 2 ? text::parse_int(tokens_[1]) : std::nullopt;
  const std::string_view group = tokens_[0];
  const bool entity_like = id && !group.empty() &&
                           ((group.front() >= 'A' && group.front() <= 'Z') ||
                            (group.front() >= 'a' && group.front() <= 'z'));
  if (!entity_like) {
    problem(other_line_, line_no, "not a dcgmi dmon row: \"{}\"", t.substr(0, 60));
    return;
  }
  if (!table_.has_header()) {
    problem(before_header_, line_no, "a row before any dcgmi dmon header line");
    return;
  }
  if (group != "GPU") {
    const auto [it, added] = entity_slots_.emplace(group, other_entities_.size());
    if (added)
      other_entities_.emplace_back(group, 1);
    else
      ++other_entities_[it->second].second;
    return;
  }
  ++gpu_rows_;
  table_.add_row(line, line_no);
  // dcgmi ends every line: a last line without an end was cut, perhaps mid-value.
  if (cut) table_.set_last_row_cut();
}

std::optional<Error> DcgmiFraming::no_rows_error() const {
  if (gpu_rows_ > 0) return std::nullopt;
  if (!other_entities_.empty()) {
    std::vector<std::string_view> groups;
    for (const auto& [grp, n] : other_entities_) groups.push_back(grp);
    return usage_error(fmt::format("{}: no GPU rows, only {} entities (gpudoctor reads whole GPUs)",
                                   origin_, log_reader::join_names(groups)));
  }
  if (other_line_.count > 0)
    return usage_error(fmt::format("{}: no readable rows ({})", origin_, other_line_.first));
  return log_reader::no_readable_rows(origin_, "a dcgmi dmon header",
                                      fmt::to_string(table_.header_line()), 0, body_, {});
}

void DcgmiFraming::add_notes(Recording& rec) const {
  log_reader::add_note(rec,
                       "dcgmi dmon prints no times, and its interval (-d, 1 s unless set) is not "
                       "in its log: if it ran with another, the times are off by that factor");
  if (!other_entities_.empty()) {
    size_t total = 0;
    std::vector<std::string> parts;
    for (const auto& [grp, n] : other_entities_) {
      total += n;
      if (parts.size() < 20) parts.push_back(fmt::format("{} {}", n, grp));
    }
    if (other_entities_.size() > parts.size())
      parts.push_back(fmt::format("and {} more", other_entities_.size() - parts.size()));
    log_reader::add_note(
        rec,
        fmt::format("skipped {} row(s) of entities that are not whole GPUs ({}): gpudoctor reads "
                    "GPUs only",
                    total, fmt::join(parts, ", ")));
  }
  log_reader::note_skipped(rec, before_header_, "before the first dcgmi dmon header");
  log_reader::note_skipped(rec, other_line_, "that are not dcgmi dmon output");
}

Result<Recording> read_dcgmi(std::string_view text, const std::string& origin,
                             const DcgmOptions& opt) {
  const std::string_view body = text::strip_bom(text);
  if (auto e = text::check_input(body, origin, "dcgmi dmon output", opt.power_limit_w))
    return std::move(*e);
  DcgmiFraming framing(body, origin);
  framing.run();
  if (!framing.any_header())
    return usage_error(fmt::format(
        "{}: no dcgmi dmon header line (\"#Entity   POWER   GPUTL ...\"); is this dcgmi dmon "
        "output?",
        origin));
  if (auto e = framing.no_rows_error()) return std::move(*e);
  auto rec = read_tool_table(framing.table(), origin,
                             {"dcgmi dmon", "N/A", {}, opt.power_limit_w, &opt.map});
  if (rec.ok()) framing.add_notes(*rec);
  return rec;
}

}  // namespace

bool looks_like_dcgmi_dmon(std::string_view head) {
  std::vector<std::string_view> tokens;
  return log_reader::by_first_lines(head, 64, [&](std::string_view t) -> std::optional<bool> {
    if (t.front() != '#') return std::nullopt;
    split_ws(t.substr(1), tokens);
    if (is_dcgmi_entity_header(tokens)) return true;
    return std::nullopt;
  });
}

Result<Recording> read_dcgmi_dmon(std::string_view text, const std::string& origin,
                                  const DcgmOptions& opt) {
  return log_reader::guarded_read(origin, "dcgmi dmon log",
                                  [&] { return read_dcgmi(text, origin, opt); });
}

}  // namespace gpudoctor
