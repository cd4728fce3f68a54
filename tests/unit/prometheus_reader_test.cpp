// Reading GPU series from Prometheus' HTTP API (diagnose --prometheus): answers, selectors, unit
// conversion from DCGM's names, grouping by host and GPU, paging against a stand-in server.
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exporter/http_server.hpp"
#include "prometheus/prometheus.hpp"

namespace gpudoctor {
namespace {

TEST(PrometheusReader, ParsesAnswers) {
  auto r = parse_prometheus_answer(R"({"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},
       "values":[[1700000000,"99"],[1700000015.5,"NaN"],[1700000030,"+Inf"],[1700000045,"1e2"]]}]}})");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  const auto& p = r->front().points;
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0], std::make_pair(int64_t{1700000000000}, 99.0));
  EXPECT_EQ(p[1].first, 1700000015500);
  EXPECT_TRUE(std::isnan(p[1].second));
  EXPECT_TRUE(std::isinf(p[2].second));
  EXPECT_EQ(p[3].second, 100);
  r = parse_prometheus_answer(
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"3"]}]}})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->front().points.front().second, 3);
  r = parse_prometheus_answer(
      R"({"status":"error","errorType":"bad_data","error":"parse error at char 3"})");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("bad_data: parse error at char 3"), std::string::npos);
  EXPECT_FALSE(parse_prometheus_answer("<html>proxy error</html>"));
  EXPECT_FALSE(parse_prometheus_answer(
      R"({"status":"success","data":{"result":[{"metric":{},"values":[[1,2]]}]}})"));
  // Found by fuzz/fuzz_prometheus: no data.result (operator[] on a missing key read past the
  // object), and fields of the wrong type (value() threw).
  EXPECT_FALSE(parse_prometheus_answer(
      R"({"status":"success","data":{"resultType":"vector","resuOt":[{"metric":{},"value":[1,"2"]}]}})"));
  r = parse_prometheus_answer(R"({"status":5,"errorType":[],"error":{}})");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("error: (no message)"), std::string::npos) << r.error().message;
  EXPECT_FALSE(parse_prometheus_answer(R"({"status":"success","data":[]})"));
  // Times that are no Unix seconds are refused, not wrapped around.
  for (const char* t : {"-1", "1e300", "123456789012"}) {
    r = parse_prometheus_answer(fmt::format(
        R"({{"status":"success","data":{{"result":[{{"metric":{{}},"values":[[{},"2"]]}}]}}}})",
        t));
    ASSERT_FALSE(r) << t;
    EXPECT_NE(r.error().message.find("[unix time, \"value\"]"), std::string::npos) << t;
  }
}

// The answer is read as a stream (no JSON tree): keys in any order, fields it does not know
// skipped whatever their shape, points of the wrong shape refused wherever they are.
TEST(PrometheusReader, ReadsAnswersAsAStream) {
  auto r = parse_prometheus_answer(R"({"data":{"result":[
      {"values":[[1700000000,"1"],[1700000030,"2"]],"metric":{"a":"x","n":1,"o":{"p":"q"},"b":"y"},
       "extra":[[1,"2",3],{"k":[]}]},
      {"metric":{},"value":[1700000000.25,"7"]}],
      "resultType":"matrix","stats":{"x":[1,2]}},"warnings":["w"],"status":"success"})");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].labels, (std::map<std::string, std::string>{{"a", "x"}, {"b", "y"}}));
  ASSERT_EQ((*r)[0].points.size(), 2u);
  EXPECT_EQ((*r)[0].points[1], std::make_pair(int64_t{1700000030000}, 2.0));
  EXPECT_EQ((*r)[1].points.front(), std::make_pair(int64_t{1700000000250}, 7.0));
  for (const char* point : {R"([1,"2",3])", R"([1,["2"]])", R"(["1","2"])", R"([1])",
                            R"([1,{"v":"2"}])", R"([1,"two"])", R"(5)"}) {
    r = parse_prometheus_answer(fmt::format(
        R"({{"status":"success","data":{{"result":[{{"metric":{{}},"values":[{}]}}]}}}})", point));
    ASSERT_FALSE(r) << point;
    EXPECT_NE(r.error().message.find("[unix time, \"value\"]"), std::string::npos) << point;
  }
  // Truncated, or something after the answer.
  EXPECT_FALSE(parse_prometheus_answer(R"({"status":"success","data":{"result":[)"));
  EXPECT_FALSE(parse_prometheus_answer(R"({"status":"success","data":{"result":[]}} x)"));
  EXPECT_TRUE(parse_prometheus_answer(R"({"status":"success","data":{"result":[]}})"));
}

TEST(PrometheusReader, Selectors) {
  EXPECT_EQ(selector_matchers("").value(), "");
  EXPECT_EQ(selector_matchers("{Hostname=\"node7\"}").value(), "Hostname=\"node7\"");
  EXPECT_EQ(selector_matchers(" job=\"gpu\", gpu=~\"0|1\" ").value(), "job=\"gpu\", gpu=~\"0|1\"");
  EXPECT_FALSE(selector_matchers("{Hostname=\"node7\""));
  EXPECT_FALSE(selector_matchers("up{job=\"x\"}"));
  const auto names = prometheus_metric_names();
  EXPECT_EQ(names.front().rfind("DCGM_", 0), 0u);
  EXPECT_NE(std::find(names.begin(), names.end(), "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"),
            names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "gpudoctor_power_watts"), names.end());
}

PromSeries series(const std::string& name, std::map<std::string, std::string> labels,
                  std::vector<std::pair<int64_t, double>> points) {
  labels["__name__"] = name;
  return {std::move(labels), std::move(points)};
}

TEST(PrometheusReader, BuildsOneSeriesPerGpuInCatalogueUnits) {
  const std::map<std::string, std::string> g0 = {{"gpu", "0"},
                                                 {"UUID", "GPU-a"},
                                                 {"Hostname", "node7"},
                                                 {"modelName", "NVIDIA A100-SXM4-80GB"},
                                                 {"pci_bus_id", "00000000:07:00.0"},
                                                 {"instance", "node7:9835"}};
  std::map<std::string, std::string> own0 = g0;  // gpudoctor's families carry no modelName
  own0.erase("modelName");
  const std::vector<PromSeries> in = {
      series("DCGM_FI_DEV_GPU_UTIL", g0, {{1000, 99}, {2000, 98}, {3000, 97}}),
      series("DCGM_FI_PROF_SM_ACTIVE", g0, {{1000, 0.25}, {2000, 0.5}}),
      series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", g0, {{1000, 5000}}),
      series("DCGM_FI_DEV_FB_USED", g0, {{1000, 1000}}),
      series("DCGM_FI_DEV_FB_FREE", g0, {{1000, 79000}}),
      series("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", g0, {{1000, 4}}),
      // Both names for power: DCGM's wins where both have a value.
      series("gpudoctor_power_watts", own0, {{1000, 111}, {3000, 333}}),
      series("DCGM_FI_DEV_POWER_USAGE", g0, {{1000, 100}}),
      series("gpudoctor_energy_joules_total", own0, {{2000, 6}}),
      series("gpudoctor_gpu_info", own0, {{1000, 1}}),
      series("gpudoctor_gpu_lost", own0, {{2000, 0}, {3000, 1}}),
      series("gpudoctor_build_info", {{"version", "1"}}, {{1000, 1}}),  // no GPU: ignored
      series("DCGM_FI_DEV_GPU_UTIL", {{"gpu", "1"}, {"Hostname", "node7"}}, {{1500, 10}}),
  };
  Recording rec = recording_from_series(in, "prometheus test");
  EXPECT_EQ(rec.source, "prometheus test");
  EXPECT_EQ(rec.system.hostname, "node7");
  EXPECT_EQ(rec.start_unix_ms, 1000);
  ASSERT_EQ(rec.gpus.size(), 2u);
  const GpuSeries& a = rec.gpus[0];
  EXPECT_EQ(a.info.index, 0u);
  EXPECT_EQ(a.info.uuid, "GPU-a");
  EXPECT_EQ(a.info.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(a.info.pci_bus_id, "00000000:07:00.0");
  EXPECT_EQ(a.time_s, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ((*a.column(Field::kGpmSmUtil))[1], 50);    // ratio -> percent
  EXPECT_EQ((*a.column(Field::kPower))[0], 100);       // DCGM's
  EXPECT_EQ((*a.column(Field::kPower))[2], 333);       // gpudoctor's where DCGM's has none
  EXPECT_EQ((*a.column(Field::kEnergy))[0], 5000);     // mJ
  EXPECT_EQ((*a.column(Field::kEnergy))[1], 6000);     // joules -> mJ
  EXPECT_EQ((*a.column(Field::kMemTotal))[0], 80000);  // used + free
  EXPECT_EQ((*a.column(Field::kClockEventReasons))[0], 4);
  EXPECT_TRUE(std::isnan((*a.column(Field::kGpmSmUtil))[2]));
  ASSERT_TRUE(a.lost_at_s);
  EXPECT_EQ(*a.lost_at_s, 2);
  EXPECT_EQ(rec.gpus[1].info.index, 1u);
  EXPECT_EQ(rec.gpus[1].time_s, (std::vector<double>{0.5}));
}

TEST(PrometheusReader, SeveralHostsAreNumberedInOrderAndNamed) {
  const std::vector<PromSeries> in = {
      series("DCGM_FI_DEV_GPU_UTIL", {{"gpu", "0"}, {"Hostname", "node8"}}, {{1000, 1}}),
      series("DCGM_FI_DEV_GPU_UTIL", {{"gpu", "1"}, {"Hostname", "node7"}}, {{1000, 2}}),
      series("DCGM_FI_DEV_GPU_UTIL", {{"gpu", "0"}, {"instance", "node7:9400"}}, {{1000, 3}}),
  };
  Recording rec = recording_from_series(in, "p");
  ASSERT_EQ(rec.gpus.size(), 3u);
  EXPECT_EQ(rec.system.hostname, "");
  // Sorted by host, then GPU: node7 gpu 1, node7:9400 gpu 0, node8 gpu 0.
  EXPECT_EQ((*rec.gpus[0].column(Field::kUtilGpu))[0], 2);
  EXPECT_EQ((*rec.gpus[1].column(Field::kUtilGpu))[0], 3);
  EXPECT_EQ((*rec.gpus[2].column(Field::kUtilGpu))[0], 1);
  for (unsigned i = 0; i < 3; ++i) EXPECT_EQ(rec.gpus[i].info.index, i);
  ASSERT_EQ(rec.notes.size(), 3u);
  EXPECT_EQ(rec.notes[0], "GPU 0 is node7 gpu 1");
  EXPECT_EQ(rec.notes[2], "GPU 2 is node8 gpu 0");
}

// The fixtures that also seed the fuzz target (fuzz/fuzz_prometheus.cpp): a dcgm-exporter range
// answer with its usual labels, and an instant answer under gpudoctor's own names.
TEST(PrometheusReader, ReadsTheFixtureAnswers) {
  auto read = [](const std::string& name) {
    std::ifstream in(std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/prometheus/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    auto r = parse_prometheus_answer(ss.str());
    EXPECT_TRUE(r) << name << ": " << (r ? "" : r.error().message);
    return r ? recording_from_series(*r, name) : Recording{};
  };
  const Recording dcgm = read("dcgm_exporter_range.json");
  ASSERT_EQ(dcgm.gpus.size(), 2u);
  EXPECT_EQ(dcgm.system.hostname, "node7");
  EXPECT_EQ(dcgm.gpus[0].info.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(dcgm.gpus[0].time_s, (std::vector<double>{0, 15, 30}));
  EXPECT_DOUBLE_EQ((*dcgm.gpus[0].column(Field::kGpmSmUtil))[0], 91);
  EXPECT_DOUBLE_EQ((*dcgm.gpus[0].column(Field::kPower))[1], 655.1);
  EXPECT_EQ((*dcgm.gpus[1].column(Field::kClockEventReasons))[0], 4);
  EXPECT_EQ((*dcgm.gpus[1].column(Field::kEnergy))[2], 81252567);  // DCGM counts mJ already
  const Recording own = read("gpudoctor_names_vector.json");
  ASSERT_EQ(own.gpus.size(), 1u);
  EXPECT_EQ(own.gpus[0].info.index, 3u);
  EXPECT_EQ(own.start_unix_ms, 1764500000125);
  EXPECT_DOUBLE_EQ((*own.gpus[0].column(Field::kEnergy))[0], 1500500);  // joules -> mJ
  EXPECT_DOUBLE_EQ((*own.gpus[0].column(Field::kPower))[0], 301.5);
}

std::string url_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

std::map<std::string, std::string> query_params(const std::string& q) {
  std::map<std::string, std::string> out;
  for (size_t pos = 0; pos <= q.size();) {
    const size_t amp = std::min(q.find('&', pos), q.size());
    const std::string kv = q.substr(pos, amp - pos);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) out[kv.substr(0, eq)] = url_decode(kv.substr(eq + 1));
    pos = amp + 1;
  }
  return out;
}

// A stand-in Prometheus: two GPUs of node7 scraped every 15 s, dcgm-exporter's names.
struct FakePrometheus {
  int64_t first_ms = 1'700'000'000'000, last_ms = first_ms + 3 * 3600 * 1000;
  std::mutex mu;
  std::vector<std::map<std::string, std::string>> calls;
  std::unique_ptr<HttpServer> server;

  nlohmann::json matrix(int64_t from_ms, int64_t to_ms, int64_t step_ms) {
    nlohmann::json result = nlohmann::json::array();
    for (int gpu = 0; gpu < 2; ++gpu)
      for (const auto& [name, value] :
           std::vector<std::pair<std::string, double>>{{"DCGM_FI_DEV_GPU_UTIL", 100},
                                                       {"DCGM_FI_DEV_POWER_USAGE", 120 + gpu},
                                                       {"DCGM_FI_PROF_SM_ACTIVE", 0.2}}) {
        nlohmann::json values = nlohmann::json::array();
        for (int64_t t = from_ms; t <= to_ms; t += step_ms)
          if (t >= first_ms && t <= last_ms)
            values.push_back({static_cast<double>(t) / 1000.0, fmt::format("{}", value)});
        result.push_back({{"metric",
                           {{"__name__", name},
                            {"gpu", std::to_string(gpu)},
                            {"UUID", "GPU-" + std::to_string(gpu)},
                            {"modelName", "NVIDIA H100 80GB HBM3"},
                            {"Hostname", "node7"}}},
                          {"values", values}});
      }
    return {{"status", "success"}, {"data", {{"resultType", "matrix"}, {"result", result}}}};
  }

  FakePrometheus() {
    HttpServerOptions o;
    o.listen = "127.0.0.1:0";
    auto s = HttpServer::start(o, [this](const HttpRequest& req) {
      auto p = query_params(req.query);
      {
        std::lock_guard lock(mu);
        auto logged = p;
        logged["path"] = req.path;
        calls.push_back(logged);
      }
      auto ms = [](const std::string& s) { return std::llround(std::stod(s) * 1000); };
      nlohmann::json answer;
      if (req.path == "/api/v1/query") {  // the probe for the scrape interval: raw samples
        const int64_t t = ms(p["time"]);
        const int64_t from = (t - 600'000) / 15000 * 15000 + 15000;
        answer = matrix(from, t, 15000);
      } else if (req.path == "/api/v1/query_range") {
        const int64_t from = ms(p["start"]), to = ms(p["end"]), step = ms(p["step"]);
        if ((to - from) / step + 1 > 11000)
          answer = {{"status", "error"}, {"errorType", "bad_data"}, {"error", "too many points"}};
        else
          answer = matrix(from, to, step);
      } else {
        return HttpResponse::text(404, "no\n");
      }
      HttpResponse r;
      r.content_type = "application/json";
      r.body = std::make_shared<const std::string>(answer.dump());
      return r;
    });
    EXPECT_TRUE(s);
    server = std::move(s.value());
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", server->port()); }
};

TEST(PrometheusReader, PagesRangeQueriesAtTheScrapeInterval) {
  FakePrometheus prom;
  const int64_t end = prom.first_ms + 2 * 3600 * 1000;
  auto q = prometheus_query(prom.url(), "{Hostname=\"node7\"}", "2h", "", end);
  ASSERT_TRUE(q) << q.error().message;
  q->max_points_per_query = 100;
  auto rec = load_prometheus(q.value());
  ASSERT_TRUE(rec) << rec.error().message;
  ASSERT_EQ(rec->gpus.size(), 2u);
  EXPECT_EQ(rec->gpus[0].size(), 481u);  // 2 h at 15 s, both ends
  EXPECT_EQ(rec->gpus[1].size(), 481u);
  EXPECT_EQ((*rec->gpus[0].column(Field::kGpmSmUtil))[0], 20);
  EXPECT_EQ((*rec->gpus[1].column(Field::kPower))[5], 121);
  // No limit in dcgm-exporter's defaults: the model table's, said so.
  EXPECT_EQ(rec->gpus[0].power_limit_source, "model-table");
  EXPECT_NE(rec->notes.front().find("in 5 range queries at a step of 15 s"), std::string::npos)
      << rec->notes.front();
  std::lock_guard lock(prom.mu);
  ASSERT_EQ(prom.calls.size(), 6u);  // the probe, then 5 pages of at most 100 points
  EXPECT_EQ(prom.calls[0]["path"], "/api/v1/query");
  EXPECT_NE(prom.calls[0]["query"].find("Hostname=\"node7\"}[600s]"), std::string::npos)
      << prom.calls[0]["query"];
  double expected_start = static_cast<double>(end - 2 * 3600 * 1000) / 1000;
  for (size_t i = 1; i < prom.calls.size(); ++i) {
    auto& c = prom.calls[i];
    EXPECT_EQ(c["path"], "/api/v1/query_range");
    EXPECT_EQ(c["step"], "15.000");
    EXPECT_DOUBLE_EQ(std::stod(c["start"]), expected_start);  // contiguous, no overlap
    const double points = (std::stod(c["end"]) - std::stod(c["start"])) / 15 + 1;
    EXPECT_LE(points, 100);
    expected_start = std::stod(c["end"]) + 15;
    EXPECT_EQ(c["query"].rfind("{__name__=~\"DCGM_", 0), 0u);
    EXPECT_NE(c["query"].find(",Hostname=\"node7\"}"), std::string::npos);
  }
}

TEST(PrometheusReader, ErrorsSayWhatWasMissing) {
  FakePrometheus prom;
  // Long before the data: nothing to read.
  auto q = prometheus_query(prom.url(), "", "1h", "", prom.first_ms - 24 * 3600 * 1000);
  ASSERT_TRUE(q);
  auto rec = load_prometheus(q.value());
  ASSERT_FALSE(rec);
  EXPECT_NE(rec.error().message.find("no GPU series"), std::string::npos) << rec.error().message;
  EXPECT_FALSE(prometheus_query(prom.url(), "", "yesterday", "", 0));
  EXPECT_FALSE(prometheus_query(prom.url(), "", "1h", "2h", 10'000'000));  // until before since
  auto bad = prometheus_query("http://127.0.0.1:1", "", "1h", "", 10'000'000);
  ASSERT_TRUE(bad);
  auto refused = load_prometheus(bad.value());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("cannot connect"), std::string::npos);
}

}  // namespace
}  // namespace gpudoctor
