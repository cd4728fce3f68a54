// End-to-end: `gpudoctor diagnose` on simulated recordings, logs and a live simulated source:
// text golden, JSON verdicts, selection, exit codes, configuration and bad input.
#include <nlohmann/json.hpp>

#include "e2e_util.hpp"

namespace {

using namespace e2e;

// A recording of a built-in scenario, made once per test binary run.
std::string sim_db(const std::string& spec) {
  std::string name = spec;
  for (auto& c : name)
    if (c == ',' || c == '=') c = '_';
  const fs::path path = fs::temp_directory_path() / fmt::format("gd-e2e-{}-{}.db", getpid(), name);
  if (!fs::exists(path)) {
    const auto r = run("", fmt::format("sim {} -o {}", quote(spec), quote(path.string())));
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  return path.string();
}

nlohmann::json diagnose_json(const std::string& args) {
  const auto r = run("", "diagnose --format json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(Diagnose, StragglerTextGolden) {
  const auto r = run("", "diagnose " + sim_db("straggler,duration=3m,interval=1s"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("diagnose-straggler", r.out);
}

TEST(Diagnose, VerdictsOfScenarios) {
  const std::pair<const char*, const char*> cases[] = {
      {"healthy,duration=3m,interval=1s", "healthy"},
      {"data_starvation,duration=3m,interval=1s", "data_starvation"},
      {"power_capped,duration=3m,interval=1s", "power_capped"},
      {"contention,duration=3m,interval=1s", "contention"},
  };
  for (const auto& [spec, cause] : cases) {
    const auto j = diagnose_json(sim_db(spec));
    EXPECT_EQ(j["verdict"], cause) << spec;
    for (const auto& g : j["gpus"]) EXPECT_EQ(g["verdict"], cause) << spec;
  }
}

// GPUDOCTOR_THREADS: any count gives the same diagnosis; a wrong one is refused before anything.
TEST(Diagnose, ThreadsFromTheEnvironment) {
  const std::string db = sim_db("straggler,gpus=8,duration=4m,interval=1s");
  const auto one = run_with("GPUDOCTOR_THREADS=1", "diagnose " + quote(db) + " --format json");
  const auto three = run_with("GPUDOCTOR_THREADS=3", "diagnose " + quote(db) + " --format json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(one.out, three.out);
  const auto bad = run_with("GPUDOCTOR_THREADS=lots", "diagnose " + quote(db));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "gpudoctor: GPUDOCTOR_THREADS: expected a whole number from 1 to 256, got \"lots\"\n");
}

TEST(Diagnose, GpuSelectionAndTimeRange) {
  const std::string db = sim_db("mixed,duration=4m,interval=1s");
  auto j = diagnose_json(db);
  EXPECT_EQ(j["verdict"], "idle");
  EXPECT_EQ(j["gpus"].size(), 8u);
  j = diagnose_json(db + " --gpus 0,1,2,3");
  EXPECT_EQ(j["verdict"], "healthy");
  EXPECT_EQ(j["gpus"].size(), 4u);
  j = diagnose_json(db + " --gpus 5");
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["index"], 5);
  EXPECT_EQ(j["gpus"][0]["verdict"], "idle");
  j = diagnose_json(db + " --since 1m --until 2m");
  for (const auto& g : j["gpus"]) {
    EXPECT_LE(g["metrics"]["samples"].get<int>(), 61);
    EXPECT_GE(g["metrics"]["samples"].get<int>(), 59);
  }
  // Absolute times work on inputs that have them (the simulator starts 2026-01-01T00:00:00Z).
  j = diagnose_json(db + " --since 2026-01-01T00:03:00Z");
  EXPECT_LE(j["gpus"][0]["metrics"]["samples"].get<int>(), 61);
  const auto none = run("", "diagnose " + db + " --gpus 9");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("none of these GPUs"), std::string::npos) << none.err;
}

TEST(Diagnose, FailOnSetsTheExitStatus) {
  const std::string bad = sim_db("data_starvation,duration=3m,interval=1s");
  const std::string good = sim_db("healthy,duration=3m,interval=1s");
  EXPECT_EQ(run("", "diagnose " + bad + " --fail-on warning").exit_code, 3);
  EXPECT_EQ(run("", "diagnose " + bad + " --fail-on critical").exit_code, 3);
  EXPECT_EQ(run("", "diagnose " + good + " --fail-on warning").exit_code, 0);
  EXPECT_EQ(run("", "diagnose " + bad).exit_code, 0);
}

TEST(Diagnose, MarkdownReport) {
  const auto r =
      run("", "diagnose --format markdown " + sim_db("data_starvation,duration=3m,interval=1s"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("**Verdict: Data starvation** (data_starvation)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| GPU | name | verdict |"), std::string::npos);
  EXPECT_NE(r.out.find("What to change:"), std::string::npos);
}

TEST(Diagnose, ReadsLogsOfOtherTools) {
  // nvidia-smi --query-gpu CSV: no SM activity, which the diagnosis says.
  const auto j = diagnose_json(quote(kSrc + "/tests/data/logs/smi-csv/two_gpu_units.csv"));
  EXPECT_EQ(j["gpus"].size(), 2u);
  bool said = false;
  for (const auto& l : j["limitations"])
    said = said || l.get<std::string>().find("no SM activity") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Diagnose, LiveOnTheSimulator) {
  // 4 s of real time at 60x: four simulated minutes of a starving job.
  const auto r = run("",
                     "diagnose --live --source 'sim:data_starvation,speed=60' --duration 4s "
                     "-i 100ms --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "data_starvation");
  EXPECT_EQ(j["source"], "live: sim:data_starvation,speed=60");
  EXPECT_GE(j["gpus"][0]["metrics"]["samples"].get<int>(), 30);
}

TEST(Diagnose, ConfigurationFile) {
  const auto printed = run("", "diagnose --print-config");
  ASSERT_EQ(printed.exit_code, 0);
  const auto cfg = nlohmann::json::parse(printed.out);
  EXPECT_EQ(cfg["low_efficiency"], 0.6);
  EXPECT_EQ(cfg["busy_util_pct"], 90);

  const fs::path path = fs::temp_directory_path() / fmt::format("gd-e2e-{}-cfg.json", getpid());
  std::ofstream(path) << R"({"low_efficiency": 0.99})";
  const auto j = diagnose_json(sim_db("healthy,duration=3m,interval=1s") + " --config " +
                               quote(path.string()));
  EXPECT_NE(j["verdict"], "healthy");
  std::ofstream(path) << R"({"no_such_threshold": 1})";
  const auto bad = run("", "diagnose --config " + quote(path.string()) + " --print-config");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown threshold \"no_such_threshold\""), std::string::npos) << bad.err;
  fs::remove(path);
}

TEST(Diagnose, BadInputAndUsage) {
  const fs::path dir = fs::temp_directory_path();
  const fs::path empty = dir / fmt::format("gd-e2e-{}-empty.csv", getpid());
  std::ofstream(empty).flush();
  auto r = run("", "diagnose " + quote(empty.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
  const fs::path garbage = dir / fmt::format("gd-e2e-{}-garbage.bin", getpid());
  {
    std::ofstream out(garbage, std::ios::binary);
    for (int i = 0; i < 4096; ++i) out.put(static_cast<char>((i * 7919) & 0xff));
  }
  r = run("", "diagnose " + quote(garbage.string()));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  r = run("", "diagnose /no/such/file.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot read /no/such/file.csv"), std::string::npos) << r.err;
  r = run("", "diagnose");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs INPUT"), std::string::npos) << r.err;
  const std::string db = sim_db("healthy,duration=3m,interval=1s");
  r = run("", "diagnose " + db + " --since 2m --until 1m");
  EXPECT_EQ(r.exit_code, 2);
  r = run("", "diagnose " + db + " --since yesterday");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("expected a time"), std::string::npos) << r.err;
  r = run("", "diagnose " + db + " --format yaml");
  EXPECT_EQ(r.exit_code, 2);
  fs::remove(empty);
  fs::remove(garbage);
}

}  // namespace
