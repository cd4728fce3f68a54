// End-to-end: the real gpudoctor binary against the stand-in NVML library and the capture
// fixtures, compared with expected output (tests/e2e/golden; GPUDOCTOR_UPDATE_GOLDEN=1 rewrites
// them), plus every fault the NVML source must survive.
#include <gtest/gtest.h>

#include "e2e_util.hpp"

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace {

using namespace e2e;

// ---- status against each capture -------------------------------------------------------------

// Golden runs sample 100 ms apart: the mean power then comes from the driver's reading. Over a
// longer window it comes from the energy counter over a real-time interval, which can round
// either way when the capture's slope is x.5 W.
const std::string kGoldenStatus = "status --interval 100ms";

TEST(Status, IdleGpu) {
  const Result r = run("idle-1gpu", kGoldenStatus);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("status-idle-1gpu", r.out);
  EXPECT_NE(r.out.find("GPU 0: FREE"), std::string::npos) << r.out;
}

TEST(Status, EightBusyGpus) {
  const Result r = run("busy-8gpu", kGoldenStatus);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("status-busy-8gpu", r.out);
  for (int i = 0; i < 8; ++i)
    EXPECT_NE(r.out.find(fmt::format("GPU {}: WORKING", i)), std::string::npos) << r.out;
}

TEST(Status, BusyButIdleGpu) {
  const Result r = run("busy-idle-1gpu", kGoldenStatus);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("status-busy-idle-1gpu", r.out);
  EXPECT_TRUE(std::regex_search(
      r.out,
      std::regex(
          R"(GPU 0: BUSY BUT IDLE: util \d+ % but power \d+ % of 700 W and SM activity \d+ %)")))
      << r.out;
}

TEST(Status, UnsupportedFieldsAreSaidNotZeroed) {
  const Result r = run("mixed-unsupported", "status --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 2u);
  const auto& g0 = j["gpus"][0];
  EXPECT_EQ(g0["readings"]["power_instant_w"]["status"], "not_supported");
  EXPECT_EQ(g0["readings"]["power_instant_w"]["code"], "NO_PERMISSION");
  EXPECT_EQ(g0["readings"]["fan_pct"]["code"], "NOT_SUPPORTED");
  EXPECT_EQ(g0["readings"]["gpm_sm_util_pct"]["status"], "not_supported");
  EXPECT_FALSE(g0["efficiency_uses_sm_activity"].get<bool>());
  EXPECT_TRUE(g0["readings"]["power_w"].is_number());
  const auto& g1 = j["gpus"][1];
  EXPECT_TRUE(g1["pcie_degraded"].get<bool>());
  EXPECT_TRUE(g1["persistence_mode"].is_null());
  const Result text = run("mixed-unsupported", kGoldenStatus);
  ASSERT_EQ(text.exit_code, 0);
  expect_golden("status-mixed-unsupported", text.out);
  EXPECT_NE(text.out.find("PCIe link degraded"), std::string::npos);
}

TEST(Status, OldDriverWithoutGpmOrFieldValues) {
  const Result r = run_with(fake_env("old-driver", FAKE_NVML_LEGACY_LIB), "status --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 2u);
  for (const auto& g : j["gpus"]) {
    EXPECT_EQ(g["readings"]["gpm_sm_util_pct"]["code"], "FUNCTION_NOT_FOUND");
    EXPECT_EQ(g["readings"]["power_instant_w"]["code"], "FUNCTION_NOT_FOUND");
    EXPECT_TRUE(g["readings"]["power_w"].is_number());              // from nvmlDeviceGetPowerUsage
    EXPECT_TRUE(g["readings"]["clock_event_reasons"].is_number());  // ...ThrottleReasons
    EXPECT_TRUE(g["processes"].is_array());                         // ..._v2
  }
  const Result text = run_with(fake_env("old-driver", FAKE_NVML_LEGACY_LIB), kGoldenStatus);
  expect_golden("status-old-driver", text.out);
}

TEST(Status, JsonCarriesIdentityAndVerdicts) {
  const Result r = run("busy-idle-1gpu", "status --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& g = j["gpus"][0];
  EXPECT_EQ(g["verdict"]["code"], "busy_but_idle");
  EXPECT_EQ(g["architecture"], "hopper");
  EXPECT_TRUE(g["gpm_supported"].get<bool>());
  EXPECT_FALSE(g["uuid"].get<std::string>().empty());
  EXPECT_EQ(g["power_limit_source"], "default");
  EXPECT_TRUE(g["readings"]["gpm_sm_util_pct"].is_number());
  EXPECT_TRUE(g["power_mean_from_energy"].get<bool>());
  ASSERT_EQ(g["processes"].size(), 1u);
  EXPECT_EQ(g["processes"][0]["name"], "python");
  EXPECT_TRUE(g["processes"][0]["sm_util_pct"].is_number());  // nvmlDeviceGetProcessUtilization
  EXPECT_FALSE(j["driver_version"].get<std::string>().empty());
}

TEST(Status, GpuSelection) {
  const Result r = run("busy-8gpu", "status --gpus 3,5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["index"], 3);
  EXPECT_EQ(j["gpus"][1]["index"], 5);
  const Result bad = run("busy-8gpu", "status --gpus 9");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("GPU 9 does not exist: this machine has 8 GPUs (0-7)"), std::string::npos)
      << bad.err;
}

// ---- faults ----------------------------------------------------------------------------------

TEST(Faults, NoDriverLibrary) {
  // No override and (on a machine without the NVIDIA driver) nothing named libnvidia-ml.so.1.
  const Result r = run_with("-u GPUDOCTOR_NVML_LIB LD_LIBRARY_PATH=/nonexistent", "status");
  if (r.exit_code == 0) GTEST_SKIP() << "this machine has a real NVIDIA driver";
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err.rfind("gpudoctor: NVIDIA driver library libnvidia-ml.so.1 not found (is the NVIDIA "
                  "driver installed?)\n  no NVIDIA driver here? try the simulator, --source sim:",
                  0),
      0u)
      << r.err;
  const Result o = run_with("GPUDOCTOR_NVML_LIB=/nonexistent/libnvidia-ml.so.1", "status");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("/nonexistent/libnvidia-ml.so.1 could not be loaded"), std::string::npos);
}

TEST(Faults, LibraryThatIsNotNvml) {
  const Result r = run_with("GPUDOCTOR_NVML_LIB=libm.so.6", "status");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("lacks required function(s) nvmlInit_v2"), std::string::npos) << r.err;
}

TEST(Faults, DriverNotLoaded) {
  const Result r = run("", "status");  // the stand-in answers DRIVER_NOT_LOADED without a capture
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("NVIDIA driver is not loaded"), std::string::npos) << r.err;
}

TEST(Faults, LostGpuIsMarkedAndOthersContinue) {
  const Result r = run("faults-lost", "watch -i 100ms -c 8 --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u + 8 * 2) << r.out;
  int gpu0_ok = 0, gpu1_lost = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto cells = split(lines[i], ',');
    ASSERT_EQ(cells.size(), 18u) << lines[i];  // ..., verdict, the owner columns, the cause
    if (cells[1] == "0" && !cells[2].empty()) ++gpu0_ok;
    if (cells[1] == "1" && cells[12] == "lost") ++gpu1_lost;
  }
  EXPECT_EQ(gpu0_ok, 8);
  EXPECT_GE(gpu1_lost, 4);  // lost from 0.35 s on
  // Once lost, always lost: the last line of GPU 1 says so.
  EXPECT_NE(lines.back().find(",lost"), std::string::npos);
}

TEST(Faults, SlowCallDoesNotStallOtherGpus) {
  // GPU 0's utilization call takes 3 s; 5 intervals of 100 ms must still take well under that.
  const Result r = run("faults-slow", "watch -i 100ms -c 5 --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(r.seconds, 2.5);
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u + 5 * 2) << r.out;
  int gpu1_ok = 0, gpu0_timeouts = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto cells = split(lines[i], ',');
    if (cells[1] == "1" && !cells[2].empty()) ++gpu1_ok;
    if (cells[1] == "0" && cells[12] == "not_responding") ++gpu0_timeouts;
  }
  EXPECT_EQ(gpu1_ok, 5);
  EXPECT_EQ(gpu0_timeouts, 5);
}

// ---- watch -----------------------------------------------------------------------------------

TEST(Watch, TableGolden) {
  const Result r = run("busy-idle-1gpu", "watch -i 100ms -c 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("watch-busy-idle-table", r.out);
}

TEST(Watch, CsvLoadsAsATable) {
  const Result r = run("busy-8gpu", "watch -i 100ms -c 2 --format csv --gpus 0,1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 5u);
  const auto header = split(lines[0], ',');
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto cells = split(lines[i], ',');
    ASSERT_EQ(cells.size(), header.size()) << lines[i];
    EXPECT_TRUE(
        std::regex_match(cells[0], std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
    EXPECT_NO_THROW((void)std::stod(cells[4]));  // power_w
  }
}

TEST(Watch, JsonLines) {
  const Result r = run("busy-idle-1gpu", "watch -i 100ms -c 2 --format jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& l : lines) {
    const auto j = nlohmann::json::parse(l);
    EXPECT_EQ(j["verdict"], "busy_but_idle");
    EXPECT_TRUE(j["sm_pct"].is_number());
  }
}

TEST(Watch, CtrlCExitsCleanly) {
  const Result r = run_shell(fmt::format(
      "env {} {} watch -i 100ms & pid=$!; sleep 0.8; kill -INT $pid; wait $pid; echo rc=$?",
      fake_env("busy-idle-1gpu"), GPUDOCTOR_BIN));
  EXPECT_NE(r.out.find("rc=0"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("busy_but_idle"), std::string::npos) << r.out;
}

TEST(Watch, BadArguments) {
  EXPECT_EQ(run("busy-idle-1gpu", "watch -i soon").exit_code, 2);
  EXPECT_EQ(run("busy-idle-1gpu", "watch --format xml").exit_code, 2);
  EXPECT_EQ(run("busy-idle-1gpu", "watch --bogus").exit_code, 2);
}

// ---- capture ---------------------------------------------------------------------------------

TEST(Capture, RoundTripsThroughTheStandIn) {
  const fs::path out =
      fs::temp_directory_path() / fmt::format("gpudoctor-e2e-cap-{}.json", getpid());
  const Result c =
      run("busy-idle-1gpu", "capture -o " + quote(out.string()) + " --duration 1s -i 200ms");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.err.find("wrote"), std::string::npos);
  const Result s = run_with("GPUDOCTOR_NVML_LIB=" + quote(FAKE_NVML_LIB) +
                                " GPUDOCTOR_FAKE_NVML_CAPTURE=" + quote(out.string()),
                            "status --json");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const auto j = nlohmann::json::parse(s.out);
  EXPECT_EQ(j["gpus"][0]["verdict"]["code"], "busy_but_idle");
  EXPECT_EQ(j["gpus"][0]["architecture"], "hopper");
  EXPECT_EQ(j["gpus"][0]["processes"].size(), 1u);
  fs::remove(out);
}

TEST(Capture, CtrlCStillWritesTheFile) {
  const fs::path out =
      fs::temp_directory_path() / fmt::format("gpudoctor-e2e-int-{}.json", getpid());
  const Result r = run_shell(fmt::format(
      "env {} {} capture -o {} --duration 60s -i 100ms & pid=$!; sleep 1; kill -INT $pid; "
      "wait $pid; echo rc=$?",
      fake_env("busy-8gpu"), GPUDOCTOR_BIN, quote(out.string())));
  EXPECT_NE(r.out.find("rc=0"), std::string::npos) << r.out << r.err;
  std::ifstream in(out);
  ASSERT_TRUE(in);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["devices"].size(), 8u);
  EXPECT_GE(j["devices"][0]["samples"].size(), 3u);
  fs::remove(out);
}

TEST(Capture, UnwritablePathFailsAtOnce) {
  const Result r = run("busy-idle-1gpu", "capture -o /nonexistent/dir/cap.json --duration 10s");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write /nonexistent/dir/cap.json"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 5);
}

}  // namespace

// ---- simulator -------------------------------------------------------------------------------

namespace {

TEST(Sim, LiveSourceDrivesStatus) {
  const Result r = run_with("", "status --source sim:power_capped,speed=50 --interval 1s --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 2u);
  for (const auto& g : j["gpus"]) EXPECT_EQ(g["verdict"]["code"], "power_capped");
  const Result bad = run_with("", "status --source sim:nonexistent");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown scenario 'nonexistent'"), std::string::npos) << bad.err;
}

TEST(Sim, CaptureFromAScenarioReplaysThroughTheNvmlPath) {
  const fs::path out =
      fs::temp_directory_path() / fmt::format("gpudoctor-e2e-sim-{}.json", getpid());
  const Result s = run_with("", "sim straggler,duration=40s -o " + quote(out.string()));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const Result r = run_with("GPUDOCTOR_NVML_LIB=" + quote(FAKE_NVML_LIB) +
                                " GPUDOCTOR_FAKE_NVML_CAPTURE=" + quote(out.string()) +
                                " GPUDOCTOR_FAKE_NVML_START_S=20",
                            "status --interval 100ms --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 4u);
  EXPECT_EQ(j["gpus"][2]["verdict"]["code"], "working");  // the straggler itself
  for (int g : {0, 1, 3}) EXPECT_EQ(j["gpus"][g]["verdict"]["code"], "busy_but_idle") << g;
  fs::remove(out);
}

TEST(Sim, ListNamesScenariosAndModels) {
  const Result r = run_with("", "sim --list");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("data_starvation"), std::string::npos);
  EXPECT_NE(r.out.find("a100-sxm4-80gb"), std::string::npos);
}

}  // namespace

namespace {

TEST(Demo, ShowsEveryStoryDeterministically) {
  const Result r = run_with("", "demo");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("demo", r.out);
  EXPECT_NE(r.out.find("=== straggler"), std::string::npos);
  EXPECT_NE(r.out.find("POWER CAPPED"), std::string::npos);
  EXPECT_NE(r.out.find("THERMAL THROTTLE"), std::string::npos);
  EXPECT_EQ(run_with("", "demo --scenarios nonexistent").exit_code, 2);
}

}  // namespace

// ---- record / import / export ----------------------------------------------------------------

namespace {

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / fmt::format("gpudoctor-e2e-{}-{}", getpid(), name);
}

TEST(Record, FromTheSimulatorAndBackOut) {
  const fs::path db = temp_file("rec.db");
  const Result r = run_with(
      "", "record --source sim:straggler,speed=20 -i 100ms --duration 2s -o " + quote(db.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("recorded"), std::string::npos);
  const Result csv = run_with("", "export " + quote(db.string()) + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const auto lines = lines_of(csv.out);
  ASSERT_GE(lines.size(), 1u + 4 * 15) << csv.out.substr(0, 500);
  EXPECT_EQ(lines[0].substr(0, 22), "time,gpu,util_gpu_pct,");
  const Result jsonl = run_with("", "export " + quote(db.string()) + " --format jsonl");
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  const auto j = nlohmann::json::parse(lines_of(jsonl.out).back());
  EXPECT_TRUE(j["power_w"].is_number());
  fs::remove(db);
}

TEST(Record, KilledRecorderLosesAtMostTheLastSecond) {
  const fs::path db = temp_file("kill.db");
  const Result r = run_shell(fmt::format(
      "{} record --source sim:healthy,speed=10 -i 100ms -o {} & pid=$!; sleep 3; kill -9 $pid; "
      "wait $pid; echo killed",
      GPUDOCTOR_BIN, quote(db.string())));
  ASSERT_NE(r.out.find("killed"), std::string::npos);
  const Result csv = run_with("", "export " + quote(db.string()) + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  // ~3 s at 100 ms on 4 GPUs is ~120 rows; at most the last second (~40) may be lost.
  EXPECT_GE(lines_of(csv.out).size(), 1u + 4 * 15) << csv.out.size();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);
}

TEST(Record, UnwritablePathIsAClearError) {
  const Result r =
      run_with("", "record --source sim:healthy -o /nonexistent/dir/run.db --duration 1s");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/dir/run.db"), std::string::npos) << r.err;
}

TEST(Import, CaptureIntoARecording) {
  const fs::path db = temp_file("imp.db");
  const Result r = run_with(
      "", "import " + quote(capture_path("mixed-unsupported")) + " -o " + quote(db.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Result jsonl = run_with("", "export " + quote(db.string()) + " --format jsonl");
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  const auto first = nlohmann::json::parse(lines_of(jsonl.out).front());
  EXPECT_TRUE(first["power_instant_w"].is_null());  // NO_PERMISSION on GPU 0: null, not 0
  EXPECT_TRUE(first["power_w"].is_number());
  const Result bad = run_with("", "import /etc/hostname -o " + quote(db.string()));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("not a format gpudoctor reads"), std::string::npos) << bad.err;
  fs::remove(db);
}

}  // namespace

namespace {

TEST(Sim, WritesARecordingToo) {
  const fs::path db = temp_file("sim.db");
  const Result r = run_with("", "sim launch_overhead,duration=30s -o " + quote(db.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Result csv = run_with("", "export " + quote(db.string()) + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(lines_of(csv.out).size(), 1u + 30);
  EXPECT_EQ(lines_of(csv.out)[1].substr(0, 26), "2026-01-01T00:00:01.000Z,0");
  EXPECT_EQ(run_with("", "sim healthy -o " + quote(temp_file("x.txt").string())).exit_code, 2);
  fs::remove(db);
}

}  // namespace

namespace {

TEST(Import, GenericCsvWithMapAndEveryCorpusFormat) {
  const std::string wide = kSrc + "/tests/data/logs/generic-csv/wide_power_iso.csv";
  const Result no_map = run_with("", "export " + quote(wide));
  EXPECT_EQ(no_map.exit_code, 2);
  EXPECT_NE(no_map.err.find("--map"), std::string::npos) << no_map.err;
  const Result mapped = run_with("", "export " + quote(wide) + " --map 'GPU*=power_w'");
  ASSERT_EQ(mapped.exit_code, 0) << mapped.err;
  EXPECT_EQ(lines_of(mapped.out)[0], "time,gpu,power_w");
  // Every format the corpus writes reads back through the automatic format choice.
  const fs::path db = temp_file("one.db");
  for (const char* spec : {"healthy,duration=20s"}) {
    ASSERT_EQ(run_with("", fmt::format("sim {} -o {}", spec, quote(db.string()))).exit_code, 0);
    for (const char* fmt_name : {"csv", "smi-csv"}) {
      const fs::path out = temp_file(std::string("out.") + fmt_name);
      ASSERT_EQ(run_with("", fmt::format("export {} --format {} -o {}", quote(db.string()),
                                         fmt_name, quote(out.string())))
                    .exit_code,
                0);
      const Result back = run_with("", "export " + quote(out.string()) + " --format jsonl");
      EXPECT_EQ(back.exit_code, 0) << fmt_name << ": " << back.err;
      EXPECT_EQ(lines_of(back.out).size(), 4u * 20) << fmt_name;
      fs::remove(out);
    }
  }
  fs::remove(db);
}

}  // namespace

namespace {

TEST(Import, SmiTableSnapshotsIntoARecordingAndBackOut) {
  const std::string dir = kSrc + "/tests/data/logs/smi-table/";
  const std::string log = dir + "a100_470_4gpu_mig_row.txt";
  const fs::path db = temp_file("table.db");
  const Result r = run_with("", "import " + quote(log) + " -o " + quote(db.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("imported 20 samples of 4 GPUs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("note: skipped 1 snapshot(s) cut short"), std::string::npos) << r.err;
  const Result csv = run_with("", "export " + quote(db.string()) + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const auto lines = lines_of(csv.out);
  ASSERT_EQ(lines.size(), 1u + 20) << csv.out;
  EXPECT_EQ(lines[0],
            "time,gpu,util_gpu_pct,power_w,power_limit_enforced_w,temp_c,pstate,mem_used_mib,"
            "mem_total_mib");
  EXPECT_EQ(lines[4], "2022-06-17T11:40:52.000Z,3,100,246,250,52,0,9835,40536");
  // The recording and the log itself export the same rows.
  const Result direct = run_with("", "export " + quote(log) + " --format csv");
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(direct.out, csv.out);

  // JSON lines straight from a log of another driver generation; --input-format names the reader.
  const Result jsonl = run_with("", "export " + quote(dir + "rtx6000ada_570_2gpu_crlf.txt") +
                                        " --input-format smi-table --format jsonl");
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  ASSERT_EQ(lines_of(jsonl.out).size(), 6u);
  const auto j = nlohmann::json::parse(lines_of(jsonl.out)[1]);
  EXPECT_EQ(j["gpu"], 1);
  EXPECT_EQ(j["fan_pct"], 62.0);
  EXPECT_EQ(j["power_w"], 289.0);

  // A power cap of N/A: --power-limit fills in the limit.
  const Result na = run_with(
      "", "export " + quote(dir + "gb10_580_na_cap.txt") + " --power-limit 140 --format csv");
  ASSERT_EQ(na.exit_code, 0) << na.err;
  EXPECT_EQ(lines_of(na.out)[1], "2025-11-03T21:07:45.000Z,0,96,105,140,74,0");
  fs::remove(db);
}

}  // namespace

// The stand-in NVML's processes with a /proc fixture behind them: status names their owners.
TEST(Status, OwnersFromProcFixture) {
  // Wide enough for every owner whole (at 100 columns long ones are shortened from the middle).
  const std::string env = fake_env("busy-8gpu") +
                          " GPUDOCTOR_PROC_ROOT=" + quote(kSrc + "/tests/data/proc") +
                          " COLUMNS=200";
  const Result r = run_with(env, "status");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Owner"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("job 41877.0 (root)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pod 3f1e7b2a"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unit run-r3f2e1d0c9b8a"), std::string::npos) << r.out;
  const Result j = run_with(env, "status --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"kind\": \"slurm_job\""), std::string::npos) << j.out;
}
