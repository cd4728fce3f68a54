#include "fleet/fleet.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "core/parallel.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

constexpr std::array<std::string_view, 7> kByCodes = {"job",  "user",  "namespace", "pod",
                                                      "host", "model", "cause"};

std::string get(const std::map<std::string, std::string>& m, const std::string& k) {
  const auto it = m.find(k);
  return it == m.end() ? std::string() : it->second;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string utc(int64_t ms) {
  std::string t = text::format_timestamp_ms(ms - ms % 1000, '-');  // "2026-12-01 10:00:00.000"
  t = t.substr(0, 19);
  t[10] = 'T';
  return t + "Z";
}

// The drill-down: `diagnose --prometheus` over the same span, on the row's hosts, grouped so
// that the row's own run is among the runs.
std::string drill_command(const FleetReport& r, const FleetRow& row, const FleetOptions& o) {
  auto given = selector_matchers(o.prom.selector);
  std::string matchers = given ? given.value() : "";
  if (!row.hosts.empty())
    matchers += (matchers.empty() ? "" : ",") + promql_hosts_matcher(row.hosts);
  std::string group;
  switch (r.by) {
    case FleetBy::kJob:
    case FleetBy::kUser:
    case FleetBy::kNamespace:
      group = " --group-by job";
      break;
    case FleetBy::kPod:
      group = " --group-by pod";
      break;
    default:
      break;
  }
  return fmt::format("{} diagnose --prometheus {} --since {} --until {}{}{}", o.program,
                     shell_quote(r.source), utc(r.start_unix_ms), utc(r.end_unix_ms), group,
                     matchers.empty() ? "" : " --selector " + shell_quote("{" + matchers + "}"));
}

}  // namespace

std::string_view fleet_by_code(FleetBy by) {
  return kByCodes[static_cast<size_t>(by)];
}

std::optional<FleetBy> fleet_by_from_code(std::string_view code) {
  for (size_t i = 0; i < kByCodes.size(); ++i)
    if (kByCodes[i] == code) return static_cast<FleetBy>(i);
  return std::nullopt;
}

bool fleet_by_owner(FleetBy by) {
  return by == FleetBy::kJob || by == FleetBy::kUser || by == FleetBy::kNamespace ||
         by == FleetBy::kPod;
}

unsigned run_workers(unsigned workers, size_t tasks, const std::function<void(size_t)>& task) {
  const auto n = static_cast<unsigned>(std::clamp<size_t>(tasks, 1, std::max(1u, workers)));
  std::atomic<size_t> next{0};
  // With several workers each task runs on one thread: a diagnosis inside it starts no threads of
  // its own (workers x CPUs threads would only take turns).
  auto work = [&] {
    std::optional<SpreadWork> share;
    if (n > 1) share.emplace();
    for (size_t i; (i = next.fetch_add(1)) < tasks;) task(i);
  };
  std::vector<std::thread> threads;
  for (unsigned w = 1; w < n; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return n;
}

std::optional<double> FleetTally::efficiency() const {
  if (allocated_s() <= 0) return std::nullopt;
  return working_s / allocated_s();
}

std::optional<Cause> FleetTally::main_cause() const {
  std::optional<Cause> best;
  double most = 0;
  for (size_t c = 0; c < kCauseCount; ++c)
    if (by_cause[c] > most) {
      most = by_cause[c];
      best = static_cast<Cause>(c);
    }
  return best;
}

void FleetTally::add(const FleetTally& o) {
  working_s += o.working_s;
  lost_s += o.lost_s;
  idle_allocated_s += o.idle_allocated_s;
  free_s += o.free_s;
  for (size_t c = 0; c < kCauseCount; ++c) by_cause[c] += o.by_cause[c];
}

std::map<std::string, std::string> owner_info_labels(const Owner& o) {
  std::map<std::string, std::string> m;
  m["owner_kind"] = std::string(owner_kind_code(o.kind));
  if (o.kind == OwnerKind::kSlurmJob || o.kind == OwnerKind::kSystemdUnit) m["job"] = o.id;
  if (o.kind == OwnerKind::kK8sPod) m["pod"] = o.pod.empty() ? o.id : o.pod;
  if (!o.pod_namespace.empty()) m["namespace"] = o.pod_namespace;
  if (!o.container.empty()) m["container"] = o.container;
  if (!o.user.empty()) m["user"] = o.user;
  return m;
}

const std::vector<std::string>& fleet_group_labels(FleetBy by) {
  static const std::vector<std::string> job = {"owner_kind", "job",       "pod",
                                               "namespace",  "container", "user"};
  static const std::vector<std::string> user = {"user"}, ns = {"namespace"},
                                        pod = {"namespace", "pod"}, host = {"Hostname"},
                                        model = {"model_name"}, cause = {"cause"};
  switch (by) {
    case FleetBy::kJob:
      return job;
    case FleetBy::kUser:
      return user;
    case FleetBy::kNamespace:
      return ns;
    case FleetBy::kPod:
      return pod;
    case FleetBy::kHost:
      return host;
    case FleetBy::kModel:
      return model;
    case FleetBy::kCause:
      return cause;
  }
  return job;
}

std::string fleet_row_label(FleetBy by, const std::map<std::string, std::string>& l) {
  const std::string user = get(l, "user");
  const std::string who = user.empty() ? "" : " (" + user + ")";
  switch (by) {
    case FleetBy::kJob: {
      const std::string kind = get(l, "owner_kind"), ns = get(l, "namespace");
      if (kind == "slurm_job") return "job " + get(l, "job") + who;
      if (kind == "systemd_unit") return "unit " + get(l, "job") + who;
      if (kind == "k8s_pod") return "pod " + (ns.empty() ? "" : ns + "/") + get(l, "pod") + who;
      if (kind == "container") return "container " + get(l, "container") + who;
      if (kind == "process") return "processes" + (user.empty() ? "" : " of " + user);
      return "(no owner)";
    }
    case FleetBy::kUser:
      return user.empty() ? "(no user known)" : "user " + user;
    case FleetBy::kNamespace: {
      const std::string ns = get(l, "namespace");
      return ns.empty() ? "(no namespace)" : "namespace " + ns;
    }
    case FleetBy::kPod: {
      const std::string pod = get(l, "pod"), ns = get(l, "namespace");
      return pod.empty() ? "(no pod)" : "pod " + (ns.empty() ? "" : ns + "/") + pod;
    }
    case FleetBy::kHost: {
      const std::string h = get(l, "Hostname");
      return h.empty() ? "(no host label)" : h;
    }
    case FleetBy::kModel: {
      const std::string m = get(l, "model_name");
      return m.empty() ? "(model not known)" : m;
    }
    case FleetBy::kCause: {
      const std::string c = get(l, "cause");
      return c.empty() ? "(none)" : c;
    }
  }
  return "";
}

FleetReport empty_fleet_report(const FleetOptions& options, std::string_view path) {
  FleetReport r;
  r.source = options.prom.url;
  r.selector = options.prom.selector;
  r.path.assign(path);
  r.by = options.by;
  r.start_unix_ms = options.prom.start_unix_ms;
  r.end_unix_ms = options.prom.end_unix_ms;
  return r;
}

void finish_fleet_rows(FleetReport& r, std::vector<FleetRow> rows, const FleetOptions& options) {
  for (auto& row : rows) {
    if (row.label.empty())
      row.label = row.unowned ? (r.by == FleetBy::kJob ? "(no owner)" : fleet_row_label(r.by, {}))
                              : fleet_row_label(r.by, row.labels);
    row.drill = drill_command(r, row, options);
  }
  std::sort(rows.begin(), rows.end(), [](const FleetRow& a, const FleetRow& b) {
    if (a.t.wasted_s() != b.t.wasted_s()) return a.t.wasted_s() > b.t.wasted_s();
    if (a.t.allocated_s() != b.t.allocated_s()) return a.t.allocated_s() > b.t.allocated_s();
    return a.label < b.label;
  });
  r.rows_total = rows.size();
  if (options.top > 0 && rows.size() > options.top) rows.resize(options.top);
  r.rows = std::move(rows);
}

Result<FleetReport> fleet_report(const FleetOptions& options, const FleetProgress& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<FleetReport> r = failure("no path");
  if (options.path == "ledger") {
    r = fleet_from_ledger(options, progress);
  } else if (options.path == "diagnosis") {
    r = fleet_by_diagnosis(options, progress);
  } else {
    // auto: the ledger where serve's series are there, else the diagnosis.
    auto n = ledger_gpu_count(options);
    if (!n) return n.error();
    if (n.value() > 0) {
      r = fleet_from_ledger(options, progress);
    } else {
      r = fleet_by_diagnosis(options, progress);
      if (r)
        r->notes.insert(r->notes.begin(),
                        "no gpudoctor_gpu_seconds_total series (gpudoctor serve's ledger) in the "
                        "span: each host's GPU series were diagnosed here instead");
    }
  }
  if (r) r->query_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace gpudoctor
