// Prometheus exposition: renders one snapshot of the GPUs (the latest frame, its assessment and
// the findings of the live diagnosis) as the Prometheus text format (0.0.4) or OpenMetrics 1.0.
// Where dcgm-exporter has a metric for a field, the field goes out under dcgm-exporter's name,
// unit and labels (gpu, UUID, pci_bus_id, device, modelName, Hostname), so dashboards and alerts
// written for dcgm-exporter work unchanged; gpudoctor's own families (efficiency, busy-but-idle,
// limits, clock event reasons, findings, scrape health) follow Prometheus' naming conventions.
// Families are built from the snapshot at render time: a field no GPU has a value for has no
// family at all ("not supported" is not zero). Numbers are written locale-independently.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/causes.hpp"
#include "analysis/diagnosis.hpp"
#include "analysis/ledger.hpp"
#include "analysis/snapshot.hpp"
#include "core/device.hpp"
#include "core/owner.hpp"
#include "core/result.hpp"

namespace gpudoctor {

enum class ExpositionFormat { kPrometheusText, kOpenMetrics };

// The format a scraper asked for in its Accept header: OpenMetrics when it names
// application/openmetrics-text (with q > 0), else the Prometheus text format.
ExpositionFormat negotiate_format(std::string_view accept);
// "text/plain; version=0.0.4; charset=utf-8" or the OpenMetrics media type.
std::string_view content_type(ExpositionFormat f);

struct ExportOptions {
  bool dcgm_names = true;             // fields under dcgm-exporter's names, units and labels
  bool expose_process_names = false;  // gpudoctor_process_info with pid and process name
  std::string hostname;               // the Hostname label ("" leaves the label empty)
  std::string source_name = "nvml";   // the `source` label of the sampling's scrape metrics
  // Owner fields that become labels of gpudoctor_gpu_owner_info (--owner-labels); owner_kind,
  // gpu, UUID and Hostname are always there. docs/owners.md says why these are the defaults.
  std::vector<std::string> owner_labels = default_owner_labels();
  static std::vector<std::string> default_owner_labels() {
    return {"job", "step", "pod", "namespace", "container", "user"};
  }
};

// The owner fields --owner-labels may name.
const std::vector<std::string>& owner_label_names();
// Parses --owner-labels "job,user" ("none": no optional label); errors name the bad field.
Result<std::vector<std::string>> parse_owner_labels(const std::string& text);

// One live-diagnosis finding that covers a GPU.
struct GpuFinding {
  Cause cause = Cause::kHealthy;
  Severity severity = Severity::kInfo;
};

struct ScrapeStat {
  std::string source;  // "nvml", "sim", "diagnosis"
  bool success = false;
  double duration_s = 0;
};

// Everything one rendering reads; the devices and the frame's devices are in the same order.
struct ExportSnapshot {
  SystemInfo system;
  std::vector<DeviceInfo> devices;
  Frame frame;
  std::vector<GpuAssessment> assessments;           // one per device
  std::vector<std::optional<double>> memory_churn;  // one per device; ratio of total per s
  std::vector<std::vector<GpuFinding>> findings;    // one list per device
  std::vector<std::optional<Cause>> verdicts;       // one per device; the window's verdict
  std::vector<GpuLedger> ledger;                    // one per device; empty: no ledger
  std::vector<ScrapeStat> scrapes;
  std::string version = GPUDOCTOR_VERSION;
};

std::string render_metrics(const ExportSnapshot& s, const ExportOptions& o, ExpositionFormat f);

// What a family is, for docs/prometheus.md and the tests that keep the docs, the dashboard and
// the alert rules in step with the exporter.
struct MetricFamilyDoc {
  std::string name;  // as stored by Prometheus (counters with their _total)
  std::string type;  // gauge, counter
  std::string help;
  std::string labels;    // extra labels beyond the GPU labels ("reason", "cause, severity")
  bool per_gpu = true;   // carries the GPU labels
  bool dcgm = false;     // a dcgm-exporter name (present with dcgm names on)
  std::string field_id;  // the catalogue field behind it, "" for derived families
};
// Every family `serve` can export with these options, in the order they are rendered.
std::vector<MetricFamilyDoc> metric_families(const ExportOptions& o);

// The labels gpudoctor_gpu_owner_info gives one owner, in the order of `names` (--owner-labels),
// each with its value ("" where the field does not apply): job is the Slurm job or the systemd
// unit, pod the pod's name (its UID where the name is unknown).
std::vector<std::pair<std::string, std::string>> owner_label_values(
    const Owner& owner, const std::vector<std::string>& names);

// Escapes a label value (backslash, double quote, line feed) for either format.
std::string escape_label_value(std::string_view v);
// A sample value as both formats write it: shortest round-trip decimal, NaN, +Inf, -Inf.
std::string format_sample_value(double v);

}  // namespace gpudoctor
