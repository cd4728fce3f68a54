// Prometheus' HTTP API (/api/v1/query, query_range, labels, label values, series): one call each.
// Query answers are read into PromSeries by formats/prom_series (nlohmann's SAX interface, so an
// answer of millions of points costs the points and not a JSON tree several times their size).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "net/http_client.hpp"
#include "prometheus/prometheus.hpp"

namespace gpudoctor {
namespace {

// One call of the HTTP API: its status and body, or an error that says what went wrong.
Result<std::pair<int, std::string>> api_body(const PrometheusQuery& q, const std::string& endpoint,
                                             const std::string& params) {
  auto url = net::parse_url(q.url);
  if (!url) return url.error();
  net::HttpGetOptions get;
  get.timeout = q.timeout;
  get.headers.emplace_back("Accept", "application/json");
  auto r = net::http_get(url.value(), "/api/v1/" + endpoint + "?" + params, get);
  if (!r) return r.error();
  if (r->status == 401 || r->status == 403)
    return failure(
        fmt::format("{}: Prometheus refused the query (HTTP {}); put the user and "
                    "password in the URL (http://user:pass@host:9090)",
                    q.url, r->status));
  if (r->status == 404)
    return failure(fmt::format(
        "{}: no Prometheus HTTP API there (HTTP 404 for /api/v1/{}); give the server's base URL, "
        "e.g. http://prometheus:9090 (with its --web.route-prefix, if it has one)",
        q.url, endpoint));
  return std::make_pair(r->status, std::move(r->body));
}

// The "data" array of an index endpoint's answer (labels, label values, series).
Result<nlohmann::json> data_array(const PrometheusQuery& q, const std::string& endpoint,
                                  const std::string& params) {
  auto body = api_body(q, endpoint, params);
  if (!body) return body.error();
  auto j = nlohmann::json::parse(body->second, nullptr, false);
  const auto data = j.is_object() ? j.find("data") : j.end();
  const auto status = j.is_object() ? j.find("status") : j.end();
  if (status == j.end() || *status != "success" || data == j.end() || !data->is_array())
    return failure(fmt::format("{} (HTTP {}): the answer to /api/v1/{} is not Prometheus'", q.url,
                               body->first, endpoint));
  return std::move(*data);
}

Result<std::vector<std::string>> string_list(const PrometheusQuery& q, const std::string& endpoint,
                                             const std::string& params) {
  auto data = data_array(q, endpoint, params);
  if (!data) return data.error();
  std::vector<std::string> names;
  for (const auto& n : data.value())
    if (n.is_string()) names.push_back(n.get<std::string>());
  return names;
}

std::string span_params(const PrometheusQuery& q, const std::string& match) {
  return "match[]=" + net::url_encode(match) + "&start=" + prom_time_param(q.start_unix_ms) +
         "&end=" + prom_time_param(q.end_unix_ms);
}

}  // namespace

Result<std::vector<PromSeries>> prometheus_api(const PrometheusQuery& q,
                                               const std::string& endpoint,
                                               const std::string& params) {
  auto body = api_body(q, endpoint, params);
  if (!body) return body.error();
  auto parsed = parse_prometheus_answer(body->second);
  if (!parsed)
    return failure(fmt::format("{} (HTTP {}): {}", q.url, body->first, parsed.error().message));
  return parsed;
}

Result<std::vector<std::string>> prometheus_label_names(const PrometheusQuery& q,
                                                        const std::string& match) {
  return string_list(q, "labels", span_params(q, match));
}

Result<std::vector<std::string>> prometheus_label_values(const PrometheusQuery& q,
                                                         const std::string& label,
                                                         const std::string& match) {
  return string_list(q, "label/" + net::url_encode(label) + "/values", span_params(q, match));
}

Result<std::vector<std::map<std::string, std::string>>> prometheus_series_labels(
    const PrometheusQuery& q, const std::string& match) {
  auto data = data_array(q, "series", span_params(q, match));
  if (!data) return data.error();
  std::vector<std::map<std::string, std::string>> out;
  for (const auto& s : data.value()) {
    if (!s.is_object()) continue;
    auto& labels = out.emplace_back();
    for (const auto& [k, v] : s.items())
      if (v.is_string()) labels[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace gpudoctor
