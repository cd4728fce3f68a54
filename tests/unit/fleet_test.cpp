// The GPUs of a Prometheus server grouped into runs (diagnose --prometheus --group-by), and
// `gpudoctor fleet`: tallies, ranking, row names, drill-down commands, renderings, and the ledger
// path's queries against a stand-in server (a fixed number whatever the number of GPUs). The
// whole of it against a real Prometheus: tests/integration/fleet_test.py.
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exporter/http_server.hpp"
#include "fleet/fleet.hpp"
#include "prometheus/prometheus.hpp"
#include "prometheus/prometheus_runs.hpp"
#include "report/fleet_report.hpp"

namespace gpudoctor {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

PromSeries series(std::map<std::string, std::string> labels, int from, int to, double value = 1) {
  PromSeries s;
  s.labels = std::move(labels);
  for (int i = from; i <= to; ++i) s.points.emplace_back(kT0 + i * 10'000, value);
  return s;
}

std::map<std::string, std::string> gpu(const std::string& name, const std::string& host,
                                       const std::string& index, const std::string& uuid) {
  return {{"__name__", name}, {"Hostname", host}, {"gpu", index}, {"UUID", uuid}};
}

// Host a: GPU 0 held by job 1 (alice) for 50 samples, by no one for 10, by job 2 (bob) for 40;
// GPU 1 held by pod ml/nb-0 throughout. Host b (dots in its name): GPU 0 with dcgm-exporter's
// hpc_job label 7. The owner info arrives as a scrape that does not honour labels leaves it:
// the scrape job in `job`, gpudoctor's in `exported_job`.
std::vector<PromSeries> two_hosts() {
  std::vector<PromSeries> in;
  in.push_back(series(gpu("DCGM_FI_DEV_GPU_UTIL", "a", "0", "A0"), 0, 99, 90));
  in.push_back(series(gpu("DCGM_FI_DEV_GPU_UTIL", "a", "1", "A1"), 0, 99, 90));
  auto b = gpu("DCGM_FI_DEV_GPU_UTIL", "b.example", "0", "B0");
  b["hpc_job"] = "7";
  in.push_back(series(b, 0, 99, 50));
  auto owner = [&](std::map<std::string, std::string> extra, const std::string& uuid, int from,
                   int to) {
    auto l = gpu("gpudoctor_gpu_owner_info", "a", uuid == "A0" ? "0" : "1", uuid);
    l["job"] = "gpudoctor";  // the scrape job
    for (auto& [k, v] : extra) l[k] = v;
    in.push_back(series(l, from, to));
  };
  owner({{"owner_kind", "slurm_job"}, {"exported_job", "1"}, {"step", "0"}, {"user", "alice"}},
        "A0", 0, 49);
  owner({{"owner_kind", "slurm_job"}, {"exported_job", "2"}, {"step", "0"}, {"user", "bob"}}, "A0",
        60, 99);
  owner({{"owner_kind", "k8s_pod"}, {"pod", "nb-0"}, {"namespace", "ml"}, {"container", "main"}},
        "A1", 0, 99);
  return in;
}

std::map<std::string, const PromRun*> by_name(const std::vector<PromRun>& runs) {
  std::map<std::string, const PromRun*> m;
  for (const auto& r : runs) m[r.name] = &r;
  return m;
}

TEST(PromRuns, OneRunPerHost) {
  const auto runs = group_runs(series_by_gpu(two_hosts(), "p"), PromGroupBy::kHost);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].name, "a");
  EXPECT_EQ(runs[0].kind, "host");
  ASSERT_EQ(runs[0].rec.gpus.size(), 2u);
  EXPECT_EQ(runs[0].rec.gpus[1].info.index, 1u);  // a host's own numbering kept
  EXPECT_EQ(runs[0].rec.system.hostname, "a");
  EXPECT_EQ(runs[0].selector, "{Hostname=\"a\"}");  // the whole host
  EXPECT_EQ(runs[1].name, "b.example");
  EXPECT_EQ(runs[1].selector, "{Hostname=\"b.example\"}");
  EXPECT_EQ(runs[1].rec.gpus[0].size(), 100u);
  EXPECT_NE(runs_summary(runs, PromGroupBy::kHost).find("2 runs, 3 GPUs on 2 hosts"),
            std::string::npos)
      << runs_summary(runs, PromGroupBy::kHost);
}

TEST(PromRuns, OneRunPerOwnerCutToItsTime) {
  const auto runs = group_runs(series_by_gpu(two_hosts(), "p"), PromGroupBy::kJob);
  const auto m = by_name(runs);
  ASSERT_EQ(m.size(), 5u) << runs_summary(runs, PromGroupBy::kJob);
  // exported_job, not the scrape job, names the Slurm job.
  ASSERT_TRUE(m.count("job 1 (alice)"));
  const PromRun& alice = *m.at("job 1 (alice)");
  EXPECT_EQ(alice.kind, "owner");
  ASSERT_TRUE(alice.owner);
  EXPECT_EQ(alice.owner->id, "1");
  ASSERT_EQ(alice.rec.gpus.size(), 1u);
  EXPECT_EQ(alice.rec.gpus[0].size(), 50u);
  EXPECT_EQ(alice.rec.gpus[0].info.uuid, "A0");
  EXPECT_EQ(alice.selector, "{Hostname=\"a\",UUID=\"A0\"}");  // some of a host: by UUID
  EXPECT_EQ(m.at("job 2 (bob)")->rec.gpus[0].size(), 40u);
  EXPECT_EQ(m.at("pod ml/nb-0")->rec.gpus[0].size(), 100u);
  EXPECT_EQ(m.at("job 7")->rec.gpus[0].size(), 100u);  // dcgm-exporter's hpc_job label
  EXPECT_EQ(m.at("job 7")->owner->source, "dcgm-exporter hpc_job label");
  // The ten samples no one held GPU 0 of host a are that host's own run.
  ASSERT_TRUE(m.count("a (no owner)"));
  ASSERT_EQ(m.at("a (no owner)")->rec.gpus.size(), 1u);
  EXPECT_EQ(m.at("a (no owner)")->rec.gpus[0].size(), 10u);
  EXPECT_NE(runs_summary(runs, PromGroupBy::kJob).find("5 runs, 3 GPUs on 2 hosts"),
            std::string::npos);

  // Grouped by pod: only pods have runs of their own.
  const auto pod_runs = group_runs(series_by_gpu(two_hosts(), "p"), PromGroupBy::kPod);
  const auto pods = by_name(pod_runs);
  ASSERT_EQ(pods.size(), 3u);
  EXPECT_EQ(pods.at("pod ml/nb-0")->rec.gpus[0].size(), 100u);
  EXPECT_EQ(pods.at("a (no owner)")->rec.gpus[0].size(), 100u);
  EXPECT_EQ(pods.at("b.example (no owner)")->rec.gpus[0].size(), 100u);
}

TEST(PromRuns, AllInOneNumbersAcrossHosts) {
  const auto runs = group_runs(series_by_gpu(two_hosts(), "p"), PromGroupBy::kNone);
  ASSERT_EQ(runs.size(), 1u);
  const Recording& rec = runs[0].rec;
  ASSERT_EQ(rec.gpus.size(), 3u);
  EXPECT_EQ(rec.gpus[2].info.index, 2u);
  EXPECT_EQ(rec.system.hostname, "");
  EXPECT_NE(std::find(rec.notes.begin(), rec.notes.end(), "GPU 2 is b.example gpu 0 (B0)"),
            rec.notes.end());
  // Several hosts: the host regex escapes the dot (twice: regex, then the PromQL string).
  EXPECT_EQ(runs[0].selector, "{Hostname=~\"a|b\\\\.example\",UUID=~\"A0|A1|B0\"}");
  // recording_from_series (saved answers, text snapshots) is the same single recording.
  const Recording same = recording_from_series(two_hosts(), "p");
  EXPECT_EQ(same.gpus.size(), 3u);
  EXPECT_EQ(same.gpus[2].info.index, 2u);
}

TEST(Fleet, TalliesAndRowNames) {
  FleetTally t;
  EXPECT_FALSE(t.efficiency());
  EXPECT_FALSE(t.main_cause());
  t.working_s = 30;
  t.lost_s = 50;
  t.idle_allocated_s = 20;
  t.free_s = 100;
  t.by_cause[static_cast<size_t>(Cause::kDataStarvation)] = 50;
  t.by_cause[static_cast<size_t>(Cause::kIdle)] = 20;
  EXPECT_DOUBLE_EQ(t.total_s(), 200);
  EXPECT_DOUBLE_EQ(t.allocated_s(), 100);
  EXPECT_DOUBLE_EQ(t.wasted_s(), 70);
  EXPECT_DOUBLE_EQ(*t.efficiency(), 0.3);
  EXPECT_EQ(*t.main_cause(), Cause::kDataStarvation);

  EXPECT_EQ(
      fleet_row_label(FleetBy::kJob, {{"owner_kind", "slurm_job"}, {"job", "4"}, {"user", "al"}}),
      "job 4 (al)");
  EXPECT_EQ(fleet_row_label(FleetBy::kJob,
                            {{"owner_kind", "k8s_pod"}, {"pod", "p"}, {"namespace", "ns"}}),
            "pod ns/p");
  EXPECT_EQ(fleet_row_label(FleetBy::kJob, {{"owner_kind", "process"}, {"user", "eve"}}),
            "processes of eve");
  EXPECT_EQ(fleet_row_label(FleetBy::kUser, {}), "(no user known)");
  EXPECT_EQ(fleet_row_label(FleetBy::kHost, {{"Hostname", "n1"}}), "n1");
  Owner o;
  o.kind = OwnerKind::kK8sPod;
  o.id = "0c5e2f7a-91d4-4b3e-a6f0-3d8b7c1e9a42";
  o.pod_namespace = "research";
  const auto l = owner_info_labels(o);
  EXPECT_EQ(l.at("pod"), o.id);  // no name known: the UID, as serve exports it
  EXPECT_EQ(l.at("namespace"), "research");
  EXPECT_FALSE(l.count("job"));
}

FleetReport sample_report() {
  FleetReport r;
  r.source = "http://prom:9090";
  r.path = "ledger";
  r.by = FleetBy::kJob;
  r.start_unix_ms = kT0;
  r.end_unix_ms = kT0 + 7 * 86400 * 1000;
  r.gpus = 3;
  r.hosts = {"n1", "n2.lab"};
  return r;
}

TEST(Fleet, RanksByLostTimeAndDrillsDown) {
  FleetReport r = sample_report();
  std::vector<FleetRow> rows(3);
  rows[0].labels = {{"owner_kind", "slurm_job"}, {"job", "1"}, {"user", "a"}};
  rows[0].t.working_s = 100;
  rows[0].t.lost_s = 10;
  rows[0].hosts = {"n1"};
  rows[1].labels = {{"owner_kind", "slurm_job"}, {"job", "2"}, {"user", "b"}};
  rows[1].t.lost_s = 50;
  rows[1].t.by_cause[static_cast<size_t>(Cause::kLaunchOverhead)] = 50;
  rows[1].hosts = {"n1", "n2.lab"};
  rows[2].unowned = true;
  rows[2].t.idle_allocated_s = 30;
  FleetOptions o;
  o.prom.selector = "{cluster=\"x\"}";
  o.top = 2;
  finish_fleet_rows(r, rows, o);
  EXPECT_EQ(r.rows_total, 3u);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].label, "job 2 (b)");
  EXPECT_EQ(r.rows[1].label, "(no owner)");
  EXPECT_EQ(r.rows[0].drill,
            "gpudoctor diagnose --prometheus 'http://prom:9090' --since 2023-11-14T22:13:20Z "
            "--until 2023-11-21T22:13:20Z --group-by job --selector "
            "'{cluster=\"x\",Hostname=~\"n1|n2\\\\.lab\"}'");
  // The renderings.
  const auto j = fleet_json(r);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["rows"][0]["rank"], 1);
  EXPECT_EQ(j["rows"][0]["tally"]["main_cause"], "launch_overhead");
  EXPECT_DOUBLE_EQ(j["rows"][0]["tally"]["lost_gpu_hours"].get<double>(), 50.0 / 3600);
  EXPECT_TRUE(j["rows"][1]["tally"]["main_cause"].is_null());
  EXPECT_EQ(j["rows_total"], 3);
  const std::string csv = fleet_csv(r);
  EXPECT_NE(csv.find("\n1,job 2 (b),"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",\"gpudoctor diagnose --prometheus 'http://prom:9090'"), std::string::npos);
  const std::string text = fleet_text(r);
  EXPECT_NE(text.find("Top 2 of 3 owners"), std::string::npos) << text;
  r.rows[0].label = "job <script>";
  const std::string html = fleet_html(r);
  EXPECT_EQ(html.find("<script>"), html.rfind("<script>"));  // only the page's own
  EXPECT_NE(html.find("job &lt;script&gt;"), std::string::npos);
  EXPECT_NE(fleet_markdown(r).find("| 1 | job <script> |"), std::string::npos);
}

// A stand-in Prometheus for the ledger path, with answers shaped like a real server's, recording
// every query. G GPUs on two hosts, scraped every 15 s (so a step of 60 s over an hour: 60 steps).
// n1's GPUs: each step 30 s working, 20 s lost to data starvation, 10 s free; held by job 9 (z)
// throughout and by job 10 (y) too in the second half. n2's GPUs: 60 s working a step, no owner,
// and no samples after step 49 (the host stopped reporting). n3 has dcgm-exporter's series only.
struct LedgerProm {
  size_t gpus;
  bool refuse_causes = false;  // answer the cause queries as a server that ran out of time
  std::mutex mu;
  std::vector<std::string> queries;  // path and query of each request
  std::unique_ptr<HttpServer> server;

  static std::string decode(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += s[i] == '+' ? ' ' : s[i];
      }
    }
    return out;
  }
  static std::map<std::string, std::string> params(const std::string& query) {
    std::map<std::string, std::string> p;
    for (size_t pos = 0; pos <= query.size();) {
      const size_t amp = std::min(query.find('&', pos), query.size());
      const std::string kv = query.substr(pos, amp - pos);
      if (const size_t eq = kv.find('='); eq != std::string::npos)
        p[kv.substr(0, eq)] = decode(kv.substr(eq + 1));
      pos = amp + 1;
    }
    return p;
  }
  static nlohmann::json gpu_labels(size_t i) {
    return {{"Hostname", i % 2 ? "n2" : "n1"}, {"UUID", fmt::format("GPU-{}", i)}};
  }

  explicit LedgerProm(size_t n) : gpus(n) {
    HttpServerOptions o;
    o.listen = "127.0.0.1:0";
    auto s = HttpServer::start(o, [this](const HttpRequest& req) {
      auto p = params(req.query);
      const std::string q = p.count("query") ? p["query"] : p["match[]"];
      {
        std::lock_guard lock(mu);
        queries.push_back(req.path + " " + q);
      }
      nlohmann::json result = nlohmann::json::array();
      if (req.path == "/api/v1/series") {
        const bool info = q.find("gpudoctor_gpu_info") != std::string::npos;
        for (size_t i = 0; i < gpus; ++i) {
          auto l = gpu_labels(i);
          l["__name__"] = info ? "gpudoctor_gpu_info" : "gpudoctor_gpu_seconds_total";
          if (info)
            l["model_name"] = i % 2 ? "NVIDIA A100-SXM4-80GB" : "NVIDIA H100 80GB HBM3";
          else
            l["state"] = "working";
          result.push_back(l);
        }
        return list(result);
      }
      if (req.path == "/api/v1/labels")
        return list({"Hostname", "UUID", "__name__", "exported_job", "job", "owner_kind", "user"});
      if (req.path == "/api/v1/label/cause/values") return list({"data_starvation", "healthy"});
      if (req.path == "/api/v1/label/Hostname/values") return list({"n1", "n2", "n3"});
      if (req.path == "/api/v1/query") {  // the scrape interval: one GPU's raw samples
        const std::string raw =
            "gpudoctor_gpu_seconds_total{state=\"working\",Hostname=\"n1\",UUID=\"GPU-0\"}[600s]";
        if (q == raw) {
          nlohmann::json values = nlohmann::json::array();
          for (int i = 0; i < 40; ++i) values.push_back({kT0 / 1000.0 + 3000 + 15 * i, "1"});
          result.push_back({{"metric", gpu_labels(0)}, {"values", values}});
          return reply(result, "matrix");
        }
        return reply(result, "vector");
      }
      // Range queries: a point per step; step k ends at start + k * step.
      const auto ms = [](const std::string& v) { return std::llround(std::stod(v) * 1000); };
      const int64_t start = ms(p["start"]), end = ms(p["end"]), step = ms(p["step"]);
      auto points = [&](size_t gpu, const std::function<double(size_t, bool)>& value) {
        nlohmann::json values = nlohmann::json::array();
        for (int64_t t = start, k = 0; t <= end; t += step, ++k) {
          const bool n1 = gpu % 2 == 0;
          if (!n1 && k >= 50) break;
          const double v = value(static_cast<size_t>(k), n1);
          if (v > 0) values.push_back({static_cast<double>(t) / 1000, fmt::format("{}", v)});
        }
        return values;
      };
      auto per_gpu = [&](const std::function<double(size_t, bool)>& value) {
        for (size_t i = 0; i < gpus; ++i) {
          auto v = points(i, value);
          if (!v.empty()) result.push_back({{"metric", gpu_labels(i)}, {"values", v}});
        }
      };
      if (q.find("gpudoctor_gpu_owner_info") != std::string::npos) {
        for (size_t i = 0; i < gpus; i += 2)
          for (const char* job : {"9", "10"}) {
            auto l = gpu_labels(i);
            l["owner_kind"] = "slurm_job";
            l["exported_job"] = job;
            l["user"] = job[0] == '9' ? "z" : "y";
            auto v = points(i, [&](size_t k, bool) { return job[0] == '9' || k >= 30 ? 1 : 0; });
            result.push_back({{"metric", l}, {"values", v}});
          }
      } else if (q.find("state=\"working\"") != std::string::npos) {
        per_gpu([](size_t, bool n1) { return n1 ? 30 : 60; });
      } else if (refuse_causes && q.find("cause=") != std::string::npos) {
        HttpResponse e;
        e.status = 503;
        e.content_type = "application/json";
        e.body = std::make_shared<const std::string>(
            R"({"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"})");
        return e;
      } else if (q.find("state=\"lost\"") != std::string::npos ||
                 q.find("cause=\"data_starvation\"") != std::string::npos) {
        per_gpu([](size_t, bool n1) { return n1 ? 20 : 0; });
      } else if (q.find("state=\"free\"") != std::string::npos) {
        per_gpu([](size_t, bool n1) { return n1 ? 10 : 0; });
      }
      return reply(result, "matrix");
    });
    EXPECT_TRUE(s);
    server = std::move(s.value());
  }
  static HttpResponse reply(const nlohmann::json& result, const char* type) {
    HttpResponse r;
    r.content_type = "application/json";
    r.body = std::make_shared<const std::string>(nlohmann::json{
        {"status", "success"},
        {"data",
         {{"resultType", type}, {"result", result}}}}.dump());
    return r;
  }
  static HttpResponse list(const nlohmann::json& data) {
    HttpResponse r;
    r.content_type = "application/json";
    r.body = std::make_shared<const std::string>(
        nlohmann::json{{"status", "success"}, {"data", data}}.dump());
    return r;
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", server->port()); }
};

TEST(Fleet, LedgerPathAsksTheSameQueriesForAnyNumberOfGpus) {
  std::vector<size_t> asked;
  for (size_t n : {2, 400}) {
    LedgerProm prom(n);
    FleetOptions o;
    o.prom.url = prom.url();
    o.prom.end_unix_ms = kT0 + 3600 * 1000;
    o.prom.start_unix_ms = kT0;
    auto count = ledger_gpu_count(o);
    ASSERT_TRUE(count) << count.error().message;
    EXPECT_EQ(count.value(), n);
    std::vector<size_t> progress;
    auto r = fleet_from_ledger(
        o, [&](size_t done, size_t, std::string_view) { progress.push_back(done); });
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(progress.size(), 6u);  // owners, 4 states, 1 cause
    EXPECT_EQ(r->gpus, n);
    EXPECT_EQ(r->hosts.size(), 2u);
    const double half = static_cast<double>(n / 2);
    // The fleet's totals: n1's GPUs over 60 steps, n2's over 50.
    EXPECT_DOUBLE_EQ(r->total.working_s, half * (30 * 60 + 60 * 50));
    EXPECT_DOUBLE_EQ(r->total.lost_s, half * 20 * 60);
    EXPECT_DOUBLE_EQ(r->total.free_s, half * 10 * 60);
    EXPECT_DOUBLE_EQ(r->total.by_cause[static_cast<size_t>(Cause::kDataStarvation)],
                     half * 20 * 60);
    ASSERT_EQ(r->rows.size(), 3u);
    // Job 9 held n1's GPUs throughout, shared them with job 10 for the second half: 3/4 and 1/4.
    EXPECT_EQ(r->rows[0].label, "job 9 (z)");  // exported_job read back as the job
    EXPECT_EQ(r->rows[0].hosts, std::set<std::string>{"n1"});
    EXPECT_EQ(r->rows[0].gpus, n / 2);
    EXPECT_DOUBLE_EQ(r->rows[0].t.working_s, half * 30 * 45);
    EXPECT_DOUBLE_EQ(r->rows[0].t.by_cause[static_cast<size_t>(Cause::kDataStarvation)],
                     half * 20 * 45);
    EXPECT_EQ(r->rows[0].t.main_cause(), Cause::kDataStarvation);
    EXPECT_EQ(r->rows[1].label, "job 10 (y)");
    EXPECT_DOUBLE_EQ(r->rows[1].t.lost_s, half * 20 * 15);
    // n2's GPUs had no owner: their time is the (no owner) row; so are the free seconds of n1's
    // (nothing held the GPU then, whatever the owner info said).
    EXPECT_EQ(r->rows[2].label, "(no owner)");
    EXPECT_DOUBLE_EQ(r->rows[2].t.working_s, half * 60 * 50);
    EXPECT_DOUBLE_EQ(r->rows[2].t.free_s, half * 10 * 60);
    EXPECT_DOUBLE_EQ(r->rows[0].t.free_s + r->rows[1].t.free_s, 0);
    EXPECT_EQ(r->rows[2].hosts, (std::set<std::string>{"n1", "n2"}));
    // The rows add up to the fleet's totals.
    FleetTally sum;
    for (const auto& row : r->rows) sum.add(row.t);
    EXPECT_DOUBLE_EQ(sum.total_s(), r->total.total_s());
    std::string notes;
    for (const auto& note : r->notes) notes += note + "\n";
    EXPECT_NE(notes.find("1 host stopped reporting before the end of the span: n2"),
              std::string::npos)
        << notes;
    EXPECT_NE(notes.find("but no gpudoctor ledger (dcgm-exporter alone): not in these figures; "),
              std::string::npos)
        << notes;
    EXPECT_NE(notes.find("reads them: n3"), std::string::npos) << notes;
    EXPECT_NE(notes.find("step of 60 s (60 steps"), std::string::npos) << notes;
    std::lock_guard lock(prom.mu);
    asked.push_back(prom.queries.size());
    // The counters per GPU and step, summed on the server only per GPU (no join there); the
    // owners under the label the scrape renamed.
    bool owners = false;
    for (const auto& q : prom.queries) {
      EXPECT_EQ(q.find("group_"), std::string::npos) << q;
      if (q.find("increase(") != std::string::npos) {
        EXPECT_NE(q.find("[60000ms])) > 0"), std::string::npos) << q;
      }
      if (q.find("gpudoctor_gpu_owner_info") != std::string::npos &&
          q.find("query_range") != std::string::npos) {
        owners = true;
        EXPECT_NE(q.find("max by (Hostname, UUID, owner_kind, exported_job"), std::string::npos)
            << q;
        // An owner holds the GPU in a step where it was seen in the step.
        EXPECT_NE(q.find("(max_over_time(gpudoctor_gpu_owner_info{}[60000ms]))"), std::string::npos)
            << q;
      }
    }
    EXPECT_TRUE(owners);
  }
  EXPECT_EQ(asked[0], asked[1]);
  EXPECT_LE(asked[0], 20u);
}

TEST(Fleet, LedgerPathSaysWhichQueryFailed) {
  LedgerProm prom(4);
  prom.refuse_causes = true;
  FleetOptions o;
  o.prom.url = prom.url();
  o.prom.end_unix_ms = kT0 + 3600 * 1000;
  o.prom.start_unix_ms = kT0;
  o.workers = 1;
  auto r = fleet_from_ledger(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(prom.url() + " (HTTP 503): Prometheus answered timeout: query "
                                                "timed out in expression evaluation"),
            std::string::npos)
      << r.error().message;
}

TEST(Fleet, LedgerPathByHostModelAndCause) {
  LedgerProm prom(4);
  FleetOptions o;
  o.prom.url = prom.url();
  o.prom.end_unix_ms = kT0 + 3600 * 1000;
  o.prom.start_unix_ms = kT0;
  o.by = FleetBy::kHost;
  auto r = fleet_from_ledger(o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_EQ(r->rows[0].label, "n1");  // n1 lost time; n2 only worked
  EXPECT_EQ(r->rows[0].gpus, 2u);
  EXPECT_DOUBLE_EQ(r->rows[0].t.lost_s, 2 * 20 * 60);
  EXPECT_DOUBLE_EQ(r->rows[1].t.working_s, 2 * 60 * 50);
  o.by = FleetBy::kModel;
  r = fleet_from_ledger(o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_EQ(r->rows[0].label, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r->rows[0].hosts, std::set<std::string>{"n1"});
  EXPECT_DOUBLE_EQ(r->rows[0].t.free_s, 2 * 10 * 60);
  EXPECT_EQ(r->rows[1].label, "NVIDIA A100-SXM4-80GB");
  o.by = FleetBy::kCause;
  r = fleet_from_ledger(o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0].label, "data_starvation");
  EXPECT_DOUBLE_EQ(r->rows[0].t.lost_s, 2 * 20 * 60);
  EXPECT_EQ(r->rows[0].gpus, 2u);
  EXPECT_EQ(r->rows[0].hosts, std::set<std::string>{"n1"});
  EXPECT_DOUBLE_EQ(r->total.working_s, 2 * (30 * 60 + 60 * 50));
}

// A stand-in Prometheus with dcgm-exporter's series only: host h1's GPU busy in short kernels
// for a job of dcgm-exporter's HPC job mapping (hpc_job 5) for 2 h; host h2's GPU held (30 GiB)
// and idle with no owner label, for the first hour only (then it stopped reporting).
struct DcgmProm {
  int64_t start = kT0, end = kT0 + 2 * 3600 * 1000;
  std::mutex mu;
  size_t ranges = 0;
  std::unique_ptr<HttpServer> server;

  nlohmann::json series_of(const std::string& host, int64_t from, int64_t to, int64_t step) {
    nlohmann::json result = nlohmann::json::array();
    const bool h1 = host == "h1";
    const int64_t last = h1 ? end : start + 3600 * 1000;
    std::vector<std::pair<std::string, double>> values = {
        {"DCGM_FI_DEV_GPU_UTIL", h1 ? 100 : 0},
        {"DCGM_FI_DEV_POWER_USAGE", h1 ? 110 : 60},
        {"DCGM_FI_DEV_FB_USED", h1 ? 40000 : 30000},
        {"DCGM_FI_DEV_FB_FREE", h1 ? 41000 : 51000},
        {"DCGM_FI_DEV_SM_CLOCK", h1 ? 1410 : 210}};
    for (const auto& [name, v] : values) {
      nlohmann::json points = nlohmann::json::array();
      for (int64_t t = (from + step - 1) / step * step; t <= to; t += step)
        if (t >= start && t <= last)
          points.push_back({static_cast<double>(t) / 1000, fmt::format("{}", v)});
      if (points.empty()) continue;
      nlohmann::json labels = {{"__name__", name},
                               {"gpu", "0"},
                               {"UUID", "GPU-" + host},
                               {"Hostname", host},
                               {"modelName", "NVIDIA A100-SXM4-80GB"}};
      if (h1) labels["hpc_job"] = "5";
      result.push_back({{"metric", labels}, {"values", points}});
    }
    return result;
  }

  DcgmProm() {
    HttpServerOptions o;
    o.listen = "127.0.0.1:0";
    auto s = HttpServer::start(o, [this](const HttpRequest& req) {
      std::map<std::string, std::string> p;
      for (size_t pos = 0; pos <= req.query.size();) {
        const size_t amp = std::min(req.query.find('&', pos), req.query.size());
        const std::string kv = req.query.substr(pos, amp - pos);
        if (const size_t eq = kv.find('='); eq != std::string::npos)
          p[kv.substr(0, eq)] = LedgerProm::decode(kv.substr(eq + 1));
        pos = amp + 1;
      }
      const std::string q = p["query"];
      const std::string host = q.find("Hostname=\"h2\"") != std::string::npos ? "h2" : "h1";
      auto ms = [](const std::string& v) { return std::llround(std::stod(v) * 1000); };
      nlohmann::json result = nlohmann::json::array();
      const char* type = "vector";
      if (q.rfind("count by (Hostname)", 0) == 0) {
        for (const char* h : {"h1", "h2"})
          result.push_back({{"metric", {{"Hostname", h}}}, {"value", {end / 1000.0, "1"}}});
      } else if (q.rfind("count_over_time(DCGM_FI_DEV_POWER_USAGE", 0) == 0) {
        result.push_back({{"metric", {{"Hostname", "h1"}}}, {"value", {end / 1000.0, "481"}}});
      } else if (q.rfind("count_over_time({__name__", 0) == 0) {  // nothing lately: the count
        result.push_back({{"metric", {{"Hostname", host}}},
                          {"value", {end / 1000.0, host == "h1" ? "481" : "241"}}});
      } else if (req.path == "/api/v1/query") {  // the scrape interval: raw samples
        const int64_t t = ms(p["time"]);
        result = series_of(host, t - 600'000, t, 15000);
        type = "matrix";
      } else {
        std::lock_guard lock(mu);
        ++ranges;
        result = series_of(host, ms(p["start"]), ms(p["end"]), ms(p["step"]));
        type = "matrix";
      }
      return LedgerProm::reply(result, type);
    });
    EXPECT_TRUE(s);
    server = std::move(s.value());
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", server->port()); }
};

TEST(Fleet, DiagnosisPathReadsHostsInPiecesAndCountsEachSample) {
  DcgmProm prom;
  FleetOptions o;
  o.prom.url = prom.url();
  o.prom.start_unix_ms = prom.start;
  o.prom.end_unix_ms = prom.end;
  o.workers = 2;
  std::vector<std::pair<size_t, size_t>> progress;
  auto r = fleet_by_diagnosis(
      o, [&](size_t done, size_t total, std::string_view) { progress.emplace_back(done, total); });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->path, "diagnosis");
  EXPECT_EQ(r->gpus, 2u);
  EXPECT_EQ(r->hosts, (std::set<std::string>{"h1", "h2"}));
  // 15 s samples: pieces of 5,000 samples would be longer than the span, so a day's: one a host.
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress.back(), std::make_pair(size_t{2}, size_t{2}));
  // Every sample counted once: 2 h of h1 and 1 h of h2, to within a sample each.
  EXPECT_NEAR(r->total.total_s(), 3 * 3600, 31);
  std::map<std::string, const FleetRow*> rows;
  for (const auto& row : r->rows) rows[row.label] = &row;
  ASSERT_TRUE(rows.count("job 5")) << fleet_text(r.value());
  EXPECT_EQ(rows["job 5"]->hosts, std::set<std::string>{"h1"});
  EXPECT_NEAR(rows["job 5"]->t.allocated_s(), 2 * 3600, 16);
  ASSERT_TRUE(rows.count("(no owner)"));
  const FleetRow& held = *rows["(no owner)"];  // held by memory, idle: allocated and lost
  EXPECT_GT(held.t.idle_allocated_s, 0.8 * 3600) << fleet_text(r.value());
  EXPECT_EQ(held.t.main_cause(), Cause::kIdle);
  EXPECT_EQ(held.hosts, std::set<std::string>{"h2"});

  // Hour pieces: h2's second hour has no series, and that is said.
  o.chunk_s = 3600;
  progress.clear();
  r = fleet_by_diagnosis(
      o, [&](size_t done, size_t total, std::string_view) { progress.emplace_back(done, total); });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(progress.size(), 4u);
  EXPECT_NEAR(r->total.total_s(), 3 * 3600, 61);
  bool said = false;
  for (const auto& n : r->notes)
    said = said || n == "h2: no GPU series in 1 of the span's pieces (not reporting then)";
  EXPECT_TRUE(said) << fleet_text(r.value());

  // By host and by cause from the same samples.
  o.by = FleetBy::kHost;
  r = fleet_by_diagnosis(o, {});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_GE(r->rows[0].t.wasted_s(), r->rows[1].t.wasted_s());
  std::set<std::string> hosts = {r->rows[0].label, r->rows[1].label};
  EXPECT_EQ(hosts, (std::set<std::string>{"h1", "h2"}));
}

}  // namespace
}  // namespace gpudoctor
