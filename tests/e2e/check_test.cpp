// End-to-end: `gpudoctor check` against the stand-in NVML and its captures (and the simulator),
// with a made-up /sys tree so CPU governor and NUMA lines do not depend on the machine.
#include <sched.h>

#include <nlohmann/json.hpp>

#include "e2e_util.hpp"

namespace {

using namespace e2e;

// A /sys tree: the 'performance' governor on every CPU this process may use, GPU 0 of
// check-faults-2gpu (bus 1B) on node 0 with those CPUs, GPU 1 (bus 86) on node 1 whose CPUs the
// process may not use.
class SysTree {
 public:
  SysTree() : root_(fs::temp_directory_path() / fmt::format("gd-check-sys-{}", getpid())) {
    fs::remove_all(root_);
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    for (int c : cpus)
      write(fmt::format("devices/system/cpu/cpu{}/cpufreq/scaling_governor", c), "performance");
    write("devices/system/node/node0/cpulist", fmt::format("{}", fmt::join(cpus, ",")));
    write("devices/system/node/node1/cpulist", "4096-4097");
    write("bus/pci/devices/0000:1b:00.0/numa_node", "0");
    write("bus/pci/devices/0000:86:00.0/numa_node", "1");
  }
  ~SysTree() { fs::remove_all(root_); }
  std::string flag() const { return "--sys-root " + quote(root_.string()); }

 private:
  void write(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  fs::path root_;
};

const nlohmann::json* find_check(const nlohmann::json& checks, const std::string& code) {
  for (const auto& c : checks)
    if (c["check"] == code) return &c;
  return nullptr;
}

std::string level_of(const nlohmann::json& checks, const std::string& code) {
  const auto* c = find_check(checks, code);
  return c ? (*c)["level"].get<std::string>() : "missing";
}

TEST(Check, FaultyMachineTextGroupsChecksPerGpuWithFixes) {
  const SysTree sys;
  const Result r = run("check-faults-2gpu", "check --interval 100ms " + sys.flag());
  EXPECT_EQ(r.exit_code, 3) << r.err;  // checks failed
  expect_golden("check-faults-2gpu", r.out);
  const auto lines = lines_of(r.out);
  auto has = [&](const std::string& prefix) {
    for (const auto& l : lines)
      if (l.rfind(prefix, 0) == 0) return true;
    return false;
  };
  EXPECT_TRUE(has("GPU 0: NVIDIA H100 80GB HBM3 (00000000:1B:00.0)")) << r.out;
  EXPECT_TRUE(
      has("  FAIL  power_limit          enforced power limit 500 W is below the board's "
          "default 700 W (71 %)"))
      << r.out;
  EXPECT_NE(r.out.find("fix: restore the default: sudo nvidia-smi -i 0 -pl 700"),
            std::string::npos);
  EXPECT_TRUE(has("  WARN  persistence_mode")) << r.out;
  EXPECT_TRUE(has("  FAIL  ecc_errors           2 uncorrectable ECC errors")) << r.out;
  EXPECT_TRUE(has("  FAIL  row_remapping")) << r.out;
  EXPECT_TRUE(has("  WARN  pcie_link            Gen3 x8 under load")) << r.out;
  EXPECT_TRUE(has("  FAIL  retired_pages")) << r.out;
  EXPECT_TRUE(has("  WARN  numa_affinity")) << r.out;
  EXPECT_TRUE(has("  PASS  cpu_governor         CPU frequency governor: performance")) << r.out;
  EXPECT_TRUE(has("Result: FAIL (")) << r.out;
}

TEST(Check, JsonCarriesEveryCheckAndTheHealthReadings) {
  const SysTree sys;
  const Result r = run("check-faults-2gpu", "check --json " + sys.flag());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "gpudoctor-check");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["result"], "fail");
  EXPECT_EQ(j["driver_version"], "550.54.15");
  EXPECT_EQ(j["cuda_driver_version"], "12.4");
  EXPECT_GE(j["counts"]["fail"].get<int>(), 4);
  EXPECT_EQ(level_of(j["machine"], "cpu_governor"), "pass");
  EXPECT_EQ(level_of(j["machine"], "driver_version"), "info");
  ASSERT_EQ(j["gpus"].size(), 2u);
  const auto& g0 = j["gpus"][0];
  EXPECT_EQ(g0["index"], 0);
  EXPECT_EQ(level_of(g0["checks"], "power_limit"), "fail");
  EXPECT_EQ(level_of(g0["checks"], "persistence_mode"), "warn");
  EXPECT_EQ(level_of(g0["checks"], "ecc_errors"), "fail");
  EXPECT_EQ(level_of(g0["checks"], "row_remapping"), "fail");
  EXPECT_EQ(level_of(g0["checks"], "retired_pages"), "info");  // Hopper: not applicable
  EXPECT_EQ(level_of(g0["checks"], "pcie_link"), "pass");
  EXPECT_EQ(level_of(g0["checks"], "numa_affinity"), "pass");
  EXPECT_TRUE((*find_check(g0["checks"], "power_limit"))["fix"].is_string());
  EXPECT_TRUE((*find_check(g0["checks"], "mig_mode"))["fix"].is_null());
  EXPECT_EQ(g0["health"]["ecc_volatile_uncorrected"], 2);
  EXPECT_EQ(g0["health"]["remap_pending"], 1);
  EXPECT_EQ(g0["health"]["retired_pages_sbe"]["status"], "not_supported");
  EXPECT_EQ(g0["health"]["retired_pages_sbe"]["code"], "NOT_SUPPORTED");
  EXPECT_EQ(g0["readings"]["power_limit_enforced_w"], 500);
  const auto& g1 = j["gpus"][1];
  EXPECT_EQ(level_of(g1["checks"], "pcie_link"), "warn");
  EXPECT_EQ(level_of(g1["checks"], "retired_pages"), "fail");
  EXPECT_EQ(level_of(g1["checks"], "row_remapping"), "info");
  EXPECT_EQ(level_of(g1["checks"], "thermal_margin"), "warn");
  EXPECT_EQ(level_of(g1["checks"], "clock_settings"), "pass");  // 1290 MHz is a V100's default
  EXPECT_EQ(level_of(g1["checks"], "numa_affinity"), "warn");
  EXPECT_EQ(level_of(g1["checks"], "persistence_mode"), "pass");
}

TEST(Check, FailOnDecidesTheExitStatus) {
  const SysTree sys;
  EXPECT_EQ(run("check-faults-2gpu", "check --fail-on never " + sys.flag()).exit_code, 0);
  // The idle H100 passes everything it can judge (its link is at the maximum even at idle).
  const Result idle = run("idle-1gpu", "check " + sys.flag());
  EXPECT_EQ(idle.exit_code, 0) << idle.out << idle.err;
  EXPECT_NE(idle.out.find("Result: PASS"), std::string::npos) << idle.out;
  EXPECT_EQ(run("idle-1gpu", "check --fail-on warn " + sys.flag()).exit_code, 0);
  const Result bad = run("idle-1gpu", "check --fail-on sometimes");
  EXPECT_EQ(bad.exit_code, 2);
}

TEST(Check, NotSupportedIsNotApplicableNeverAFailure) {
  // An A100 and an L4 with no health data at all (every call answers NOT_SUPPORTED), the L4
  // without persistence or MIG and idle on a Gen1 x4 link.
  const SysTree sys;
  const Result r = run("mixed-unsupported", "check --json " + sys.flag());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["counts"]["fail"], 0);
  const auto& l4 = j["gpus"][1]["checks"];
  for (const char* code :
       {"ecc_errors", "retired_pages", "row_remapping", "mig_mode", "persistence_mode"}) {
    EXPECT_EQ(level_of(l4, code), "info") << code;
    EXPECT_NE((*find_check(l4, code))["message"].get<std::string>().find("not applicable"),
              std::string::npos)
        << code;
  }
  EXPECT_EQ(level_of(l4, "pcie_link"), "info");  // Gen1 x4 at idle: cannot be judged
  EXPECT_NE((*find_check(l4, "pcie_link"))["fix"].get<std::string>().find("again while a job"),
            std::string::npos);
}

TEST(Check, LegacyDriverAndLostGpu) {
  const SysTree sys;
  const Result old = run_with(fake_env("old-driver", FAKE_NVML_LEGACY_LIB), "check " + sys.flag());
  EXPECT_EQ(old.exit_code, 0) << old.out << old.err;
  const Result lost = run_with(fake_env("faults-lost") + " GPUDOCTOR_FAKE_NVML_START_S=1",
                               "check --json " + sys.flag());
  EXPECT_EQ(lost.exit_code, 3) << lost.err;
  const auto j = nlohmann::json::parse(lost.out);
  ASSERT_EQ(j["gpus"].size(), 2u);
  ASSERT_EQ(j["gpus"][1]["checks"].size(), 1u);
  EXPECT_EQ(j["gpus"][1]["checks"][0]["check"], "gpu_reachable");
  EXPECT_EQ(j["gpus"][1]["checks"][0]["level"], "fail");
}

TEST(Check, CapturesKeepTheHealthReadings) {
  // `capture` of a machine with faults, replayed: check finds the same faults.
  const SysTree sys;
  const fs::path out = fs::temp_directory_path() / fmt::format("gd-check-{}.json", getpid());
  const Result cap =
      run("check-faults-2gpu", "capture -o " + quote(out.string()) + " --duration 300ms -i 100ms");
  ASSERT_EQ(cap.exit_code, 0) << cap.err;
  const Result r = run_with("GPUDOCTOR_NVML_LIB=" + quote(FAKE_NVML_LIB) +
                                " GPUDOCTOR_FAKE_NVML_CAPTURE=" + quote(out.string()),
                            "check --json " + sys.flag());
  fs::remove(out);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(level_of(j["gpus"][0]["checks"], "ecc_errors"), "fail");
  EXPECT_EQ(level_of(j["gpus"][0]["checks"], "row_remapping"), "fail");
  EXPECT_EQ(level_of(j["gpus"][0]["checks"], "retired_pages"), "info");
  EXPECT_EQ(level_of(j["gpus"][1]["checks"], "retired_pages"), "fail");
}

TEST(Check, SimulatorShowsTheLoweredCapAndTheApplicationClocks) {
  const SysTree sys;
  const Result capped = run("", "check --source sim:power_capped --json " + sys.flag());
  EXPECT_EQ(capped.exit_code, 3) << capped.err;
  auto j = nlohmann::json::parse(capped.out);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(level_of(j["gpus"][0]["checks"], "power_limit"), "fail");
  EXPECT_NE((*find_check(j["gpus"][0]["checks"], "ecc_errors"))["message"].get<std::string>().find(
                "not available from this source"),
            std::string::npos);
  const Result locked = run("", "check --source sim:clocks_locked " + sys.flag());
  EXPECT_EQ(locked.exit_code, 3) << locked.err;
  EXPECT_NE(locked.out.find("FAIL  clock_settings       application clocks set to 1005 MHz"),
            std::string::npos)
      << locked.out;
}

}  // namespace
