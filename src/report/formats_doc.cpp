#include "report/formats_doc.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/fields.hpp"
#include "formats/column_catalogue.hpp"
#include "formats/inputs.hpp"

namespace gpudoctor {

namespace {

struct Row {
  std::string name, meaning, unit;
};

// Each entry as a row: its name (a per-GPU one after "gpu.N."), what it is read as and how its
// unit is found; grouped by tool, in the table's order.
std::vector<std::pair<std::string, std::vector<Row>>> rows_by_tool() {
  std::vector<std::pair<std::string, std::vector<Row>>> out;
  for (const auto& e : csv::catalogue()) {
    auto it =
        std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == e.tool; });
    if (it == out.end()) {
      out.emplace_back(std::string(e.tool), std::vector<Row>{});
      it = out.end() - 1;
    }
    Row r;
    r.name = e.per_gpu ? fmt::format("gpu.N.{}", e.name) : std::string(e.name);
    if (e.role == csv::Role::kField) {
      r.meaning = std::string(info(e.field).id);
      switch (e.rule) {
        case csv::Rule::kAsIs:
          if (e.factor == 100)
            r.unit = "0-1 ratio, x100";
          else if (e.factor != 1)
            r.unit = fmt::format("x{:g}", e.factor);
          else
            r.unit = std::string(unit_name(info(e.field).unit));
          break;
        case csv::Rule::kPercentOrRatio:
          r.unit = "% or 0-1 ratio, by the values";
          break;
        case csv::Rule::kWattsOrMilli:
          r.unit = "W or mW, by the values";
          break;
        case csv::Rule::kMhzOrGhz:
          r.unit = "MHz or GHz, by the values";
          break;
        case csv::Rule::kMibOrBytes:
          r.unit = "MiB or bytes, by the values";
          break;
        case csv::Rule::kEpochOnly:
          break;
      }
    } else if (e.role == csv::Role::kReason) {
      r.meaning = e.reasons == csv::Reasons::kFlag
                      ? fmt::format("clock_event_reasons bit {}", e.reason)
                      : std::string("clock_event_reasons (GPU-Z codes: Pwr, Thrm, Util)");
      r.unit =
          e.reasons == csv::Reasons::kFlag ? "Active/Not Active, Yes/No, 1/0" : "code or words";
    } else {
      r.meaning = std::string(csv::role_name(e.role));
      if (e.rule == csv::Rule::kEpochOnly) r.unit = "Unix times only";
    }
    it->second.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::string render_catalogue_markdown() {
  std::string s(kCatalogueBegin);
  s += "\n| tool | column name (normalised) | read as | unit |\n|---|---|---|---|\n";
  for (const auto& [tool, rows] : rows_by_tool())
    for (const auto& r : rows)
      s += fmt::format("| {} | `{}` | {} | {} |\n", tool, r.name, r.meaning, r.unit);
  s += "\n";
  s += kCatalogueEnd;
  return s;
}

std::string render_catalogue_text() {
  std::string s = "Inputs (--input-format NAME; auto tries them by content in this order):\n";
  for (const auto& r : input_readers()) {
    std::string line = fmt::format("  {:<14} {}", r.name, r.what.empty() ? "(as above)" : r.what);
    s += line + "\n";
  }
  s += "\nColumn names gpudoctor reads in CSV-like logs, by the tool that writes them (compared "
       "after normalising: lower case, '_' between words; a unit may follow as a suffix or in "
       "brackets). Every field id, nvidia-smi --query-gpu name, DCGM name and gpudoctor "
       "Prometheus name (gpudoctor fields) is read too.\n";
  for (const auto& [tool, rows] : rows_by_tool()) {
    s += fmt::format("\n{}\n", tool);
    for (const auto& r : rows) {
      std::string line = fmt::format("  {:<44} {:<36} {}", r.name, r.meaning, r.unit);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      s += line + "\n";
    }
  }
  return s;
}

}  // namespace gpudoctor
