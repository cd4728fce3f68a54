#include "report/diagnosis_report.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>

#include <fmt/format.h>

#include "analysis/detectors/detector.hpp"
#include "core/duration.hpp"
#include "core/gpu_models.hpp"
#include "report/trace_report.hpp"

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

std::string gpu_line(const Diagnosis& d, const GpuDiagnosis& g) {
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
  if (const std::string role = gpu_role(d, g.index); !role.empty()) s += "  [" + role + "]";
  return s;
}

// "GPU 3: text" -> {3, "text"}; nullopt for a line about no one GPU.
std::optional<std::pair<unsigned, std::string>> split_gpu_line(const std::string& line) {
  if (line.rfind("GPU ", 0) != 0) return std::nullopt;
  size_t i = 4;
  unsigned n = 0;
  const size_t digits = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])))
    n = n * 10 + static_cast<unsigned>(line[i++] - '0');
  if (i == digits || i + 1 >= line.size() || line[i] != ':' || line[i + 1] != ' ')
    return std::nullopt;
  return std::make_pair(n, line.substr(i + 2));
}

// An evidence value as a cell: numbers as they are, lists joined, objects as key=value.
std::string evidence_cell(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array() || v.is_object()) {
    std::vector<std::string> parts;
    for (auto it = v.begin(); it != v.end(); ++it)
      parts.push_back(v.is_object() ? it.key() + "=" + evidence_cell(*it) : evidence_cell(*it));
    return fmt::format("{}", fmt::join(parts, ", "));
  }
  return v.dump();
}

std::string md_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

// Lost time beside "healthy" needs its reason: the reference it is measured against.
std::string healthy_loss_note(const Diagnosis& d) {
  for (const auto& g : d.gpus)
    if (g.verdict == Cause::kHealthy && g.lost_gpu_hours && *g.lost_gpu_hours >= 0.005)
      return fmt::format(
          "(lost time is every GPU's shortfall from {:.2f} efficiency, a well-fed GPU's: a healthy "
          "GPU below it loses some too)",
          d.reference_efficiency);
  return "";
}

// The limits of the input, grouped, those about a GPU left without a verdict first: they are why
// it has none.
std::vector<std::string> limitations_in_order(const Diagnosis& d) {
  std::vector<std::string> lines;
  std::vector<std::string> rest;
  for (const auto& l : d.limitations) {
    const auto split = split_gpu_line(l);
    const bool unjudged =
        split && std::any_of(d.gpus.begin(), d.gpus.end(), [&](const GpuDiagnosis& g) {
          return g.index == split->first && !g.verdict;
        });
    (unjudged ? lines : rest).push_back(l);
  }
  lines.insert(lines.end(), rest.begin(), rest.end());
  return group_gpu_lines(lines);
}

}  // namespace

nlohmann::ordered_json finding_json(const Finding& f) {
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
  return o;
}

nlohmann::ordered_json diagnosis_json(const Diagnosis& d, FindingsJson findings) {
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
    const std::string role = gpu_role(d, g.index);
    o["role"] = role.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(role);
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
  if (findings == FindingsJson::kIn)
    for (const auto& f : d.findings) j["findings"].push_back(finding_json(f));
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
  if (!d.trace.is_null()) j["trace"] = d.trace;
  return j;
}

std::string diagnosis_text(const Diagnosis& d, TextDetail detail) {
  const bool brief = detail == TextDetail::kBrief;
  std::string s;
  // A part of the input (--since, --until) is headed by its own length and where it starts.
  double first_s = d.duration_s, last_s = 0;
  for (const auto& g : d.gpus)
    if (!g.phases.empty())
      first_s = std::min(first_s, g.phases.front().start_s),
      last_s = std::max(last_s, g.phases.back().end_s);
  const std::string span = first_s >= 10 && last_s > first_s
                               ? fmt::format("{} from {}", dur(last_s - first_s), clock(first_s))
                               : dur(d.duration_s);
  if (d.gpus.empty() && d.trace.is_object())
    s += fmt::format("gpudoctor diagnosis of {} ({} rank{} traced)\n",
                     d.source.empty() ? "input" : d.source, d.trace["ranks"].size(),
                     d.trace["ranks"].size() == 1 ? "" : "s");
  else
    s += fmt::format("gpudoctor diagnosis of {} ({} GPU{}, {})\n",
                     d.source.empty() ? "input" : d.source, d.gpus.size(),
                     d.gpus.size() == 1 ? "" : "s", span);
  if (d.verdict)
    s += fmt::format("Verdict: {}: {}\n", upper(cause_code(*d.verdict)), d.headline);
  else
    s += fmt::format("Verdict: {}\n", d.headline);
  if (d.lost_gpu_hours)
    s += fmt::format("GPU time: {:.2f} GPU-h observed, {:.2f} lost\n", d.gpu_hours,
                     *d.lost_gpu_hours);
  if (const std::string why = healthy_loss_note(d); !why.empty()) s += why + "\n";
  if (!d.gpus.empty() || !d.trace.is_object()) s += "\n";  // a trace alone has no GPU lines
  for (const auto& g : d.gpus) s += gpu_line(d, g) + "\n";
  const auto shown = std::count_if(d.findings.begin(), d.findings.end(),
                                   [](const Finding& f) { return f.severity != Severity::kInfo; });
  std::vector<std::string> fixes_said;  // each fix once: a later finding names it no more
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
      // Every fix once (brief: the first); one already said for an earlier finding is named by
      // reference; what brief leaves out is counted, with where to read it.
      size_t listed = 0, repeated = 0, left = 0;
      for (const auto& fix : f.fixes) {
        if (std::find(fixes_said.begin(), fixes_said.end(), fix) != fixes_said.end()) {
          ++repeated;
          continue;
        }
        if (brief && listed >= 1) {
          ++left;
          continue;
        }
        s += fmt::format("    fix: {}\n", fix);
        fixes_said.push_back(fix);
        ++listed;
      }
      if (repeated > 0 && repeated == f.fixes.size())
        s += "    fix: as above\n";
      else if (repeated > 0)
        s += fmt::format("    (and {} fix{} given above)\n", repeated, repeated == 1 ? "" : "es");
      if (left > 0)
        s += fmt::format("    (+{} more fix{} in the full diagnosis)\n", left,
                         left == 1 ? "" : "es");
    }
    if (n < static_cast<int>(d.findings.size()))
      s += fmt::format("  (+{} more minor finding{}: --format json or markdown)\n",
                       d.findings.size() - static_cast<size_t>(n),
                       d.findings.size() - static_cast<size_t>(n) == 1 ? "" : "s");
  }
  if (brief) return s;
  s += trace_text(d.trace);
  bool any_phase = false;
  for (const auto& g : d.gpus)
    for (const auto& p : g.phases) any_phase = any_phase || p.kind != "steady";
  if (any_phase) {
    s += "\nPhases\n";
    std::vector<std::string> lines;
    for (const auto& g : d.gpus) {
      std::vector<std::string> parts;
      for (const auto& p : g.phases)
        parts.push_back(fmt::format("{} {}-{}", p.kind, clock(p.start_s), clock(p.end_s)));
      lines.push_back(fmt::format("GPU {}: {}", g.index, fmt::join(parts, ", ")));
    }
    for (const auto& l : group_gpu_lines(lines)) s += "  " + l + "\n";
  }
  if (!d.data_quality.empty()) {
    s += "\nData quality\n";
    std::vector<std::string> lines;
    for (const auto& q : d.data_quality)
      lines.push_back(fmt::format("GPU {}: {}: {}", q.gpu, q.kind, q.detail));
    for (const auto& l : group_gpu_lines(lines)) s += "  - " + l + "\n";
  }
  if (!d.limitations.empty()) {
    s += "\nLimits of this input\n";
    for (const auto& l : limitations_in_order(d)) s += "  - " + l + "\n";
  }
  if (!d.input_notes.empty()) {
    const auto notes = group_gpu_lines(d.input_notes);
    constexpr size_t kFirstNotes = 6;
    const size_t show =
        detail == TextDetail::kVerbose ? notes.size() : std::min(notes.size(), kFirstNotes);
    s += "\nRead as\n";
    for (size_t i = 0; i < show; ++i) s += "  - " + notes[i] + "\n";
    if (show < notes.size()) s += fmt::format("  (+{} more: --verbose)\n", notes.size() - show);
  }
  return s;
}

std::string gpu_role(const Diagnosis& d, unsigned gpu_index) {
  for (const auto& f : d.findings) {
    const auto it = f.evidence.find("straggler_gpu");
    if (it == f.evidence.end() || !it->is_number()) continue;
    const auto straggler = it->get<unsigned>();
    if (gpu_index == straggler) return "straggler";
    if (std::find(f.gpus.begin(), f.gpus.end(), gpu_index) != f.gpus.end())
      return fmt::format("waits for GPU {}", straggler);
  }
  return "";
}

std::vector<std::string> group_gpu_lines(const std::vector<std::string>& lines) {
  struct Group {
    std::string text;
    std::vector<unsigned> gpus;
    bool about_gpus = true;
  };
  std::vector<Group> groups;
  for (const auto& l : lines) {
    const auto split = split_gpu_line(l);
    if (!split) {
      groups.push_back({l, {}, false});
      continue;
    }
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const Group& x) { return x.about_gpus && x.text == split->second; });
    if (g == groups.end()) {
      groups.push_back({split->second, {split->first}, true});
    } else if (std::find(g->gpus.begin(), g->gpus.end(), split->first) == g->gpus.end()) {
      g->gpus.push_back(split->first);
    }
  }
  std::vector<std::string> out;
  for (auto& g : groups) {
    if (!g.about_gpus) {
      out.push_back(g.text);
      continue;
    }
    std::sort(g.gpus.begin(), g.gpus.end());
    out.push_back(diag::gpu_list(g.gpus) + ": " + g.text);
  }
  return out;
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
  if (const std::string why = healthy_loss_note(d); !why.empty()) s += why + "\n\n";
  s += "| GPU | name | verdict | role | efficiency | mean power | power limit | util | SM activity "
       "| lost GPU-h |\n";
  s += "|---:|---|---|---|---:|---:|---:|---:|---:|---:|\n";
  auto cell = [](double v, const char* f) {
    return std::isnan(v) ? std::string("-") : fmt::format(fmt::runtime(f), v);
  };
  for (const auto& g : d.gpus) {
    const std::string role = gpu_role(d, g.index);
    s += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", g.index, g.name,
        g.verdict ? std::string(cause_code(*g.verdict)) : "cannot tell",
        role.empty() ? std::string("-") : role, cell(g.efficiency.value_or(std::nan("")), "{:.2f}"),
        cell(num(g.metrics, "mean_power_w"), "{:.0f} W"),
        g.power_limit_w ? fmt::format("{:.0f} W ({})", *g.power_limit_w, g.power_limit_source)
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
      if (!f.evidence.empty()) {
        s += "\nEvidence:\n\n| evidence | value |\n|---|---|\n";
        for (auto it = f.evidence.begin(); it != f.evidence.end(); ++it)
          s += fmt::format("| {} | {} |\n", md_cell(it.key()), md_cell(evidence_cell(*it)));
      }
    }
  }
  // The trace block as the terminal shows it, in a code block (kernel names hold '|' and '<').
  if (const std::string trace = trace_text(d.trace); !trace.empty())
    s += "\n## Profiler trace\n\n```\n" + trace.substr(trace.find('\n', 1) + 1) + "```\n";
  if (!d.data_quality.empty()) {
    s += "\n## Data quality\n\n";
    std::vector<std::string> lines;
    for (const auto& q : d.data_quality)
      lines.push_back(fmt::format("GPU {}: {}: {}", q.gpu, q.kind, q.detail));
    for (const auto& l : group_gpu_lines(lines)) s += "- " + l + "\n";
  }
  if (!d.limitations.empty()) {
    s += "\n## Limits of this input\n\n";
    for (const auto& l : limitations_in_order(d)) s += "- " + l + "\n";
  }
  return s;
}

}  // namespace gpudoctor
