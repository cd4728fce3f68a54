// The HTML report of a run (`gpudoctor report INPUT -o run.html`, also written by `run`): one
// self-contained file (inline CSS and SVG, a few lines of script, no network) with the verdict
// per GPU, the findings with evidence and fixes, charts over time per GPU (power against the
// enforced and default limits, util against SM activity, efficiency, clocks, temperature, PCIe)
// with phases and findings on the time axis, the host, step markers, the system and the command.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "analysis/baseline.hpp"
#include "analysis/diagnosis.hpp"
#include "core/recording.hpp"

namespace gpudoctor {

struct HtmlReportOptions {
  std::string title = "gpudoctor report";
  std::optional<BaselineComparison> baseline;
};

// The report's style sheet and HTML escaping, for other pages in the same style (fleet).
const char* html_report_css();
std::string html_escape(std::string_view s);

std::string render_html_report(const Recording& rec, const Diagnosis& d,
                               const HtmlReportOptions& options = {});

}  // namespace gpudoctor
