// nvidia-smi --query-gpu CSV: read as the CSV it is, by the one reader of CSV logs
// (generic_csv), with nvidia-smi named in its notes; and written in nvidia-smi's layout.
#include "formats/smi_csv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "core/clock_reasons.hpp"
#include "core/reading.hpp"
#include "formats/column_catalogue.hpp"
#include "formats/finish.hpp"
#include "formats/generic_csv.hpp"
#include "formats/log_time.hpp"
#include "text/text.hpp"

namespace gpudoctor {

bool is_smi_csv_header(const std::vector<std::string_view>& cells) {
  for (const auto cell : cells) {
    std::string_view base, ann;
    csv::split_annotation(cell, base, ann);
    if (base.find('.') == std::string_view::npos) continue;
    if (field_by_smi_name(base) || text::iequals(base, "pci.bus_id") ||
        text::istarts_with(base, "clocks_throttle_reasons.") ||
        text::istarts_with(base, "clocks_event_reasons.") ||
        text::iequals(base, "mig.mode.current"))
      return true;
  }
  return false;
}

bool looks_like_smi_csv(std::string_view head) {
  return log_reader::guarded_check([&] {
    head = text::strip_bom(head);
    if (text::looks_binary(head.substr(0, 4096))) return false;
    text::LineReader lines(head);
    std::string_view line;
    while (lines.next(line) && text::is_blank(line)) {
    }
    line = text::trim(line);
    if (line.empty()) return false;
    std::vector<std::string_view> cells;
    text::split_trimmed(line, ',', cells);
    if (is_smi_csv_header(cells)) return true;
    // Headerless (noheader): rows that start with nvidia-smi's own timestamp layout.
    return cells.size() >= 2 && cells[0].size() >= 19 && cells[0][4] == '/' &&
           text::parse_timestamp_ms(cells[0]).has_value();
  });
}

Result<Recording> read_smi_csv(std::string_view text, const std::string& origin,
                               const SmiCsvOptions& opt) {
  GenericCsvOptions g;
  g.header = opt.columns;
  g.power_limit_w = opt.power_limit_w;
  g.map = opt.map;
  g.tool = "nvidia-smi";
  g.read_as = opt.read_as;
  return read_generic_csv(text, origin, g);
}

// ---------------------------------------------------------------------------------------------
// Writer

namespace {

std::string_view header_unit(Unit u) {
  switch (u) {
    case Unit::kPercent:
      return " [%]";
    case Unit::kWatt:
      return " [W]";
    case Unit::kMegahertz:
      return " [MHz]";
    case Unit::kMebibyte:
      return " [MiB]";
    case Unit::kMebibytePerSecond:
      return " [MiB/s]";
    case Unit::kMillijoule:
      return " [mJ]";
    default:
      return "";
  }
}

std::string_view value_unit(Unit u) {
  switch (u) {
    case Unit::kPercent:
      return " %";
    case Unit::kWatt:
      return " W";
    case Unit::kMegahertz:
      return " MHz";
    case Unit::kMebibyte:
      return " MiB";
    case Unit::kMebibytePerSecond:
      return " MiB/s";
    case Unit::kMillijoule:
      return " mJ";
    default:
      return "";
  }
}

void write_value(fmt::memory_buffer& out, Field f, double v, bool units) {
  auto it = std::back_inserter(out);
  const Unit u = info(f).unit;
  if (std::isnan(v) || !std::isfinite(v)) {
    fmt::format_to(it, "[N/A]");
    return;
  }
  switch (u) {
    case Unit::kPstateNumber:
      if (v >= 0 && v <= 32 && v == std::floor(v))
        fmt::format_to(it, "P{}", static_cast<int>(v));
      else
        fmt::format_to(it, "[N/A]");
      return;
    case Unit::kBitmask:
      if (const auto m = reasons_mask(Reading::of(v)))
        fmt::format_to(it, "0x{:016x}", *m);
      else
        fmt::format_to(it, "[N/A]");
      return;
    case Unit::kWatt:
      fmt::format_to(it, "{:.2f}", v);
      break;
    default:
      if (std::fabs(v) < 9e15)
        fmt::format_to(it, "{}", static_cast<long long>(std::llround(v)));
      else
        fmt::format_to(it, "{:.0f}", v);
      break;
  }
  if (units) fmt::format_to(it, "{}", value_unit(u));
}

std::string_view missing_marker(const GpuSeries& g, Field f) {
  const auto it = g.unsupported.find(f);
  if (it == g.unsupported.end()) return "[N/A]";
  if (it->second == nvml_code::kNoPermission) return "[Insufficient Permissions]";
  if (it->second == nvml_code::kNotSupported) return "[Not Supported]";
  return "[N/A]";
}

std::string_view or_na(const std::string& s) {
  return s.empty() ? std::string_view("[N/A]") : std::string_view(s);
}

}  // namespace

std::string write_smi_csv(const Recording& rec, bool units) {
  std::vector<Field> fields;
  for (const auto& fi : all_fields()) {
    if (canonical_smi_name(fi.field).empty()) continue;
    const bool present = std::any_of(rec.gpus.begin(), rec.gpus.end(), [&](const GpuSeries& g) {
      return g.has(fi.field) || g.unsupported.count(fi.field) > 0;
    });
    if (present) fields.push_back(fi.field);
  }
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "timestamp, index, name, pci.bus_id, uuid");
  for (const Field f : fields)
    fmt::format_to(it, ", {}{}", canonical_smi_name(f), header_unit(info(f).unit));
  fmt::format_to(it, "\n");

  // Rows in time order, GPUs in order within one time, as nvidia-smi writes them.
  std::vector<std::tuple<int64_t, size_t, size_t>> rows;  // (unix ms, gpu, row)
  size_t total = 0;
  for (const auto& g : rec.gpus) total += g.size();
  rows.reserve(total);
  for (size_t gi = 0; gi < rec.gpus.size(); ++gi) {
    const auto& ts = rec.gpus[gi].time_s;
    for (size_t r = 0; r < ts.size(); ++r)
      rows.emplace_back(rec.start_unix_ms + static_cast<int64_t>(std::llround(ts[r] * 1000)), gi,
                        r);
  }
  std::sort(rows.begin(), rows.end());
  for (const auto& [ms, gi, r] : rows) {
    const GpuSeries& g = rec.gpus[gi];
    fmt::format_to(it, "{}, {}, {}, {}, {}", text::format_timestamp_ms(ms), g.info.index,
                   or_na(g.info.name), or_na(g.info.pci_bus_id), or_na(g.info.uuid));
    for (const Field f : fields) {
      fmt::format_to(it, ", ");
      if (const auto col = g.column(f))
        write_value(out, f, (*col)[r], units);
      else
        fmt::format_to(it, "{}", missing_marker(g, f));
    }
    fmt::format_to(it, "\n");
  }
  return fmt::to_string(out);
}

}  // namespace gpudoctor
