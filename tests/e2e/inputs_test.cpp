// Inputs as people hand them over, through the real binary: `-` for standard input through a pipe
// (also compressed, also cut by Ctrl-C), a folder of logs diagnosed log by log and --merge'd into
// one run, and an MLflow run folder.
#include <fcntl.h>
#include <signal.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "e2e_util.hpp"

namespace e2e {
namespace {

const std::string kLog = kSrc + "/tests/data/logs/smi-csv/two_gpu_units.csv";
const std::string kOther = kSrc + "/tests/data/logs/smi-csv/h100_nounits.csv";
const std::string kMlflow =
    kSrc + "/tests/data/runs/mlflow/mlruns/0/8c2f4a91d3e04b7f9a6e1c5d2b7f0e13";

nlohmann::json json_of(const Result& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Dir {
  fs::path path;
  explicit Dir(const std::string& name)
      : path(fs::temp_directory_path() / fmt::format("gpudoctor-e2e-{}-{}", name, getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

bool has_note(const nlohmann::json& d, const std::string& part) {
  for (const auto& n : d["input_notes"])
    if (n.get<std::string>().find(part) != std::string::npos) return true;
  return false;
}

TEST(Inputs, StandardInputThroughAPipeIsTheFile) {
  const auto file = json_of(run("", "diagnose --format json " + quote(kLog)));
  const auto piped = json_of(
      run_shell(fmt::format("cat {} | {} diagnose --format json -", quote(kLog), GPUDOCTOR_BIN)));
  ASSERT_FALSE(piped.is_discarded());
  EXPECT_EQ(piped["verdict"], file["verdict"]);
  EXPECT_EQ(piped["gpus"].size(), file["gpus"].size());
  EXPECT_EQ(piped["duration_s"], file["duration_s"]);
  const auto gz = json_of(run_shell(
      fmt::format("gzip -c {} | {} diagnose --format json -", quote(kLog), GPUDOCTOR_BIN)));
  EXPECT_EQ(gz["verdict"], file["verdict"]);
  EXPECT_TRUE(has_note(gz, "gzip archive decompressed"));
  // Nothing at all on standard input is said so.
  const auto empty = run_shell(fmt::format("{} diagnose - </dev/null", GPUDOCTOR_BIN));
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("standard input: nothing arrived (empty)"), std::string::npos);
}

// `nvidia-smi ... -l 1 | gpudoctor diagnose -` ended by Ctrl-C: the terminal sends SIGINT to both;
// gpudoctor stops reading and diagnoses what arrived (a line cut short is dropped).
TEST(Inputs, CtrlCOnAPipeDiagnosesWhatArrived) {
  Dir dir("sigint");
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const fs::path out = dir.path / "out.json";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(pipe_fds[0], STDIN_FILENO);
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    execl(GPUDOCTOR_BIN, GPUDOCTOR_BIN, "diagnose", "--format", "json", "-", nullptr);
    _exit(127);
  }
  close(pipe_fds[0]);
  const std::string text = slurp(kLog) + "2024/03/14 10:15:09.123, 0, NVIDIA A1";
  ASSERT_EQ(write(pipe_fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  // Wait until gpudoctor catches SIGINT (its handler is in place), then send it; the pipe stays
  // open as a producer that was not stopped yet leaves it.
  bool caught = false;
  for (int i = 0; i < 200 && !caught; ++i) {
    const std::string status = slurp(fmt::format("/proc/{}/status", pid));
    const size_t at = status.find("SigCgt:");
    if (at != std::string::npos) {
      const unsigned long long mask = std::stoull(status.substr(at + 7), nullptr, 16);
      caught = (mask & (1ull << (SIGINT - 1))) != 0;
    }
    if (!caught) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(caught) << "gpudoctor never installed its SIGINT handler";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the bytes are read meanwhile
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  close(pipe_fds[1]);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const auto d = nlohmann::json::parse(slurp(out), nullptr, false);
  ASSERT_FALSE(d.is_discarded()) << slurp(out);
  EXPECT_EQ(d["gpus"].size(), 2u);
  EXPECT_TRUE(has_note(d, "standard input: interrupted (Ctrl-C); read what had arrived"));
  const auto file = json_of(run("", "diagnose --format json " + quote(kLog)));
  EXPECT_EQ(d["duration_s"], file["duration_s"]);  // the cut line is not a sample
}

// One log per GPU of a two-GPU job: the rows of each index in a file of its own.
void split_by_gpu(const fs::path& dir) {
  const auto lines = lines_of(slurp(kLog));
  std::ofstream g0(dir / "gpu0.csv"), g1(dir / "gpu1.csv");
  g0 << lines[0] << "\n";
  g1 << lines[0] << "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    (split(lines[i], ',')[1] == " 0" ? g0 : g1) << lines[i] << "\n";
  }
}

TEST(Inputs, AFolderOfLogsIsDiagnosedLogByLog) {
  Dir dir("folder");
  fs::copy_file(kLog, dir.path / "a.csv");
  fs::copy_file(kOther, dir.path / "b.csv");
  std::ofstream(dir.path / "notes.txt") << "the run went fine\n";
  const auto r = run("", "diagnose " + quote(dir.path.string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("== Log 1 of 3: " + (dir.path / "a.csv").string()), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("== Log 2 of 3: " + (dir.path / "b.csv").string()), std::string::npos);
  EXPECT_NE(r.out.find("== Summary: 3 logs in " + dir.path.string() +
                       ", each diagnosed on its own (1 not read)"),
            std::string::npos);
  EXPECT_NE(r.out.find((dir.path / "notes.txt").string() + "  not read: "), std::string::npos);
  EXPECT_NE(
      r.err.find("gpudoctor: not read: " + (dir.path / "notes.txt").string() + ": not a format"),
      std::string::npos)
      << r.err;

  const auto j = json_of(run("", "diagnose --format json " + quote(dir.path.string())));
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["grouped_by"], "file");
  ASSERT_EQ(j["runs"].size(), 3u);
  const auto alone = json_of(run("", "diagnose --format json " + quote(kLog)));
  EXPECT_EQ(j["runs"][0]["kind"], "file");
  EXPECT_EQ(j["runs"][0]["diagnosis"]["verdict"], alone["verdict"]);
  EXPECT_TRUE(j["runs"][2].contains("error"));
  EXPECT_FALSE(j["runs"][2].contains("diagnosis"));
}

TEST(Inputs, MergeReadsOneLogPerGpuAsOneRun) {
  Dir dir("merge");
  split_by_gpu(dir.path);
  const auto whole = json_of(run("", "diagnose --format json " + quote(kLog)));
  const auto merged =
      json_of(run("", "diagnose --format json --merge " + quote(dir.path.string())));
  ASSERT_FALSE(merged.is_discarded());
  ASSERT_EQ(merged["gpus"].size(), 2u);
  EXPECT_EQ(merged["gpus"][0]["index"], 0);
  EXPECT_EQ(merged["gpus"][1]["index"], 1);
  EXPECT_EQ(merged["verdict"], whole["verdict"]);
  EXPECT_EQ(merged["start"], whole["start"]);
  EXPECT_TRUE(has_note(
      merged, "merged 2 logs as one run, GPUs renumbered: " + (dir.path / "gpu0.csv").string() +
                  " (GPU 0), " + (dir.path / "gpu1.csv").string() +
                  " (GPU 1); times aligned by their absolute times"));
  // report --merge: the same run, as HTML.
  const fs::path html = dir.path / "merged.html";
  const auto rep =
      run("", "report --merge " + quote(dir.path.string()) + " -o " + quote(html.string()));
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.err.find("(2 GPUs, verdict "), std::string::npos) << rep.err;
  EXPECT_NE(slurp(html).find("merged 2 logs as one run"), std::string::npos);
  // --merge of something that is not a folder of logs is refused.
  const auto bad = run("", "diagnose --merge " + quote(kLog));
  EXPECT_EQ(bad.exit_code, 2);
}

TEST(Inputs, MlflowRunFolderIsDiagnosed) {
  const auto j = json_of(run("", "diagnose --format json " + quote(kMlflow)));
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["gpus"].size(), 2u);
  EXPECT_TRUE(has_note(j, "read as an MLflow run's system metrics"));
}

}  // namespace
}  // namespace e2e
