// fleet's second path, for fleets with plain dcgm-exporter: the hosts are listed, then each
// host's series are read a piece (a day, by default) at a time, grouped into runs by owner where
// the series carry hpc_job or pod labels (else by host), diagnosed here, and every sample counted
// the way serve's ledger counts it. A few hosts are in flight at once (--workers), each worker
// holding one piece, so memory stays bounded however large the fleet or long the span.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "analysis/diagnosis.hpp"
#include "analysis/ledger.hpp"
#include "fleet/fleet.hpp"
#include "net/http_client.hpp"
#include "prometheus/prometheus_runs.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

// Memory held by something: a GPU nobody holds shows the driver's own reservation only.
constexpr double kHeldMemoryMib = 1024;

struct Piece {
  std::string host;
  int64_t start_ms = 0, end_ms = 0;
};

struct Tallies {
  FleetTally total;
  std::map<FleetRowKey, FleetRow> rows;
  std::map<FleetRowKey, std::set<FleetGpu>> row_gpus;
  std::set<FleetGpu> gpus;
};

double median_step(const GpuSeries& g) {
  std::vector<double> d;
  for (size_t i = 1; i < g.size(); ++i) d.push_back(g.time_s[i] - g.time_s[i - 1]);
  if (d.empty()) return 0;
  std::nth_element(d.begin(), d.begin() + static_cast<long>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

// The owners at a time (one per run_owner_key).
std::vector<const Owner*> owners_at(const GpuSeries& g, double t) {
  std::vector<const Owner*> owners;
  std::set<std::string> seen;
  for (const auto& span : g.owners)
    if (t >= span.first_s && t <= span.last_s && seen.insert(run_owner_key(span.owner)).second)
      owners.push_back(&span.owner);
  return owners;
}

// Counts one run's samples into the tallies by serve's own rule (analysis/ledger: judged samples by
// their cause, idle ones held or free, the others working where held, else free), then shares
// each sample among the rows it belongs to (several owners at once: an equal share each).
void account(const PromRun& run, const Diagnosis& d, FleetBy by, Tallies& out) {
  for (const auto& g : run.rec.gpus) {
    const GpuDiagnosis* gd = nullptr;
    for (const auto& x : d.gpus)
      if (x.index == g.info.index) gd = &x;
    const double step = median_step(g);
    const ColumnView used = g.column(Field::kMemUsed);
    const ColumnView total = g.column(Field::kMemTotal);
    const FleetGpu gpu_id{g.host, g.info.uuid.empty() ? g.info.name : g.info.uuid};
    out.gpus.insert(gpu_id);
    LedgerBook book;
    for (size_t r = 0; r < g.size(); ++r) {
      double dt = r > 0 ? g.time_s[r] - g.time_s[r - 1] : step;
      if (step > 0) dt = std::clamp(dt, 0.0, 3 * step);  // a gap is not GPU time
      bool held = !owners_at(g, g.time_s[r]).empty();
      if (!held && used && !is_missing((*used)[r])) {
        const double tot = total && !is_missing((*total)[r]) ? (*total)[r] : 0;
        held = (*used)[r] >= std::max(kHeldMemoryMib, 0.05 * tot);
      }
      book.add_sample(run.rec.start_unix_ms + std::llround(g.time_s[r] * 1000), dt, held);
    }
    std::vector<CountedSample> counted;
    if (gd) book.judge(gd->judged, d.start_unix_ms, 0, 0, &counted);
    book.flush(&counted);
    for (const CountedSample& cs : counted) {
      const GpuLedger& l = cs.delta;
      FleetTally s;
      s.working_s = l.working_s;
      s.lost_s = l.lost_total_s;
      s.idle_allocated_s = l.idle_allocated_s;
      s.free_s = l.free_s;
      std::optional<Cause> cause;
      for (size_t c = 0; c < kCauseCount; ++c)
        if (static_cast<Cause>(c) != Cause::kHealthy && l.lost_s[c] > 0) {
          s.by_cause[c] = l.lost_s[c];
          cause = static_cast<Cause>(c);
        }
      out.total.add(s);
      const double t = static_cast<double>(cs.unix_ms - run.rec.start_unix_ms) / 1000.0;
      std::vector<FleetRowKey> keys;
      if (fleet_by_owner(by)) {
        for (const Owner* o : owners_at(g, t)) {
          FleetRowKey k;
          const auto labels = owner_info_labels(*o);
          for (const auto& n : fleet_group_labels(by))
            if (auto it = labels.find(n); it != labels.end() && !it->second.empty())
              k.labels[n] = it->second;
          keys.push_back(std::move(k));
        }
        if (keys.empty()) keys.push_back({{}, true});
      } else if (by == FleetBy::kHost) {
        keys.push_back({{{"Hostname", g.host}}, false});
      } else if (by == FleetBy::kModel) {
        keys.push_back({{{"model_name", g.info.name}}, false});
      } else {  // cause: only the lost seconds, on the cause's row
        if (!cause || s.wasted_s() <= 0) continue;
        keys.push_back({{{"cause", std::string(cause_code(*cause))}}, false});
      }
      const double share = 1.0 / static_cast<double>(keys.size());
      for (const auto& k : keys) {
        FleetRow& row = out.rows[k];
        row.labels = k.labels;
        row.unowned = k.unowned;
        FleetTally part;
        if (by != FleetBy::kCause) {
          part.working_s = s.working_s * share;
          part.free_s = s.free_s * share;
        }
        part.lost_s = s.lost_s * share;
        part.idle_allocated_s = s.idle_allocated_s * share;
        for (size_t c = 0; c < kCauseCount; ++c) part.by_cause[c] = s.by_cause[c] * share;
        row.t.add(part);
        if (!g.host.empty()) row.hosts.insert(g.host);
        out.row_gpus[k].insert(gpu_id);
      }
    }
  }
}

// The hosts with GPU series in the span, sorted.
Result<std::vector<std::string>> list_hosts(const FleetOptions& options, const std::string& user,
                                            int64_t span_s, size_t& queries) {
  // Each name on its own: over a range the name is dropped, and two names' series of one GPU
  // would clash.
  std::string any_gpu;
  for (const char* name : {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE",
                           "gpudoctor_power_watts", "gpudoctor_gpu_utilization_percent"})
    any_gpu += fmt::format("{}max by (Hostname, UUID, gpu) (max_over_time({}{{{}}}[{}s]))",
                           any_gpu.empty() ? "" : " or ", name, user, span_s);
  auto listed = prometheus_api(options.prom, "query",
                               "query=" + net::url_encode("count by (Hostname) (" + any_gpu + ")") +
                                   "&time=" + prom_time_param(options.prom.end_unix_ms));
  if (!listed) return listed.error();
  ++queries;
  std::vector<std::string> hosts;
  for (const auto& s : listed.value()) {
    const auto it = s.labels.find("Hostname");
    hosts.push_back(it == s.labels.end() ? "" : it->second);
  }
  std::sort(hosts.begin(), hosts.end());
  if (hosts.empty())
    return no_data_error(fmt::format(
        "{}: no GPU series{} between {} and {} (looked for dcgm-exporter's DCGM_FI_DEV_GPU_UTIL / "
        "DCGM_FI_DEV_POWER_USAGE and gpudoctor's names)",
        options.prom.url, options.prom.selector.empty() ? "" : " matching " + options.prom.selector,
        text::format_timestamp_ms(options.prom.start_unix_ms, '-'),
        text::format_timestamp_ms(options.prom.end_unix_ms, '-')));
  return hosts;
}

// Pieces of at most 5,000 samples per series (a day at 30 s; 1.4 h at 1 s), so that a worker
// holds a few MiB whatever the scrape interval: the interval from the first host's samples.
Result<int64_t> piece_ms(const FleetOptions& options, const std::string& user,
                         const std::string& first_host, int64_t span_s, size_t& queries) {
  double chunk_s = options.chunk_s;
  if (chunk_s <= 0) {
    double interval_s = 30;
    auto raw = prometheus_api(
        options.prom, "query",
        "query=" +
            net::url_encode(fmt::format(
                "count_over_time(DCGM_FI_DEV_POWER_USAGE{{{}}}[{}s]) or "
                "count_over_time(gpudoctor_power_watts{{{}}}[{}s])",
                user + (user.empty() ? "" : ",") + promql_hosts_matcher({first_host}), span_s,
                user + (user.empty() ? "" : ",") + promql_hosts_matcher({first_host}), span_s)) +
            "&time=" + prom_time_param(options.prom.end_unix_ms));
    ++queries;
    if (!raw) return raw.error();
    double most = 0;
    for (const auto& s : raw.value())
      if (!s.points.empty()) most = std::max(most, s.points.back().second);
    if (most > 1) interval_s = static_cast<double>(span_s) / most;
    chunk_s = std::clamp(5000 * interval_s, 3600.0, 86400.0);
  }
  return static_cast<int64_t>(std::max(60.0, chunk_s) * 1000);
}

}  // namespace

Result<FleetReport> fleet_by_diagnosis(const FleetOptions& options, const FleetProgress& progress) {
  auto m = selector_matchers(options.prom.selector);
  if (!m) return m.error();
  const std::string user = m.value();
  FleetReport r = empty_fleet_report(options, "diagnosis");
  const int64_t span_s = std::max<int64_t>(1, (r.end_unix_ms - r.start_unix_ms) / 1000);

  size_t queries = 0;
  auto hosts = list_hosts(options, user, span_s, queries);
  if (!hosts) return hosts.error();
  const auto chunk_ms = piece_ms(options, user, hosts->front(), span_s, queries);
  if (!chunk_ms) return chunk_ms.error();
  std::vector<Piece> pieces;
  for (const auto& h : hosts.value())
    for (int64_t t = r.start_unix_ms; t < r.end_unix_ms; t += chunk_ms.value())
      pieces.push_back({h, t, std::min(r.end_unix_ms, t + chunk_ms.value())});

  const PromGroupBy group =
      fleet_by_owner(options.by)
          ? (options.by == FleetBy::kPod ? PromGroupBy::kPod : PromGroupBy::kJob)
          : PromGroupBy::kHost;
  Tallies tallies;
  std::mutex mu;
  std::atomic<size_t> done{0};
  std::vector<std::string> failures;
  std::map<std::string, size_t> empty_pieces;
  size_t owned_runs = 0;
  std::atomic<size_t> http{0};
  const unsigned workers = run_workers(options.workers, pieces.size(), [&](size_t i) {
    const Piece& p = pieces[i];
    PrometheusQuery q = options.prom;
    q.start_unix_ms = p.start_ms;
    q.end_unix_ms = p.end_ms;
    std::string sel = user;
    if (!p.host.empty()) {
      if (!sel.empty()) sel += ',';
      sel += promql_hosts_matcher({p.host});
    }
    q.selector = sel;
    auto runs = load_prometheus_runs(q, group);
    Tallies part;
    size_t owned = 0;
    if (runs) {
      for (const auto& run : runs.value()) {
        const Diagnosis d = diagnose(run.rec, {}, JudgedSamples::kEach);
        account(run, d, options.by, part);
        if (run.kind == "owner") ++owned;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!runs) {
        if (runs.error().code == Error::Code::kNoData)
          ++empty_pieces[p.host];
        else
          failures.push_back(fmt::format("{} from {}: {}", p.host.empty() ? "GPUs" : p.host,
                                         text::format_timestamp_ms(p.start_ms, '-'),
                                         runs.error().message));
      }
      owned_runs += owned;
      tallies.total.add(part.total);
      tallies.gpus.insert(part.gpus.begin(), part.gpus.end());
      for (auto& [k, row] : part.rows) {
        FleetRow& into = tallies.rows[k];
        into.labels = row.labels;
        into.unowned = row.unowned;
        into.t.add(row.t);
        into.hosts.insert(row.hosts.begin(), row.hosts.end());
        tallies.row_gpus[k].insert(part.row_gpus[k].begin(), part.row_gpus[k].end());
      }
    }
    http.fetch_add(1);
    const size_t n = done.fetch_add(1) + 1;
    if (progress) {
      std::lock_guard<std::mutex> lock(mu);
      progress(n, pieces.size(), "pieces diagnosed (a host, a day or less)");
    }
  });

  if (!failures.empty() && failures.size() == pieces.size()) return failure(failures.front());
  r.total = tallies.total;
  r.gpus = tallies.gpus.size();
  for (const auto& h : hosts.value()) r.hosts.insert(h);
  r.queries = queries + http.load();
  r.notes.push_back(fmt::format(
      "diagnosed here: {} host{} in {} piece{} of at most {:.3g} h, {} worker{}{}", hosts->size(),
      hosts->size() == 1 ? "" : "s", pieces.size(), pieces.size() == 1 ? "" : "s",
      static_cast<double>(chunk_ms.value()) / 3.6e6, workers, workers == 1 ? "" : "s",
      fleet_by_owner(options.by) ? fmt::format("; {} run{} by owner (hpc_job or pod labels)",
                                               owned_runs, owned_runs == 1 ? "" : "s")
                                 : ""));
  if (fleet_by_owner(options.by) && owned_runs == 0)
    r.notes.push_back(
        "no series named an owner (dcgm-exporter's hpc_job, pod or exported_pod labels): all GPU "
        "time is '(no owner)'");
  for (const auto& [host, n] : empty_pieces)
    r.notes.push_back(
        fmt::format("{}: no GPU series in {} of the span's pieces (not reporting then)",
                    host.empty() ? "GPUs" : host, n));
  for (size_t i = 0; i < failures.size() && i < 5; ++i)
    r.notes.push_back("not read: " + failures[i]);
  if (failures.size() > 5)
    r.notes.push_back(fmt::format("and {} more pieces not read", failures.size() - 5));

  std::vector<FleetRow> rows;
  for (auto& [k, row] : tallies.rows) {
    row.gpus = tallies.row_gpus[k].size();
    if (row.t.allocated_s() > 0 || (!row.unowned && row.t.total_s() > 0))
      rows.push_back(std::move(row));
  }
  finish_fleet_rows(r, std::move(rows), options);
  return r;
}

}  // namespace gpudoctor
