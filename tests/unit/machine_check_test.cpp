// `gpudoctor check`'s rules (analysis/machine_check) over hand-made samples and health readings,
// the NVML health reads (NvmlDevice::read_health) against a hand-made function table, and the
// host facts it reports, from a made-up /sys tree.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "analysis/machine_check.hpp"
#include "host/machine_facts.hpp"
#include "sources/nvml/capture_writer.hpp"
#include "sources/nvml/nvml_device.hpp"

namespace gpudoctor {
namespace {

// A healthy, busy H100: every check passes (ECC, row remapping read from "NVML").
GpuCheckInput healthy_gpu() {
  GpuCheckInput g;
  g.info.index = 0;
  g.info.name = "NVIDIA H100 80GB HBM3";
  g.info.pci_bus_id = "00000000:1B:00.0";
  g.info.persistence_mode = true;
  g.info.mig_mode = false;
  DeviceSample s;
  s[Field::kUtilGpu] = Reading::of(99);
  s[Field::kPower] = Reading::of(650);
  s[Field::kPowerLimitEnforced] = Reading::of(700);
  s[Field::kPowerLimit] = Reading::of(700);
  s[Field::kPowerLimitDefault] = Reading::of(700);
  s[Field::kTemp] = Reading::of(62);
  s[Field::kTempSlowdown] = Reading::of(89);
  s[Field::kClockSm] = Reading::of(1980);
  s[Field::kClockSmMax] = Reading::of(1980);
  s[Field::kClockAppSm] = Reading::of(1980);
  s[Field::kClockAppMem] = Reading::of(2619);
  s[Field::kClockEventReasons] = Reading::of(0);
  s[Field::kPcieGen] = Reading::of(5);
  s[Field::kPcieGenMax] = Reading::of(5);
  s[Field::kPcieWidth] = Reading::of(16);
  s[Field::kPcieWidthMax] = Reading::of(16);
  g.first = g.second = s;
  DeviceHealth& h = g.health;
  h.read = true;
  h.ecc_mode_current = h.ecc_mode_pending = Reading::of(1);
  h.ecc_volatile_corrected = h.ecc_volatile_uncorrected = Reading::of(0);
  h.ecc_aggregate_corrected = h.ecc_aggregate_uncorrected = Reading::of(0);
  h.retired_pages_sbe = h.retired_pages_dbe = h.retired_pages_pending = Reading::unsupported();
  h.remapped_rows_corrected = h.remapped_rows_uncorrected = Reading::of(0);
  h.remap_pending = h.remap_failure = Reading::of(0);
  h.app_clock_default_sm_mhz = Reading::of(1980);
  h.app_clock_default_mem_mhz = Reading::of(2619);
  g.numa_node = 0;
  return g;
}

AuditItem find(const std::vector<AuditItem>& items, const std::string& code) {
  for (const auto& i : items)
    if (i.code == code) return i;
  ADD_FAILURE() << "no item " << code;
  return {};
}

AuditItem check(const GpuCheckInput& g, const std::string& code) {
  return find(check_gpu(g), code);
}

void set_both(GpuCheckInput& g, Field f, Reading r) {
  g.first[f] = r;
  g.second[f] = r;
}

TEST(MachineCheck, HealthyBusyGpuPassesEveryCheck) {
  const auto items = check_gpu(healthy_gpu());
  ASSERT_EQ(items.size(), 11u);
  for (const auto& i : items) {
    if (i.code == "retired_pages") {
      EXPECT_EQ(i.level, "info") << i.message;  // not applicable on Hopper
      continue;
    }
    EXPECT_EQ(i.level, "pass") << i.code << ": " << i.message;
    EXPECT_TRUE(i.fix.empty()) << i.code;
  }
}

TEST(MachineCheck, LoweredPowerLimitFailsWithTheCommandToRestoreIt) {
  GpuCheckInput g = healthy_gpu();
  g.info.index = 3;
  set_both(g, Field::kPowerLimitEnforced, Reading::of(350));
  set_both(g, Field::kPowerLimit, Reading::of(350));
  const auto i = check(g, "power_limit");
  EXPECT_EQ(i.level, "fail");
  EXPECT_NE(i.message.find("350 W is below the board's default 700 W (50 %)"), std::string::npos)
      << i.message;
  EXPECT_NE(i.fix.find("nvidia-smi -i 3 -pl 700"), std::string::npos) << i.fix;
  // The clock event reason is then blamed on the cap, not on dense math.
  set_both(g, Field::kClockEventReasons, Reading::of(0x4));
  EXPECT_EQ(check(g, "clock_event_reasons").level, "warn");
}

TEST(MachineCheck, LimitEnforcedBelowTheBoardsOwnSettingPointsAtAnotherLimit) {
  GpuCheckInput g = healthy_gpu();
  set_both(g, Field::kPowerLimitEnforced, Reading::of(450));  // e.g. a system power policy
  const auto i = check(g, "power_limit");
  EXPECT_EQ(i.level, "fail");
  EXPECT_NE(i.message.find("another limit is in force"), std::string::npos) << i.message;
  EXPECT_NE(i.fix.find("power policy"), std::string::npos);
}

TEST(MachineCheck, UnreadableLimitsAreInfoNotFail) {
  GpuCheckInput g = healthy_gpu();
  set_both(g, Field::kPowerLimitDefault, Reading::unsupported(nvml_code::kNotSupported));
  const auto i = check(g, "power_limit");
  EXPECT_EQ(i.level, "info");
  EXPECT_NE(i.message.find("default: not supported"), std::string::npos) << i.message;
}

TEST(MachineCheck, PersistenceModeOffWarnsAndUnsupportedIsInfo) {
  GpuCheckInput g = healthy_gpu();
  g.info.persistence_mode = false;
  auto i = check(g, "persistence_mode");
  EXPECT_EQ(i.level, "warn");
  EXPECT_NE(i.fix.find("-pm 1"), std::string::npos);
  g.info.persistence_mode = std::nullopt;
  EXPECT_EQ(check(g, "persistence_mode").level, "info");
}

TEST(MachineCheck, ApplicationClocksBelowTheirDefaultFail) {
  GpuCheckInput g = healthy_gpu();
  set_both(g, Field::kClockAppSm, Reading::of(1005));
  const auto i = check(g, "clock_settings");
  EXPECT_EQ(i.level, "fail");
  EXPECT_NE(i.message.find("SM 1005 MHz (default 1980)"), std::string::npos) << i.message;
  EXPECT_NE(i.fix.find("-rac"), std::string::npos);
}

TEST(MachineCheck, WithoutDefaultClocksTheGpusOwnReasonDecides) {
  // The simulator and old drivers give no default application clock.
  GpuCheckInput g = healthy_gpu();
  g.health = DeviceHealth{};
  set_both(g, Field::kClockAppSm, Reading::of(1005));
  EXPECT_EQ(check(g, "clock_settings").level, "pass");  // lower than max, but not holding
  set_both(g, Field::kClockEventReasons, Reading::of(0x2));
  const auto i = check(g, "clock_settings");
  EXPECT_EQ(i.level, "fail");
  EXPECT_NE(i.message.find("1005 MHz, below the maximum 1980 MHz"), std::string::npos);
}

TEST(MachineCheck, DefaultApplicationClockBelowMaxIsNormal) {
  // A V100: default application clock 1290 MHz, maximum 1530 MHz.
  GpuCheckInput g = healthy_gpu();
  set_both(g, Field::kClockSmMax, Reading::of(1530));
  set_both(g, Field::kClockAppSm, Reading::of(1290));
  g.health.app_clock_default_sm_mhz = Reading::of(1290);
  const auto i = check(g, "clock_settings");
  EXPECT_EQ(i.level, "pass") << i.message;
}

TEST(MachineCheck, ClockSettingReasonAtDefaultClocksMeansLockedClocks) {
  GpuCheckInput g = healthy_gpu();
  g.second[Field::kClockEventReasons] = Reading::of(0x2);  // one sample is enough
  const auto i = check(g, "clock_settings");
  EXPECT_EQ(i.level, "warn");
  EXPECT_NE(i.message.find("locked clocks"), std::string::npos);
  EXPECT_NE(i.fix.find("-rgc"), std::string::npos);
}

TEST(MachineCheck, LockedClocksCannotBeRuledOutAtIdle) {
  GpuCheckInput g = healthy_gpu();
  set_both(g, Field::kUtilGpu, Reading::of(0));
  set_both(g, Field::kClockEventReasons, Reading::of(0x1));  // GPU idle
  const auto i = check(g, "clock_settings");
  EXPECT_EQ(i.level, "info");
  EXPECT_NE(i.message.find("cannot be ruled out"), std::string::npos) << i.message;
  EXPECT_NE(i.fix.find("while a job runs"), std::string::npos);
}

TEST(MachineCheck, NoGpuFails) {
  const CheckResult r = check_machine(CheckInput{});
  EXPECT_EQ(r.overall(), "fail");
  EXPECT_EQ(find(r.machine, "gpus_found").level, "fail");
}

TEST(MachineCheck, PcieLinkIsJudgedOnlyUnderLoad) {
  GpuCheckInput g = healthy_gpu();
  set_both(g, Field::kPcieGen, Reading::of(4));
  set_both(g, Field::kPcieWidth, Reading::of(8));
  auto i = check(g, "pcie_link");
  EXPECT_EQ(i.level, "warn");
  EXPECT_NE(i.message.find("Gen4 x8 under load (util 99 %), maximum Gen5 x16"), std::string::npos)
      << i.message;
  EXPECT_NE(i.message.find("about 25 % of the link's bandwidth"), std::string::npos) << i.message;
  EXPECT_NE(i.fix.find("lspci"), std::string::npos);
  set_both(g, Field::kUtilGpu, Reading::of(0));
  i = check(g, "pcie_link");
  EXPECT_EQ(i.level, "info");
  EXPECT_NE(i.message.find("cannot be judged while the GPU is idle"), std::string::npos);
  EXPECT_NE(i.fix.find("again while a job keeps this GPU busy"), std::string::npos);
  // At its maximum the link passes even at idle.
  set_both(g, Field::kPcieGen, Reading::of(5));
  set_both(g, Field::kPcieWidth, Reading::of(16));
  EXPECT_EQ(check(g, "pcie_link").level, "pass");
}

TEST(MachineCheck, EccNotSupportedIsNotApplicableNeverFail) {
  GpuCheckInput g = healthy_gpu();  // a GeForce board answers NOT_SUPPORTED for all of them
  for (const auto& f : kHealthFields)
    if (std::string(f.id).rfind("app_clock", 0) != 0) g.health.*f.member = Reading::unsupported();
  const auto items = check_gpu(g);
  for (const char* code : {"ecc_errors", "retired_pages", "row_remapping"}) {
    const auto i = find(items, code);
    EXPECT_EQ(i.level, "info") << code;
    EXPECT_NE(i.message.find("not applicable"), std::string::npos) << i.message;
  }
}

TEST(MachineCheck, EccErrorsSinceTheDriverLoadedFail) {
  GpuCheckInput g = healthy_gpu();
  g.health.ecc_volatile_uncorrected = Reading::of(2);
  g.health.ecc_aggregate_uncorrected = Reading::of(3);
  auto i = check(g, "ecc_errors");
  EXPECT_EQ(i.level, "fail");
  EXPECT_NE(i.message.find("2 uncorrectable ECC errors since the driver loaded (3 in the "),
            std::string::npos)
      << i.message;
  EXPECT_NE(i.fix.find("-r)"), std::string::npos);
  g.health.ecc_volatile_uncorrected = Reading::of(0);
  EXPECT_EQ(check(g, "ecc_errors").level, "warn");  // lifetime only
  g.health.ecc_aggregate_uncorrected = Reading::of(0);
  g.health.ecc_volatile_corrected = Reading::of(41);
  i = check(g, "ecc_errors");
  EXPECT_EQ(i.level, "pass");
  EXPECT_NE(i.message.find("41 corrected"), std::string::npos);
  g.health.ecc_mode_pending = Reading::of(0);
  EXPECT_EQ(check(g, "ecc_errors").level, "warn");  // a mode change waits for a reboot
  // ECC off with counters still readable: disabled, not "no errors".
  g.health.ecc_mode_current = Reading::of(0);
  i = check(g, "ecc_errors");
  EXPECT_EQ(i.level, "info");
  EXPECT_NE(i.message.find("disabled"), std::string::npos) << i.message;
}

TEST(MachineCheck, EccCountsWithoutPermissionAreInfo) {
  GpuCheckInput g = healthy_gpu();
  for (Reading* r : {&g.health.ecc_volatile_corrected, &g.health.ecc_volatile_uncorrected,
                     &g.health.ecc_aggregate_corrected, &g.health.ecc_aggregate_uncorrected})
    *r = Reading::unsupported(nvml_code::kNoPermission);
  const auto i = check(g, "ecc_errors");
  EXPECT_EQ(i.level, "info");
  EXPECT_NE(i.message.find("no permission"), std::string::npos) << i.message;
}

TEST(MachineCheck, RetiredPages) {
  GpuCheckInput g = healthy_gpu();
  g.health.retired_pages_sbe = Reading::of(2);
  g.health.retired_pages_dbe = Reading::of(1);
  g.health.retired_pages_pending = Reading::of(0);
  auto i = check(g, "retired_pages");
  EXPECT_EQ(i.level, "warn");
  EXPECT_NE(i.message.find("3 memory pages retired (2 for repeated single-bit errors, 1 for "),
            std::string::npos)
      << i.message;
  g.health.retired_pages_pending = Reading::of(1);
  i = check(g, "retired_pages");
  EXPECT_EQ(i.level, "fail");
  EXPECT_NE(i.message.find("wait to be retired (3 retired so far)"), std::string::npos);
  g.health.retired_pages_sbe = g.health.retired_pages_dbe = Reading::of(0);
  g.health.retired_pages_pending = Reading::of(0);
  EXPECT_EQ(check(g, "retired_pages").level, "pass");
}

TEST(MachineCheck, RowRemapping) {
  GpuCheckInput g = healthy_gpu();
  g.health.remapped_rows_corrected = Reading::of(2);
  EXPECT_EQ(check(g, "row_remapping").level, "pass");
  g.health.remapped_rows_uncorrected = Reading::of(1);
  EXPECT_EQ(check(g, "row_remapping").level, "warn");
  g.health.remap_pending = Reading::of(1);
  auto i = check(g, "row_remapping");
  EXPECT_EQ(i.level, "fail");
  EXPECT_NE(i.message.find("waits for a GPU reset"), std::string::npos);
  g.health.remap_failure = Reading::of(1);
  i = check(g, "row_remapping");
  EXPECT_EQ(i.level, "fail");
  EXPECT_NE(i.message.find("failed"), std::string::npos);
}

TEST(MachineCheck, SourceWithoutHealthReadingsSaysSo) {
  GpuCheckInput g = healthy_gpu();
  g.health = DeviceHealth{};  // read = false: the simulator
  for (const char* code : {"ecc_errors", "retired_pages", "row_remapping"}) {
    const auto i = check(g, code);
    EXPECT_EQ(i.level, "info");
    EXPECT_NE(i.message.find("not available from this source"), std::string::npos);
  }
}

TEST(MachineCheck, MigOnWarnsAndUnsupportedIsInfo) {
  GpuCheckInput g = healthy_gpu();
  g.info.mig_mode = true;
  EXPECT_EQ(check(g, "mig_mode").level, "warn");
  g.info.mig_mode = std::nullopt;
  EXPECT_EQ(check(g, "mig_mode").level, "info");
  // Off now, on after the next reset: the change is pending.
  g.info.mig_mode = false;
  g.health.mig_mode_pending = Reading::of(1);
  const auto i = check(g, "mig_mode");
  EXPECT_EQ(i.level, "warn");
  EXPECT_NE(i.message.find("MIG off now, on after the next GPU reset"), std::string::npos)
      << i.message;
  EXPECT_NE(i.fix.find("-mig 0"), std::string::npos) << i.fix;
  g.health.mig_mode_pending = Reading::of(0);
  EXPECT_EQ(check(g, "mig_mode").level, "pass");
}

TEST(MachineCheck, ClockEventReasons) {
  GpuCheckInput g = healthy_gpu();
  g.first[Field::kClockEventReasons] = Reading::of(0x80);  // seen in either sample
  auto i = check(g, "clock_event_reasons");
  EXPECT_EQ(i.level, "fail");
  EXPECT_NE(i.message.find("power brake"), std::string::npos) << i.message;
  // HW slowdown: NVML also sets it briefly during P-state changes, so one sample only warns;
  // in both it fails; with HW thermal slowdown the cause is heat (warn, the cooling fix).
  g = healthy_gpu();
  g.first[Field::kClockEventReasons] = Reading::of(0x8);
  i = check(g, "clock_event_reasons");
  EXPECT_EQ(i.level, "warn");
  EXPECT_NE(i.message.find("not in both samples"), std::string::npos) << i.message;
  set_both(g, Field::kClockEventReasons, Reading::of(0x8));
  i = check(g, "clock_event_reasons");
  EXPECT_EQ(i.level, "fail");
  EXPECT_NE(i.fix.find("power cable"), std::string::npos) << i.fix;
  set_both(g, Field::kClockEventReasons, Reading::of(0x8 | 0x40));
  i = check(g, "clock_event_reasons");
  EXPECT_EQ(i.level, "warn");
  EXPECT_NE(i.fix.find("cooling"), std::string::npos) << i.fix;
  // A warm GPU's SW thermal slowdown (0x20) does not excuse a HW slowdown in both samples.
  set_both(g, Field::kClockEventReasons, Reading::of(0x8 | 0x20));
  EXPECT_EQ(check(g, "clock_event_reasons").level, "fail");
  set_both(g, Field::kClockEventReasons, Reading::of(0x20));
  EXPECT_EQ(check(g, "clock_event_reasons").level, "warn");
  set_both(g, Field::kClockEventReasons, Reading::of(0x4));
  i = check(g, "clock_event_reasons");
  EXPECT_EQ(i.level, "pass");  // power cap at the default limit: normal for dense math
  EXPECT_NE(i.message.find("normal"), std::string::npos);
  set_both(g, Field::kClockEventReasons, Reading::unsupported());
  EXPECT_EQ(check(g, "clock_event_reasons").level, "info");
}

TEST(MachineCheck, ThermalMargin) {
  GpuCheckInput g = healthy_gpu();
  set_both(g, Field::kTemp, Reading::of(83));
  auto i = check(g, "thermal_margin");
  EXPECT_EQ(i.level, "warn");
  EXPECT_NE(i.message.find("only 6 °C below the slowdown temperature (89 °C)"), std::string::npos)
      << i.message;
  set_both(g, Field::kTemp, Reading::of(89));
  EXPECT_EQ(check(g, "thermal_margin").level, "fail");
  set_both(g, Field::kTempSlowdown, Reading::unsupported());
  set_both(g, Field::kTemp, Reading::of(70));
  EXPECT_EQ(check(g, "thermal_margin").level, "pass");
  set_both(g, Field::kTemp, Reading::of(86));
  EXPECT_EQ(check(g, "thermal_margin").level, "warn");
}

TEST(MachineCheck, LostGpuIsOneFailure) {
  GpuCheckInput g = healthy_gpu();
  g.second.lost = true;
  const auto items = check_gpu(g);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].code, "gpu_reachable");
  EXPECT_EQ(items[0].level, "fail");
}

TEST(MachineCheck, NumaAndGovernorComeFromTheHostAudit) {
  CheckInput in;
  in.system.driver_version = "550.54.15";
  in.system.cuda_driver_version = "12.4";
  GpuCheckInput g = healthy_gpu();
  g.numa_warning = AuditItem{"warn", "numa_affinity", "far away", "pin it"};
  in.gpus.push_back(g);
  g.numa_warning.reset();
  g.numa_node.reset();
  g.info.index = 1;
  in.gpus.push_back(g);
  in.governor_warning = AuditItem{"warn", "cpu_governor", "powersave", "performance"};
  CheckResult r = check_machine(in);
  ASSERT_EQ(r.machine.size(), 3u);
  EXPECT_EQ(r.machine[0].code, "driver_version");
  EXPECT_EQ(r.machine[0].level, "info");
  EXPECT_EQ(find(r.machine, "cpu_governor").level, "warn");
  EXPECT_EQ(find(r.gpus[0].items, "numa_affinity").message, "far away");
  EXPECT_EQ(find(r.gpus[1].items, "numa_affinity").level, "info");
  EXPECT_EQ(r.overall(), "warn");
  EXPECT_EQ(r.count("warn"), 2);

  in.governor_warning.reset();
  in.cpu_governors = {"performance"};
  r = check_machine(in);
  EXPECT_EQ(find(r.machine, "cpu_governor").level, "pass");
  in.cpu_governors.clear();
  r = check_machine(in);
  EXPECT_EQ(find(r.machine, "cpu_governor").level, "info");
  in.gpus[0].info.mig_mode = true;
  in.gpus[1].second.lost = true;
  r = check_machine(in);
  EXPECT_EQ(r.overall(), "fail");
  EXPECT_EQ(r.count("fail"), 1);
}

TEST(MachineCheck, NoNumaNodeIsSingleNodeOnlyWhenTheMachineHasOne) {
  GpuCheckInput g = healthy_gpu();
  g.numa_node = -1;
  g.numa_nodes = 1;
  EXPECT_EQ(check(g, "numa_affinity").level, "pass");
  g.numa_nodes = 2;  // a two-socket machine whose firmware does not say where the GPU hangs
  const auto i = check(g, "numa_affinity");
  EXPECT_EQ(i.level, "info");
  EXPECT_NE(i.message.find("2 nodes"), std::string::npos) << i.message;
  EXPECT_NE(i.fix.find("nvidia-smi topo -m"), std::string::npos);
}

// ---- the NVML reads ---------------------------------------------------------------------------

struct HealthFake {
  nvmlReturn_t ecc_ret = NVML_SUCCESS;
  unsigned retired_sbe = 0, retired_dbe = 3;
} hf;

TEST(NvmlHealth, ReadsCountsAndSaysWhyNot) {
  hf = HealthFake{};
  NvmlApi a;
  a.ecc_mode = [](nvmlDevice_t, unsigned* cur, unsigned* pending) -> nvmlReturn_t {
    *cur = NVML_FEATURE_ENABLED;
    *pending = NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  };
  a.total_ecc_errors = [](nvmlDevice_t, unsigned type, unsigned counter,
                          unsigned long long* n) -> nvmlReturn_t {
    *n = 10 * type + counter;  // tells the four counters apart
    return hf.ecc_ret;
  };
  // Like the driver: with no room, INSUFFICIENT_SIZE and the count needed.
  a.retired_pages = [](nvmlDevice_t, unsigned cause, unsigned* count,
                       unsigned long long*) -> nvmlReturn_t {
    const unsigned have =
        cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? hf.retired_dbe : hf.retired_sbe;
    const bool fits = *count >= have;
    *count = have;
    return fits ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  };
  a.remapped_rows = [](nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) -> nvmlReturn_t {
    return NVML_ERROR_NOT_SUPPORTED;
  };
  a.default_app_clock = [](nvmlDevice_t, unsigned type, unsigned* mhz) -> nvmlReturn_t {
    *mhz = type == NVML_CLOCK_MEM ? 877 : 1290;
    return NVML_SUCCESS;
  };
  a.mig_mode = [](nvmlDevice_t, unsigned* cur, unsigned* pending) -> nvmlReturn_t {
    *cur = NVML_FEATURE_DISABLED;
    *pending = NVML_FEATURE_ENABLED;  // enabled, waiting for a reset
    return NVML_SUCCESS;
  };
  NvmlDevice dev(a, nullptr, 0);
  DeviceHealth h = dev.read_health();
  EXPECT_TRUE(h.read);
  EXPECT_EQ(h.ecc_mode_current.value(), 1);
  EXPECT_EQ(h.ecc_mode_pending.value(), 0);
  EXPECT_EQ(h.ecc_volatile_corrected.value(), 0);
  EXPECT_EQ(h.ecc_volatile_uncorrected.value(), 10);
  EXPECT_EQ(h.ecc_aggregate_corrected.value(), 1);
  EXPECT_EQ(h.ecc_aggregate_uncorrected.value(), 11);
  EXPECT_EQ(h.retired_pages_sbe.value(), 0);
  EXPECT_EQ(h.retired_pages_dbe.value(), 3);
  // Missing from the driver: unsupported with its code, never zero.
  EXPECT_EQ(h.retired_pages_pending.state(), Reading::State::kUnsupported);
  EXPECT_EQ(h.retired_pages_pending.code(), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(h.remap_failure.state(), Reading::State::kUnsupported);
  EXPECT_EQ(h.remap_failure.code(), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(h.app_clock_default_sm_mhz.value(), 1290);
  EXPECT_EQ(h.app_clock_default_mem_mhz.value(), 877);
  EXPECT_EQ(h.mig_mode_pending.value(), 1);

  hf.ecc_ret = NVML_ERROR_UNKNOWN;  // transient: an error, not "unsupported"
  h = dev.read_health();
  EXPECT_EQ(h.ecc_volatile_uncorrected.state(), Reading::State::kError);
  hf.ecc_ret = NVML_ERROR_GPU_IS_LOST;
  h = dev.read_health();
  EXPECT_EQ(h.ecc_volatile_uncorrected.code(), NVML_ERROR_GPU_IS_LOST);
  h = dev.read_health();  // lost for good: nothing is asked any more
  EXPECT_EQ(h.ecc_mode_current.code(), NVML_ERROR_GPU_IS_LOST);
  EXPECT_TRUE(dev.sample(0).lost);
}

TEST(NvmlHealth, CapturesCarryHealthForTheStandIn) {
  DeviceInfo d;
  CaptureWriter w(SystemInfo{}, {d, d});
  std::vector<DeviceHealth> h(2);
  h[0].read = true;
  for (const auto& f : kHealthFields) h[0].*f.member = Reading::unsupported();
  h[0].ecc_volatile_uncorrected = Reading::of(2);
  h[0].remap_pending = Reading::of(1);
  h[0].ecc_mode_current = Reading::unsupported(NVML_ERROR_NO_PERMISSION);
  w.set_health(h);  // device 1: not read (e.g. the simulator)
  const auto j = w.to_json();
  const auto& h0 = j["devices"][0]["health"];
  EXPECT_EQ(h0["ecc_volatile_uncorrected"], 2);
  EXPECT_EQ(h0["remap_pending"], 1);
  EXPECT_FALSE(h0.contains("retired_pages_sbe"));  // NOT_SUPPORTED replays as absent
  EXPECT_EQ(j["devices"][0]["errors"]["ecc_mode"], "NO_PERMISSION");
  EXPECT_FALSE(j["devices"][1].contains("health"));
}

// ---- host facts -------------------------------------------------------------------------------

TEST(MachineFacts, GovernorsAndNumaNodeFromSys) {
  namespace fs = std::filesystem;
  const fs::path sys = fs::temp_directory_path() / ("gd-facts-" + std::to_string(getpid()));
  fs::remove_all(sys);
  auto write = [](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  };
  write(sys / "devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
  write(sys / "devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n");
  write(sys / "devices/system/cpu/cpu2/cpufreq/scaling_governor", "performance\n");
  write(sys / "bus/pci/devices/0000:3b:00.0/numa_node", "1\n");
  write(sys / "bus/pci/devices/0000:5e:00.0/numa_node", "-1\n");
  EXPECT_EQ(host::cpu_governors({0, 1, 2, 7}, sys.string()),
            (std::vector<std::string>{"performance", "powersave"}));
  EXPECT_TRUE(host::cpu_governors({0}, (sys / "none").string()).empty());
  EXPECT_EQ(host::pci_numa_node("00000000:3B:00.0", sys.string()), 1);
  EXPECT_EQ(host::pci_numa_node("00000000:5E:00.0", sys.string()), -1);
  EXPECT_EQ(host::pci_numa_node("00000000:99:00.0", sys.string()), std::nullopt);
  EXPECT_EQ(host::numa_node_count(sys.string()), 0);
  write(sys / "devices/system/node/node0/cpulist", "0-7\n");
  write(sys / "devices/system/node/node1/cpulist", "8-15\n");
  write(sys / "devices/system/node/possible", "0-1\n");
  EXPECT_EQ(host::numa_node_count(sys.string()), 2);
  fs::remove_all(sys);
}

}  // namespace
}  // namespace gpudoctor
