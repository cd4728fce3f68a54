#include "report/fleet_report.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/duration.hpp"
#include "report/html_report.hpp"

namespace gpudoctor {
namespace {

double hours(double s) {
  return s / 3600.0;
}

// GPU-hours with as many decimals as a short span needs.
std::string h(double s) {
  const double v = hours(s);
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  if (v >= 0.1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3f}", v);
}

std::string pct(double part, double whole) {
  if (whole <= 0) return "-";
  return fmt::format("{:.1f} %", 100.0 * part / whole);
}

std::string cause_or_dash(const std::optional<Cause>& c) {
  return c ? std::string(cause_code(*c)) : "-";
}

std::string eff(const std::optional<double>& e) {
  return e ? fmt::format("{:.0f} %", *e * 100) : "-";
}

std::string hosts_text(const std::set<std::string>& hosts, size_t most = 3) {
  std::string out;
  size_t n = 0;
  for (const auto& x : hosts) {
    if (n == most) {
      out += fmt::format(" +{}", hosts.size() - most);
      break;
    }
    out += (n++ ? "," : "") + x;
  }
  return out.empty() ? "-" : out;
}

std::string what_rows(FleetBy by, size_t n) {
  switch (by) {
    case FleetBy::kJob:
      return n == 1 ? "owner" : "owners (jobs, pods, containers, ...)";
    case FleetBy::kUser:
      return n == 1 ? "user" : "users";
    case FleetBy::kNamespace:
      return n == 1 ? "namespace" : "namespaces";
    case FleetBy::kPod:
      return n == 1 ? "pod" : "pods";
    case FleetBy::kHost:
      return n == 1 ? "host" : "hosts";
    case FleetBy::kModel:
      return n == 1 ? "GPU model" : "GPU models";
    case FleetBy::kCause:
      return n == 1 ? "cause" : "causes";
  }
  return "rows";
}

std::string path_text(const FleetReport& r) {
  return r.path == "ledger" ? "gpudoctor serve's ledger" : "each host's series diagnosed here";
}

std::string span_text(const FleetReport& r) {
  return fmt::format("{} to {} ({})", iso8601_utc(r.start_unix_ms), iso8601_utc(r.end_unix_ms),
                     human_duration(static_cast<double>(r.end_unix_ms - r.start_unix_ms) / 1000.0));
}

// Lost by cause, largest first, idle left out (it has its own line).
std::vector<std::pair<Cause, double>> lost_causes(const FleetTally& t, bool with_idle) {
  std::vector<std::pair<Cause, double>> out;
  for (size_t c = 0; c < kCauseCount; ++c)
    if (t.by_cause[c] > 0 && (with_idle || static_cast<Cause>(c) != Cause::kIdle))
      out.emplace_back(static_cast<Cause>(c), t.by_cause[c]);
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

nlohmann::ordered_json tally_json(const FleetTally& t) {
  nlohmann::ordered_json causes = nlohmann::ordered_json::object();
  for (const auto& [c, s] : lost_causes(t, true)) causes[std::string(cause_code(c))] = hours(s);
  nlohmann::ordered_json j = {{"gpu_hours", hours(t.total_s())},
                              {"allocated_gpu_hours", hours(t.allocated_s())},
                              {"working_gpu_hours", hours(t.working_s)},
                              {"lost_gpu_hours", hours(t.lost_s)},
                              {"idle_allocated_gpu_hours", hours(t.idle_allocated_s)},
                              {"free_gpu_hours", hours(t.free_s)},
                              {"wasted_gpu_hours", hours(t.wasted_s())},
                              {"lost_by_cause_gpu_hours", causes}};
  j["efficiency"] = t.efficiency() ? nlohmann::ordered_json(*t.efficiency()) : nullptr;
  const auto main = t.main_cause();
  j["main_cause"] = main ? nlohmann::ordered_json(std::string(cause_code(*main))) : nullptr;
  return j;
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string fleet_text(const FleetReport& r) {
  std::string o;
  const FleetTally& t = r.total;
  o += fmt::format("gpudoctor fleet: {} GPU{} on {} host{}, {}\n", r.gpus, r.gpus == 1 ? "" : "s",
                   r.hosts.size(), r.hosts.size() == 1 ? "" : "s", span_text(r));
  o += fmt::format("Source: {}{} ({})\n\n", r.source, r.selector.empty() ? "" : " " + r.selector,
                   path_text(r));
  o += fmt::format("  {:<26}{:>10}\n", "GPU-hours sampled", h(t.total_s()));
  o += fmt::format("  {:<26}{:>10}  {:>7}\n", "working", h(t.working_s),
                   pct(t.working_s, t.total_s()));
  o += fmt::format("  {:<26}{:>10}  {:>7}\n", "lost to a cause", h(t.lost_s),
                   pct(t.lost_s, t.total_s()));
  for (const auto& [c, s] : lost_causes(t, false))
    o += fmt::format("    {:<24}{:>10}  {:>7}\n", cause_code(c), h(s), pct(s, t.total_s()));
  o += fmt::format("  {:<26}{:>10}  {:>7}\n", "idle but allocated", h(t.idle_allocated_s),
                   pct(t.idle_allocated_s, t.total_s()));
  o += fmt::format("  {:<26}{:>10}  {:>7}\n", "free (nobody held them)", h(t.free_s),
                   pct(t.free_s, t.total_s()));
  o += fmt::format("  Lost, idle included: {} GPU-hours, {} of the allocated time; efficiency {}\n",
                   h(t.wasted_s()), pct(t.wasted_s(), t.allocated_s()), eff(t.efficiency()));
  o += fmt::format("\n{} {} by lost GPU-hours{}:\n",
                   r.rows.size() < r.rows_total
                       ? fmt::format("Top {} of {}", r.rows.size(), r.rows_total)
                       : fmt::format("{}", r.rows_total),
                   what_rows(r.by, r.rows_total), r.rows.empty() ? " (none)" : "");
  size_t width = 10;
  for (const auto& row : r.rows) width = std::max(width, row.label.size());
  width = std::min<size_t>(width, 48);
  const bool causes = r.by == FleetBy::kCause;
  if (!r.rows.empty() && causes)
    o += fmt::format("  {:>3}  {:<{}}  {:>10}  {:>13}  {:>4}  {}\n", "#", "cause", width,
                     "lost GPU-h", "share of lost", "GPUs", "hosts");
  else if (!r.rows.empty())
    o += fmt::format("  {:>3}  {:<{}}  {:>9}  {:>10}  {:>7}  {:<18}  {:>5}  {:>4}  {}\n", "#",
                     fleet_by_code(r.by), width, "GPU-h", "lost GPU-h", "lost", "main cause",
                     "eff.", "GPUs", "hosts");
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const FleetRow& row = r.rows[i];
    const std::string gpus = row.gpus ? fmt::format("{}", row.gpus) : "-";
    if (causes)
      o += fmt::format("  {:>3}  {:<{}}  {:>10}  {:>13}  {:>4}  {}\n", i + 1, row.label, width,
                       h(row.t.wasted_s()), pct(row.t.wasted_s(), t.wasted_s()), gpus,
                       hosts_text(row.hosts));
    else
      o +=
          fmt::format("  {:>3}  {:<{}}  {:>9}  {:>10}  {:>7}  {:<18}  {:>5}  {:>4}  {}\n", i + 1,
                      row.label, width, h(row.t.allocated_s()), h(row.t.wasted_s()),
                      pct(row.t.wasted_s(), row.t.allocated_s()), cause_or_dash(row.t.main_cause()),
                      eff(row.t.efficiency()), gpus, hosts_text(row.hosts));
    o += fmt::format("       {}\n", row.drill);
  }
  if (!r.notes.empty()) {
    o += "\nNotes:\n";
    for (const auto& n : r.notes) o += "  - " + n + "\n";
  }
  o +=
      fmt::format("\n{} quer{} in {:.2f} s.\n", r.queries, r.queries == 1 ? "y" : "ies", r.query_s);
  return o;
}

nlohmann::ordered_json fleet_json(const FleetReport& r) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const FleetRow& row = r.rows[i];
    nlohmann::ordered_json labels = nlohmann::ordered_json::object();
    for (const auto& [k, v] : row.labels) labels[k] = v;
    rows.push_back({{"rank", i + 1},
                    {"label", row.label},
                    {"labels", labels},
                    {"unowned", row.unowned},
                    {"gpus", row.gpus},
                    {"hosts", row.hosts},
                    {"tally", tally_json(row.t)},
                    {"drill_down", row.drill}});
  }
  return {{"schema_version", 1},
          {"source", r.source},
          {"selector", r.selector},
          {"path", r.path},
          {"by", fleet_by_code(r.by)},
          {"start", iso8601_utc(r.start_unix_ms)},
          {"end", iso8601_utc(r.end_unix_ms)},
          {"span_s", static_cast<double>(r.end_unix_ms - r.start_unix_ms) / 1000.0},
          {"gpus", r.gpus},
          {"hosts", r.hosts},
          {"total", tally_json(r.total)},
          {"rows_total", r.rows_total},
          {"rows", rows},
          {"notes", r.notes},
          {"queries", r.queries},
          {"query_s", r.query_s}};
}

std::string fleet_csv(const FleetReport& r) {
  std::string o =
      "rank,label,gpu_hours,lost_gpu_hours,lost_share,main_cause,efficiency,working_gpu_hours,"
      "lost_to_cause_gpu_hours,idle_allocated_gpu_hours,free_gpu_hours,gpus,hosts,drill_down\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const FleetRow& row = r.rows[i];
    const FleetTally& t = row.t;
    std::string hosts;
    for (const auto& x : row.hosts) hosts += (hosts.empty() ? "" : " ") + x;
    o += fmt::format(
        "{},{},{:.6g},{:.6g},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{}\n", i + 1,
        csv_cell(row.label), hours(t.allocated_s()), hours(t.wasted_s()),
        t.allocated_s() > 0 ? fmt::format("{:.4f}", t.wasted_s() / t.allocated_s()) : "",
        t.main_cause() ? std::string(cause_code(*t.main_cause())) : "",
        t.efficiency() ? fmt::format("{:.4f}", *t.efficiency()) : "", hours(t.working_s),
        hours(t.lost_s), hours(t.idle_allocated_s), hours(t.free_s), row.gpus, csv_cell(hosts),
        csv_cell(row.drill));
  }
  return o;
}

std::string fleet_markdown(const FleetReport& r) {
  const FleetTally& t = r.total;
  std::string o = fmt::format("# GPU fleet: {} GPUs on {} hosts\n\n{} · {} · {}\n\n", r.gpus,
                              r.hosts.size(), md_cell(r.source), span_text(r), path_text(r));
  o += "| | GPU-hours | share |\n|---|---:|---:|\n";
  o += fmt::format("| sampled | {} | |\n", h(t.total_s()));
  o += fmt::format("| working | {} | {} |\n", h(t.working_s), pct(t.working_s, t.total_s()));
  o += fmt::format("| lost to a cause | {} | {} |\n", h(t.lost_s), pct(t.lost_s, t.total_s()));
  for (const auto& [c, s] : lost_causes(t, false))
    o += fmt::format("| &nbsp;&nbsp;{} | {} | {} |\n", cause_code(c), h(s), pct(s, t.total_s()));
  o += fmt::format("| idle but allocated | {} | {} |\n", h(t.idle_allocated_s),
                   pct(t.idle_allocated_s, t.total_s()));
  o += fmt::format("| free | {} | {} |\n\n", h(t.free_s), pct(t.free_s, t.total_s()));
  o += fmt::format("## {} {} by lost GPU-hours\n\n",
                   r.rows.size() < r.rows_total
                       ? fmt::format("Top {} of {}", r.rows.size(), r.rows_total)
                       : fmt::format("{}", r.rows_total),
                   what_rows(r.by, r.rows_total));
  o += fmt::format("| # | {} | GPU-h | lost GPU-h | lost | main cause | eff. | GPUs | hosts |\n",
                   fleet_by_code(r.by));
  o += "|---:|---|---:|---:|---:|---|---:|---:|---|\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const FleetRow& row = r.rows[i];
    o += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", i + 1, md_cell(row.label),
                     h(row.t.allocated_s()), h(row.t.wasted_s()),
                     pct(row.t.wasted_s(), row.t.allocated_s()), cause_or_dash(row.t.main_cause()),
                     eff(row.t.efficiency()), row.gpus, md_cell(hosts_text(row.hosts, 5)));
  }
  if (!r.rows.empty()) {
    o += "\nTo look closer:\n\n";
    for (size_t i = 0; i < r.rows.size(); ++i)
      o += fmt::format("{}. {}: `{}`\n", i + 1, md_cell(r.rows[i].label), r.rows[i].drill);
  }
  if (!r.notes.empty()) {
    o += "\nNotes:\n\n";
    for (const auto& n : r.notes) o += "- " + n + "\n";
  }
  return o;
}

std::string fleet_html(const FleetReport& r) {
  const FleetTally& t = r.total;
  const std::string title = fmt::format("GPU fleet: {} GPUs on {} hosts", r.gpus, r.hosts.size());
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  o += fmt::format("<title>{}</title><style>{}", html_escape(title), html_report_css());
  o += ".bar{display:flex;height:22px;border-radius:4px;overflow:hidden;margin:8px 0}"
       ".bar span{display:block}.working{background:#2da44e}.lost{background:#d4760a}"
       ".idle{background:#cf222e}.free{background:#afb8c1}.key span{display:inline-block;"
       "width:10px;height:10px;margin:0 4px 0 12px}td .mini{height:10px;margin:2px 0}"
       "</style></head><body>\n";
  o += fmt::format("<h1>{}</h1><p class=\"muted\">{} · {} · {}</p>\n", html_escape(title),
                   html_escape(r.source + (r.selector.empty() ? "" : " " + r.selector)),
                   html_escape(span_text(r)), html_escape(path_text(r)));
  auto bar = [&](const FleetTally& x, const char* cls) {
    const double all = x.total_s();
    if (all <= 0) return std::string("<div class=\"bar ") + cls + "\"></div>";
    return fmt::format(
        "<div class=\"bar {}\" title=\"working {} · lost {} · idle but allocated {} · free {} "
        "GPU-hours\"><span class=\"working\" style=\"width:{:.2f}%\"></span><span class=\"lost\" "
        "style=\"width:{:.2f}%\"></span><span class=\"idle\" style=\"width:{:.2f}%\"></span><span "
        "class=\"free\" style=\"width:{:.2f}%\"></span></div>",
        cls, h(x.working_s), h(x.lost_s), h(x.idle_allocated_s), h(x.free_s),
        100 * x.working_s / all, 100 * x.lost_s / all, 100 * x.idle_allocated_s / all,
        100 * x.free_s / all);
  };
  o += "<h2>Where the GPU time went</h2>\n" + bar(t, "total");
  o += "<p class=\"key muted\"><span class=\"working\"></span>working<span class=\"lost\"></span>"
       "lost to a cause<span class=\"idle\"></span>idle but allocated<span class=\"free\"></span>"
       "free</p>\n<table><tr><th></th><th>GPU-hours</th><th>share</th></tr>\n";
  auto line = [&](const std::string& name, double s) {
    return fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n", name,
                       h(s), pct(s, t.total_s()));
  };
  o += line("sampled", t.total_s()) + line("working", t.working_s) +
       line("lost to a cause", t.lost_s);
  for (const auto& [c, s] : lost_causes(t, false))
    o += line(
        "&nbsp;&nbsp;" + html_escape(cause_info(c).title) + " (" + std::string(cause_code(c)) + ")",
        s);
  o += line("idle but allocated", t.idle_allocated_s) + line("free", t.free_s) + "</table>\n";
  o += fmt::format(
      "<p>Efficiency of the allocated time: <b>{}</b>; lost, idle included: {} "
      "GPU-hours ({} of the allocated time).</p>\n",
      eff(t.efficiency()), h(t.wasted_s()), pct(t.wasted_s(), t.allocated_s()));
  o += fmt::format("<h2>{} {} by lost GPU-hours</h2>\n",
                   r.rows.size() < r.rows_total
                       ? fmt::format("Top {} of {}", r.rows.size(), r.rows_total)
                       : fmt::format("{}", r.rows_total),
                   what_rows(r.by, r.rows_total));
  o += fmt::format(
      "<table id=\"rows\"><tr><th>#</th><th>{}</th><th>GPU-h</th><th>lost GPU-h</th><th>lost</th>"
      "<th>time</th><th>main cause</th><th>eff.</th><th>GPUs</th><th>hosts</th></tr>\n",
      html_escape(fleet_by_code(r.by)));
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const FleetRow& row = r.rows[i];
    o += fmt::format(
        "<tr class=\"row\"><td class=\"n\">{}</td><td>{}<br><code class=\"muted\">{}</code></td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td>"
        "<td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
        i + 1, html_escape(row.label), html_escape(row.drill), h(row.t.allocated_s()),
        h(row.t.wasted_s()), pct(row.t.wasted_s(), row.t.allocated_s()), bar(row.t, "mini"),
        html_escape(cause_or_dash(row.t.main_cause())), eff(row.t.efficiency()), row.gpus,
        html_escape(hosts_text(row.hosts, 5)));
  }
  o += "</table>\n";
  if (!r.notes.empty()) {
    o += "<h2>Notes</h2><ul>\n";
    for (const auto& n : r.notes) o += "<li>" + html_escape(n) + "</li>\n";
    o += "</ul>\n";
  }
  o += fmt::format("<p class=\"muted\">gpudoctor fleet · {} queries in {:.2f} s</p>\n", r.queries,
                   r.query_s);
  // Checks itself when opened (read by the tests): rows drawn, no script errors.
  o += "<script>(function(){var errors=[];window.addEventListener('error',function(e){errors.push("
       "String(e.message));});window.addEventListener('load',function(){var b=document.body;"
       "b.dataset.rows=String(document.querySelectorAll('#rows tr.row').length);b.dataset.bars="
       "String(document.querySelectorAll('.bar').length);b.dataset.errors=errors.join(' | ');"
       "b.dataset.ready='1';});})();</script>\n</body></html>\n";
  return o;
}

}  // namespace gpudoctor
