// `gpudoctor fleet`: where a cluster's GPU time went over a span, from a Prometheus server (or
// Thanos, Mimir, VictoriaMetrics: anything that answers Prometheus' HTTP API), by job, user,
// namespace, pod, host, GPU model or cause. Two paths, chosen by what the series are:
//   ledger:    fleets running `gpudoctor serve` export the GPU seconds each live diagnosis judged
//              (gpudoctor_gpu_seconds_total by state, gpudoctor_lost_gpu_seconds_total by cause)
//              and the owners (gpudoctor_gpu_owner_info); the server joins and sums them, a
//              fixed handful of queries whatever the number of GPUs (fleet/ledger_path.cpp).
//   diagnosis: fleets with plain dcgm-exporter: each host's series are read a piece (up to a
//              day) at a time and diagnosed here, by owner where the series carry hpc_job or
//              pod labels, a few hosts at a time in parallel workers (fleet/diagnosis_path.cpp).
// Both give the same FleetReport; report/fleet_report renders it.
#pragma once

#include <array>
#include <compare>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "analysis/causes.hpp"
#include "core/owner.hpp"
#include "core/result.hpp"
#include "prometheus/prometheus.hpp"

namespace gpudoctor {

enum class FleetBy { kJob, kUser, kNamespace, kPod, kHost, kModel, kCause };
std::string_view fleet_by_code(FleetBy by);  // "job", "user", ...
std::optional<FleetBy> fleet_by_from_code(std::string_view code);

// GPU seconds by the ledger's states (they add up to every sampled second) and the lost ones by
// cause (cause idle: GPUs held and idle, the same seconds as idle_allocated_s).
struct FleetTally {
  double working_s = 0, lost_s = 0, idle_allocated_s = 0, free_s = 0;
  std::array<double, kCauseCount> by_cause{};

  double total_s() const { return working_s + lost_s + idle_allocated_s + free_s; }
  double allocated_s() const { return working_s + lost_s + idle_allocated_s; }
  double wasted_s() const { return lost_s + idle_allocated_s; }  // what the ranking sorts by
  // working / allocated; nullopt when nothing was allocated.
  std::optional<double> efficiency() const;
  // The cause that took the most (idle included); nullopt when nothing was lost.
  std::optional<Cause> main_cause() const;
  void add(const FleetTally& o);
};

// The owner labels of gpudoctor_gpu_owner_info for an owner (job: the Slurm job or unit id; pod:
// the pod name, else its UID; namespace; container; user; owner_kind), as serve exports them.
std::map<std::string, std::string> owner_info_labels(const Owner& o);

// The labels a row of --by groups on ("job": owner_kind, job, pod, namespace, container, user).
const std::vector<std::string>& fleet_group_labels(FleetBy by);
// How a row is named from its labels: "job 41877 (alice)", "pod research/notebook-0 (bob)",
// "user alice", "node7", "(no owner)".
std::string fleet_row_label(FleetBy by, const std::map<std::string, std::string>& labels);

// The row a GPU second belongs to: the labels of --by under their canonical names, or the time
// no owner held.
struct FleetRowKey {
  std::map<std::string, std::string> labels;
  bool unowned = false;
  bool operator<(const FleetRowKey& o) const {
    return std::tie(unowned, labels) < std::tie(o.unowned, o.labels);
  }
};

struct FleetRow {
  std::map<std::string, std::string> labels;  // fleet_group_labels(by); empty map: no owner
  bool unowned = false;                       // GPU time no owner held (job, user, ...)
  std::string label;
  FleetTally t;
  std::set<std::string> hosts;
  size_t gpus = 0;    // GPUs it was seen on (0: not known)
  std::string drill;  // the `gpudoctor diagnose --prometheus ...` command that looks closer
};

struct FleetOptions {
  PrometheusQuery prom;  // url, selector, span, timeout
  FleetBy by = FleetBy::kJob;
  size_t top = 20;
  std::string path = "auto";  // auto, ledger, diagnosis
  unsigned workers = 4;       // diagnosis path: hosts read and diagnosed at once
  // Diagnosis path: the longest piece of a host read at once; 0: 5,000 samples at the scrape
  // interval, between 1 h and a day.
  double chunk_s = 0;
  std::string program = "gpudoctor";  // how the drill-down commands call the program
  std::string since_text;             // the --since/--until the user gave, for drill-downs
  std::string until_text;
};

struct FleetReport {
  std::string source;    // the server's URL
  std::string selector;  // as given
  std::string path;      // "ledger" or "diagnosis"
  FleetBy by = FleetBy::kJob;
  int64_t start_unix_ms = 0, end_unix_ms = 0;
  FleetTally total;
  size_t gpus = 0;
  std::set<std::string> hosts;
  std::vector<FleetRow> rows;      // ranked: most wasted first; at most --top
  size_t rows_total = 0;           // before --top
  std::vector<std::string> notes;  // how it was computed, gaps, hosts that stopped reporting
  double query_s = 0;              // wall time spent asking and diagnosing
  size_t queries = 0;              // HTTP requests made
};

// Progress: done and total of what the path does ("queries answered" on the ledger path; on the
// diagnosis path, pieces of a host and a day or less).
using FleetProgress = std::function<void(size_t done, size_t total, std::string_view what)>;

Result<FleetReport> fleet_report(const FleetOptions& options, const FleetProgress& progress = {});

// --- the pieces, for tests and the two paths ---

// Whether --by groups by the GPUs' owners (job, user, namespace, pod), not by host, model or cause.
bool fleet_by_owner(FleetBy by);

// A GPU of the fleet: its host and its UUID (the diagnosis path: its name where a series has no
// UUID).
struct FleetGpu {
  std::string host, uuid;
  auto operator<=>(const FleetGpu&) const = default;
};

// The worker pool of both paths: task(i) for every i in [0, tasks), each worker taking the next i
// until none is left, on min(workers, tasks) threads (at least one: the caller's). Returns how many
// worked.
unsigned run_workers(unsigned workers, size_t tasks, const std::function<void(size_t)>& task);

// Ranks rows (most wasted first, then most allocated, then label), fills labels and drill-down
// commands, keeps rows_total and cuts to --top.
void finish_fleet_rows(FleetReport& r, std::vector<FleetRow> rows, const FleetOptions& options);
// A report of `path` ("ledger", "diagnosis") over the options' server, selector and window, with
// nothing in it yet: what both paths start from.
FleetReport empty_fleet_report(const FleetOptions& options, std::string_view path);

// GPUs with serve's ledger in the span (0: none, so the auto path diagnoses instead).
Result<size_t> ledger_gpu_count(const FleetOptions& options);
Result<FleetReport> fleet_from_ledger(const FleetOptions& options,
                                      const FleetProgress& progress = {});
Result<FleetReport> fleet_by_diagnosis(const FleetOptions& options, const FleetProgress& progress);

}  // namespace gpudoctor
