// The HTML report opens with where the GPU time went (one bar whose numbers are
// gpu_time_breakdown's) and every GPU's power overlaid on one chart (SM activity below where the
// input has it); the per-GPU panels follow.
#include <map>
#include <regex>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analysis/diagnosis.hpp"
#include "analysis/time_breakdown.hpp"
#include "core/gpu_models.hpp"
#include "report/html_report.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor {
namespace {

Recording simulate(const std::string& spec_text) {
  const auto spec = sim::parse_sim_spec(spec_text);
  EXPECT_TRUE(spec.ok());
  const auto model = gpu_model_by_key(spec->scenario.model);
  EXPECT_TRUE(model.has_value());
  return sim::simulate_recording(spec.value(), *model);
}

struct Segment {
  double gpu_s, pct;
};

// The bar's segments by data-part, in the page's order.
std::vector<std::pair<std::string, Segment>> bar_segments(const std::string& html) {
  std::vector<std::pair<std::string, Segment>> out;
  static const std::regex re(
      R"re(data-part="([a-z_]+)" data-gpu-s="([0-9.]+)" data-pct="([0-9.]+)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back({(*it)[1].str(), {std::stod((*it)[2].str()), std::stod((*it)[3].str())}});
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

// The chart titled `title`: from its <figure> to its </figure>.
std::string figure(const std::string& html, const std::string& title) {
  const size_t at = html.find("aria-label=\"" + title + "\"");
  if (at == std::string::npos) return "";
  const size_t start = html.rfind("<figure", at);
  return html.substr(start, html.find("</figure>", at) - start);
}

TEST(HtmlReport, BarIsTheTimeBreakdown) {
  for (const std::string spec :
       {"mixed,duration=4m,interval=1s", "straggler,duration=5m,interval=1s",
        "seesaw,duration=5m,interval=1s", "healthy,duration=3m,interval=1s"}) {
    SCOPED_TRACE(spec);
    const Recording rec = simulate(spec);
    const Diagnosis d = diagnose(rec);
    const GpuTimeBreakdown b = gpu_time_breakdown(d);
    const std::string html = render_html_report(rec, d);

    std::map<std::string, double> want = {{"working", b.working_s}, {"unknown", b.unknown_s}};
    for (const auto& [cause, s] : b.lost_s)
      if (cause != Cause::kIdle) want[std::string(cause_code(cause))] = s;
    want["idle"] = b.idle_s() - b.idle_free_s;  // held, or not said
    want["idle_free"] = b.idle_free_s;
    const auto segments = bar_segments(html);
    ASSERT_FALSE(segments.empty());
    EXPECT_EQ(segments.front().first, "working");
    double pct = 0;
    std::map<std::string, double> got;
    for (const auto& [part, seg] : segments) {
      got[part] = seg.gpu_s;
      pct += seg.pct;
      ASSERT_TRUE(want.count(part)) << part;
      EXPECT_NEAR(seg.gpu_s, want[part], 0.051) << part;
      EXPECT_NEAR(seg.pct, 100 * b.share(want[part]), 0.0051) << part;
    }
    for (const auto& [part, s] : want) {
      if (s >= 0.05) {
        EXPECT_TRUE(got.count(part)) << part << " missing from the bar";
      }
    }
    EXPECT_NEAR(pct, 100, 0.05);
    EXPECT_NE(html.find(fmt::format("data-observed-gpu-s=\"{:.1f}\"", b.observed_s)),
              std::string::npos);
  }
}

// gpudoctor demo's mixed node: four GPUs work, two are held idle, two are free.
TEST(HtmlReport, MixedNodeShowsItsHeldAndFreeIdleGpus) {
  const Recording rec = simulate("mixed,duration=4m,interval=1s");
  const Diagnosis d = diagnose(rec);
  const std::string html = render_html_report(rec, d);
  std::map<std::string, double> pct;
  for (const auto& [part, seg] : bar_segments(html)) pct[part] = seg.pct;
  EXPECT_NEAR(pct["idle"], 25, 3);
  EXPECT_NEAR(pct["idle_free"], 25, 3);
  EXPECT_NEAR(pct["working"], 50, 5);
  EXPECT_NE(html.find(">Idle, held <span class=\"muted\">"), std::string::npos);  // the legend
  EXPECT_NE(html.find(">Idle, free (nothing held it) <span"), std::string::npos);
  EXPECT_NE(html.find("GPU 4 <span class=\"muted\">mean 70 W · idle"), std::string::npos);
}

TEST(HtmlReport, OpensWithTheBarThenEveryGpuOverlaid) {
  const Recording rec = simulate("straggler,duration=5m,interval=1s");  // 4 H100s: GPM SM activity
  const Diagnosis d = diagnose(rec);
  const std::string html = render_html_report(rec, d);
  const size_t bar = html.find("<h2>Where the GPU time went</h2>");
  const size_t overlay = html.find("<h2>Every GPU over time</h2>");
  const size_t table = html.find("<h2>GPUs</h2>");
  const size_t panels = html.find("<h2>Each GPU over time</h2>");
  ASSERT_NE(bar, std::string::npos);
  ASSERT_NE(overlay, std::string::npos);
  EXPECT_LT(html.find("Verdict:"), bar);
  EXPECT_LT(bar, overlay);
  EXPECT_LT(overlay, table);
  EXPECT_LT(table, panels);

  const std::string power = figure(html, "Power of every GPU");
  ASSERT_FALSE(power.empty());
  EXPECT_EQ(count(power, "<polyline"), rec.gpus.size() + 1);  // one per GPU and the default limit
  for (const auto& g : rec.gpus)
    EXPECT_NE(power.find(fmt::format("<title>GPU {}</title>", g.info.index)), std::string::npos);
  EXPECT_NE(power.find("default limit 700 W"), std::string::npos);
  const std::string sm = figure(html, "SM activity of every GPU");
  ASSERT_FALSE(sm.empty());
  EXPECT_EQ(count(sm, "<polyline"), rec.gpus.size());
  // Both on one time axis: the same width, so the same x for the same time.
  EXPECT_NE(power.find("viewBox=\"0 0 1100 "), std::string::npos);
  EXPECT_NE(sm.find("viewBox=\"0 0 1100 "), std::string::npos);
  // A legend entry per GPU, in its colour.
  EXPECT_EQ(count(html, "<ul class=\"gpu-legend\">"), 1u);
  for (const auto& g : rec.gpus)
    EXPECT_NE(html.find(fmt::format("></i>GPU {} <span", g.info.index)), std::string::npos);
}

TEST(HtmlReport, WithoutPowerTheOverlayIsGpuUtilAndWithoutSmThereIsNoSmChart) {
  Recording rec = simulate("seesaw,duration=3m,interval=1s");  // A100s: no GPM
  for (auto& g : rec.gpus) g.columns[index_of(Field::kPower)].reset();
  const std::string html = render_html_report(rec, diagnose(rec));
  EXPECT_TRUE(figure(html, "Power of every GPU").empty());
  EXPECT_FALSE(figure(html, "GPU-Util of every GPU").empty());
  EXPECT_TRUE(figure(html, "SM activity of every GPU").empty());
}

}  // namespace
}  // namespace gpudoctor
