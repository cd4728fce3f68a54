#include "report/html_trace.hpp"

#include <fmt/format.h>

#include "report/html_report.hpp"

namespace gpudoctor::html {

namespace {

using Json = nlohmann::ordered_json;

double num(const Json& j, const char* k) {
  const auto it = j.find(k);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

struct Part {
  const char* key;
  const char* label;
  const char* colour;
};
constexpr Part kParts[] = {{"compute", "compute", "#2e9e5b"},
                           {"communication", "NCCL (exposed)", "#e08a1e"},
                           {"memory", "memory copies and sets", "#3b7dd8"},
                           {"idle", "idle", "#b8b8b8"}};

// One rank's bar: each part's width its share of the span, its label in the tooltip.
std::string bar(const Json& breakdown) {
  std::string h =
      "<div style=\"display:flex;height:18px;width:100%;max-width:720px;border:1px solid "
      "#999\">";
  for (const auto& p : kParts) {
    const double f = num(breakdown, p.key);
    if (f <= 0) continue;
    h += fmt::format("<div title=\"{} {:.1f} %\" style=\"width:{:.2f}%;background:{}\"></div>",
                     p.label, 100 * f, 100 * f, p.colour);
  }
  return h + "</div>";
}

// A part of the idle split (analysis/trace_measures.hpp, IdleSplit), 0 where the JSON has none.
double idle_part(const Json& r, const char* key) {
  const auto it = r.find("idle_breakdown");
  return it != r.end() && it->is_object() ? num(*it, key) : 0.0;
}

}  // namespace

std::string trace_section(const Json& trace) {
  if (!trace.is_object() || !trace.contains("ranks")) return "";
  std::string h = "<h2>Profiler trace</h2>\n<p>";
  for (const auto& p : kParts)
    h += fmt::format(
        "<span style=\"display:inline-block;width:10px;height:10px;background:{}\"></span> {} ",
        p.colour, p.label);
  h += "</p>\n<table><tr><th>rank</th><th>device</th><th>span</th><th>where the GPU's time "
       "went</th><th>kernels</th><th>under 10 µs</th><th>launch delay (median)</th><th>idle "
       "waiting for the host</th><th>steps (median)</th><th>DataLoader</th></tr>\n";
  for (const auto& r : trace["ranks"]) {
    const Json& b = r["breakdown"];
    h += fmt::format(
        "<tr><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{:.1f} ms</td><td>{}<small>compute "
        "{:.0f} %, NCCL {:.0f} %, memory {:.0f} %, idle {:.0f} %</small></td><td "
        "class=\"n\">{:.0f}</td><td class=\"n\">{:.0f} %</td><td class=\"n\">{:.1f} µs</td><td "
        "class=\"n\">{:.0f} %<small>on another stream or event {:.0f} %, other {:.0f} "
        "%</small></td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
        r["rank"].is_number() ? std::to_string(r["rank"].get<int>()) : std::string("-"),
        html_escape(r["device"].is_string() ? r["device"].get<std::string>() : "-"),
        num(r, "span_ms"), bar(b), 100 * num(b, "compute"), 100 * num(b, "communication"),
        100 * num(b, "memory"), 100 * num(b, "idle"), num(r, "kernels"),
        100 * num(r, "small_kernel_share"), num(r, "launch_delay_median_us"),
        100 * num(r, "idle_host_wait"), 100 * idle_part(r, "stream_event_wait"),
        100 * idle_part(r, "other"),
        r["steps"].empty()
            ? std::string("-")
            : fmt::format("{} ({:.1f} ms)", r["steps"].size(), num(r, "step_median_ms")),
        r["dataloader_share"].is_number()
            ? fmt::format("{:.0f} %", 100 * num(r, "dataloader_share"))
            : std::string("-"));
  }
  h += "</table>\n";
  for (const auto& r : trace["ranks"]) {
    if (r["top_kernels"].empty()) continue;
    h += fmt::format(
        "<h3>Top kernels, rank {}</h3><table><tr><th>kernel</th><th>calls</th><th>time</th><th>of "
        "the kernel time</th></tr>\n",
        r["rank"].is_number() ? std::to_string(r["rank"].get<int>()) : std::string("-"));
    for (const auto& k : r["top_kernels"])
      h += fmt::format(
          "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{:.3f} ms</td><td "
          "class=\"n\">{:.1f} %</td></tr>\n",
          html_escape(k["name"].get<std::string>()), k["count"].get<size_t>(), num(k, "ms"),
          100 * num(k, "share"));
    h += "</table>\n";
  }
  return h;
}

}  // namespace gpudoctor::html
