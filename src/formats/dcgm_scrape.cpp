#include "formats/dcgm_scrape.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/csv_frame.hpp"
#include "formats/finish.hpp"
#include "formats/flat_table.hpp"
#include "formats/log_units.hpp"
#include "text/text.hpp"

namespace gpudoctor {

namespace {

// The columns of a scrape CSV that the reader uses; -1 where the file has none.
struct ScrapeHeader {
  int metric = -1, value = -1, time = -1, gpu = -1, host = -1, uuid = -1, name = -1;
  bool valid() const { return metric >= 0 && value >= 0 && (gpu >= 0 || uuid >= 0); }
};

ScrapeHeader scrape_header(const std::vector<std::string_view>& cells) {
  ScrapeHeader h;
  auto take = [](int& at, size_t i) {
    if (at < 0) at = static_cast<int>(i);
  };
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string n = csv::normalise(cells[i], true);
    if (n == "metric_name" || n == "metric" || n == "name_" || cells[i] == "__name__")
      take(h.metric, i);
    else if (n == "value")
      take(h.value, i);
    else if (n == "timestamp" || n == "time")
      take(h.time, i);
    else if (n == "gpu_id" || n == "gpu" || n == "gpu_index")
      take(h.gpu, i);
    else if (n == "hostname" || n == "host" || n == "node" || n == "instance")
      take(h.host, i);
    else if (n == "uuid" || n == "gpu_uuid")
      take(h.uuid, i);
    else if (n == "model_name" || n == "gpu_name")
      take(h.name, i);
  }
  return h;
}

// A view of the text when the cell is one (an unquoted or simply quoted cell), else a copy.
std::string_view keep(std::string_view cell, std::string_view text, log_reader::CellTable& t) {
  if (cell.data() >= text.data() && cell.data() + cell.size() <= text.data() + text.size())
    return cell;
  return t.own(cell);
}

Result<Recording> read_scrape(std::string_view text, const std::string& origin,
                              const GenericCsvOptions& opt) {
  const std::string_view body = text::strip_bom(text);
  if (auto e = text::check_input(body, origin, "a dcgm-exporter scrape CSV", opt.power_limit_w))
    return *e;
  csv::Records records(body, ',', 0);
  std::vector<std::string_view> cells;
  size_t line_no = 0;
  std::string_view raw;
  ScrapeHeader h;
  size_t header_line = 0;
  std::string header_raw;
  while (!h.valid()) {
    const auto next = records.next(cells, line_no, raw);
    if (next == csv::Records::Next::kEnd)
      return usage_error(fmt::format(
          "{}: no header with a metric name, a value and a GPU column (a dcgm-exporter scrape "
          "CSV: timestamp,metric_name,gpu_id,...,value)",
          origin));
    if (next != csv::Records::Next::kRecord) continue;
    h = scrape_header(cells);
    header_line = line_no;
    header_raw = std::string(raw);
  }
  const int need = std::max({h.metric, h.value, h.time, h.gpu, h.host, h.uuid, h.name});

  // The samples: per GPU, rows of (metric -> value) in the order of the file.
  struct Sample {
    std::string_view time;
    std::unordered_map<std::string_view, std::string_view> values;
    size_t line = 0;
  };
  struct Gpu {
    std::string_view host, gpu, uuid, name;
    std::vector<Sample> samples;
  };
  log_reader::CellTable table;
  std::vector<Gpu> gpus;
  std::unordered_map<std::string, size_t> slot;  // host '\0' gpu (or uuid) -> gpus
  std::vector<std::string_view> metrics;         // in order of first appearance
  std::unordered_map<std::string_view, size_t> metric_index;
  log_reader::Problem short_rows;
  size_t rows = 0;
  auto cell = [&](int at) {
    return at >= 0 ? keep(cells[static_cast<size_t>(at)], body, table) : std::string_view{};
  };
  for (;;) {
    const auto next = records.next(cells, line_no, raw);
    if (next == csv::Records::Next::kEnd) break;
    if (next != csv::Records::Next::kRecord) continue;
    if (static_cast<int>(cells.size()) <= need) {
      log_reader::count_problem(short_rows, origin, line_no, "expected {} columns, found {}",
                                need + 1, cells.size());
      continue;
    }
    if (raw == header_raw) continue;  // the header again (scrapes appended to one file)
    const std::string_view metric = cell(h.metric);
    if (metric.empty()) continue;
    ++rows;
    const std::string_view host = cell(h.host), id = h.gpu >= 0 ? cell(h.gpu) : cell(h.uuid);
    std::string key = fmt::format("{}\n{}", host, id);
    auto [it, added] = slot.try_emplace(std::move(key), gpus.size());
    if (added) {
      if (gpus.size() >= log_reader::kMaxGpus) continue;
      gpus.push_back({host, id, cell(h.uuid), cell(h.name), {}});
    }
    Gpu& g = gpus[it->second];
    if (metric_index.try_emplace(metric, metrics.size()).second) metrics.push_back(metric);
    if (g.samples.empty() || g.samples.back().values.count(metric) > 0)
      g.samples.push_back({cell(h.time), {}, line_no});
    g.samples.back().values.emplace(metric, cell(h.value));
  }
  if (rows == 0)
    return usage_error(fmt::format("{}:{}: a dcgm-exporter scrape CSV header but no rows{}", origin,
                                   header_line,
                                   short_rows.count ? fmt::format(" ({})", short_rows.first) : ""));

  std::vector<std::string_view> header{"time", "host", "gpu", "uuid", "name"};
  header.insert(header.end(), metrics.begin(), metrics.end());
  table.set_header(header, header_line);
  size_t one_sample = 0;
  for (const Gpu& g : gpus) {
    if (g.samples.size() == 1) ++one_sample;
    for (const Sample& s : g.samples) {
      cells.assign(header.size(), {});
      cells[0] = s.time;
      cells[1] = g.host;
      cells[2] = g.gpu;
      cells[3] = g.uuid;
      cells[4] = g.name;
      for (const auto& [m, v] : s.values) cells[5 + metric_index[m]] = v;
      table.add_row(cells, s.line);
    }
  }
  auto rec = read_generic_csv(table, origin, opt);
  if (!rec) return rec;
  Recording& out = rec.value();
  out.source = "dcgm-exporter scrape CSV: " + origin;
  if (one_sample == gpus.size())
    out.notes.insert(out.notes.begin(),
                     fmt::format("one instant: a single scrape of {} GPU(s), one sample each; a "
                                 "snapshot, so no verdict over time can be made from it",
                                 gpus.size()));
  log_reader::note_skipped(out, short_rows, "with too few columns");
  return rec;
}

}  // namespace

bool looks_like_dcgm_scrape(std::string_view head) {
  return log_reader::guarded_check([&] {
    head = text::strip_bom(head);
    if (head.empty() || text::looks_binary(head.substr(0, 4096))) return false;
    csv::Records records(head, ',', 0);
    std::vector<std::string_view> cells;
    size_t line_no = 0;
    std::string_view raw;
    if (records.next(cells, line_no, raw) != csv::Records::Next::kRecord) return false;
    const ScrapeHeader h = scrape_header(cells);
    if (!h.valid()) return false;
    if (records.next(cells, line_no, raw) != csv::Records::Next::kRecord) return false;
    return static_cast<int>(cells.size()) > h.metric &&
           text::istarts_with(cells[static_cast<size_t>(h.metric)], "DCGM_FI_");
  });
}

Result<Recording> read_dcgm_scrape(std::string_view text, const std::string& origin,
                                   const GenericCsvOptions& opt) {
  return log_reader::guarded_read(origin, "dcgm-exporter scrape CSV",
                                  [&] { return read_scrape(text, origin, opt); });
}

}  // namespace gpudoctor
