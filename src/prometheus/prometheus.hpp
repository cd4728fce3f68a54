// Telemetry from a Prometheus server: `gpudoctor diagnose --prometheus URL --since 2h
// [--selector '{Hostname="node7"}']`. Pulls the GPU series over the HTTP API (range queries,
// paged so no query asks for more than Prometheus' 11,000 points per series) under either
// dcgm-exporter's names (DCGM_FI_DEV_POWER_USAGE, DCGM_FI_PROF_SM_ACTIVE, ...: what `gpudoctor
// serve` exports by default, and what clusters running dcgm-exporter already have) or
// gpudoctor's own (serve --no-dcgm-names) and builds, through formats/prom_series (the answers
// read, DCGM units converted back to the catalogue's), one Recording with a GpuSeries per GPU (per
// host and gpu label), so the same diagnosis runs on it. The step is the scrape interval found in
// the data unless given.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/load.hpp"
#include "formats/prom_series.hpp"

namespace gpudoctor {

struct PrometheusQuery {
  std::string url;       // http(s)://[user:password@]host:port[/prefix]
  std::string selector;  // label matchers, with or without braces: {Hostname="node7"}
  int64_t start_unix_ms = 0, end_unix_ms = 0;
  std::optional<double> step_s;  // default: the scrape interval found in the data
  size_t max_points_per_query = 10000;
  std::chrono::milliseconds timeout{60000};  // per HTTP request
};

// The wall clock now, in ms since the Unix epoch.
int64_t current_unix_ms();

// since: a duration back from now ("2h") or a UTC time; until: the same, "" for now.
Result<PrometheusQuery> prometheus_query(const std::string& url, const std::string& selector,
                                         const std::string& since, const std::string& until,
                                         int64_t now_unix_ms);

// All the GPUs the query finds in one Recording (GPUs of several hosts numbered 0.. with a note
// each). `diagnose --prometheus` groups them into runs instead (prometheus/prometheus_runs).
Result<Recording> load_prometheus(const PrometheusQuery& query, const LoadOptions& options = {});

// One call of the HTTP API (endpoint "query" or "query_range", URL-encoded parameters): the
// series of the answer, or an error that says what went wrong (unreachable, refused, not a
// Prometheus API, Prometheus' own error).
Result<std::vector<PromSeries>> prometheus_api(const PrometheusQuery& q,
                                               const std::string& endpoint,
                                               const std::string& params);
// The label names of the series `match` selects over the query's span (/api/v1/labels: read from
// the index, no samples).
Result<std::vector<std::string>> prometheus_label_names(const PrometheusQuery& q,
                                                        const std::string& match);
// The values of `label` among those series (/api/v1/label/NAME/values: the index).
Result<std::vector<std::string>> prometheus_label_values(const PrometheusQuery& q,
                                                         const std::string& label,
                                                         const std::string& match);
// The label sets of those series (/api/v1/series: the index).
Result<std::vector<std::map<std::string, std::string>>> prometheus_series_labels(
    const PrometheusQuery& q, const std::string& match);

// The GPU series of the query's span, paged, at the scrape interval (or the given step).
struct PromFetch {
  std::vector<PromSeries> series;
  size_t pages = 0;
  double step_s = 0;
  std::string step_note;  // where the step came from
};
Result<PromFetch> fetch_prometheus_series(const PrometheusQuery& q);
std::string prometheus_source(const PrometheusQuery& q);  // "prometheus URL [SELECTOR]"
std::string prometheus_read_note(const PromFetch& f);
Error no_gpu_series(const PrometheusQuery& q);  // the message when the span has none

// PromQL text: a value for a "..." string (quotes and backslashes escaped); the values as
// alternatives for a regex matcher, a|b|c (regex metacharacters escaped, then escaped again for the
// string); Hostname="h" or Hostname=~"a|b" for a set of hosts ("" for none); unix ms as the API's
// time parameters take them ("1700000000.000").
std::string promql_string(const std::string& s);
std::string promql_alternatives(const std::set<std::string>& values);
std::string promql_hosts_matcher(const std::set<std::string>& hosts);
std::string prom_time_param(int64_t unix_ms);

// --- the pieces, for tests ---

// `{a="b"}` or `a="b"` -> `a="b"`; errors for unbalanced braces.
Result<std::string> selector_matchers(const std::string& selector);

}  // namespace gpudoctor
