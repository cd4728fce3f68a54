// A new user's walk-through, as an end-to-end test of the outputs' shape: the first command with
// nothing learnt, help, a machine without a driver, the simulator, `status` and `watch` within 100
// columns, a diagnosis with its straggler told apart, markdown for a ticket, real logs recorded
// by other people, and `run` without a GPU. The README's example blocks are these goldens
// (GPUDOCTOR_UPDATE_GOLDEN=1 rewrites both).
#include <set>

#include "e2e_util.hpp"

namespace e2e {
namespace {

const std::string kNoDriver = "GPUDOCTOR_NVML_LIB=/nonexistent/libnvidia-ml.so.1";
const std::string kRealLogs = kSrc + "/../shared/data/real-logs/";

size_t columns_of(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

void expect_fits(const std::string& what, const std::string& text, size_t width = 100) {
  for (const auto& l : lines_of(text)) EXPECT_LE(columns_of(l), width) << what << ": " << l;
}

// The block of a document that shows `name`'s golden: between "<!-- walkthrough: NAME -->" and
// the next "<!-- walkthrough end -->", in a ``` fence. Rewritten with the goldens.
void expect_doc_block(const std::string& doc, const std::string& name, const std::string& actual,
                      Tolerance tol = kExact) {
  const fs::path path = fs::path(kSrc) / doc;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string readme = ss.str();
  const std::string begin = "<!-- walkthrough: " + name + " -->\n```\n",
                    end = "```\n<!-- walkthrough end -->";
  const size_t b = readme.find(begin);
  ASSERT_NE(b, std::string::npos) << doc << " has no block " << begin;
  const size_t e = readme.find(end, b);
  ASSERT_NE(e, std::string::npos);
  const std::string norm = normalise(actual);
  if (std::getenv(GPUDOCTOR_UPDATE_GOLDEN_ENV)) {
    readme.replace(b + begin.size(), e - b - begin.size(), norm);
    std::ofstream(path) << readme;
    return;
  }
  const std::string shown = readme.substr(b + begin.size(), e - b - begin.size());
  if (tol.rel > 0) {
    EXPECT_EQ(numbers_differ(shown, norm, tol), "")
        << doc << "'s block " << name << " differs (GPUDOCTOR_UPDATE_GOLDEN=1 rewrites it):\n"
        << norm;
    return;
  }
  EXPECT_EQ(shown, norm) << doc << "'s block " << name
                         << " differs (GPUDOCTOR_UPDATE_GOLDEN=1 rewrites it)";
}

struct Walk : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / fmt::format("gpudoctor-walk-{}", getpid());
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string sim(const std::string& spec, const std::string& file) {
    const std::string path = (dir / file).string();
    const auto r = run("", fmt::format("sim {} -o {}", spec, quote(path)));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
  }
};

TEST_F(Walk, FirstCommandsLeadSomewhere) {
  const auto bare = run_with("", "");
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("Start here"), std::string::npos) << bare.err;
  EXPECT_NE(bare.err.find("gpudoctor demo"), std::string::npos) << bare.err;
  EXPECT_NE(bare.err.find("gpudoctor diagnose LOG"), std::string::npos) << bare.err;

  const auto help = run_with("", "--help");
  EXPECT_EQ(help.exit_code, 0);
  expect_fits("--help", help.out);
  EXPECT_LT(help.out.find("demo"), help.out.find("status")) << help.out;

  // No driver: every live command says what works without one.
  for (const std::string cmd : {"status", "watch -c 1", "top --once --warmup 0s", "check"}) {
    const auto r = run_with(kNoDriver, cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("--source sim:"), std::string::npos) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("gpudoctor diagnose LOG"), std::string::npos) << cmd << ": " << r.err;
  }
  const auto r =
      run_shell(fmt::format("cd {} && env {} HOME={} {} run -- true", quote(dir.string()),
                            kNoDriver, quote(dir.string()), GPUDOCTOR_BIN));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("diagnosis of"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(dir)) << "run without a GPU left files";
}

TEST_F(Walk, LiveViewsFitOneHundredColumns) {
  const auto status = run_with("", "status --source sim:mixed,gpus=8");
  ASSERT_EQ(status.exit_code, 0) << status.err;
  expect_fits("status", status.out);
  EXPECT_NE(status.out.find("Owner"), std::string::npos) << status.out;  // owners stay
  const auto watch = run_with("", "watch --source sim:straggler,speed=20 -i 100ms -c 3");
  ASSERT_EQ(watch.exit_code, 0) << watch.err;
  expect_fits("watch", watch.out);
  EXPECT_NE(watch.out.find("cause"), std::string::npos) << watch.out;
  // Wider when the terminal is: every column comes back.
  const auto wide = run_with("COLUMNS=200", "status --source sim:mixed,gpus=8");
  EXPECT_NE(wide.out.find("SM MHz/max"), std::string::npos) << wide.out;
  EXPECT_EQ(status.out.find("SM MHz/max"), std::string::npos) << status.out;
}

// The README's watch example: the bundled 4-GPU capture through the stand-in NVML, played in
// real time: mean power (and efficiency from it) moves with scheduling in its last digit.
TEST_F(Walk, WatchOnTheBundledCapture) {
  const auto table = run("demo-4gpu", "watch -i 1s -c 2");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const auto csv = run("demo-4gpu", "watch -i 500ms -c 1 --format csv --gpus 1,3");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const std::string shown = "$ gpudoctor watch -i 1s -c 2\n" + table.out +
                            "$ gpudoctor watch -i 500ms -c 1 --format csv --gpus 1,3\n" + csv.out;
  expect_fits("watch", table.out);
  constexpr Tolerance kReplay{0.01};
  expect_golden("walkthrough-watch", shown, kReplay);
  expect_doc_block("README.md", "watch", shown, kReplay);
}

TEST(Golden, ReplayToleranceAllowsTheLastDigitOnly) {
  const Tolerance t{0.01};
  EXPECT_EQ(numbers_differ("1,184.2,0.035,0x0\n", "1,184.3,0.036,0x0\n", t), "");
  EXPECT_EQ(numbers_differ("gpu  99 w\n", "gpu 100 w\n", t), "");
  EXPECT_NE(numbers_differ("1,184.2\n", "2,184.2\n", t), "");        // another GPU
  EXPECT_NE(numbers_differ("13 busy\n", "17 busy\n", t), "");        // another reading
  EXPECT_NE(numbers_differ("184.2 idle\n", "184.2 busy\n", t), "");  // another verdict
  EXPECT_NE(numbers_differ("0x0\n", "0x4\n", t), "");                // other reasons
  EXPECT_NE(numbers_differ("1,2\n", "1,2,3\n", t), "");
}

TEST_F(Walk, AStragglerAndTheGpusWaitingForIt) {
  const std::string db = sim("straggler", "straggler.db");
  const auto text = run("", "diagnose " + quote(db));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  expect_golden("walkthrough-straggler", text.out);
  expect_doc_block("README.md", "straggler", text.out);
  expect_doc_block("docs/diagnosis.md", "straggler", text.out);
  EXPECT_NE(text.out.find("[straggler]"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[waits for GPU 2]"), std::string::npos) << text.out;
  // Every fix once: no line of the output repeats.
  std::set<std::string> fixes;
  for (const auto& l : lines_of(text.out))
    if (l.find("fix: ") != std::string::npos && l.find("fix: as above") == std::string::npos) {
      EXPECT_TRUE(fixes.insert(l).second) << "said twice: " << l;
    }
  const auto md = run("", "diagnose --format markdown " + quote(db));
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| evidence | value |"), std::string::npos) << md.out;
  EXPECT_EQ(md.out.find("Evidence: `{"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| straggler |"), std::string::npos) << md.out;
  const auto json = run("", "diagnose --format json " + quote(db));
  EXPECT_NE(json.out.find("\"role\": \"straggler\""), std::string::npos);
}

TEST_F(Walk, AMixedNode) {
  const std::string db = sim("mixed", "mixed.db");
  const auto text = run("", "diagnose " + quote(db));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  expect_golden("walkthrough-mixed", text.out);
  expect_doc_block("README.md", "mixed", text.out);
}

// Real logs recorded by other people: the notes say one thing once, and advise only what works.
TEST_F(Walk, RealLogsReadShort) {
  if (!fs::exists(kRealLogs)) GTEST_SKIP() << "no shared real logs beside the checkout";
  for (const std::string log :
       {"0-KaiKai-0__stanford_alpaca__wandb__run-20231227_044701-kqkyqqs0__run-kqkyqqs0.wandb",
        "4179e1__dcgm_test__dmon.csv", "alifarahani1998__IO-Workload-Characterization__gpustat.txt",
        "atharvanihalani__gpu-telemetry-exploration__data__b1_telemetry.csv"}) {
    const auto r = run("", "diagnose " + quote(kRealLogs + log));
    ASSERT_EQ(r.exit_code, 0) << log << ": " << r.err;
    std::set<std::string> said;
    for (const auto& l : lines_of(r.out)) {
      if (l.rfind("  - ", 0) != 0) continue;  // a note, limitation or data-quality line
      // "GPU 3: x" and "GPU 4: x" are said once, as "GPUs 3-4: x".
      const size_t colon = l.find(": ");
      const std::string rest = colon == std::string::npos ? l : l.substr(colon);
      if (l.rfind("  - GPU ", 0) == 0) {
        EXPECT_TRUE(said.insert(rest).second) << log << ": said for several GPUs apart: " << l;
      }
    }
    const bool has_power = r.out.find(" W of ") != std::string::npos ||
                           r.out.find("no power draw in this input") == std::string::npos;
    if (!has_power) {
      EXPECT_EQ(r.out.find("--power-limit"), std::string::npos) << log << ": " << r.out;
    }
    EXPECT_LE(lines_of(r.out).size(), 60u) << log << ": " << r.out;
  }
}

}  // namespace
}  // namespace e2e
