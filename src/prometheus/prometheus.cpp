#include "prometheus/prometheus.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "core/duration.hpp"
#include "formats/finish.hpp"
#include "net/http_client.hpp"
#include "text/text.hpp"

namespace gpudoctor {

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
        return no_data_error(
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
  return no_data_error(fmt::format(
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
