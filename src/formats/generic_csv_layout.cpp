// The generic CSV reader's header and columns: where the header is, what each name means (the
// column catalogue, --map), the layout of GPUs (a GPU per row or one column per GPU), the footer
// of column groups; and the choice of this reader by content.
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
#include "formats/smi_csv.hpp"
#include "text/text.hpp"

namespace gpudoctor::generic_csv_reader {

namespace {

// A column name that says it is the GPU's ("GPU Memory Clock [MHz]", "gpu_temp").
bool gpu_named(std::string_view name) {
  return name.size() > 3 && text::istarts_with(name, "gpu") &&
         (name[3] == ' ' || name[3] == '_' || name[3] == '.');
}

}  // namespace

std::optional<Error> Reader::find_header() {
  text::LineReader lines(body_);
  std::string_view line, comment;
  size_t comment_line = 0;
  bool found = false, explicit_sep = false;
  while (lines.next(line)) {
    const std::string_view t = text::trim(line);
    if (t.empty()) continue;
    // Excel's separator hint: an ASCII one (a byte past ASCII is part of a character: as a
    // separator it would cut characters, and decoded from Windows-1252 it is no longer one byte).
    if (t.size() == 5 && text::istarts_with(t, "sep=") && static_cast<unsigned char>(t[4]) < 0x80) {
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
  if (!opt_.header.empty()) {  // headerless: the names come from the options
    header_.clear();
    std::vector<std::string_view> names;
    for (const auto& entry : opt_.header) {
      text::split(entry, ',', names);
      for (const auto name : names)
        if (!text::trim(name).empty()) header_.emplace_back(text::trim(name));
    }
    header_raw_ = fmt::format("{}", fmt::join(header_, ", "));
    rows_offset_ = offset;
    rows_line_before_ = line_no - 1;
    header_line_no_ = 0;
    return std::nullopt;
  }

  std::vector<std::string_view> cells;
  size_t rec_line = 0;
  std::string_view raw;
  Records header(body_.substr(offset), sep_, line_no - 1, decoding());
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
    Records cr(comment.substr(1), sep_, comment_line - 1, decoding());
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
  fields_.clear();
  last_cells_.clear();  // what a cell gave depends on its column's name (units, scale)
  infos_.clear();
  wide_numbers_.clear();
  unknown_.clear();
  duplicates_.clear();
  groups_.clear();
  group_names_.clear();
  footer_raw_.clear();
  footer_row_ = SIZE_MAX;
  key_col_ = -1;
  key_role_ = Role::kUnknown;
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
    // A file that ends inside its header line (cut short while written): the header is not all
    // there, and no row follows.
    if (!table_ && opt_.header.empty() && text::ends_inside_a_line(body_) &&
        text::is_blank(body_.substr(std::min(rows_offset_, body_.size()))))
      return log_reader::no_readable_rows(origin_, "a header line",
                                          fmt::to_string(file_line(header_line_no_)), 0, text_, {});
    std::vector<std::string_view> names;
    for (const auto& c : cols_) names.push_back(c.name);
    if (!bare.empty())
      return usage_error(fmt::format(
          "{}:{}: columns {} hold one value per GPU but their names do not say which quantity; "
          "give it with --map, e.g. --map '{}=power_w'",
          origin_, file_line(header_line_no_), fmt::join(bare, ", "), wide_pattern(bare.front())));
    if (!opt_.header.empty())
      return usage_error(fmt::format(
          "{}: --columns names no column gpudoctor reads ({}); give the --query-gpu list the "
          "file was written with (gpudoctor fields lists the names)",
          origin_, fmt::join(names, ", ")));
    // A first line of numbers or times is a row: a file written without its header.
    const bool data = std::any_of(names.begin(), names.end(), [](std::string_view n) {
      return !n.empty() && (is_digit(n.front()) || text::parse_double(n));
    });
    return usage_error(fmt::format(
        "{}:{}: no column gpudoctor recognises in the header ({}){}", origin_,
        file_line(header_line_no_), fmt::join(names, ", "),
        data ? "; the first line holds values: a file written without a header (nvidia-smi "
               "--format=csv,noheader)? give its columns with --columns 'timestamp,index,...' "
               "(the --query-gpu list)"
             : "; name the columns with --map COLUMN=FIELD (field ids: gpudoctor fields), or "
               "with --columns when the file has no header line"));
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
        if (f >= 0 && gpu_named(c.name) && !gpu_named(cols_[static_cast<size_t>(f)].name)) {
          // A whole machine's sensors: "Memory Clock" is the RAM's, "GPU Memory Clock" the GPU's.
          Column& earlier = cols_[static_cast<size_t>(f)];
          duplicates_.emplace_back(earlier.name, c.name);
          earlier.m.role = Role::kIgnore;
          for (auto& fc : fields_)
            if (fc.col == static_cast<size_t>(f)) fc.col = i;
          f = static_cast<int>(i);
          continue;
        }
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
  // A bitmask of every reason (nvidia-smi's clocks_event_reasons.active) holds all that columns
  // of one reason each say: it wins, and they are not read.
  const auto is_mask = [&](const FieldCol& fc) {
    return fc.field == Field::kClockEventReasons && cols_[fc.col].m.role == Role::kField;
  };
  if (std::any_of(fields_.begin(), fields_.end(), is_mask))
    std::erase_if(fields_, [&](const FieldCol& fc) {
      Column& c = cols_[fc.col];
      if (c.m.role != Role::kReason) return false;
      c.m.role = Role::kIgnore;
      return true;
    });
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
    r = Records(rest.substr(begin, end - begin), sep_, 0, decoding());
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
    if (role == Role::kTime || role == Role::kDate || role == Role::kGpu || role == Role::kUuid ||
        role == Role::kBusId) {
      if (!v.empty()) return;  // a row of a GPU ("Active" under a reason is a reading)
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

// A table's header: its names, as a CSV reader would take them (trimmed).
// A line that is a header of other columns: nvidia-smi restarted with another --query-gpu list,
// appending to the same file. No cell is a value, and at least half the cells, one of them a
// quantity, are names gpudoctor reads.
bool Reader::is_new_header(const std::vector<std::string_view>& cells) const {
  if (table_ || wide_ || cells.size() < 2) return false;
  size_t known = 0;
  bool quantity = false;
  for (const std::string_view cell : cells) {
    const std::string_view c = text::trim(cell);
    if (c.empty() || is_digit(c.front()) || classify_marker(c) != Cell::kBad ||
        text::parse_double(c))
      return false;
    const Column col = resolve(c);
    known += col.m.role != Role::kUnknown;
    quantity = quantity || is_quantity(col.m.role);
  }
  return quantity && known * 2 >= cells.size();
}

// Reads the rows below `line_no` by the header `cells`; false (the header in force kept) when
// it makes no layout.
bool Reader::change_header(const std::vector<std::string_view>& cells, std::string_view raw,
                           size_t line_no) {
  if (first_header_.empty()) {
    first_header_ = header_;
    first_header_raw_ = header_raw_;
  }
  // The header in force, not the file's first: after a second header the rows have its cells.
  std::vector<std::string> in_force = std::move(header_);
  std::string in_force_raw = std::move(header_raw_);
  header_.assign(cells.begin(), cells.end());
  header_raw_ = std::string(raw);
  if (make_layout() || wide_) {
    header_ = std::move(in_force);
    header_raw_ = std::move(in_force_raw);
    make_layout();
    return false;
  }
  if (header_changes_++ == 0) header_change_line_ = file_line(line_no);
  // A time read with the date of a column the new header no longer has: decided again on the
  // next row (times that then go backwards are skipped, and said so).
  if (mode_ == TimeMode::kDateAndTod && date_col_ < 0) {
    mode_ = TimeMode::kUndecided;
    have_last_time_ = false;
  }
  return true;
}

// The layout of the file's first header again, before the rows are read again from the top.
void Reader::restore_first_header() {
  if (first_header_.empty()) return;
  header_ = first_header_;
  header_raw_ = first_header_raw_;
  make_layout();
}

void Reader::table_header() {
  header_.clear();
  for (size_t i = 0; i < table_->columns(); ++i) header_.emplace_back(text::trim(table_->name(i)));
  header_line_no_ = table_->header_line();
}

}  // namespace gpudoctor::generic_csv_reader

namespace gpudoctor {
namespace {

using namespace csv;  // NOLINT: the catalogue's client
using generic_csv_reader::Cell;
using generic_csv_reader::classify_marker;
using text::iequals;

// A header longer than the head that detection sees, of a logger of a whole machine's sensors
// (HWiNFO: "Date,Time," then hundreds of "NAME [UNIT]" columns, the GPU's past column 190): the
// head ends inside it, and the GPU's columns are not in it yet. Claimed when it starts with a date
// and a time column and most of its named cells carry a unit in brackets; the reader, seeing the
// whole header, says so if it holds no GPU column after all.
bool cut_sensor_header(std::string_view head, std::string_view line, char sep) {
  if (line.data() + line.size() != head.data() + head.size() &&
      text::trim(head.substr(static_cast<size_t>(line.data() + line.size() - head.data()))).size() >
          0)
    return false;
  std::vector<std::string_view> cells;
  text::split_trimmed(line, sep, cells);
  if (cells.size() < 16) return false;
  auto unquoted = [](std::string_view c) {
    if (c.size() >= 2 && c.front() == '"' && c.back() == '"') c = c.substr(1, c.size() - 2);
    return c;
  };
  if (!iequals(unquoted(cells[0]), "date") || !iequals(unquoted(cells[1]), "time")) return false;
  size_t with_unit = 0;
  for (size_t i = 2; i + 1 < cells.size(); ++i)  // (the last may be cut)
    if (unquoted(cells[i]).ends_with(']')) ++with_unit;
  return with_unit * 4 >= (cells.size() - 3) * 3;
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
      if (sep == ',' && is_smi_csv_header(cells)) return false;
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
    if (cut_sensor_header(head, line, sep)) return true;
    return !comment.empty() && usable(comment.substr(1));
  });
}

}  // namespace gpudoctor
