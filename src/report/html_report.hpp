// The HTML report of a run (`gpudoctor report INPUT -o run.html`, also written by `run`): one
// self-contained file (inline CSS and SVG, a few lines of script, no network) with the verdict
// per GPU, the findings with evidence and fixes, charts over time per GPU (power against the
// enforced and default limits, util against SM activity, efficiency, clocks, temperature, PCIe)
// with phases and findings on the time axis, the host, step markers, the system and the command.
#pragma once

#include <optional>
#include <string>

#include "analysis/baseline.hpp"
#include "analysis/diagnosis.hpp"
#include "core/recording.hpp"

namespace gpudoctor {

struct HtmlReportOptions {
  std::string title = "gpudoctor report";
  std::optional<BaselineComparison> baseline;
};

std::string render_html_report(const Recording& rec, const Diagnosis& d,
                               const HtmlReportOptions& options = {});

}  // namespace gpudoctor
