#include "exporter/exposition.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "core/clock_reasons.hpp"
#include "core/fields.hpp"
#include "core/utf8.hpp"

namespace gpudoctor {
namespace {

// gpudoctor's own families. The renderer and metric_families() both read this table.
enum Own : size_t {
  kGpuInfo,
  kGpuLost,
  kPowerRatio,
  kEfficiency,
  kBusyIdle,
  kClockReason,
  kPcieDegraded,
  kMemoryChurn,
  kComputeProcesses,
  kProcessInfo,
  kVerdict,
  kFinding,
  kOwnerInfo,
  kLostSeconds,
  kGpuSeconds,
  kScrapeSuccess,
  kScrapeDuration,
  kBuildInfo,
  kOwnCount,
};

struct OwnFamily {
  std::string_view name, type, help, labels;
  bool per_gpu;
};

// clang-format off
constexpr OwnFamily kOwn[kOwnCount] = {
    {"gpudoctor_gpu_info", "gauge",
     "GPU identity: model name, architecture and driver version (always 1).",
     "model_name, architecture, driver_version", true},
    {"gpudoctor_gpu_lost", "gauge",
     "1 when the GPU fell off the bus (GPU_IS_LOST), else 0.", "", true},
    {"gpudoctor_power_ratio", "gauge",
     "Mean power over the last sampling interval as a share of the default power limit.", "", true},
    {"gpudoctor_efficiency_ratio", "gauge",
     "Efficiency score: power / default limit x SM activity / 100 (power / limit alone where SM "
     "activity is not measured). Below 0.6 the GPU is probably loafing.", "", true},
    {"gpudoctor_busy_idle", "gauge",
     "1 when the GPU is busy but idle: GPU-Util at or above 90 % while power is below 60 % of the "
     "default limit.", "", true},
    {"gpudoctor_clock_event_reason", "gauge",
     "1 when this clock event (throttle) reason is active, else 0.", "reason", true},
    {"gpudoctor_pcie_link_degraded", "gauge",
     "1 when the PCIe link is narrower than its maximum, or slower under load, else 0.", "", true},
    {"gpudoctor_memory_churn_ratio", "gauge",
     "Largest change of device memory used per second over the last 15 s, as a share of the "
     "total.", "", true},
    {"gpudoctor_compute_processes", "gauge",
     "Compute processes running on the GPU.", "", true},
    {"gpudoctor_process_info", "gauge",
     "A compute process on the GPU (always 1; only with --expose-process-names).",
     "pid, process_name", true},
    {"gpudoctor_verdict", "gauge",
     "The live diagnosis' verdict for the GPU over the window (always 1).", "cause", true},
    {"gpudoctor_finding", "gauge",
     "A finding of the live diagnosis over the window that covers the GPU (always 1).",
     "cause, severity", true},
    {"gpudoctor_gpu_owner_info", "gauge",
     "Who holds the GPU: one series per GPU and owner (always 1); join on gpu, UUID, Hostname. "
     "Labels per --owner-labels (docs/owners.md).",
     "owner_kind, job, step, pod, namespace, container, user", true},
    {"gpudoctor_lost_gpu_seconds_total", "counter",
     "GPU seconds the live diagnosis found lost, by cause (idle: allocated GPUs only; each "
     "sample counted once).", "cause", true},
    {"gpudoctor_gpu_seconds_total", "counter",
     "GPU seconds sampled, by state: working, lost (to a cause), idle_allocated, free.", "state",
     true},
    {"gpudoctor_scrape_success", "gauge",
     "1 when the last collection from this source succeeded, else 0.", "source", false},
    {"gpudoctor_scrape_duration_seconds", "gauge",
     "How long the last collection from this source took, in seconds.", "source", false},
    {"gpudoctor_build_info", "gauge",
     "gpudoctor's version (always 1).", "version", false},
};
// clang-format on

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// What dcgm-exporter's value of a field is measured in, for its HELP text.
std::string dcgm_unit_words(const FieldInfo& fi) {
  if (fi.dcgm_scale == 100) return "ratio 0-1";
  if (fi.unit == Unit::kMebibytePerSecond) {
    if (fi.dcgm_scale == 1000.0 / 1024) return "in MB/s";  // DCGM's NVLink rate: KiB/s / 1000
    return fi.dcgm_scale * 1024 > 0.5 ? "in KB/s" : "in bytes/s";
  }
  switch (fi.unit) {
    case Unit::kPercent:
      return "in %";
    case Unit::kWatt:
      return "in W";
    case Unit::kMillijoule:
      return "in mJ";
    case Unit::kCelsius:
      return "in C";
    case Unit::kMegahertz:
      return "in MHz";
    case Unit::kMebibyte:
      return "in MiB";
    case Unit::kPstateNumber:
      return "0 = P0";
    case Unit::kBitmask:
      return "NVML bitmask";
    case Unit::kGeneration:
      return "generation";
    case Unit::kLanes:
      return "lanes";
    case Unit::kCount:
      return "count";
    case Unit::kCode:
      return "code";
    case Unit::kMebibytePerSecond:
      break;
  }
  return "";
}

// dcgm-exporter's default DCGM_FI_DEV_FB_FREE, which is no catalogue field of its own:
// nvmlDeviceGetMemoryInfo's total minus used (its v1 struct: total = free + used).
struct DerivedDcgmFamily {
  const char* name;
  const char* help;
};
constexpr DerivedDcgmFamily kFbFree = {
    "DCGM_FI_DEV_FB_FREE",
    "Device memory free: nvmlDeviceGetMemoryInfo's total minus used (in MiB; DCGM field 251)."};

std::optional<double> fb_free_mib(const DeviceSample& d) {
  const Reading& total = d[Field::kMemTotal];
  const Reading& used = d[Field::kMemUsed];
  if (d.lost || !total.has_value() || !used.has_value()) return std::nullopt;
  return std::max(0.0, total.value() - used.value());
}

// Labels dcgm-exporter adds to one of its families from the value itself: the XID's number as
// err_code (dcgm-exporter's gpu_collector.go; its err_msg, a text per XID from NVIDIA's XID
// catalogue, is not exported: the number is the stable key).
struct ValueLabel {
  Field field;
  const char* label;
};
constexpr ValueLabel kDcgmValueLabels[] = {{Field::kXid, "err_code"}};

const char* dcgm_value_label(Field f) {
  for (const auto& v : kDcgmValueLabels)
    if (v.field == f) return v.label;
  return nullptr;
}

struct FieldFamily {
  std::string name, type, help;
  double factor = 1;  // exported value = ours * factor
  bool dcgm = false;
  const char* value_label = nullptr;  // a label carrying the value, as an integer
};

FieldFamily field_family(const FieldInfo& fi, bool dcgm_names) {
  FieldFamily f;
  f.type = is_counter(fi) ? "counter" : "gauge";
  if (dcgm_names && !fi.dcgm_name.empty()) {
    f.name = fi.dcgm_name;
    f.dcgm = true;
    f.factor = 1.0 / fi.dcgm_scale;
    f.help = fmt::format("{} ({}; DCGM field {}).", fi.meaning, dcgm_unit_words(fi), fi.dcgm_id);
    f.value_label = dcgm_value_label(fi.field);
    return f;
  }
  f.name = fi.prom_name;
  f.factor = 1.0 / prom_scale(fi);
  f.help = fi.prom_help;
  return f;
}

std::string escape_help(std::string_view v, bool openmetrics) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && openmetrics)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

// Writes families; a family's HELP and TYPE go out with its first sample, so a family without
// samples leaves no trace.
class Writer {
 public:
  Writer(std::string& out, ExpositionFormat f)
      : out_(out), om_(f == ExpositionFormat::kOpenMetrics) {}

  void family(std::string_view name, std::string_view type, std::string_view help) {
    name_ = name;
    type_ = type;
    help_ = help;
    header_done_ = false;
  }

  // labels: already rendered `a="b",c="d"` (may be empty); extra: more of the same.
  void sample(std::string_view labels, std::string_view extra, double value) {
    if (!header_done_) header();
    out_ += sample_name_;
    if (!labels.empty() || !extra.empty()) {
      out_ += '{';
      out_ += labels;
      if (!labels.empty() && !extra.empty()) out_ += ',';
      out_ += extra;
      out_ += '}';
    }
    out_ += ' ';
    out_ += format_sample_value(value);
    out_ += '\n';
  }

  void finish() {
    if (om_) out_ += "# EOF\n";
  }

 private:
  void header() {
    header_done_ = true;
    std::string_view family = name_, type = type_;
    sample_name_ = std::string(name_);
    if (om_) {
      if (type_ == "counter") {
        // OpenMetrics counters are named without _total, their samples with it; a counter
        // whose name lacks it (DCGM's energy) can only be exposed as unknown.
        if (ends_with(name_, "_total"))
          family = name_.substr(0, name_.size() - 6);
        else
          type = "unknown";
      } else if (ends_with(name_, "_info")) {
        family = name_.substr(0, name_.size() - 5);
        type = "info";
      }
    }
    out_ += "# HELP ";
    out_ += family;
    out_ += ' ';
    out_ += escape_help(help_, om_);
    out_ += "\n# TYPE ";
    out_ += family;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  std::string& out_;
  bool om_;
  std::string_view name_, type_, help_;
  std::string sample_name_;
  bool header_done_ = false;
};

std::string label(std::string_view name, std::string_view value) {
  return fmt::format("{}=\"{}\"", name, escape_label_value(value));
}

struct GpuLabels {
  std::string dcgm;  // dcgm-exporter's set, modelName included
  std::string own;   // the same without modelName (Prometheus' snake_case conventions)
};

GpuLabels gpu_labels(const DeviceInfo& d, const std::string& hostname) {
  const std::string head = label("gpu", fmt::format("{}", d.index)) + "," + label("UUID", d.uuid) +
                           "," + label("pci_bus_id", d.pci_bus_id) + "," +
                           label("device", fmt::format("nvidia{}", d.index));
  GpuLabels l;
  l.dcgm = head + "," + label("modelName", d.name) + "," + label("Hostname", hostname);
  l.own = head + "," + label("Hostname", hostname);
  return l;
}

}  // namespace

ExpositionFormat negotiate_format(std::string_view accept) {
  // Each media range: type, then ;params. q=0 refuses it.
  size_t pos = 0;
  while (pos <= accept.size()) {
    const size_t comma = std::min(accept.find(',', pos), accept.size());
    std::string_view range = accept.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t semi = std::min(range.find(';'), range.size());
    std::string_view type = range.substr(0, semi);
    while (!type.empty() && type.front() == ' ') type.remove_prefix(1);
    while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
    if (type != "application/openmetrics-text") continue;
    const size_t q = range.find("q=", semi);
    if (q != std::string_view::npos) {
      const std::string_view qv = range.substr(q + 2);
      if (!qv.empty() && qv.front() == '0' && qv.find_first_of("123456789") == std::string::npos)
        continue;
    }
    return ExpositionFormat::kOpenMetrics;
  }
  return ExpositionFormat::kPrometheusText;
}

std::string_view content_type(ExpositionFormat f) {
  return f == ExpositionFormat::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

std::string escape_label_value(std::string_view raw) {
  // Prometheus refuses a whole scrape over one label value that is not UTF-8.
  const std::string v = valid_utf8(raw);
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string format_sample_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return "0";  // never "-0"
  return fmt::format("{}", v);
}

std::string render_metrics(const ExportSnapshot& s, const ExportOptions& o, ExpositionFormat f) {
  std::string out;
  out.reserve(4096 + s.devices.size() * 12288);
  Writer w(out, f);
  const size_t n = std::min(s.devices.size(), s.frame.devices.size());
  std::vector<GpuLabels> labels;
  labels.reserve(n);
  for (size_t i = 0; i < n; ++i) labels.push_back(gpu_labels(s.devices[i], o.hostname));

  auto render_field = [&](const FieldInfo& fi, bool dcgm_names) {
    const FieldFamily fam = field_family(fi, dcgm_names);
    w.family(fam.name, fam.type, fam.help);
    for (size_t i = 0; i < n; ++i) {
      const DeviceSample& d = s.frame.devices[i];
      if (d.lost) continue;
      const Reading& r = d[fi.field];
      if (!r.has_value()) continue;
      const double v = r.value() * fam.factor;
      const std::string extra =
          fam.value_label ? label(fam.value_label, fmt::format("{}", std::llround(v))) : "";
      w.sample(fam.dcgm ? labels[i].dcgm : labels[i].own, extra, v);
    }
  };
  for (const auto& fi : all_fields()) render_field(fi, o.dcgm_names);
  if (o.dcgm_names) {
    w.family(kFbFree.name, "gauge", kFbFree.help);
    for (size_t i = 0; i < n; ++i)
      if (const auto v = fb_free_mib(s.frame.devices[i])) w.sample(labels[i].dcgm, "", *v);
  }
  if (o.dcgm_names) {  // gpudoctor's own names for the limits the alert rules divide by
    render_field(info(Field::kPowerLimit), false);
    render_field(info(Field::kPowerLimitDefault), false);
  }

  auto fam = [&](Own id) {
    const OwnFamily& of = kOwn[id];
    w.family(of.name, of.type, of.help);
  };
  auto per_gpu = [&](Own id, auto&& value_of) {
    fam(id);
    for (size_t i = 0; i < n; ++i)
      if (const std::optional<double> v = value_of(i)) w.sample(labels[i].own, "", *v);
  };
  auto flag = [](bool b) { return std::optional<double>(b ? 1.0 : 0.0); };
  auto assessment = [&](size_t i) -> const GpuAssessment* {
    return i < s.assessments.size() ? &s.assessments[i] : nullptr;
  };

  fam(kGpuInfo);
  const std::string driver = label("driver_version", s.system.driver_version);
  for (size_t i = 0; i < n; ++i)
    w.sample(labels[i].own,
             label("model_name", s.devices[i].name) + "," +
                 label("architecture", architecture_name(s.devices[i].architecture)) + "," + driver,
             1);
  per_gpu(kGpuLost, [&](size_t i) { return flag(s.frame.devices[i].lost); });
  per_gpu(kPowerRatio, [&](size_t i) {
    const GpuAssessment* a = assessment(i);
    return a && a->limit_is_default ? a->power_ratio : std::nullopt;
  });
  per_gpu(kEfficiency, [&](size_t i) {
    const GpuAssessment* a = assessment(i);
    return a ? a->efficiency : std::nullopt;
  });
  per_gpu(kBusyIdle, [&](size_t i) -> std::optional<double> {
    const GpuAssessment* a = assessment(i);
    if (!a || !a->util_pct || !a->power_ratio) return std::nullopt;
    const Thresholds t;
    return flag(*a->util_pct >= t.busy_util_pct && *a->power_ratio < t.low_power_ratio);
  });

  fam(kClockReason);
  for (size_t i = 0; i < n; ++i) {
    if (s.frame.devices[i].lost) continue;
    const auto mask = reasons_mask(s.frame.devices[i][Field::kClockEventReasons]);
    if (!mask) continue;
    for (const auto& r : clock_reasons())
      w.sample(labels[i].own, label("reason", r.code), (*mask & r.bit) ? 1 : 0);
  }
  per_gpu(kPcieDegraded, [&](size_t i) -> std::optional<double> {
    const GpuAssessment* a = assessment(i);
    if (!a || a->pcie_text.empty()) return std::nullopt;
    return flag(a->pcie_degraded);
  });
  per_gpu(kMemoryChurn, [&](size_t i) -> std::optional<double> {
    return i < s.memory_churn.size() ? s.memory_churn[i] : std::nullopt;
  });
  per_gpu(kComputeProcesses, [&](size_t i) -> std::optional<double> {
    const DeviceSample& d = s.frame.devices[i];
    if (d.lost || !d.processes_supported) return std::nullopt;
    return static_cast<double>(d.processes.size());
  });
  if (o.expose_process_names) {
    fam(kProcessInfo);
    for (size_t i = 0; i < n; ++i) {
      std::set<uint32_t> pids;  // NVML may list a pid once per MIG compute instance
      for (const auto& p : s.frame.devices[i].processes)
        if (pids.insert(p.pid).second)
          w.sample(labels[i].own,
                   label("pid", fmt::format("{}", p.pid)) + "," + label("process_name", p.name), 1);
    }
  }
  fam(kVerdict);
  for (size_t i = 0; i < n && i < s.verdicts.size(); ++i)
    if (s.verdicts[i]) w.sample(labels[i].own, label("cause", cause_code(*s.verdicts[i])), 1);
  fam(kFinding);
  for (size_t i = 0; i < n && i < s.findings.size(); ++i) {
    std::set<std::pair<Cause, Severity>> seen;
    for (const auto& fd : s.findings[i]) {
      if (!seen.insert({fd.cause, fd.severity}).second) continue;
      w.sample(labels[i].own,
               label("cause", cause_code(fd.cause)) + "," +
                   label("severity", severity_code(fd.severity)),
               1);
    }
  }
  fam(kOwnerInfo);
  for (size_t i = 0; i < n; ++i) {
    std::set<std::string> seen;  // owners that differ only in labels left out are one series
    const std::string head = label("gpu", fmt::format("{}", s.devices[i].index)) + "," +
                             label("UUID", s.devices[i].uuid) + "," + label("Hostname", o.hostname);
    for (const Owner& ow : s.frame.devices[i].owners) {
      std::string extra = label("owner_kind", owner_kind_code(ow.kind));
      for (const auto& [name, v] : owner_label_values(ow, o.owner_labels)) {
        extra += ',';
        extra += label(name, v);
      }
      if (seen.insert(extra).second) w.sample(head, extra, 1);
    }
  }
  fam(kLostSeconds);
  for (size_t i = 0; i < n && i < s.ledger.size(); ++i)
    for (size_t c = 0; c < kCauseCount; ++c) {
      if (static_cast<Cause>(c) == Cause::kHealthy) continue;
      w.sample(labels[i].own, label("cause", cause_code(static_cast<Cause>(c))),
               s.ledger[i].lost_s[c]);
    }
  fam(kGpuSeconds);
  for (size_t i = 0; i < n && i < s.ledger.size(); ++i) {
    const GpuLedger& l = s.ledger[i];
    w.sample(labels[i].own, label("state", "working"), l.working_s);
    w.sample(labels[i].own, label("state", "lost"), l.lost_total_s);
    w.sample(labels[i].own, label("state", "idle_allocated"), l.idle_allocated_s);
    w.sample(labels[i].own, label("state", "free"), l.free_s);
  }
  fam(kScrapeSuccess);
  for (const auto& sc : s.scrapes) w.sample("", label("source", sc.source), sc.success ? 1 : 0);
  fam(kScrapeDuration);
  for (const auto& sc : s.scrapes) w.sample("", label("source", sc.source), sc.duration_s);
  fam(kBuildInfo);
  w.sample("", label("version", s.version), 1);
  w.finish();
  return out;
}

std::vector<std::pair<std::string, std::string>> owner_label_values(
    const Owner& ow, const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(names.size());
  for (const auto& name : names) {
    std::string v;
    if (name == "job")
      v = ow.kind == OwnerKind::kSlurmJob || ow.kind == OwnerKind::kSystemdUnit ? ow.id : "";
    else if (name == "step")
      v = ow.step;
    else if (name == "pod")
      v = ow.kind != OwnerKind::kK8sPod ? "" : !ow.pod.empty() ? ow.pod : ow.id;
    else if (name == "namespace")
      v = ow.pod_namespace;
    else if (name == "container")
      v = ow.container;
    else if (name == "user")
      v = ow.user;
    out.emplace_back(name, std::move(v));
  }
  return out;
}

const std::vector<std::string>& owner_label_names() {
  static const std::vector<std::string> names = ExportOptions::default_owner_labels();
  return names;
}

Result<std::vector<std::string>> parse_owner_labels(const std::string& text) {
  std::vector<std::string> out;
  if (text == "none") return out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    const auto& names = owner_label_names();
    if (std::find(names.begin(), names.end(), item) == names.end())
      return usage_error(fmt::format(
          "--owner-labels: unknown owner field '{}' (job, step, pod, namespace, container, user, "
          "or none)",
          item));
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  }
  // Always in the documented order, whatever order they were given in.
  std::vector<std::string> ordered;
  for (const auto& nm : owner_label_names())
    if (std::find(out.begin(), out.end(), nm) != out.end()) ordered.push_back(nm);
  return ordered;
}

std::vector<MetricFamilyDoc> metric_families(const ExportOptions& o) {
  std::vector<MetricFamilyDoc> out;
  auto add_field = [&](const FieldInfo& fi, bool dcgm_names) {
    const FieldFamily f = field_family(fi, dcgm_names);
    out.push_back({f.name, f.type, f.help, f.value_label ? f.value_label : "", true, f.dcgm,
                   std::string(fi.id)});
  };
  for (const auto& fi : all_fields()) add_field(fi, o.dcgm_names);
  if (o.dcgm_names) out.push_back({kFbFree.name, "gauge", kFbFree.help, "", true, true, ""});
  if (o.dcgm_names) {
    add_field(info(Field::kPowerLimit), false);
    add_field(info(Field::kPowerLimitDefault), false);
  }
  for (size_t i = 0; i < kOwnCount; ++i) {
    if (i == kProcessInfo && !o.expose_process_names) continue;
    const OwnFamily& f = kOwn[i];
    out.push_back({std::string(f.name), std::string(f.type), std::string(f.help),
                   std::string(f.labels), f.per_gpu, false, ""});
  }
  return out;
}

}  // namespace gpudoctor
