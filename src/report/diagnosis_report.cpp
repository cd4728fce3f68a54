#include "report/diagnosis_report.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>

#include <fmt/format.h>

#include "core/duration.hpp"
#include "core/gpu_models.hpp"

namespace gpudoctor {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = c == '_' ? ' ' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string clock(double s) {
  const auto t = static_cast<long long>(std::max(0.0, s));
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

std::string dur(double s) {
  return human_duration(s);
}

double num(const nlohmann::ordered_json& j, const char* k) {
  const auto it = j.find(k);
  return it != j.end() && it->is_number() ? it->get<double>() : std::nan("");
}

nlohmann::ordered_json opt(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

std::string gpu_line(const GpuDiagnosis& g) {
  std::string s = fmt::format("GPU {:<2} {:<24} ", g.index,
                              gpu_name_for_column(g.name.empty() ? "?" : g.name, 24));
  s += fmt::format("{:<18}", g.verdict ? std::string(cause_code(*g.verdict)) : "cannot tell");
  if (g.efficiency)
    s += fmt::format(" efficiency {:.2f}", *g.efficiency);
  else
    s += " efficiency   - ";
  const double pw = num(g.metrics, "mean_power_w");
  if (!std::isnan(pw) && g.power_limit_w)
    s += fmt::format("  power {:.0f} W of {:.0f} W", pw, *g.power_limit_w);
  const double u = num(g.metrics, "mean_util_pct");
  if (!std::isnan(u)) s += fmt::format("  util {:.0f} %", u);
  const double sm = num(g.metrics, "mean_sm_pct");
  if (!std::isnan(sm)) s += fmt::format("  SM {:.0f} %", sm);
  if (g.lost_gpu_hours && *g.lost_gpu_hours >= 0.005)
    s += fmt::format("  lost {:.2f} GPU-h", *g.lost_gpu_hours);
  return s;
}

}  // namespace

nlohmann::ordered_json diagnosis_json(const Diagnosis& d) {
  nlohmann::ordered_json j;
  j["schema_version"] = kDiagnosisSchemaVersion;
  j["verdict"] = d.verdict ? nlohmann::ordered_json(std::string(cause_code(*d.verdict)))
                           : nlohmann::ordered_json(nullptr);
  j["headline"] = d.headline;
  j["gpu_hours"] = std::round(d.gpu_hours * 1000) / 1000;
  j["lost_gpu_hours"] = opt(d.lost_gpu_hours);
  j["source"] = d.source;
  j["start"] = d.start_unix_ms > 0 ? nlohmann::ordered_json(iso8601_utc(d.start_unix_ms))
                                   : nlohmann::ordered_json(nullptr);
  j["duration_s"] = std::round(d.duration_s * 10) / 10;
  j["gpus"] = nlohmann::ordered_json::array();
  for (const auto& g : d.gpus) {
    nlohmann::ordered_json o;
    o["index"] = g.index;
    o["name"] = g.name;
    o["uuid"] = g.uuid;
    o["verdict"] = g.verdict ? nlohmann::ordered_json(std::string(cause_code(*g.verdict)))
                             : nlohmann::ordered_json(nullptr);
    o["confidence"] = g.confidence;
    o["efficiency"] = opt(g.efficiency);
    o["power_limit_w"] = opt(g.power_limit_w);
    o["power_limit_source"] = g.power_limit_source.empty()
                                  ? nlohmann::ordered_json(nullptr)
                                  : nlohmann::ordered_json(g.power_limit_source);
    o["power_limit_confidence"] = opt(g.power_limit_confidence);
    o["enforced_limit_w"] = opt(g.enforced_limit_w);
    o["lost_gpu_hours"] = opt(g.lost_gpu_hours);
    o["phases"] = nlohmann::ordered_json::array();
    for (const auto& p : g.phases)
      o["phases"].push_back({{"kind", p.kind},
                             {"start_s", std::round(p.start_s * 10) / 10},
                             {"end_s", std::round(p.end_s * 10) / 10}});
    o["metrics"] = g.metrics;
    j["gpus"].push_back(std::move(o));
  }
  j["findings"] = nlohmann::ordered_json::array();
  for (const auto& f : d.findings) {
    const auto& info = cause_info(f.cause);
    nlohmann::ordered_json o;
    o["cause"] = std::string(info.code);
    o["title"] = std::string(info.title);
    o["gpus"] = f.gpus;
    o["severity"] = std::string(severity_code(f.severity));
    o["confidence"] = f.confidence;
    o["start_s"] = std::round(f.start_s * 10) / 10;
    o["end_s"] = std::round(f.end_s * 10) / 10;
    o["summary"] = f.summary;
    o["evidence"] = f.evidence;
    o["fixes"] = f.fixes;
    o["lost_gpu_hours"] = opt(f.lost_gpu_hours);
    o["share"] = f.share;
    o["alternatives"] = nlohmann::ordered_json::array();
    for (const auto& a : f.alternatives)
      o["alternatives"].push_back({{"cause", std::string(cause_code(a.cause))},
                                   {"confidence", a.confidence},
                                   {"tell_apart", a.tell_apart}});
    if (!f.owners.empty()) o["owners"] = f.owners;
    j["findings"].push_back(std::move(o));
  }
  j["limitations"] = d.limitations;
  j["input_notes"] = d.input_notes;
  j["workload"] = {
      {"kind", d.workload.kind},
      {"evidence", d.workload.evidence.empty() ? nlohmann::ordered_json(nullptr)
                                               : nlohmann::ordered_json(d.workload.evidence)}};
  j["data_quality"] = nlohmann::ordered_json::array();
  for (const auto& q : d.data_quality)
    j["data_quality"].push_back({{"kind", q.kind},
                                 {"gpu", q.gpu},
                                 {"start_s", std::round(q.start_s * 10) / 10},
                                 {"end_s", std::round(q.end_s * 10) / 10},
                                 {"samples", q.samples},
                                 {"detail", q.detail}});
  return j;
}

std::string diagnosis_text(const Diagnosis& d, bool brief) {
  std::string s;
  s += fmt::format("gpudoctor diagnosis of {} ({} GPU{}, {})\n",
                   d.source.empty() ? "input" : d.source, d.gpus.size(),
                   d.gpus.size() == 1 ? "" : "s", dur(d.duration_s));
  if (d.verdict)
    s += fmt::format("Verdict: {}: {}\n", upper(cause_code(*d.verdict)), d.headline);
  else
    s += fmt::format("Verdict: {}\n", d.headline);
  if (d.lost_gpu_hours)
    s += fmt::format("GPU time: {:.2f} GPU-h observed, {:.2f} lost\n", d.gpu_hours,
                     *d.lost_gpu_hours);
  s += "\n";
  for (const auto& g : d.gpus) s += gpu_line(g) + "\n";
  const auto shown = std::count_if(d.findings.begin(), d.findings.end(),
                                   [](const Finding& f) { return f.severity != Severity::kInfo; });
  if (!d.findings.empty()) {
    s += "\nFindings\n";
    int n = 0;
    for (const auto& f : d.findings) {
      if (f.severity == Severity::kInfo && shown > 0 && n >= 5) break;
      ++n;
      s += fmt::format("  [{}] {} {}-{}, {:.0f} % of the GPU time, confidence {:.2f}",
                       severity_code(f.severity), cause_code(f.cause), clock(f.start_s),
                       clock(f.end_s), 100 * f.share, f.confidence);
      if (f.lost_gpu_hours) s += fmt::format(", lost {:.2f} GPU-h", *f.lost_gpu_hours);
      s += "\n    " + f.summary + "\n";
      if (!f.owners.empty()) s += fmt::format("    held by {}\n", fmt::join(f.owners, ", "));
      for (const auto& a : f.alternatives)
        s += fmt::format("    or {} (confidence {:.2f}): {}\n", cause_code(a.cause), a.confidence,
                         a.tell_apart);
      // The first fixes; for an unknown workload the first two of each kind (both are listed).
      size_t training = 0, serving = 0, shown = 0;
      for (const auto& fix : f.fixes) {
        if (shown >= (brief ? 1u : 4u)) break;
        const bool is_serving = fix.rfind("Serving: ", 0) == 0;
        const bool is_training = fix.rfind("Training: ", 0) == 0;
        if ((is_serving && serving++ >= 2) || (is_training && training++ >= 2)) continue;
        if (!is_serving && !is_training && shown >= 3) break;
        s += fmt::format("    fix: {}\n", fix);
        ++shown;
      }
    }
  }
  if (brief) return s;
  bool any_phase = false;
  for (const auto& g : d.gpus)
    for (const auto& p : g.phases) any_phase = any_phase || p.kind != "steady";
  if (any_phase) {
    s += "\nPhases\n";
    for (const auto& g : d.gpus) {
      std::vector<std::string> parts;
      for (const auto& p : g.phases)
        parts.push_back(fmt::format("{} {}-{}", p.kind, clock(p.start_s), clock(p.end_s)));
      s += fmt::format("  GPU {}: {}\n", g.index, fmt::join(parts, ", "));
    }
  }
  if (!d.data_quality.empty()) {
    s += "\nData quality\n";
    for (const auto& q : d.data_quality)
      s += fmt::format("  - GPU {} {}: {}\n", q.gpu, q.kind, q.detail);
  }
  if (!d.limitations.empty()) {
    s += "\nLimits of this input\n";
    for (const auto& l : d.limitations) s += "  - " + l + "\n";
  }
  if (!d.input_notes.empty()) {
    s += "\nRead as\n";
    for (const auto& n : d.input_notes) s += "  - " + n + "\n";
  }
  return s;
}

std::string diagnosis_markdown(const Diagnosis& d) {
  std::string s = "# gpudoctor diagnosis\n\n";
  s += fmt::format("Input: `{}`, {} GPU{}, {}.\n\n", d.source, d.gpus.size(),
                   d.gpus.size() == 1 ? "" : "s", dur(d.duration_s));
  if (d.verdict) {
    const auto& info = cause_info(*d.verdict);
    s += fmt::format("**Verdict: {}** ({}): {}\n\n", info.title, info.code, d.headline);
  } else {
    s += "**Verdict: cannot tell from this input** (see the limitations).\n\n";
  }
  s += "| GPU | name | verdict | efficiency | mean power | power limit | util | SM activity | lost "
       "GPU-h |\n";
  s += "|---:|---|---|---:|---:|---:|---:|---:|---:|\n";
  auto cell = [](double v, const char* f) {
    return std::isnan(v) ? std::string("-") : fmt::format(fmt::runtime(f), v);
  };
  for (const auto& g : d.gpus) {
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", g.index, g.name,
                     g.verdict ? std::string(cause_code(*g.verdict)) : "cannot tell",
                     cell(g.efficiency.value_or(std::nan("")), "{:.2f}"),
                     cell(num(g.metrics, "mean_power_w"), "{:.0f} W"),
                     g.power_limit_w
                         ? fmt::format("{:.0f} W ({})", *g.power_limit_w, g.power_limit_source)
                         : std::string("-"),
                     cell(num(g.metrics, "mean_util_pct"), "{:.0f} %"),
                     cell(num(g.metrics, "mean_sm_pct"), "{:.0f} %"),
                     cell(g.lost_gpu_hours.value_or(std::nan("")), "{:.2f}"));
  }
  if (!d.findings.empty()) {
    s += "\n## Findings\n";
    for (const auto& f : d.findings) {
      const auto& info = cause_info(f.cause);
      s += fmt::format("\n### {} ({}, confidence {:.2f})\n\n{}.\n\n", info.title,
                       severity_code(f.severity), f.confidence, f.summary);
      s += fmt::format("From {} to {}", clock(f.start_s), clock(f.end_s));
      if (f.lost_gpu_hours) s += fmt::format("; about {:.2f} GPU-hours lost", *f.lost_gpu_hours);
      if (!f.owners.empty()) s += fmt::format("; held by {}", fmt::join(f.owners, ", "));
      s += ".\n\n";
      for (const auto& a : f.alternatives)
        s += fmt::format("Or **{}** (confidence {:.2f}): {}\n\n", cause_info(a.cause).title,
                         a.confidence, a.tell_apart);
      if (!f.fixes.empty()) {
        s += "What to change:\n\n";
        for (const auto& fix : f.fixes) s += fmt::format("- {}\n", fix);
      }
      s += fmt::format("\nEvidence: `{}`\n", f.evidence.dump());
    }
  }
  if (!d.data_quality.empty()) {
    s += "\n## Data quality\n\n";
    for (const auto& q : d.data_quality)
      s += fmt::format("- GPU {} {}: {}\n", q.gpu, q.kind, q.detail);
  }
  if (!d.limitations.empty()) {
    s += "\n## Limits of this input\n\n";
    for (const auto& l : d.limitations) s += "- " + l + "\n";
  }
  return s;
}

}  // namespace gpudoctor
