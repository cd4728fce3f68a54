// Helpers of the end-to-end tests: run the real binary (with the stand-in NVML where asked),
// collect its output, compare with golden files (GPUDOCTOR_UPDATE_GOLDEN=1 rewrites them).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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

// How far a live replay's numbers may move from the golden's. The stand-in NVML plays a capture
// in real time, and a GPU's mean power is its energy counter's rise over gpudoctor's own interval,
// so a millisecond of scheduling moves the last printed digit. kExact for everything else.
struct Tolerance {
  double rel = 0;  // of the larger number; integers get no more than this
};
inline constexpr Tolerance kExact{};

// Empty when `got` is `want` with each number within `tol` (a printed decimal may also differ by
// one in its last place); else the first difference. Text between numbers must match, runs of
// spaces aside (a right-aligned column shifts when 99 becomes 100).
inline std::string numbers_differ(const std::string& want, const std::string& got, Tolerance tol) {
  static const std::regex number(R"(-?\d+(\.\d+)?)");
  struct Parts {
    std::string skeleton;
    std::vector<std::string> numbers;
  };
  const auto parts = [](const std::string& s) {
    Parts p;
    p.skeleton = std::regex_replace(std::regex_replace(s, number, "#"), std::regex(" +"), " ");
    for (std::sregex_iterator it(s.begin(), s.end(), number), end; it != end; ++it)
      p.numbers.push_back(it->str());
    return p;
  };
  const Parts w = parts(want), g = parts(got);
  if (w.skeleton != g.skeleton || w.numbers.size() != g.numbers.size()) return "the text differs";
  for (size_t i = 0; i < w.numbers.size(); ++i) {
    const double a = std::stod(w.numbers[i]), b = std::stod(g.numbers[i]);
    const size_t dot = w.numbers[i].find('.');
    const double ulp =
        dot == std::string::npos ? 0 : std::pow(10.0, -double(w.numbers[i].size() - dot - 1));
    if (std::fabs(a - b) > tol.rel * std::max(std::fabs(a), std::fabs(b)) + ulp + 1e-12)
      return fmt::format("number {} is {}, the golden says {}", i + 1, g.numbers[i], w.numbers[i]);
  }
  return "";
}

inline void expect_golden(const std::string& name, const std::string& actual,
                          Tolerance tol = kExact) {
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
  if (tol.rel > 0) {
    const std::string why = numbers_differ(ss.str(), norm, tol);
    EXPECT_EQ(why, "") << "output differs from " << path << ":\n" << norm;
    return;
  }
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
