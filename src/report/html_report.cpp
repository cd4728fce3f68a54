#include "report/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "core/duration.hpp"
#include "host/markers.hpp"
#include "report/diagnosis_report.hpp"
#include "report/html_charts.hpp"
#include "report/html_trace.hpp"

namespace gpudoctor {

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

using html::chart;
using html::downsample;
using html::Line;
using html::num;
using html::Shade;

std::string esc(std::string_view s) {
  return html_escape(s);
}

double jnum(const nlohmann::ordered_json& j, const char* k) {
  const auto it = j.find(k);
  return it != j.end() && it->is_number() ? it->get<double>() : std::nan("");
}

const char* const kCss = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1180px;color:#1b1f24;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
.verdict{font-size:18px;padding:10px 14px;border-radius:6px;background:#eef6ee;border-left:6px solid #2da44e}
.verdict.bad{background:#fff5e6;border-left-color:#d4760a}.verdict.none{background:#f3f3f3;border-left-color:#888}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
.finding{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;margin:10px 0}
.sev{display:inline-block;padding:0 6px;border-radius:4px;color:#fff;font-size:12px;text-transform:uppercase}
.sev.critical{background:#cf222e}.sev.warning{background:#d4760a}.sev.info{background:#57606a}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:8px}
figure.chart{margin:0;border:1px solid #eaeef2;border-radius:4px}svg{width:100%;height:auto;display:block}
svg .title{font-size:12px;font-weight:600}svg .tick,svg .legend{font-size:10px;fill:#57606a}
svg .grid{stroke:#eaeef2;stroke-width:1}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}pre{background:#f6f8fa;padding:8px;white-space:pre-wrap}
.muted{color:#57606a}
figure.timebar{margin:6px 0 0}figure.timebar svg{border-radius:4px}svg .barlabel{font-size:12px;font-weight:600;fill:#fff}svg .barlabel.dark{fill:#1b1f24}
ul.timebar-legend,ul.gpu-legend{list-style:none;padding:0;margin:6px 0;display:flex;flex-wrap:wrap;gap:4px 18px}
ul.timebar-legend i,ul.gpu-legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;vertical-align:-1px}
ul.gpu-legend i{height:4px;vertical-align:3px;width:16px}
ul.timebar-legend i.hatch{background:repeating-linear-gradient(45deg,#d0d7de 0 3px,#f6f8fa 3px 6px)!important}
ul.gpu-legend i.limit{background:repeating-linear-gradient(90deg,#8c959f 0 5px,transparent 5px 8px)}
ul.gpu-legend i.dashed{background-image:linear-gradient(90deg,transparent 60%,#fff 60%)!important;background-size:6px 4px}
.overlay figure.chart+figure.chart{margin-top:4px}
@media print{body{max-width:none;margin:0}.finding,figure.chart,figure.timebar,table{break-inside:avoid}.charts{grid-template-columns:1fr 1fr}}
)";

}  // namespace

const char* html_report_css() {
  return kCss;
}

namespace {

// Checks itself when opened: every chart has data, no script errors, the time bar's parts and
// percent, the lines on the overlaid chart (read by the tests).
const char* kScript = R"(
(function(){
  var errors=[];
  window.addEventListener('error',function(e){errors.push(String(e.message));document.body.dataset.errors=errors.join(' | ');});
  window.addEventListener('load',function(){
    var charts=document.querySelectorAll('figure.chart svg');var withData=0;
    charts.forEach(function(c){if(parseInt(c.getAttribute('data-points'),10)>0&&c.querySelector('polyline'))withData++;});
    document.body.dataset.charts=String(charts.length);document.body.dataset.chartsWithData=String(withData);
    var parts=document.querySelectorAll('figure.timebar rect[data-part]');var pct=0;
    parts.forEach(function(r){pct+=parseFloat(r.getAttribute('data-pct'));});
    document.body.dataset.barParts=String(parts.length);document.body.dataset.barPct=pct.toFixed(2);
    var bar=document.querySelector('figure.timebar svg');
    var h2=document.querySelector('h2');
    document.body.dataset.barWidth=bar?String(Math.round(bar.getBoundingClientRect().width)):'0';
    document.body.dataset.pageWidth=h2?String(Math.round(h2.getBoundingClientRect().width)):'0';
    var over=document.querySelector('.overlay figure.chart svg');
    document.body.dataset.overlayLines=over?String(over.querySelectorAll('polyline').length):'0';
    document.body.dataset.errors=errors.join(' | ');document.body.dataset.ready='1';
  });
})();
)";

}  // namespace

namespace {

// The page up to the verdict: title, what was read, the command, the verdict line.
std::string page_head(const Diagnosis& d, const Recording& rec, const HtmlReportOptions& options) {
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  h += fmt::format("<title>{}</title><style>{}</style></head><body>\n", esc(options.title), kCss);
  h += fmt::format("<h1>{}</h1><p class=\"muted\">{} · {} GPU{} · {}{}</p>\n", esc(options.title),
                   esc(d.source), d.gpus.size(), d.gpus.size() == 1 ? "" : "s",
                   human_duration(d.duration_s),
                   d.start_unix_ms > 0 ? " · from " + iso8601_utc(d.start_unix_ms) : "");
  if (!rec.command.empty()) {
    std::string cmd;
    for (const auto& a : rec.command) cmd += (cmd.empty() ? "" : " ") + a;
    h += fmt::format("<p>Command: <code>{}</code></p>\n", esc(cmd));
  }
  if (d.verdict) {
    const auto& info = cause_info(*d.verdict);
    h += fmt::format("<p class=\"verdict{}\"><b>Verdict: {}</b> ({}) — {}</p>\n",
                     *d.verdict == Cause::kHealthy ? "" : " bad", esc(info.title), info.code,
                     esc(d.headline.empty() ? std::string(info.what) : d.headline));
  } else {
    h += "<p class=\"verdict none\"><b>Verdict: cannot tell from this input</b> (see the limits "
         "below)</p>\n";
  }

  return h;
}

// One row per GPU: verdict, role, efficiency, power, limit, util, SM activity, lost time, phases.
std::string gpu_table(const Diagnosis& d) {
  std::string h;
  h += "<h2>GPUs</h2><table><tr><th>GPU</th><th>name</th><th>verdict</th><th>role</th>"
       "<th>efficiency</th>"
       "<th>mean power</th><th>limit</th><th>util</th><th>SM activity</th><th>lost GPU-h</th>"
       "<th>phases</th></tr>\n";
  for (const auto& g : d.gpus) {
    std::string phases;
    for (const auto& p : g.phases)
      phases += fmt::format("{}{} {}–{}", phases.empty() ? "" : ", ", p.kind,
                            human_duration(p.start_s), human_duration(p.end_s));
    h += fmt::format(
        "<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td "
        "class=\"n\">{} W</td><td class=\"n\">{}</td><td class=\"n\">{} %</td><td "
        "class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
        g.index, esc(g.name), g.verdict ? std::string(cause_code(*g.verdict)) : "cannot tell",
        [&] {
          const std::string role = gpu_role(d, g.index);
          return role.empty() ? std::string("-") : esc(role);
        }(),
        g.efficiency ? num(*g.efficiency, 2) : "-", num(jnum(g.metrics, "mean_power_w"), 0),
        g.power_limit_w ? fmt::format("{:.0f} W ({})", *g.power_limit_w, g.power_limit_source)
                        : "-",
        num(jnum(g.metrics, "mean_util_pct"), 0),
        std::isnan(jnum(g.metrics, "mean_sm_pct")) ? "-"
                                                   : num(jnum(g.metrics, "mean_sm_pct"), 0) + " %",
        g.lost_gpu_hours ? num(*g.lost_gpu_hours, 2) : "-", esc(phases));
  }
  h += "</table>\n";

  return h;
}

// Each finding: severity, GPUs, time, summary, owners, alternatives, fixes, evidence.
std::string findings_section(const Diagnosis& d) {
  std::string h;
  h += "<h2>Findings</h2>\n";
  if (d.findings.empty()) h += "<p>None: every judged GPU was healthy.</p>\n";
  for (const auto& f : d.findings) {
    const auto& info = cause_info(f.cause);
    std::vector<std::string> gpus;
    for (unsigned g : f.gpus) gpus.push_back(std::to_string(g));
    h += fmt::format(
        "<div class=\"finding\"><span class=\"sev {}\">{}</span> <b>{}</b> · GPUs {} · {}–{} · "
        "confidence {:.2f}{}<p>{}.</p>",
        severity_code(f.severity), severity_code(f.severity), esc(info.title),
        fmt::join(gpus, ", "), human_duration(f.start_s), human_duration(f.end_s), f.confidence,
        f.lost_gpu_hours ? fmt::format(" · about {:.2f} GPU-hours lost", *f.lost_gpu_hours) : "",
        esc(f.summary));
    if (!f.owners.empty())
      h += fmt::format("<p>Held by {}.</p>", esc(fmt::format("{}", fmt::join(f.owners, ", "))));
    for (const auto& a : f.alternatives)
      h += fmt::format("<p>Or <b>{}</b> (confidence {:.2f}): {}</p>",
                       esc(cause_info(a.cause).title), a.confidence, esc(a.tell_apart));
    if (!f.fixes.empty()) {
      h += "<b>What to change</b><ul>";
      for (const auto& fix : f.fixes) h += fmt::format("<li>{}</li>", esc(fix));
      h += "</ul>";
    }
    h += "<details><summary>Evidence</summary><table>";
    for (const auto& [k, v] : f.evidence.items())
      h += fmt::format("<tr><th>{}</th><td>{}</td></tr>", esc(k),
                       esc(v.is_string() ? v.get<std::string>() : v.dump()));
    h += "</table></details></div>\n";
  }

  return h;
}

// The step markers' figures, where the job wrote some.
std::string steps_section(const Recording& rec) {
  std::string h;
  const auto steps = host::step_stats(rec.markers);
  if (steps.steps > 0) {
    h += "<h2>Steps</h2><table>";
    h += fmt::format("<tr><th>steps</th><td class=\"n\">{}</td></tr>", steps.steps);
    h += fmt::format("<tr><th>mean step</th><td class=\"n\">{} ms</td></tr>",
                     num(steps.mean_step_s * 1000, 1));
    if (!std::isnan(steps.mean_wait_s))
      h += fmt::format("<tr><th>waiting for data</th><td class=\"n\">{} ms ({:.0f} %)</td></tr>",
                       num(steps.mean_wait_s * 1000, 1),
                       100 * steps.mean_wait_s / steps.mean_step_s);
    if (!std::isnan(steps.mean_compute_s))
      h += fmt::format("<tr><th>computing</th><td class=\"n\">{} ms ({:.0f} %)</td></tr>",
                       num(steps.mean_compute_s * 1000, 1),
                       100 * steps.mean_compute_s / steps.mean_step_s);
    if (!std::isnan(steps.throughput))
      h += fmt::format("<tr><th>throughput</th><td class=\"n\">{} samples/s</td></tr>",
                       num(steps.throughput, 1));
    h += "</table>\n";
  }
  return h;
}

// The run against a saved baseline, where one was given.
std::string baseline_section(const HtmlReportOptions& options) {
  std::string h;
  if (options.baseline) {
    const auto& c = *options.baseline;
    h += fmt::format(
        "<h2>Against baseline “{}”</h2><table><tr><th>figure</th><th>baseline</th>"
        "<th>this run</th></tr>",
        esc(c.baseline.name));
    auto row = [&](const char* what, const std::optional<double>& a, const std::optional<double>& b,
                   int digits) {
      h += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>", what,
                       a ? num(*a, digits) : "-", b ? num(*b, digits) : "-");
    };
    row("mean power per GPU (W)", c.baseline.mean_power_w, c.now.mean_power_w, 0);
    row("efficiency", c.baseline.efficiency, c.now.efficiency, 2);
    row("throughput (samples/s)", c.baseline.throughput, c.now.throughput, 1);
    h += "</table>";
    if (c.regressions.empty()) h += "<p>No figure more than 20 % below the baseline.</p>";
    for (const auto& r : c.regressions)
      h += fmt::format(
          "<p><span class=\"sev warning\">regression</span> {} {:.0f} % below the "
          "baseline ({} → {})</p>",
          esc(r.metric), r.drop * 100, num(r.baseline, 2), num(r.now, 2));
    if (c.scaling_efficiency)
      h += fmt::format("<p>Scaling efficiency against the 1-GPU baseline: {:.0f} %</p>",
                       *c.scaling_efficiency * 100);
  }

  return h;
}

// Each GPU over time: power, utilisation, efficiency, clock, temperature, PCIe; phases and findings
// shaded.
std::string gpu_charts(const Recording& rec, const Diagnosis& d, double t_end) {
  std::string h;
  h += "<h2>Each GPU over time</h2><p class=\"muted\">Shaded: phases other than steady work (grey) "
       "and "
       "findings (their cause's colour).</p>\n";
  for (size_t gi = 0; gi < rec.gpus.size(); ++gi) {
    const auto& s = rec.gpus[gi];
    const GpuDiagnosis* gd = gi < d.gpus.size() ? &d.gpus[gi] : nullptr;
    std::vector<Shade> shades;
    if (gd)
      for (const auto& p : gd->phases)
        if (p.kind != "steady") shades.push_back({p.start_s, p.end_s, "#8c959f", p.kind});
    for (const auto& f : d.findings)
      if (std::find(f.gpus.begin(), f.gpus.end(), s.info.index) != f.gpus.end())
        shades.push_back(
            {f.start_s, f.end_s, html::cause_color(f.cause), std::string(cause_code(f.cause))});
    auto line = [&](Field f, const char* label, const char* color, bool dashed = false) {
      Line l{label, color, {}, {}, dashed};
      if (const auto c = s.column(f)) downsample(s.time_s.view(), *c, l);
      return l;
    };
    h += fmt::format("<h3>GPU {} · {}</h3><div class=\"charts\">", s.info.index, esc(s.info.name));
    {
      std::vector<Line> ls = {line(Field::kPower, "power", "#0969da")};
      const auto enf =
          s.has(Field::kPowerLimitEnforced) ? Field::kPowerLimitEnforced : Field::kPowerLimit;
      if (s.has(enf)) ls.push_back(line(enf, "enforced limit", "#cf222e", true));
      if (s.has(Field::kPowerLimitDefault))
        ls.push_back(line(Field::kPowerLimitDefault, "default limit", "#57606a", true));
      else if (gd && gd->power_limit_w) {
        Line l{
            "default limit", "#57606a", {0, t_end}, {*gd->power_limit_w, *gd->power_limit_w}, true};
        ls.push_back(l);
      }
      h += chart("Power against the limits", "W", t_end, ls, shades);
    }
    {
      std::vector<Line> ls = {line(Field::kUtilGpu, "GPU-Util", "#d4760a")};
      if (s.has(Field::kGpmSmUtil)) ls.push_back(line(Field::kGpmSmUtil, "SM activity", "#0969da"));
      if (s.has(Field::kUtilMem))
        ls.push_back(line(Field::kUtilMem, "memory util", "#8c959f", true));
      h += chart("GPU-Util against SM activity", "%", t_end, ls, shades, 100);
    }
    {
      // Efficiency per sample: power / default limit (x SM activity where measured).
      Line l{"efficiency", "#2da44e", {}, {}, false};
      const double limit = gd && gd->power_limit_w ? *gd->power_limit_w : std::nan("");
      if (const auto p = s.column(Field::kPower); p && !std::isnan(limit) && limit > 0) {
        const auto sm = s.column(Field::kGpmSmUtil);
        std::vector<double> e(p->size());
        for (size_t i = 0; i < e.size(); ++i) e[i] = (*p)[i] / limit * (sm ? (*sm)[i] / 100 : 1.0);
        downsample(s.time_s.view(), e, l);
      }
      Line ref{"0.6", "#cf222e", {0, t_end}, {0.6, 0.6}, true};
      h += chart("Efficiency", "ratio", t_end, {l, ref}, shades, 1);
    }
    {
      std::vector<Line> ls = {line(Field::kClockSm, "SM clock", "#8250df")};
      if (s.has(Field::kClockSmMax)) ls.push_back(line(Field::kClockSmMax, "max", "#57606a", true));
      h += chart("SM clock", "MHz", t_end, ls, shades);
    }
    {
      std::vector<Line> ls = {line(Field::kTemp, "GPU temperature", "#cf222e")};
      if (s.has(Field::kTempSlowdown))
        ls.push_back(line(Field::kTempSlowdown, "slowdown", "#57606a", true));
      h += chart("Temperature", "°C", t_end, ls, shades);
    }
    if (s.has(Field::kPcieRx) || s.has(Field::kPcieTx))
      h += chart("PCIe throughput", "MiB/s", t_end,
                 {line(Field::kPcieRx, "host to GPU", "#0969da"),
                  line(Field::kPcieTx, "GPU to host", "#d4760a")},
                 shades);
    h += "</div>\n";
  }
  return h;
}

// The host around a job (`run`): CPU, I/O wait and the job's cores.
std::string host_charts(const Recording& rec, double t_end) {
  std::string h;
  if (rec.host && !rec.host->samples.empty()) {
    Line cpu{"host CPU %", "#0969da", {}, {}, false}, io{"I/O wait %", "#cf222e", {}, {}, false},
        job{"job cores x10", "#2da44e", {}, {}, false};
    std::vector<double> t, a, b, c;
    for (const auto& x : rec.host->samples)
      t.push_back(x.time_s), a.push_back(x.cpu_pct), b.push_back(x.iowait_pct),
          c.push_back(x.job_cpu_cores * 10);
    downsample(t, a, cpu), downsample(t, b, io), downsample(t, c, job);
    h += fmt::format("<h3>Host ({} cores for the job)</h3><div class=\"charts\">", rec.host->cores);
    h += chart("Host CPU and I/O wait; the job's CPU", "%", t_end, {cpu, io, job}, {}, 100);
    h += "</div>\n";
  }

  return h;
}

// The system, the environment audit, data quality, the limits of the input and how it was read.
std::string system_section(const Recording& rec, const Diagnosis& d) {
  std::string h;
  h += "<h2>System and configuration</h2><table>";
  h += fmt::format(
      "<tr><th>host</th><td>{}</td></tr><tr><th>driver</th><td>{}</td></tr>"
      "<tr><th>CUDA (driver)</th><td>{}</td></tr>",
      esc(rec.system.hostname), esc(rec.system.driver_version),
      esc(rec.system.cuda_driver_version));
  for (const auto& s : rec.gpus)
    h += fmt::format("<tr><th>GPU {}</th><td>{} · {} · {}</td></tr>", s.info.index,
                     esc(s.info.name), esc(s.info.uuid), esc(s.info.pci_bus_id));
  h += "</table>\n";
  if (!rec.audit.empty()) {
    h += "<h3>Environment audit</h3><table><tr><th>level</th><th>what</th><th>fix</th></tr>";
    for (const auto& a : rec.audit)
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>", esc(a.level), esc(a.message),
                       esc(a.fix));
    h += "</table>\n";
  }
  if (!d.data_quality.empty()) {
    h += "<h3>Data quality</h3><ul>";
    for (const auto& q : d.data_quality)
      h += fmt::format("<li>GPU {} {}: {}</li>", q.gpu, esc(q.kind), esc(q.detail));
    h += "</ul>\n";
  }
  if (!d.limitations.empty()) {
    h += "<h3>Limits of this input</h3><ul>";
    for (const auto& l : group_gpu_lines(d.limitations)) h += fmt::format("<li>{}</li>", esc(l));
    h += "</ul>\n";
  }
  if (!d.input_notes.empty()) {
    h += "<h3>How the input was read</h3><ul>";
    for (const auto& l : group_gpu_lines(d.input_notes)) h += fmt::format("<li>{}</li>", esc(l));
    h += "</ul>\n";
  }
  return h;
}

}  // namespace

std::string render_html_report(const Recording& rec, const Diagnosis& d,
                               const HtmlReportOptions& options) {
  html::reset_chart_ids();
  std::string h = page_head(d, rec, options);
  // Where the GPU time went, then every GPU on one time axis; the per-GPU panels come later.
  const double t_end = std::max(d.duration_s, 1.0);
  h += html::time_bar(gpu_time_breakdown(d), d.gpus.size());
  h += html::overlay_charts(rec, d, t_end);

  h += gpu_table(d);
  h += findings_section(d);
  h += html::trace_section(d.trace);
  h += steps_section(rec);
  h += baseline_section(options);
  h += gpu_charts(rec, d, t_end);
  h += host_charts(rec, t_end);
  h += system_section(rec, d);
  h += fmt::format("<p class=\"muted\">gpudoctor {} · docs/diagnosis.md explains every figure.</p>",
                   GPUDOCTOR_VERSION);
  h += fmt::format("<script>{}</script></body></html>\n", kScript);
  return h;
}

}  // namespace gpudoctor
