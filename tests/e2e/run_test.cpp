// End-to-end: `gpudoctor run` around fake jobs (no GPU: the simulator stands in for the GPUs),
// `report` and `baseline`.
#include <nlohmann/json.hpp>

#include "e2e_util.hpp"

namespace {

using namespace e2e;

fs::path work_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / fmt::format("gd-run-{}-{}", getpid(), name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A job whose "DataLoader workers" (one per core, long-lived spinning processes, so their CPU
// time is seen in /proc) keep every CPU core busy for `seconds`, with step markers
// from the Python helper, exiting with `code`.
std::string starving_job(const fs::path& dir, double seconds, int code) {
  const fs::path script = dir / "job.sh";
  std::ofstream(script) << fmt::format(
      "#!/bin/sh\n"
      "for w in $(seq $(nproc)); do timeout {0} sh -c 'while :; do :; done' & done\n"
      "python3 {1}/contrib/python/example_train.py {2}\n"
      "wait\n"
      "exit {3}\n",
      static_cast<int>(seconds), kSrc, static_cast<int>(seconds * 10), code);
  fs::permissions(script, fs::perms::owner_all);
  return script.string();
}

TEST(Run, StarvedJobGetsTheVerdictWithHostEvidenceAndItsExitStatus) {
  const fs::path dir = work_dir("starved");
  const std::string job = starving_job(dir, 5, 7);
  const auto r = run("", fmt::format("run --source sim:data_starvation -i 100ms -o {} -- {}",
                                     quote((dir / "run.db").string()), quote(job)));
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_NE(r.err.find("Verdict: DATA STARVATION"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CPU cores busy: the input pipeline is CPU-bound"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Steps: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("% waiting for data"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the job exited with status 7"), std::string::npos);
  ASSERT_TRUE(fs::exists(dir / "run.db"));
  ASSERT_TRUE(fs::exists(dir / "run.html"));
  // The recording diagnoses the same afterwards, host evidence included.
  const auto again = run("", "diagnose --format json " + quote((dir / "run.db").string()));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto j = nlohmann::json::parse(again.out);
  EXPECT_EQ(j["verdict"], "data_starvation");
  EXPECT_EQ(j["findings"][0]["evidence"]["host_bound"], "cpu");
  fs::remove_all(dir);
}

TEST(Run, SignalsReachTheJobAndItsStatusComesBack) {
  const fs::path dir = work_dir("signals");
  const auto r = run_shell(fmt::format(
      "cd {dir}; {bin} run --source sim:healthy -i 200ms -q -o r.db -- sh -c 'trap \"exit 42\" "
      "TERM; while :; do sleep 0.1; done' & pid=$!; sleep 1.5; kill -TERM $pid; wait $pid; "
      "echo status=$?",
      fmt::arg("dir", quote(dir.string())), fmt::arg("bin", GPUDOCTOR_BIN)));
  EXPECT_NE(r.out.find("status=42"), std::string::npos) << r.out << r.err;
  const auto killed = run_shell(fmt::format(
      "cd {dir}; {bin} run --source sim:healthy -i 200ms -q -o k.db -- sleep 30 & pid=$!; "
      "sleep 1; kill -USR1 $pid; wait $pid; echo status=$?",
      fmt::arg("dir", quote(dir.string())), fmt::arg("bin", GPUDOCTOR_BIN)));
  // sleep dies of SIGUSR1 (10): like a shell, gpudoctor exits with 128 + 10.
  EXPECT_NE(killed.out.find("status=138"), std::string::npos) << killed.out << killed.err;
  fs::remove_all(dir);
}

TEST(Run, TheJobRunsEvenWithoutGpusOrAWritableRecording) {
  const fs::path dir = work_dir("nogpu");
  // No driver: the job runs, the user hears what works without one, nothing is written.
  const auto r = run_with(
      "GPUDOCTOR_NVML_LIB=/nonexistent/libnvidia-ml.so.1",
      fmt::format("run -o {} -- sh -c 'echo job-ran; exit 3'", quote((dir / "r.db").string())));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("job-ran"), std::string::npos);
  EXPECT_NE(r.err.find("the job runs without GPU telemetry"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--source sim:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no GPU telemetry, so no diagnosis, recording or report"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("diagnosis of"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "r.db"));
  EXPECT_FALSE(fs::exists(dir / "r.html"));
  // GPUs but no writable recording: the job runs, the diagnosis is printed, the report written.
  const auto unwritable =
      run("", fmt::format("run --source sim:healthy -q -o /nonexistent-dir/r.db --report {} -- "
                          "true",
                          quote((dir / "r.html").string())));
  EXPECT_EQ(unwritable.exit_code, 0) << unwritable.err;
  EXPECT_NE(unwritable.err.find("no recording is written"), std::string::npos) << unwritable.err;
  EXPECT_NE(unwritable.err.find("diagnosis of"), std::string::npos) << unwritable.err;
  EXPECT_TRUE(fs::exists(dir / "r.html"));
  const auto missing = run("", "run --source sim:healthy -q -o " + quote((dir / "m.db").string()) +
                                   " -- /no/such/program");
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.err.find("cannot run /no/such/program"), std::string::npos) << missing.err;
  fs::remove_all(dir);
}

TEST(Run, WritesIntoTheRunDirectoryUnlessToldAndSaysWhere) {
  const fs::path dir = work_dir("rundir");
  const fs::path cwd = dir / "cwd", runs = dir / "runs" / "deep";
  fs::create_directories(cwd);
  const auto r =
      run_shell(fmt::format("cd {} && GPUDOCTOR_RUN_DIR={} {} run --source sim:healthy -q -- true",
                            quote(cwd.string()), quote(runs.string()), GPUDOCTOR_BIN));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_empty(cwd));  // nothing left where the job ran
  size_t db = 0, html = 0;
  for (const auto& e : fs::directory_iterator(runs)) {
    db += e.path().extension() == ".db";
    html += e.path().extension() == ".html";
    EXPECT_NE(r.err.find(e.path().string()), std::string::npos) << r.err;  // said where
  }
  EXPECT_EQ(db, 1u);
  EXPECT_EQ(html, 1u);
  const auto none = run_shell(
      fmt::format("cd {} && GPUDOCTOR_RUN_DIR={} {} run --source sim:healthy -q --no-save -- true",
                  quote(cwd.string()), quote((dir / "none").string()), GPUDOCTOR_BIN));
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_FALSE(fs::exists(dir / "none"));
  EXPECT_TRUE(fs::is_empty(cwd));
  fs::remove_all(dir);
}

TEST(Run, AuditSaysWhatHoldsTheJobBack) {
  const fs::path dir = work_dir("audit");
  const auto r = run_with(
      "CUDA_LAUNCH_BLOCKING=1 NCCL_P2P_DISABLE=1",
      fmt::format("run --source sim:healthy -o {} -- true", quote((dir / "a.db").string())));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[fail] CUDA_LAUNCH_BLOCKING=1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[warn] NCCL_P2P_DISABLE=1"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(Baseline, SaveThenFlagARegression) {
  const fs::path dir = work_dir("baseline");
  const std::string env = "GPUDOCTOR_BASELINE_DIR=" + quote((dir / "baselines").string());
  const std::string good = (dir / "good.db").string(), bad = (dir / "bad.db").string();
  ASSERT_EQ(
      run("", fmt::format("sim healthy,gpus=2,model=a100-sxm4-80gb,duration=3m -o {}", quote(good)))
          .exit_code,
      0);
  ASSERT_EQ(run("", "sim data_starvation,duration=3m -o " + quote(bad)).exit_code, 0);
  const auto saved = run_with(env, "baseline save " + quote(good) + " --name a100-good");
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_EQ(nlohmann::json::parse(saved.out)["gpus"], 2);
  EXPECT_EQ(run_with(env, "baseline list").out, "a100-good\n");
  const auto rep = run_with(env, fmt::format("report {} -o {} --baseline a100-good", quote(bad),
                                             quote((dir / "bad.html").string())));
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  std::ifstream in(dir / "bad.html");
  std::stringstream html;
  html << in.rdbuf();
  EXPECT_NE(html.str().find("regression</span> mean_power_w"), std::string::npos);
  const auto none = run_with(env, "baseline show nope");
  EXPECT_EQ(none.exit_code, 2);
  fs::remove_all(dir);
}

}  // namespace
