#include "formats/export.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/duration.hpp"

namespace gpudoctor {
namespace {

// Rows of all GPUs merged by time, then GPU (as a sampler writes them): a heap of each GPU's next
// row, so that many GPUs cost log(GPUs) per row, not GPUs.
template <class Fn>
void for_each_row(const Recording& rec, Fn fn) {
  using Next = std::pair<double, size_t>;  // (time, GPU)
  std::priority_queue<Next, std::vector<Next>, std::greater<>> next;
  std::vector<size_t> pos(rec.gpus.size(), 0);
  for (size_t g = 0; g < rec.gpus.size(); ++g)
    if (rec.gpus[g].size() > 0) next.emplace(rec.gpus[g].time_s[0], g);
  while (!next.empty()) {
    const size_t g = next.top().second;
    next.pop();
    fn(rec.gpus[g], pos[g]);
    if (++pos[g] < rec.gpus[g].size()) next.emplace(rec.gpus[g].time_s[pos[g]], g);
  }
}

std::vector<Field> present_fields(const Recording& rec) {
  std::vector<Field> out;
  for (const auto& f : all_fields())
    if (std::any_of(rec.gpus.begin(), rec.gpus.end(),
                    [&](const GpuSeries& g) { return g.has(f.field); }))
      out.push_back(f.field);
  return out;
}

std::string number(double v) {
  return fmt::format("{}", v);
}

}  // namespace

std::string write_csv(const Recording& rec) {
  const auto fields = present_fields(rec);
  std::string out = "time,gpu";
  for (Field f : fields) out += fmt::format(",{}", info(f).id);
  out += "\n";
  for_each_row(rec, [&](const GpuSeries& g, size_t row) {
    out += iso8601_utc(rec.start_unix_ms + std::llround(g.time_s[row] * 1000));
    out += fmt::format(",{}", g.info.index);
    for (Field f : fields) {
      out += ',';
      if (const auto c = g.column(f); c && !is_missing((*c)[row])) out += number((*c)[row]);
    }
    out += '\n';
  });
  return out;
}

std::string write_jsonl(const Recording& rec) {
  const auto fields = present_fields(rec);
  std::string out;
  for_each_row(rec, [&](const GpuSeries& g, size_t row) {
    nlohmann::json o;
    o["time"] = iso8601_utc(rec.start_unix_ms + std::llround(g.time_s[row] * 1000));
    o["gpu"] = g.info.index;
    for (Field f : fields) {
      const auto c = g.column(f);
      o[std::string(info(f).id)] =
          c && !is_missing((*c)[row]) ? nlohmann::json((*c)[row]) : nlohmann::json(nullptr);
    }
    out += o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += '\n';
  });
  return out;
}

}  // namespace gpudoctor
