#include "report/html_charts.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/duration.hpp"
#include "report/html_report.hpp"

namespace gpudoctor::html {

namespace {

std::string esc(std::string_view s) {
  return html_escape(s);
}

thread_local int g_chart_id = 0;

// A colour per GPU: distinct on white and in print; past ten GPUs the colours repeat dashed.
constexpr const char* kGpuColors[] = {"#0969da", "#d4760a", "#2da44e", "#cf222e", "#8250df",
                                      "#1b7c83", "#bf3989", "#9a6700", "#57606a", "#953800"};
constexpr size_t kGpuColorCount = sizeof(kGpuColors) / sizeof(kGpuColors[0]);

std::string gpu_hours(double s) {
  const double h = s / 3600;
  return fmt::format("{:.{}f}", h, h >= 0.1 || h == 0 ? 2 : 3);
}

std::string percent(double share) {
  const double p = share * 100;
  return fmt::format("{:.{}f} %", p, p >= 10 || p == 0 ? 0 : 1);
}

// "GPU 3", or "host-a GPU 3" where the input holds GPUs of several hosts.
std::string gpu_label(const GpuSeries& s) {
  return s.host.empty() ? fmt::format("GPU {}", s.info.index)
                        : fmt::format("{} GPU {}", s.host, s.info.index);
}

double mean_of(ColumnView v) {
  if (!v) return std::nan("");
  double sum = 0;
  size_t n = 0;
  for (double x : *v)
    if (!std::isnan(x)) sum += x, ++n;
  return n ? sum / static_cast<double>(n) : std::nan("");
}

}  // namespace

std::string num(double v, int digits) {
  if (std::isnan(v)) return "-";
  return fmt::format("{:.{}f}", v, digits);
}

void downsample(ColumnView t, ColumnView v, Line& out, size_t max_points) {
  const size_t n = std::min(t.size(), v.size());
  const size_t per = std::max<size_t>(1, (n + max_points - 1) / max_points);
  for (size_t i = 0; i < n; i += per) {
    double st = 0, sv = 0;
    size_t k = 0;
    for (size_t j = i; j < std::min(n, i + per); ++j)
      if (!std::isnan(v[j])) st += t[j], sv += v[j], ++k;
    if (k)
      out.t.push_back(st / static_cast<double>(k)), out.v.push_back(sv / static_cast<double>(k));
  }
}

void reset_chart_ids() {
  g_chart_id = 0;
}

std::string chart(const std::string& title, const std::string& unit, double t_end,
                  const std::vector<Line>& lines, const std::vector<Shade>& shades,
                  double y_min_max, const ChartSize& size) {
  const double W = size.width, H = size.height, L = 46, R = 8, T = size.legend ? 34 : 24, B = 22;
  double ymax = y_min_max;
  size_t points = 0;
  for (const auto& l : lines)
    for (double v : l.v) ymax = std::max(ymax, v), ++points;
  if (ymax <= 0) ymax = 1;
  ymax *= 1.05;
  const double tmax = std::max(t_end, 1e-9);
  auto X = [&](double t) { return L + (W - L - R) * std::clamp(t / tmax, 0.0, 1.0); };
  auto Y = [&](double v) { return T + (H - T - B) * (1 - std::clamp(v / ymax, 0.0, 1.0)); };
  std::string s = fmt::format(
      "<figure class=\"chart\"><svg viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" "
      "data-points=\"{}\" id=\"chart{}\">",
      W, H, esc(title), points, ++g_chart_id);
  s += fmt::format("<text x=\"{}\" y=\"14\" class=\"title\">{}</text>", L, esc(title));
  for (const auto& sh : shades)
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" "
        "opacity=\"0.18\"><title>{}</title></rect>",
        X(sh.t0), T, std::max(0.5, X(sh.t1) - X(sh.t0)), H - T - B, sh.color, esc(sh.label));
  for (int k = 0; k <= 2; ++k) {
    const double v = ymax / 1.05 * k / 2;
    s += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" class=\"grid\"/><text x=\"{}\" "
        "y=\"{:.1f}\" class=\"tick\" text-anchor=\"end\">{}</text>",
        L, W - R, Y(v), Y(v), L - 4, Y(v) + 4, num(v, v >= 10 || v == 0 ? 0 : 1));
  }
  s += fmt::format("<text x=\"4\" y=\"{}\" class=\"tick\">{}</text>", T - 4, esc(unit));
  const int ticks = W > 800 ? 4 : 2;
  for (int k = 0; k <= ticks; ++k) {
    const double t = tmax * k / ticks;
    s +=
        fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"tick\" text-anchor=\"{}\">{}</text>", X(t),
                    H - 6, k == 0 ? "start" : (k == ticks ? "end" : "middle"), human_duration(t));
  }
  double lx = W - R;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const auto& l = *it;
    std::string pts;
    for (size_t i = 0; i < l.t.size(); ++i)
      pts += fmt::format("{:.1f},{:.1f} ", X(l.t[i]), Y(l.v[i]));
    if (!pts.empty())
      s += fmt::format(
          "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.4\"{}>"
          "<title>{}</title></polyline>",
          pts, l.color, l.dashed ? " stroke-dasharray=\"5 3\"" : "", esc(l.label));
    if (!size.legend) continue;
    lx -= 7.0 * static_cast<double>(l.label.size()) + 16;
    s += fmt::format(
        "<rect x=\"{:.0f}\" y=\"21\" width=\"10\" height=\"3\" fill=\"{}\"/><text x=\"{:.0f}\" "
        "y=\"26\" class=\"legend\">{}</text>",
        lx, l.color, lx + 13, esc(l.label));
  }
  s += "</svg></figure>";
  return s;
}

const char* cause_color(Cause c) {
  switch (c) {
    case Cause::kIdle:
      return "#8c959f";
    case Cause::kDataStarvation:
      return "#d4760a";
    case Cause::kCommunicationWait:
      return "#8250df";
    case Cause::kLaunchOverhead:
      return "#bf3989";
    case Cause::kMemoryBound:
      return "#0969da";
    case Cause::kThermalThrottle:
      return "#cf222e";
    case Cause::kPowerCapped:
      return "#9a6700";
    case Cause::kClocksLimited:
      return "#953800";
    case Cause::kContention:
      return "#1b7c83";
    case Cause::kHealthy:
      return kWorkingColor;
  }
  return "#888";
}

std::string time_bar(const GpuTimeBreakdown& b, size_t gpus) {
  struct Part {
    std::string code, title, color;
    double s;
  };
  std::vector<Part> parts;
  parts.push_back({"working", "Working", kWorkingColor, b.working_s});
  std::vector<std::pair<Cause, double>> lost;
  for (const auto& [cause, s] : b.lost_s)
    if (cause != Cause::kIdle && s > 0) lost.emplace_back(cause, s);
  std::stable_sort(lost.begin(), lost.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  for (const auto& [cause, s] : lost) {
    const auto& info = cause_info(cause);
    parts.push_back(
        {std::string(info.code), "Lost: " + std::string(info.title), cause_color(cause), s});
  }
  const double idle_free = std::clamp(b.idle_free_s, 0.0, b.idle_s());
  parts.push_back({"idle", idle_free > 0 ? "Idle, held" : "Idle", cause_color(Cause::kIdle),
                   b.idle_s() - idle_free});
  parts.push_back({"idle_free", "Idle, free (nothing held it)", kFreeColor, idle_free});
  parts.push_back({"unknown", "Unknown (not judged)", "url(#hatch-unknown)", b.unknown_s});

  std::string h = "<h2>Where the GPU time went</h2>\n";
  if (b.observed_s <= 0) return h + "<p class=\"muted\">No GPU time observed.</p>\n";
  // The sentence names the parts there are: "41 % working, 59 % lost to problems".
  std::vector<std::string> said;
  const double problems = b.lost_total_s() - b.idle_s();
  for (const auto& [s, what] :
       {std::pair{b.working_s, "working"}, std::pair{problems, "lost to problems"},
        std::pair{b.idle_s() - idle_free, idle_free > 0 ? "held idle" : "idle"},
        std::pair{idle_free, "idle on free GPUs"}, std::pair{b.unknown_s, "not judged"}})
    if (s > 0 || said.empty()) {
      const std::string part = fmt::format("{} {}", percent(b.share(s)), what);
      said.push_back(said.empty() ? "<b>" + part + "</b>" : part);
    }
  h += fmt::format("<p>{} GPU{} observed for {} GPU-hours: {}.</p>\n", gpus, gpus == 1 ? "" : "s",
                   gpu_hours(b.observed_s), fmt::join(said, ", "));
  const double W = 1100, H = 34;
  h += fmt::format(
      "<figure class=\"timebar\" data-observed-gpu-s=\"{:.1f}\"><svg viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"Where the GPU time went\">"
      "<defs><pattern id=\"hatch-unknown\" width=\"6\" height=\"6\" "
      "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" "
      "height=\"6\" fill=\"#f6f8fa\"/><rect width=\"3\" height=\"6\" "
      "fill=\"{}\"/></pattern></defs>",
      b.observed_s, W, H, kUnknownColor);
  std::string legend = "<ul class=\"timebar-legend\">";
  double x = 0;
  for (const auto& p : parts) {
    if (p.s <= 0) continue;
    const double share = b.share(p.s), w = W * share;
    h += fmt::format(
        "<rect x=\"{:.2f}\" y=\"0\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" "
        "data-part=\"{}\" "
        "data-gpu-s=\"{:.1f}\" data-pct=\"{:.2f}\"><title>{}: {} GPU-h, {}</title></rect>",
        x, w, H, p.color, p.code, p.s, share * 100, esc(p.title), gpu_hours(p.s), percent(share));
    if (w >= 48)
      h += fmt::format(
          "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" "
          "class=\"barlabel{}\">{}</text>",
          x + w / 2, H / 2 + 4, p.code == "unknown" || p.code == "idle_free" ? " dark" : "",
          percent(share));
    x += w;
    legend += fmt::format(
        "<li><i style=\"background:{}\"{}></i>{} <span class=\"muted\">{} GPU-h · "
        "{}</span></li>",
        p.code == "unknown" ? kUnknownColor : p.color,
        p.code == "unknown" ? " class=\"hatch\"" : "", esc(p.title), gpu_hours(p.s),
        percent(share));
  }
  h += "</svg>" + legend + "</ul></figure>\n";
  return h;
}

std::string overlay_charts(const Recording& rec, const Diagnosis& d, double t_end) {
  if (rec.gpus.empty()) return "";
  auto any_has = [&](Field f) {
    return std::any_of(rec.gpus.begin(), rec.gpus.end(),
                       [&](const GpuSeries& s) { return s.has(f); });
  };
  const bool power = any_has(Field::kPower);
  const Field first = power ? Field::kPower : Field::kUtilGpu;
  if (!any_has(first)) return "";
  const bool sm = any_has(Field::kGpmSmUtil);
  auto lines_of = [&](Field f) {
    std::vector<Line> ls;
    for (size_t gi = 0; gi < rec.gpus.size(); ++gi) {
      const auto& s = rec.gpus[gi];
      Line l{gpu_label(s), kGpuColors[gi % kGpuColorCount], {}, {}, gi >= kGpuColorCount};
      if (const auto c = s.column(f)) downsample(s.time_s.view(), *c, l, 500);
      ls.push_back(std::move(l));
    }
    return ls;
  };
  const char* what = power ? "Power" : "GPU-Util (the input has no power)";
  std::string h =
      rec.gpus.size() == 1
          ? fmt::format("<h2>The GPU over time</h2><p class=\"muted\">{} over the run{}.</p>", what,
                        sm ? ", SM activity below" : "")
          : fmt::format(
                "<h2>Every GPU over time</h2><p class=\"muted\">{} of every GPU on one time "
                "axis{}: a GPU apart from the others is a straggler or an idle one; GPUs taking "
                "turns are a see-saw.</p>",
                what, sm ? ", SM activity below" : "");
  h += "\n<div class=\"overlay\">";
  std::vector<Line> ls = lines_of(first);
  std::string limit_label;
  if (power) {
    // The default limit, when every GPU that has one shares it.
    std::set<double> limits;
    for (const auto& g : d.gpus)
      if (g.power_limit_w) limits.insert(*g.power_limit_w);
    if (limits.size() == 1) {
      limit_label = fmt::format("default limit {:.0f} W", *limits.begin());
      ls.push_back({limit_label, "#8c959f", {0, t_end}, {*limits.begin(), *limits.begin()}, true});
    }
  }
  const std::string of = rec.gpus.size() == 1 ? " over the run" : " of every GPU";
  h += chart((power ? "Power" : "GPU-Util") + of, power ? "W" : "%", t_end, ls, {}, power ? 0 : 100,
             {1100, 230, false});
  if (sm)
    h += chart("SM activity" + of, "%", t_end, lines_of(Field::kGpmSmUtil), {}, 100,
               {1100, 150, false});
  // Past a node's worth of GPUs the legend folds away (a fleet snapshot has hundreds).
  const bool fold = rec.gpus.size() > 16;
  if (fold) h += fmt::format("<details><summary>The {} GPUs' colours</summary>", rec.gpus.size());
  h += "<ul class=\"gpu-legend\">";
  for (size_t gi = 0; gi < rec.gpus.size(); ++gi) {
    const auto& s = rec.gpus[gi];
    const double mean = mean_of(s.column(first));
    // Idle GPUs draw one flat line over each other: the legend says which they are.
    const bool idle = gi < d.gpus.size() && d.gpus[gi].verdict == Cause::kIdle;
    h += fmt::format("<li><i style=\"background:{}\"{}></i>{} <span class=\"muted\">{}</span></li>",
                     kGpuColors[gi % kGpuColorCount],
                     gi >= kGpuColorCount ? " class=\"dashed\"" : "", esc(gpu_label(s)),
                     std::isnan(mean) ? "no data"
                                      : fmt::format("mean {:.0f} {}{}", mean, power ? "W" : "%",
                                                    idle ? " · idle" : ""));
  }
  if (!limit_label.empty())
    h += fmt::format("<li><i class=\"limit\"></i>{}</li>", esc(limit_label));
  h += fold ? "</ul></details></div>\n" : "</ul></div>\n";
  return h;
}

}  // namespace gpudoctor::html
