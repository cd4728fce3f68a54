// The reader of CSV logs by column name: the framing layer (csv_frame) or a table of cells
// (flat_table) gives records, the column catalogue (column_catalogue) says what each header cell
// means, log_time and log_units read times and units. This file runs the reader and makes the
// recording's notes and GPUs; generic_csv_layout.cpp reads the header, generic_csv_rows.cpp the
// rows (generic_csv_reader.hpp: the reader they share).
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
#include "formats/encoding.hpp"
#include "formats/finish.hpp"
#include "formats/generic_csv_reader.hpp"
#include "formats/log_time.hpp"
#include "formats/log_units.hpp"
#include "formats/sampling_rounds.hpp"
#include "text/text.hpp"

namespace gpudoctor::generic_csv_reader {

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
  // The lines before the rows; the rows' framing checks the rest as it reads it.
  const size_t before_rows = static_cast<size_t>(body_.data() - text_.data()) + rows_offset_;
  if (opt_.read_as == text::ReadAs::kCheckUtf8 && !text::valid_utf8(text_.substr(0, before_rows)))
    invalid_utf8_ = true;
  read_rows();
  auto rec = finish_reading();
  if (invalid_utf8_)
    return Error{Error::Kind::kFailure, origin_ + ": not UTF-8 text", Error::Code::kNotUtf8};
  return rec;
}

Result<Recording> Reader::finish_reading() {
  // "epoch" may be a Unix time or a training epoch (Lightning's CSV logs): a time only when its
  // values are Unix times.
  if (time_col_ >= 0) {
    const Column& last = cols_[static_cast<size_t>(time_col_)];
    if (last.m.rule == Rule::kEpochOnly && !last.mapped && mode_ != TimeMode::kEpoch) {
      restore_first_header();
      if (time_col_ >= 0) {
        Column& tc = cols_[static_cast<size_t>(time_col_)];
        ignored_notes_.push_back(fmt::format(
            "column {} ignored: its values are not Unix times (a training epoch?)", tc.name));
        tc.m.role = Role::kIgnore;
        time_col_ = -1;
      }
      reset_rows();
      read_rows();
    }
  }
  // No GPU column, but rows in rounds (one per GPU, close in time): read again by position.
  if (key_col_ < 0 && !wide_ && time_col_ >= 0 && positions_.empty()) {
    uint32_t gpus = 1;
    auto positions = log_reader::positions_in_rounds(row_times().view(), gpus);
    row_times_.clear();
    if (gpus > 1) {
      positions_ = std::move(positions);
      for (uint32_t i = 0; i < gpus; ++i) position_ids_.push_back(fmt::format("{}", i));
      restore_first_header();
      reset_rows();
      read_rows();
    }
  }
  if (rows_read_ == 0)
    return log_reader::no_readable_rows(
        origin_, "a header line", fmt::to_string(file_line(header_line_no_)), data_lines_, text_,
        {&wrong_count_, &bad_time_, &bad_gpu_, &malformed_, &truncated_, &not_increasing_});
  finish();
  // Columns of GPU metrics that never hold a value (a tracker's export of a run on a machine
  // without a GPU, a logger whose NVML calls all failed): said, not diagnosed as empty GPUs.
  const bool any_value = std::any_of(rec_.gpus.begin(), rec_.gpus.end(), [](const GpuSeries& g) {
    for (size_t fi = 0; fi < kFieldCount; ++fi) {
      // (The default limit: filled from the model table by the finishing step.)
      if (static_cast<Field>(fi) == Field::kPowerLimitDefault) continue;
      const auto c = g.column(static_cast<Field>(fi));
      if (c && std::any_of(c->begin(), c->end(), [](double v) { return !is_missing(v); }))
        return true;
    }
    return false;
  });
  if (!any_value) {
    std::vector<std::string_view> names;
    for (const auto& c : cols_)
      if (c.m.role == Role::kField || c.m.role == Role::kReason) names.push_back(c.name);
    return failure(
        fmt::format("{}: no GPU metric in the log: its GPU columns ({}) hold no value "
                    "in any of its {} row(s)",
                    origin_, log_reader::join_names(names, 10), rows_read_));
  }
  return std::move(rec_);
}

void Reader::finish() {
  Recording& rec = rec_;
  rec.source =
      opt_.tool.empty() ? "csv: " + origin_ : fmt::format("{} csv: {}", opt_.tool, origin_);
  const bool absolute =
      mode_ == TimeMode::kDateTime || mode_ == TimeMode::kDateAndTod || mode_ == TimeMode::kEpoch;
  rec.start_unix_ms = absolute ? std::llround(first_ms_) : 0;

  // Times.
  if (time_col_ >= 0) {
    const std::string& tn = cols_[static_cast<size_t>(time_col_)].name;
    switch (mode_) {
      case TimeMode::kDateTime:
        if (any_unzoned_ && !opt_.tool.empty())
          note(
              fmt::format("timestamps are the local time of the machine that ran {}, read as UTC "
                          "(the log does not say its time zone)",
                          opt_.tool));
        else if (any_unzoned_)
          note(fmt::format("times in column {} have no time zone: read as UTC", tn));
        break;
      case TimeMode::kDateAndTod:
        if (!opt_.tool.empty())
          note(
              fmt::format("dates and times are the local time of the machine that ran {}, read as "
                          "UTC (the log does not say its time zone)",
                          opt_.tool));
        else
          note(fmt::format(
              "dates in column {} and times in column {} have no time zone: read as UTC",
              cols_[static_cast<size_t>(date_col_)].name, tn));
        break;
      case TimeMode::kTimeOfDay:
        note(
            fmt::format("column {} gives the time of day only: times are relative to the first "
                        "row and the start time is unknown",
                        tn));
        break;
      case TimeMode::kEpoch:
        // (Not for a tool's own layout whose time column names its unit: nothing was assumed.)
        if (!time_unit_named_ || opt_.tool.empty())
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
      if (auto& col = g.series.columns[fi])
        for (auto& v : col.values()) v = text::scaled(v, auto_factor[fi]);
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
  if (!read_as.empty() && opt_.tool.empty()) {
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
        gpus_[i].series.host = gpus_[i].host;  // (the GPU's identity: host and its id there)
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
  if (!positions_.empty())
    note(
        fmt::format("no GPU column (gpu, gpu_index, index, uuid, pci_bus_id ...): {} GPUs told "
                    "apart by their position within each sampling round",
                    position_ids_.size()));
  else if (!wide_ && key_col_ < 0)
    note(
        "no GPU column (gpu, gpu_index, index, uuid, pci_bus_id ...): all rows read as one GPU; "
        "name it with --map COLUMN=gpu if there is one");

  // Unsupported and empty fields, architecture, power limit.
  log_reader::FinishOptions fo;
  fo.power_limit_w = opt_.power_limit_w;
  fo.placeholder = opt_.placeholder;
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
  if (header_changes_ > 0)
    note(
        fmt::format("the header line changes {} time(s) mid-file (first: {}:{}): the rows below "
                    "each are read by it",
                    header_changes_, origin_, header_change_line_));
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

}  // namespace gpudoctor::generic_csv_reader

namespace gpudoctor {

using generic_csv_reader::Reader;

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

Result<Recording> read_tool_table(const log_reader::CellRows& rows, const std::string& origin,
                                  const ToolTable& t) {
  GenericCsvOptions o;
  o.power_limit_w = t.power_limit_w;
  o.tool = t.tool;
  o.placeholder = t.placeholder;
  if (t.map != nullptr) o.map = *t.map;
  auto rec = read_generic_csv(rows, origin, o);
  if (rec.ok()) rec->source = fmt::format("{}: {}", t.label.empty() ? t.tool : t.label, origin);
  return rec;
}

}  // namespace gpudoctor
