// Helpers of the end-to-end tests: run the real binary (with the stand-in NVML where asked),
// collect its output, compare with golden files (GPUDOCTOR_UPDATE_GOLDEN=1 rewrites them).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace e2e {

namespace fs = std::filesystem;
inline const std::string kSrc = GPUDOCTOR_SOURCE_DIR;

struct Result {
  int exit_code = -1;
  std::string out, err;
  double seconds = 0;
};

inline std::string quote(const std::string& s) {
  return "'" + s + "'";
}

inline std::string capture_path(const std::string& name) {
  return kSrc + "/tests/data/captures/" + name + ".json";
}

// Runs a shell command line, collecting stdout, stderr, exit code and wall time.
inline Result run_shell(const std::string& command_line) {
  const fs::path dir = fs::temp_directory_path();
  const fs::path err_file = dir / fmt::format("gpudoctor-e2e-{}.err", getpid());
  const fs::path script = dir / fmt::format("gpudoctor-e2e-{}.sh", getpid());
  std::ofstream(script) << command_line << "\n";
  const std::string cmd =
      fmt::format("sh {} 2>{}", quote(script.string()), quote(err_file.string()));
  Result r;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream e(err_file);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  fs::remove(err_file);
  fs::remove(script);
  return r;
}

// Runs `gpudoctor ARGS` with extra environment `env` ("VAR=value ..." or "-u VAR").
inline Result run_with(const std::string& env, const std::string& args) {
  return run_shell(fmt::format("env {} {} {}", env, GPUDOCTOR_BIN, args));
}

inline std::string fake_env(const std::string& capture, const std::string& lib = FAKE_NVML_LIB) {
  std::string env = "GPUDOCTOR_NVML_LIB=" + quote(lib);
  // Owners come from a /proc fixture (tests/data/proc) when a test asks; by default from none,
  // so the machine's own processes never show up in a golden file.
  env += " GPUDOCTOR_PROC_ROOT=" + quote(kSrc + "/tests/data/proc-none");
  if (!capture.empty()) env += " GPUDOCTOR_FAKE_NVML_CAPTURE=" + quote(capture_path(capture));
  return env;
}

inline Result run(const std::string& capture, const std::string& args) {
  return run_with(fake_env(capture), args);
}

// Host names and wall-clock times differ between runs; everything else must not.
inline std::string normalise(std::string s) {
  s = std::regex_replace(s, std::regex(R"(host \S+)"), "host HOST");
  s = std::regex_replace(s, std::regex(R"((^|\n)\d\d:\d\d:\d\d )"), "$1HH:MM:SS ");
  s = std::regex_replace(s, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"), "TIME");
  return s;
}

inline void expect_golden(const std::string& name, const std::string& actual) {
  const fs::path path = fs::path(kSrc) / "tests/e2e/golden" / (name + ".txt");
  const std::string norm = normalise(actual);
  if (std::getenv(GPUDOCTOR_UPDATE_GOLDEN_ENV)) {
    std::ofstream(path) << norm;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path << " (run with GPUDOCTOR_UPDATE_GOLDEN=1)";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(norm, ss.str()) << "output differs from " << path;
}

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string line; std::getline(ss, line);) out.push_back(line);
  return out;
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string cell; std::getline(ss, cell, sep);) out.push_back(cell);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

}  // namespace e2e
