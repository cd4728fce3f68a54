// `gpudoctor diagnose` on PyTorch profiler traces: HTA's test traces (../shared/data/traces/hta,
// read in place, never copied here), as text (a golden) and JSON, a folder of ranks merged, and a
// CPU-only rank refused.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "e2e_util.hpp"

namespace e2e {
namespace {

const std::string kTraces = kSrc + "/../shared/data/traces/hta";

bool have_traces() {
  return fs::exists(kTraces + "/df_index_resolver_df_index_resolver.json.gz");
}

// gpudoctor ARGS run in the traces' folder, so that outputs name the files, not this machine's
// paths.
Result in_traces(const std::string& args) {
  return run_shell(fmt::format("cd {} && {} {}", quote(kTraces), GPUDOCTOR_BIN, args));
}

TEST(TraceDiagnose, LaunchBoundAndExposedNcclTraceTextGolden) {
  if (!have_traces()) GTEST_SKIP() << "no shared traces at " << kTraces;
  const auto r = in_traces("diagnose df_index_resolver_df_index_resolver.json.gz");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Figures checked against an independent Python count over the same JSON: span 1732.965 ms,
  // compute 620.516 ms, exposed NCCL 357.343 ms (20.6 %), idle 732.352 ms (42 %); 9954 of 19370
  // kernels under 10 us (51 %, as the shared README counts).
  expect_golden("diagnose-trace-df-index", r.out);
  // The README shows the same output.
  std::ifstream in(kSrc + "/README.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(readme.find("```\n" + normalise(r.out) + "```\n"), std::string::npos)
      << "README.md's trace example differs from the output";
}

TEST(TraceDiagnose, JsonCarriesTheTraceBlockAndTheFindingsEvidence) {
  if (!have_traces()) GTEST_SKIP() << "no shared traces at " << kTraces;
  const auto r = in_traces("diagnose trace_diff_control_control.json.gz --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("trace"));
  ASSERT_EQ(j["trace"]["ranks"].size(), 1u);
  const auto& rank = j["trace"]["ranks"][0];
  EXPECT_EQ(rank["rank"], 3);
  EXPECT_EQ(rank["kernels"], 8568);
  EXPECT_EQ(rank["steps"].size(), 6u);
  EXPECT_NEAR(rank["span_ms"].get<double>(), 464.594, 1e-6);
  EXPECT_NEAR(rank["breakdown"]["idle"].get<double>(), 76.007 / 464.594, 1e-4);
  EXPECT_EQ(j["verdict"], "communication_wait");
  bool found = false;
  for (const auto& f : j["findings"])
    if (f["cause"] == "communication_wait") {
      found = true;
      EXPECT_EQ(f["evidence"]["trace"]["ranks"], nlohmann::json::array({3}));
      EXPECT_NEAR(f["evidence"]["trace"]["per_rank"][0]["exposed_comm_share"].get<double>(),
                  87.921 / 464.594, 1e-4);
    }
  EXPECT_TRUE(found) << r.out;
}

// A folder of per-rank traces is one run's ranks, with --merge or without it (a folder of
// nothing but traces is read as --merge reads a folder, docs/formats.md); a folder that mixes a
// trace with a telemetry log stays a folder of logs, each diagnosed on its own.
TEST(TraceDiagnose, AFolderOfRanksMergedIsOneRunOfRanks) {
  if (!have_traces()) GTEST_SKIP() << "no shared traces at " << kTraces;
  const fs::path dir = fs::temp_directory_path() / fmt::format("gpudoctor-ranks-{}", getpid());
  fs::create_directories(dir);
  for (const char* name :
       {"trace_filter_sampled_rank-0.json.gz", "trace_filter_sampled_rank-1.json.gz"})
    fs::create_symlink(kTraces + "/" + name, dir / name);
  const auto merged = run_shell(
      fmt::format("{} diagnose {} --merge --format json", GPUDOCTOR_BIN, quote(dir.string())));
  const auto plain =
      run_shell(fmt::format("{} diagnose {} --format json", GPUDOCTOR_BIN, quote(dir.string())));
  fs::copy_file(kSrc + "/tests/data/logs/smi-csv/two_gpu_units.csv", dir / "gpus.csv");
  const auto mixed =
      run_shell(fmt::format("{} diagnose {} --format json", GPUDOCTOR_BIN, quote(dir.string())));
  fs::remove_all(dir);
  for (const auto* r : {&merged, &plain}) {
    ASSERT_EQ(r->exit_code, 0) << r->err;
    const auto j = nlohmann::json::parse(r->out);
    ASSERT_EQ(j["trace"]["ranks"].size(), 2u);
    EXPECT_EQ(j["trace"]["ranks"][0]["rank"], 0);
    EXPECT_EQ(j["trace"]["ranks"][1]["rank"], 1);
    EXPECT_EQ(j["trace"]["ranks"][0]["kernels"], 1154);
    EXPECT_EQ(j["trace"]["ranks"][1]["kernels"], 1104);
    EXPECT_EQ(j["verdict"], "communication_wait");
  }
  const auto j = nlohmann::json::parse(plain.out);
  bool said = false;
  for (const auto& n : j["input_notes"])
    said = said || n.get<std::string>().find(
                       "a folder of 2 profiler traces and nothing else: "
                       "read as one run's ranks") != std::string::npos;
  EXPECT_TRUE(said) << j["input_notes"];
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  const auto m = nlohmann::json::parse(mixed.out);
  EXPECT_EQ(m["grouped_by"], "file");
  EXPECT_EQ(m["runs"].size(), 3u);
}

// `-`: a trace on standard input, compressed or not, is read as a stream as a file is, with the
// same figures (the file's own origin aside) and the same notes.
TEST(TraceDiagnose, ATraceOnStandardInputIsTheFile) {
  if (!have_traces()) GTEST_SKIP() << "no shared traces at " << kTraces;
  const std::string name = "nccl_parser_config_nccl_data.json.gz";
  const auto file = in_traces("diagnose --format json " + name);
  ASSERT_EQ(file.exit_code, 0) << file.err;
  const auto f = nlohmann::json::parse(file.out);
  // The gzip file as it is, decompressed, and made xz.
  for (const std::string pipe : {"cat", "gzip -dc", "gzip -dc | xz -0 -c"}) {
    const std::string feed = fmt::format("<{} {}", name, pipe);
    const auto r = run_shell(fmt::format("cd {} && {} | {} diagnose --format json -",
                                         quote(kTraces), feed, GPUDOCTOR_BIN));
    ASSERT_EQ(r.exit_code, 0) << feed << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.contains("trace")) << feed;
    auto& rank = j["trace"]["ranks"][0];
    EXPECT_EQ(rank["origin"], "standard input") << feed;
    rank["origin"] = f["trace"]["ranks"][0]["origin"];
    EXPECT_EQ(j["trace"], f["trace"]) << feed;
    EXPECT_EQ(j["verdict"], f["verdict"]) << feed;
    bool decompressed = false;
    for (const auto& n : j["input_notes"])
      decompressed =
          decompressed || n.get<std::string>().find("archive decompressed (") != std::string::npos;
    EXPECT_EQ(decompressed, pipe != "gzip -dc") << feed;
  }
}

TEST(TraceDiagnose, ACpuOnlyRankIsRefusedWithTheReason) {
  const fs::path file = fs::temp_directory_path() / fmt::format("gpudoctor-cpu-{}.json", getpid());
  std::ofstream(file) << R"({"schemaVersion": 1, "distributedInfo": {"rank": 5}, "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]})";
  const auto r = run_shell(fmt::format("{} diagnose {}", GPUDOCTOR_BIN, quote(file.string())));
  fs::remove(file);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no GPU kernels or memory copies (1 events, rank 5): a CPU-only rank"),
            std::string::npos)
      << r.err;
}

// `diagnose run.db --trace FILE`: the trace's findings beside the telemetry's, and a note on where
// the trace lies on the recording's clock (both wall clock).
TEST(TraceDiagnose, ATraceBesideTelemetryIsAlignedByWallClock) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("gpudoctor-trace-db-{}", getpid());
  fs::create_directories(dir);
  const std::string db = (dir / "run.db").string();
  ASSERT_EQ(run("", fmt::format("sim healthy,duration=2m,interval=1s -o {}", quote(db))).exit_code,
            0);
  const auto plain = run("", "diagnose --format json " + quote(db));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const std::string start = nlohmann::json::parse(plain.out)["start"];  // 2026-...T...Z
  std::tm tm{};
  ASSERT_NE(strptime(start.c_str(), "%Y-%m-%dT%H:%M:%S", &tm), nullptr) << start;
  const long long start_ms =
      static_cast<long long>(timegm(&tm)) * 1000 + std::stoi(start.substr(start.find('.') + 1, 3));
  // 100 tiny kernels waiting on their launches, 30 s into the recording.
  std::string events;
  const long long t0_us = start_ms * 1000 + 30'000'000;
  for (int i = 0; i < 100; ++i)
    events += fmt::format(
        R"({}{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": {}, "dur": 3,
        "args": {{"correlation": {}}}}}, {{"ph": "X", "cat": "kernel", "name": "add", "ts": {},
        "dur": 4, "args": {{"device": 0, "stream": 7, "correlation": {}}}}})",
        i ? "," : "", t0_us + i * 10 + 1, i, t0_us + i * 10 + 6, i);
  const std::string trace = (dir / "rank0.json").string();
  std::ofstream(trace) << R"({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": [)"
                       << events << "]}";
  const auto r = run("", fmt::format("diagnose --format json {} --trace {}", quote(db),
                                     quote(dir.string() + "/rank0.json")));
  const auto bad = run("", fmt::format("diagnose {} --trace {}", quote(db), quote(db)));
  fs::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["gpus"].empty());
  ASSERT_EQ(j["trace"]["ranks"].size(), 1u);
  bool launch = false, note = false;
  for (const auto& f : j["findings"])
    if (f["cause"] == "launch_overhead") {
      launch = true;
      // Both sources in one finding: the trace's kernels and GPU 0's telemetry.
      EXPECT_NE(f["summary"].get<std::string>().find("; telemetry of GPU 0 over the run: GPU-Util"),
                std::string::npos)
          << f["summary"];
      EXPECT_TRUE(f["evidence"]["telemetry_util_pct"].is_number()) << f["evidence"];
    }
  for (const auto& n : j["input_notes"])
    note =
        note || n.get<std::string>().find("start 30.000 s into the recording") != std::string::npos;
  EXPECT_TRUE(launch) << r.out;
  EXPECT_TRUE(note) << j["input_notes"].dump(1);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("run.db"), std::string::npos) << bad.err;
}

// `run --trace-dir DIR`: the traces the job wrote there while it ran (not older ones) are
// diagnosed with its telemetry and shown in the report.
TEST(TraceDiagnose, RunPicksUpTheTracesTheJobWrote) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("gpudoctor-run-trace-{}", getpid());
  const fs::path traces = dir / "traces";
  fs::create_directories(traces);
  const std::string fixture = kSrc + "/tests/data/traces/launch_bound.json";
  fs::copy_file(fixture, traces / "old.json");
  fs::last_write_time(traces / "old.json",
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  std::ofstream(dir / "job.sh") << fmt::format(
      "cp {} \"$GPUDOCTOR_TRACE_DIR/rank0.json\"\nsleep 1\n", quote(fixture));
  const auto r =
      run("", fmt::format("run --source sim:healthy -i 100ms -o {} --trace-dir {} -- sh {}",
                          quote((dir / "run.db").string()), quote(traces.string()),
                          quote((dir / "job.sh").string())));
  std::ifstream html(dir / "run.html");
  const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("1 profiler trace read from"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Profiler trace\n  rank 0 (NVIDIA A100-SXM4-80GB)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("launch_overhead"), std::string::npos) << r.err;
  EXPECT_NE(page.find("<h2>Profiler trace</h2>"), std::string::npos);
}

}  // namespace
}  // namespace e2e
