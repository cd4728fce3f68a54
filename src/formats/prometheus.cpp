#include "formats/prometheus.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "core/duration.hpp"
#include "formats/finish.hpp"
#include "formats/text.hpp"
#include "net/http_client.hpp"

namespace gpudoctor {
namespace {

// Series the reader understands beyond the catalogue's names.
enum class Extra { kNone, kFbFree, kFbReserved, kGpuInfo, kGpuLost, kOwnerInfo };

struct NameInfo {
  std::optional<Field> field;
  double scale = 1;   // catalogue value = metric value * scale
  bool dcgm = false;  // DCGM's name: preferred when both are there
  Extra extra = Extra::kNone;
};

const std::unordered_map<std::string, NameInfo>& name_table() {
  static const auto table = [] {
    std::unordered_map<std::string, NameInfo> t;
    for (const auto& fi : all_fields()) {
      if (!fi.dcgm_name.empty()) t[std::string(fi.dcgm_name)] = {fi.field, fi.dcgm_scale, true};
      t[std::string(fi.prom_name)] = {fi.field, prom_scale(fi)};
    }
    // The name DCGM used for field 112 before 3.3.
    t["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"] = {Field::kClockEventReasons, 1, true};
    t["DCGM_FI_DEV_FB_FREE"] = {std::nullopt, 1, true, Extra::kFbFree};
    t["DCGM_FI_DEV_FB_RESERVED"] = {std::nullopt, 1, true, Extra::kFbReserved};
    t["gpudoctor_gpu_info"] = {std::nullopt, 1, false, Extra::kGpuInfo};
    t["gpudoctor_gpu_lost"] = {std::nullopt, 1, false, Extra::kGpuLost};
    t["gpudoctor_gpu_owner_info"] = {std::nullopt, 1, false, Extra::kOwnerInfo};
    return t;
  }();
  return table;
}

std::string label_of(const std::map<std::string, std::string>& labels, const char* a,
                     const char* b = nullptr) {
  if (auto it = labels.find(a); it != labels.end() && !it->second.empty()) return it->second;
  if (b)
    if (auto it = labels.find(b); it != labels.end()) return it->second;
  return "";
}

struct GpuKey {
  std::string host;
  long gpu = 0;
  std::string uuid;
};

bool looks_like_uid(const std::string& s) {
  return s.size() == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-';
}

// The owner a series names: gpudoctor_gpu_owner_info's labels, or the job and pod labels that
// dcgm-exporter adds to every series (its HPC job mapping: hpc_job; its Kubernetes mapping: pod,
// namespace, container). A scrape that does not honour the target's labels keeps its own job (the
// scrape job), and through the Prometheus operator its pod and namespace, and renames the
// exporter's to exported_job, exported_pod, ...: those come first.
std::optional<Owner> owner_of_series(const std::map<std::string, std::string>& all,
                                     bool owner_info) {
  std::map<std::string, std::string> labels = all;
  for (const char* name : {"job", "step", "pod", "namespace", "container", "user"})
    if (auto it = all.find(std::string("exported_") + name); it != all.end() && !it->second.empty())
      labels[name] = it->second;
  Owner o;
  if (owner_info) {
    const auto kind = owner_kind_from_code(label_of(labels, "owner_kind"));
    if (!kind) return std::nullopt;
    o.kind = *kind;
    o.source = "gpudoctor_gpu_owner_info";
    o.step = label_of(labels, "step");
    o.pod_namespace = label_of(labels, "namespace");
    o.container = label_of(labels, "container");
    o.user = label_of(labels, "user");
    switch (o.kind) {
      case OwnerKind::kSlurmJob:
      case OwnerKind::kSystemdUnit:
        o.id = label_of(labels, "job");
        break;
      case OwnerKind::kK8sPod:
        o.id = label_of(labels, "pod");
        if (!looks_like_uid(o.id)) o.pod = o.id;
        break;
      case OwnerKind::kContainer:
        o.id = o.container;
        break;
      case OwnerKind::kProcess:
        break;
    }
    if (o.id.empty() && o.kind != OwnerKind::kProcess) return std::nullopt;
    return o;
  }
  if (const std::string job = label_of(labels, "hpc_job"); !job.empty()) {
    o.kind = OwnerKind::kSlurmJob;
    o.id = job;
    o.source = "dcgm-exporter hpc_job label";
    return o;
  }
  if (const std::string pod = label_of(labels, "pod"); !pod.empty()) {
    o.kind = OwnerKind::kK8sPod;
    o.id = pod;
    o.pod = pod;
    o.pod_namespace = label_of(labels, "namespace");
    o.container = label_of(labels, "container");
    o.source = "dcgm-exporter pod label";
    return o;
  }
  return std::nullopt;
}

}  // namespace

std::string prom_time_param(int64_t unix_ms) {
  return fmt::format("{}.{:03}", unix_ms / 1000, unix_ms % 1000);
}

std::string promql_string(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string promql_alternatives(const std::set<std::string>& values) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += '|';
    for (char c : v) {
      if (std::string_view(".+*?()[]{}|^$\\").find(c) != std::string_view::npos) out += "\\\\";
      if (c == '"') out += '\\';
      out += c;
    }
  }
  return out;
}

std::string promql_hosts_matcher(const std::set<std::string>& hosts) {
  if (hosts.empty()) return "";
  if (hosts.size() == 1) return "Hostname=\"" + promql_string(*hosts.begin()) + "\"";
  return "Hostname=~\"" + promql_alternatives(hosts) + "\"";
}

Result<std::string> selector_matchers(const std::string& selector) {
  std::string_view s = text::trim(selector);
  if (s.empty()) return std::string();
  const bool open = s.front() == '{', close = s.back() == '}';
  if (open != close) return usage_error(fmt::format("--selector {}: unbalanced braces", selector));
  if (open) s = text::trim(s.substr(1, s.size() - 2));
  if (s.find_first_of("{}") != std::string_view::npos)
    return usage_error(fmt::format(
        "--selector {}: give label matchers only, e.g. '{{Hostname=\"node7\"}}'", selector));
  return std::string(s);
}

std::vector<std::string> prometheus_metric_names() {
  std::vector<std::string> dcgm, own;
  for (const auto& [name, info] : name_table()) (info.dcgm ? dcgm : own).push_back(name);
  std::sort(dcgm.begin(), dcgm.end());
  std::sort(own.begin(), own.end());
  dcgm.insert(dcgm.end(), own.begin(), own.end());
  return dcgm;
}

Recording series_by_gpu(const std::vector<PromSeries>& series, const std::string& source) {
  const auto& names = name_table();
  // GPUs by key (UUID, else host and gpu index), in first-seen order, then sorted.
  std::map<std::string, size_t> index_of_key;
  std::vector<GpuKey> keys;
  std::vector<std::vector<const PromSeries*>> per_gpu;
  for (const auto& s : series) {
    const auto name_it = names.find(label_of(s.labels, "__name__"));
    if (name_it == names.end() || s.points.empty()) continue;
    const std::string gpu = label_of(s.labels, "gpu");
    const std::string uuid = label_of(s.labels, "UUID", "uuid");
    if (gpu.empty() && uuid.empty()) continue;
    GpuKey k{label_of(s.labels, "Hostname", "hostname"), std::atol(gpu.c_str()), uuid};
    if (k.host.empty()) k.host = label_of(s.labels, "instance");
    const std::string key = !uuid.empty() ? uuid : k.host + "/" + gpu;
    auto [it, fresh] = index_of_key.emplace(key, keys.size());
    if (fresh) {
      keys.push_back(k);
      per_gpu.emplace_back();
    }
    per_gpu[it->second].push_back(&s);
  }
  std::vector<size_t> order(keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(keys[a].host, keys[a].gpu, keys[a].uuid) <
           std::tie(keys[b].host, keys[b].gpu, keys[b].uuid);
  });
  std::set<std::string> hosts;
  for (const auto& k : keys) hosts.insert(k.host);

  Recording rec;
  rec.source = source;
  if (hosts.size() == 1) rec.system.hostname = *hosts.begin();
  int64_t start = std::numeric_limits<int64_t>::max();
  for (const auto& list : per_gpu)
    for (const auto* s : list) start = std::min(start, s->points.front().first);
  rec.start_unix_ms = keys.empty() ? 0 : start;

  for (size_t n = 0; n < order.size(); ++n) {
    const size_t gi = order[n];
    const GpuKey& k = keys[gi];
    GpuSeries g;
    g.info.index = static_cast<unsigned>(k.gpu);
    g.info.uuid = k.uuid;
    g.host = k.host;
    std::vector<int64_t> times;
    for (const auto* s : per_gpu[gi])
      for (const auto& p : s->points) times.push_back(p.first);
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    for (int64_t t : times) g.time_s.push_back(static_cast<double>(t - rec.start_unix_ms) / 1000.0);
    std::vector<double> fb_free(times.size(), kMissing), fb_reserved(times.size(), kMissing);
    std::vector<bool> has_value(times.size(), false);
    // Owners: the times each was named at, by owner.
    std::vector<std::pair<Owner, std::vector<int64_t>>> owner_times;
    auto owner_seen = [&](Owner o, const PromSeries& s) {
      auto it = std::find_if(owner_times.begin(), owner_times.end(),
                             [&](const auto& e) { return e.first == o; });
      if (it == owner_times.end()) {
        owner_times.emplace_back(std::move(o), std::vector<int64_t>{});
        it = owner_times.end() - 1;
      }
      for (const auto& [t, v] : s.points)
        if (!std::isnan(v)) it->second.push_back(t);
    };
    // DCGM's names first: where both are present they agree, and DCGM's is what dcgm-exporter
    // users have.
    std::vector<const PromSeries*> sorted = per_gpu[gi];
    std::stable_sort(sorted.begin(), sorted.end(), [&](const PromSeries* a, const PromSeries* b) {
      return names.at(label_of(a->labels, "__name__")).dcgm >
             names.at(label_of(b->labels, "__name__")).dcgm;
    });
    for (const auto* s : sorted) {
      const NameInfo& ni = names.at(label_of(s->labels, "__name__"));
      if (g.info.name.empty()) g.info.name = label_of(s->labels, "modelName", "model_name");
      if (g.info.pci_bus_id.empty()) g.info.pci_bus_id = label_of(s->labels, "pci_bus_id");
      if (rec.system.driver_version.empty())
        rec.system.driver_version = label_of(s->labels, "DCGM_FI_DRIVER_VERSION", "driver_version");
      if (ni.extra == Extra::kOwnerInfo || ni.dcgm)
        if (auto o = owner_of_series(s->labels, ni.extra == Extra::kOwnerInfo))
          owner_seen(std::move(*o), *s);
      if (ni.extra == Extra::kGpuInfo) {
        const std::string arch = label_of(s->labels, "architecture");
        if (!arch.empty()) g.info.architecture = architecture_from_name(arch);
        continue;
      }
      if (ni.extra == Extra::kOwnerInfo) continue;
      std::vector<double>* col = ni.field ? &g.column_for_write(*ni.field) : nullptr;
      for (const auto& [t, v] : s->points) {
        const size_t row =
            static_cast<size_t>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
        if (ni.extra == Extra::kGpuLost) {
          if (v == 1 && (!g.lost_at_s || g.time_s[row] < *g.lost_at_s)) g.lost_at_s = g.time_s[row];
          continue;
        }
        if (std::isnan(v)) continue;
        if (ni.extra == Extra::kFbFree) {
          fb_free[row] = v;
        } else if (ni.extra == Extra::kFbReserved) {
          fb_reserved[row] = v;
        } else if (col && is_missing((*col)[row])) {
          (*col)[row] = v * ni.scale;
          has_value[row] = true;
        }
      }
    }
    // Each owner's times become spans: a gap of more than a few samples ends one.
    if (!owner_times.empty()) {
      std::vector<int64_t> steps;
      for (size_t i = 1; i < times.size(); ++i) steps.push_back(times[i] - times[i - 1]);
      int64_t step = 0;
      if (!steps.empty()) {
        std::nth_element(steps.begin(), steps.begin() + static_cast<long>(steps.size() / 2),
                         steps.end());
        step = steps[steps.size() / 2];
      }
      const int64_t gap = std::max<int64_t>(3 * step, 1);
      for (auto& [o, ts] : owner_times) {
        std::sort(ts.begin(), ts.end());
        ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
        for (size_t i = 0; i < ts.size();) {
          size_t j = i;
          while (j + 1 < ts.size() && ts[j + 1] - ts[j] <= gap) ++j;
          g.owners.push_back({o, static_cast<double>(ts[i] - rec.start_unix_ms) / 1000.0,
                              static_cast<double>(ts[j] - rec.start_unix_ms) / 1000.0});
          i = j + 1;
        }
      }
      std::sort(g.owners.begin(), g.owners.end(),
                [](const OwnerSpan& a, const OwnerSpan& b) { return a.first_s < b.first_s; });
    }
    // dcgm-exporter's defaults have used and free memory, not the total.
    if (!g.has(Field::kMemTotal) && g.has(Field::kMemUsed)) {
      const auto& used = *g.column(Field::kMemUsed);
      bool any = false;
      std::vector<double> total(times.size(), kMissing);
      for (size_t r = 0; r < times.size(); ++r)
        if (!is_missing(used[r]) && !is_missing(fb_free[r])) {
          total[r] = used[r] + fb_free[r] + (is_missing(fb_reserved[r]) ? 0 : fb_reserved[r]);
          any = true;
        }
      if (any) g.column_for_write(Field::kMemTotal) = std::move(total);
    }
    // Rows where only a static field or nothing had a value (a GPU gone from some scrapes).
    size_t keep = 0;
    for (size_t r = 0; r < times.size(); ++r) {
      if (!has_value[r]) continue;
      g.time_s[keep] = g.time_s[r];
      for (auto& c : g.columns)
        if (c) (*c)[keep] = (*c)[r];
      ++keep;
    }
    g.time_s.resize(keep);
    for (auto& c : g.columns)
      if (c) c->resize(keep);
    if (keep > 0) rec.gpus.push_back(std::move(g));
  }
  return rec;
}

void number_across_hosts(Recording& rec) {
  std::set<std::string> hosts;
  for (const auto& g : rec.gpus) hosts.insert(g.host);
  rec.system.hostname = hosts.size() == 1 ? *hosts.begin() : "";
  if (hosts.size() < 2) return;
  for (size_t n = 0; n < rec.gpus.size(); ++n) {
    GpuSeries& g = rec.gpus[n];
    rec.notes.push_back(fmt::format("GPU {} is {} gpu {}{}", n, g.host, g.info.index,
                                    g.info.uuid.empty() ? "" : " (" + g.info.uuid + ")"));
    g.info.index = static_cast<unsigned>(n);
  }
}

Recording recording_from_series(const std::vector<PromSeries>& series, const std::string& source) {
  Recording rec = series_by_gpu(series, source);
  number_across_hosts(rec);
  return rec;
}

int64_t current_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<PrometheusQuery> prometheus_query(const std::string& url, const std::string& selector,
                                         const std::string& since, const std::string& until,
                                         int64_t now_unix_ms) {
  auto when = [&](const std::string& flag, const std::string& t) -> Result<int64_t> {
    if (auto d = parse_duration(t)) return now_unix_ms - d.value().count();
    if (auto ms = text::parse_timestamp_ms(t)) return *ms;
    return usage_error(fmt::format(
        "{} {}: with --prometheus, expected a duration back from now (2h, 30m) or a UTC time "
        "(2026-01-01T10:00:00Z)",
        flag, t));
  };
  PrometheusQuery q;
  q.url = url;
  q.selector = selector;
  auto s = when("--since", since.empty() ? "1h" : since);
  if (!s) return s.error();
  q.start_unix_ms = s.value();
  q.end_unix_ms = now_unix_ms;
  if (!until.empty()) {
    auto u = when("--until", until);
    if (!u) return u.error();
    q.end_unix_ms = u.value();
  }
  if (q.end_unix_ms <= q.start_unix_ms) return usage_error("--until must be later than --since");
  return q;
}

Result<PromFetch> fetch_prometheus_series(const PrometheusQuery& q) {
  auto url = net::parse_url(q.url);
  if (!url) return url.error();
  auto matchers = selector_matchers(q.selector);
  if (!matchers) return matchers.error();
  const std::string extra = matchers->empty() ? "" : "," + matchers.value();
  auto ask = [&](const std::string& endpoint, const std::string& params) {
    return prometheus_api(q, endpoint, params);
  };

  // The step: the scrape interval, from the raw samples of the last few minutes.
  const int64_t span_ms = q.end_unix_ms - q.start_unix_ms;
  double step_s = q.step_s.value_or(0);
  std::string step_note;
  if (step_s <= 0) {
    const std::string probe_names =
        "DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_GPU_UTIL|gpudoctor_power_watts|"
        "gpudoctor_gpu_utilization_percent";
    const int64_t window_s = std::max<int64_t>(1, std::min<int64_t>(600, span_ms / 1000));
    auto raw = ask("query", "query=" +
                                net::url_encode(fmt::format("{{__name__=~\"{}\"{}}}[{}s]",
                                                            probe_names, extra, window_s)) +
                                "&time=" + prom_time_param(q.end_unix_ms));
    if (!raw) return raw.error();
    std::vector<double> medians;
    for (const auto& s : raw.value()) {
      std::vector<int64_t> d;
      for (size_t i = 1; i < s.points.size(); ++i)
        d.push_back(s.points[i].first - s.points[i - 1].first);
      if (d.empty()) continue;
      std::nth_element(d.begin(), d.begin() + static_cast<long>(d.size() / 2), d.end());
      medians.push_back(static_cast<double>(d[d.size() / 2]) / 1000.0);
    }
    if (!medians.empty()) {
      step_s = *std::min_element(medians.begin(), medians.end());
      step_note = fmt::format("the scrape interval found in the last {} s", window_s);
    } else {
      // Nothing recent: the number of samples over the whole span gives the interval.
      auto counted = ask(
          "query", "query=" +
                       net::url_encode(fmt::format("count_over_time({{__name__=~\"{}\"{}}}[{}s])",
                                                   probe_names, extra, (span_ms + 999) / 1000)) +
                       "&time=" + prom_time_param(q.end_unix_ms));
      if (!counted) return counted.error();
      double most = 0;
      for (const auto& s : counted.value())
        for (const auto& p : s.points) most = std::max(most, p.second);
      if (most < 1)
        return failure(
            fmt::format("{}: no GPU series{} between {} and {} (looked for dcgm-exporter's "
                        "DCGM_FI_DEV_GPU_UTIL / DCGM_FI_DEV_POWER_USAGE and gpudoctor's names)",
                        q.url, q.selector.empty() ? "" : " matching " + q.selector,
                        text::format_timestamp_ms(q.start_unix_ms, '-'),
                        text::format_timestamp_ms(q.end_unix_ms, '-')));
      step_s = static_cast<double>(span_ms) / 1000.0 / most;
      step_note = "the span divided by its number of samples";
    }
  }
  const int64_t step_ms = std::max<int64_t>(1, std::llround(step_s * 1000));
  const size_t per_page = std::clamp<size_t>(q.max_points_per_query, 2, 11000);

  std::vector<std::string> all_names = prometheus_metric_names();
  std::string regex;
  for (const auto& n : all_names) regex += (regex.empty() ? "" : "|") + n;
  const std::string expr = net::url_encode(fmt::format("{{__name__=~\"{}\"{}}}", regex, extra));
  std::map<std::map<std::string, std::string>, PromSeries> merged;
  PromFetch out;
  for (int64_t page_start = q.start_unix_ms; page_start <= q.end_unix_ms;) {
    const int64_t page_end =
        std::min<int64_t>(q.end_unix_ms, page_start + static_cast<int64_t>(per_page - 1) * step_ms);
    auto page = ask("query_range", "query=" + expr + "&start=" + prom_time_param(page_start) +
                                       "&end=" + prom_time_param(page_end) +
                                       "&step=" + prom_time_param(step_ms));
    if (!page) return page.error();
    ++out.pages;
    for (auto& s : page.value()) {
      auto& m = merged[s.labels];
      if (m.labels.empty()) m.labels = s.labels;
      m.points.insert(m.points.end(), s.points.begin(), s.points.end());
    }
    page_start = page_end + step_ms;
  }
  out.series.reserve(merged.size());
  for (auto& [labels, s] : merged) out.series.push_back(std::move(s));
  out.step_s = static_cast<double>(step_ms) / 1000.0;
  out.step_note = step_note.empty() ? "given" : step_note;
  return out;
}

std::string prometheus_source(const PrometheusQuery& q) {
  return fmt::format("prometheus {}{}", q.url, q.selector.empty() ? "" : " " + q.selector);
}

std::string prometheus_read_note(const PromFetch& f) {
  return fmt::format("read {} series from Prometheus in {} range quer{} at a step of {} s ({})",
                     f.series.size(), f.pages, f.pages == 1 ? "y" : "ies", f.step_s, f.step_note);
}

Error no_gpu_series(const PrometheusQuery& q) {
  return failure(fmt::format(
      "{}: no GPU series{} between {} and {} (looked for dcgm-exporter's and gpudoctor's "
      "metric names, with a gpu or UUID label)",
      q.url, q.selector.empty() ? "" : " matching " + q.selector,
      text::format_timestamp_ms(q.start_unix_ms, '-'),
      text::format_timestamp_ms(q.end_unix_ms, '-')));
}

Result<Recording> load_prometheus(const PrometheusQuery& q, const LoadOptions& options) {
  auto fetched = fetch_prometheus_series(q);
  if (!fetched) return fetched.error();
  Recording rec = recording_from_series(fetched->series, prometheus_source(q));
  if (rec.gpus.empty()) return no_gpu_series(q);
  rec.notes.insert(rec.notes.begin(), prometheus_read_note(fetched.value()));
  log_reader::finish_series_gpus(rec, options.power_limit_w);
  if (!options.gpu_name.empty()) log_reader::name_unnamed_gpus(rec, options.gpu_name);
  return rec;
}

}  // namespace gpudoctor
