#include "prometheus/prometheus_runs.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "formats/finish.hpp"

namespace gpudoctor {
namespace {

// Matchers that pick these GPUs: a whole host's by its name; some of a host's (an owner's) by
// UUID where every GPU has one (up to 16 of them; more: their hosts), else by gpu label.
std::string selector_of(const std::vector<const GpuSeries*>& gpus, bool whole_hosts) {
  std::set<std::string> hosts, uuids, indices;
  bool all_uuids = true;
  for (const auto* g : gpus) {
    if (!g->host.empty()) hosts.insert(g->host);
    if (g->info.uuid.empty()) all_uuids = false;
    uuids.insert(g->info.uuid);
    indices.insert(fmt::format("{}", g->info.index));
  }
  std::string sel = promql_hosts_matcher(hosts);
  std::string gpu_part;
  const bool hosts_say_it = (whole_hosts && !hosts.empty()) || uuids.size() > 16;
  if (!hosts_say_it && all_uuids && !uuids.empty())
    gpu_part = uuids.size() == 1 ? fmt::format("UUID=\"{}\"", promql_string(*uuids.begin()))
                                 : fmt::format("UUID=~\"{}\"", promql_alternatives(uuids));
  else if (!hosts_say_it && hosts.size() <= 1)
    gpu_part = fmt::format("gpu=~\"{}\"", promql_alternatives(indices));
  if (!gpu_part.empty()) sel += (sel.empty() ? "" : ",") + gpu_part;
  return "{" + sel + "}";
}

// Consecutive rows (by index) as time ranges [first, last].
std::vector<std::pair<double, double>> ranges_of(const GpuSeries& g,
                                                 const std::vector<size_t>& rows) {
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < rows.size();) {
    size_t j = i;
    while (j + 1 < rows.size() && rows[j + 1] == rows[j] + 1) ++j;
    out.emplace_back(g.time_s[rows[i]], g.time_s[rows[j]]);
    i = j + 1;
  }
  return out;
}

struct Draft {
  PromRun run;
  std::vector<GpuSeries> gpus;
};

}  // namespace

std::string_view prom_group_by_code(PromGroupBy by) {
  switch (by) {
    case PromGroupBy::kHost:
      return "host";
    case PromGroupBy::kJob:
      return "job";
    case PromGroupBy::kPod:
      return "pod";
    case PromGroupBy::kNone:
      return "none";
  }
  return "host";
}

std::optional<PromGroupBy> prom_group_by_from_code(std::string_view code) {
  for (auto by : {PromGroupBy::kHost, PromGroupBy::kJob, PromGroupBy::kPod, PromGroupBy::kNone})
    if (prom_group_by_code(by) == code) return by;
  return std::nullopt;
}

std::string run_owner_key(const Owner& o) {
  std::string k(owner_kind_code(o.kind));
  k += ':';
  switch (o.kind) {
    case OwnerKind::kK8sPod:
      k += o.pod_namespace + "/" + (o.pod.empty() ? o.id : o.pod);
      break;
    case OwnerKind::kProcess:
      k += o.user + "/" + o.id;
      break;
    default:
      k += o.id;
  }
  return k;
}

std::string run_owner_label(const Owner& o) {
  Owner job = o;
  job.step.clear();
  if (job.kind == OwnerKind::kK8sPod) job.container.clear();
  return owner_label(job);
}

std::vector<PromRun> group_runs(Recording all, PromGroupBy by) {
  // Drafts by key: hosts first ("host:NAME"), owners after ("owner:KEY").
  std::map<std::string, Draft> drafts;
  auto draft = [&](const std::string& key) -> Draft& {
    auto [it, fresh] = drafts.try_emplace(key);
    return it->second;
  };
  for (auto& g : all.gpus) {
    if (by == PromGroupBy::kNone) {
      Draft& d = draft("all");
      d.run.kind = "all";
      d.run.name = "all GPUs";
      d.gpus.push_back(std::move(g));
      continue;
    }
    std::vector<size_t> unowned;
    std::map<std::string, std::pair<Owner, std::vector<size_t>>> owned;
    if (by != PromGroupBy::kHost) {
      for (size_t r = 0; r < g.size(); ++r) {
        const double t = g.time_s[r];
        bool any = false;
        std::set<std::string> here;
        for (const auto& span : g.owners) {
          if (t < span.first_s || t > span.last_s) continue;
          if (by == PromGroupBy::kPod && span.owner.kind != OwnerKind::kK8sPod) continue;
          const std::string key = run_owner_key(span.owner);
          any = true;
          if (!here.insert(key).second) continue;
          auto& entry = owned[key];
          if (entry.second.empty()) entry.first = span.owner;
          entry.second.push_back(r);
        }
        if (!any) unowned.push_back(r);
      }
    }
    for (auto& [key, entry] : owned) {
      Draft& d = draft("owner:" + key);
      d.run.kind = "owner";
      d.run.name = run_owner_label(entry.first);
      d.run.owner = entry.first;
      d.gpus.push_back(slice_series(g, ranges_of(g, entry.second)));
    }
    if (by == PromGroupBy::kHost || unowned.size() == g.size()) {
      Draft& d = draft("host:" + g.host);
      d.run.kind = "host";
      d.run.name = g.host.empty() ? "unknown host" : g.host;
      if (by != PromGroupBy::kHost) d.run.name += " (no owner)";
      d.gpus.push_back(std::move(g));
    } else if (!unowned.empty()) {
      Draft& d = draft("host:" + g.host);
      d.run.kind = "host";
      d.run.name = (g.host.empty() ? "unknown host" : g.host) + " (no owner)";
      d.gpus.push_back(slice_series(g, ranges_of(g, unowned)));
    }
  }
  std::vector<PromRun> runs;
  for (auto& [key, d] : drafts) {
    if (d.gpus.empty()) continue;
    PromRun run = std::move(d.run);
    std::vector<const GpuSeries*> members;
    std::set<std::string> hosts;
    for (const auto& g : d.gpus) {
      members.push_back(&g);
      hosts.insert(g.host);
    }
    run.hosts.assign(hosts.begin(), hosts.end());
    run.selector = selector_of(members, run.kind == "host" && by == PromGroupBy::kHost);
    run.rec = without_gpus(all);
    std::sort(d.gpus.begin(), d.gpus.end(), [](const GpuSeries& a, const GpuSeries& b) {
      return std::tie(a.host, a.info.index) < std::tie(b.host, b.info.index);
    });
    run.rec.gpus = std::move(d.gpus);
    number_across_hosts(run.rec);
    if (run.rec.system.hostname.empty() && hosts.size() == 1)
      run.rec.system.hostname = *hosts.begin();
    runs.push_back(std::move(run));
  }
  std::stable_sort(runs.begin(), runs.end(), [](const PromRun& a, const PromRun& b) {
    const std::string ha = a.hosts.empty() ? "" : a.hosts.front();
    const std::string hb = b.hosts.empty() ? "" : b.hosts.front();
    // A host's owners first, then what no owner held.
    return std::tie(ha, a.kind, a.name) < std::tie(hb, b.kind, b.name);
  });
  return runs;
}

Result<std::vector<PromRun>> load_prometheus_runs(const PrometheusQuery& q, PromGroupBy by,
                                                  const LoadOptions& options) {
  auto fetched = fetch_prometheus_series(q);
  if (!fetched) return fetched.error();
  Recording all = series_by_gpu(fetched->series, prometheus_source(q));
  if (all.gpus.empty()) return no_gpu_series(q);
  all.notes.insert(all.notes.begin(), prometheus_read_note(fetched.value()));
  std::vector<PromRun> runs = group_runs(std::move(all), by);
  for (auto& run : runs) {
    log_reader::finish_series_gpus(run.rec, options.power_limit_w);
    if (!options.gpu_name.empty()) log_reader::name_unnamed_gpus(run.rec, options.gpu_name);
  }
  return runs;
}

std::string runs_summary(const std::vector<PromRun>& runs, PromGroupBy by) {
  std::set<std::string> hosts, distinct;  // a GPU that two owners held is in two runs
  for (const auto& r : runs) {
    for (const auto& g : r.rec.gpus)
      distinct.insert(g.host + "/" + (g.info.uuid.empty() ? g.info.name : g.info.uuid) + "/" +
                      (g.info.uuid.empty() ? fmt::format("{}", g.info.index) : ""));
    hosts.insert(r.hosts.begin(), r.hosts.end());
  }
  const size_t gpus = distinct.size();
  std::string how;
  switch (by) {
    case PromGroupBy::kHost:
      how = "one run per host";
      break;
    case PromGroupBy::kJob:
      how =
          "one run per owner (job, pod, container, ...), the rest of each host's GPU time its own";
      break;
    case PromGroupBy::kPod:
      how = "one run per pod, the rest of each host's GPU time its own";
      break;
    case PromGroupBy::kNone:
      how = "all GPUs in one run";
      break;
  }
  return fmt::format("grouped by {} ({}): {} run{}, {} GPU{} on {} host{}", prom_group_by_code(by),
                     how, runs.size(), runs.size() == 1 ? "" : "s", gpus, gpus == 1 ? "" : "s",
                     hosts.size(), hosts.size() == 1 ? "" : "s");
}

}  // namespace gpudoctor
