// The HTML report's drawing (report/html_report.cpp's helpers, not a public interface): inline SVG
// line charts over time, the run's GPU time as one stacked bar, and every GPU's power (and SM
// activity) overlaid on one time axis.
#pragma once

#include <string>
#include <vector>

#include "analysis/diagnosis.hpp"
#include "analysis/time_breakdown.hpp"
#include "core/recording.hpp"

namespace gpudoctor::html {

std::string num(double v, int digits = 1);  // "-" for NaN

struct Line {
  std::string label, color;
  std::vector<double> t, v;
  bool dashed = false;
};

struct Shade {
  double t0, t1;
  std::string color, label;
};

// Mean per bucket, so a day of 100 ms samples stays a few hundred points.
void downsample(ColumnView t, ColumnView v, Line& out, size_t max_points = 600);

struct ChartSize {
  double width = 560, height = 160;
  bool legend = true;  // the lines' labels inside the SVG (off when the page lists them)
};

// One <figure class="chart"> with an SVG of the lines over 0..t_end; y from 0 to at least
// y_min_max. Its svg has data-points (the points drawn), which the page's self-check reads.
std::string chart(const std::string& title, const std::string& unit, double t_end,
                  const std::vector<Line>& lines, const std::vector<Shade>& shades,
                  double y_min_max = 0, const ChartSize& size = {});
void reset_chart_ids();  // ids count from 1 in each page

const char* cause_color(Cause c);
inline constexpr const char* kWorkingColor = "#2da44e";
inline constexpr const char* kUnknownColor = "#d0d7de";
inline constexpr const char* kFreeColor = "#c4cbd2";

// "Where the GPU time went": the breakdown as one horizontal stacked bar (working, lost by cause,
// idle, free, unknown) with a legend of each part's GPU-hours and percent. Each segment carries
// data-part (working, a cause's code other than idle, idle: held or not said, idle_free,
// unknown), data-gpu-s and data-pct for the tests.
std::string time_bar(const GpuTimeBreakdown& b, size_t gpus);

// Every GPU's power on one chart (a colour per GPU, a legend below), and, where any GPU has it,
// SM activity on a second chart with the same time axis; GPU-Util when no GPU has power.
std::string overlay_charts(const Recording& rec, const Diagnosis& d, double t_end);

}  // namespace gpudoctor::html
