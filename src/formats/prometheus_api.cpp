// Prometheus' HTTP API (/api/v1/query, query_range, labels, label values, series): one call each,
// and the answers read with nlohmann's SAX interface straight into PromSeries, so that an answer
// of millions of points (fleet's range queries over a week of 1,000 GPUs) costs the points and
// not a JSON tree several times their size.
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/prometheus.hpp"
#include "net/http_client.hpp"

namespace gpudoctor {
namespace {

std::optional<double> parse_value(std::string_view s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf" || s == "Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// The answer's shape: {"status": ..., "errorType": ..., "error": ..., "data": {"resultType": ...,
// "result": [{"metric": {...}, "value": [t, "v"]} or {"metric": {...}, "values": [[t, "v"], ...]},
// ...]}}. Anything else in it is skipped. Points are checked as they come: [number, string], a
// time within Unix seconds 0..1e11.
class AnswerReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<PromSeries> out;
  std::string status, error_type, error;
  bool status_string = false;
  bool has_result = false;  // data.result is an array
  bool data_object = false;
  bool bad_point = false;
  bool root_object = false;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) override { return number(v); }
  bool binary(binary_t&) override { return scalar(); }

  bool string(string_t& v) override {
    if (misplaced()) return false;
    if (stack_.size() == 1) {
      if (key_ == "status") {
        status = v;
        status_string = true;
      } else if (key_ == "errorType") {
        error_type = v;
      } else if (key_ == "error") {
        error = v;
      }
      return true;
    }
    if (in_metric()) {
      out.back().labels[key_] = v;
      return true;
    }
    if (Frame* p = point_frame()) {
      if (p->count == 1 && p->time_ok) {
        const auto value = parse_value(v);
        if (value) {
          p->value = *value;
          p->value_ok = true;
        }
      }
      ++p->count;
      return true;
    }
    return true;
  }

  bool start_object(std::size_t) override {
    if (misplaced()) return false;
    const size_t d = stack_.size();
    Frame f;
    f.object = true;
    if (d == 0) {
      root_object = true;
      f.role = Role::kRoot;
    } else if (d == 1 && top().role == Role::kRoot && key_ == "data") {
      f.role = Role::kData;
      data_object = true;
    } else if (d == 3 && top().role == Role::kResult) {
      f.role = Role::kSeries;
      out.emplace_back();
    } else if (d == 4 && top().role == Role::kSeries && key_ == "metric") {
      f.role = Role::kMetric;
    }
    if (Frame* p = point_frame()) ++p->count;  // an object inside a point: not a point
    push(f);
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override {
    pop();
    return true;
  }
  bool start_array(std::size_t) override {
    const size_t d = stack_.size();
    Frame f;
    if (d == 2 && top().role == Role::kData && key_ == "result") {
      f.role = Role::kResult;
      has_result = true;
      out.clear();
    } else if (d == 4 && top().role == Role::kSeries && key_ == "values") {
      f.role = Role::kValues;
    } else if ((d == 4 && top().role == Role::kSeries && key_ == "value") ||
               (d == 5 && top().role == Role::kValues)) {
      f.role = Role::kPoint;
    } else if (Frame* p = point_frame()) {
      ++p->count;  // an array inside a point: not a point
    }
    push(f);
    return true;
  }
  bool end_array() override {
    const Frame f = top();
    pop();
    if (f.role == Role::kPoint) {
      if (f.count != 2 || !f.time_ok || !f.value_ok) {
        bad_point = true;
        return false;  // stop: the answer is refused whole
      }
      out.back().points.emplace_back(static_cast<int64_t>(std::llround(f.time * 1000)), f.value);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  enum class Role { kOther, kRoot, kData, kResult, kSeries, kMetric, kValues, kPoint };
  struct Frame {
    bool object = false;
    Role role = Role::kOther;
    size_t count = 0;  // a point's elements so far
    double time = 0, value = 0;
    bool time_ok = false, value_ok = false;
  };
  std::vector<Frame> stack_;
  std::string key_;

  Frame& top() { return stack_.back(); }
  void push(const Frame& f) { stack_.push_back(f); }
  void pop() { stack_.pop_back(); }
  bool in_metric() const { return !stack_.empty() && stack_.back().role == Role::kMetric; }
  // The point being read, when the next value is one of its elements.
  Frame* point_frame() { return !stack_.empty() && top().role == Role::kPoint ? &top() : nullptr; }
  // A value where a point should be (an element of "values", or "value" itself) that is no array.
  bool misplaced() {
    if (stack_.empty()) return false;
    const Role r = top().role;
    if (r == Role::kValues || (r == Role::kSeries && key_ == "value")) bad_point = true;
    return bad_point;
  }
  bool scalar() {
    if (misplaced()) return false;
    if (Frame* p = point_frame()) ++p->count;
    return true;
  }
  bool number(double v) {
    if (misplaced()) return false;
    if (Frame* p = point_frame()) {
      // Unix seconds; outside 1970..5138 it is no Prometheus timestamp (and would overflow ms).
      if (p->count == 0 && v >= 0 && v < 1e11) {
        p->time = v;
        p->time_ok = true;
      }
      ++p->count;
    }
    return true;
  }
};

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

Result<std::vector<PromSeries>> parse_prometheus_answer(std::string_view body) {
  AnswerReader reader;
  const bool ok = nlohmann::json::sax_parse(body.begin(), body.end(), &reader,
                                            nlohmann::json::input_format_t::json, true);
  if (reader.bad_point) return failure("a sample in the answer is not [unix time, \"value\"]");
  if (!ok || !reader.root_object)
    return failure("the answer is not the JSON of Prometheus' HTTP API");
  if (!reader.status_string || reader.status != "success")
    return failure(fmt::format("Prometheus answered {}: {}",
                               reader.error_type.empty() ? "error" : reader.error_type,
                               reader.error.empty() ? "(no message)" : reader.error));
  if (!reader.data_object || !reader.has_result) return failure("the answer has no data.result");
  return std::move(reader.out);
}

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
