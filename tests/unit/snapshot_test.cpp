#include <gtest/gtest.h>

#include "analysis/snapshot.hpp"
#include "report/watch_report.hpp"

namespace gpudoctor {
namespace {

DeviceSample h100(double util, double power_w, std::optional<double> sm) {
  DeviceSample s;
  s[Field::kUtilGpu] = Reading::of(util);
  s[Field::kPower] = Reading::of(power_w);
  s[Field::kPowerLimitDefault] = Reading::of(700);
  s[Field::kPowerLimitEnforced] = Reading::of(700);
  s[Field::kGpmSmUtil] = sm ? Reading::of(*sm) : Reading::unsupported();
  s[Field::kMemUsed] = Reading::of(70000);
  s[Field::kMemTotal] = Reading::of(81559);
  s[Field::kClockSm] = Reading::of(1980);
  s[Field::kClockSmMax] = Reading::of(1980);
  s[Field::kClockEventReasons] = Reading::of(0);
  s[Field::kTemp] = Reading::of(60);
  s[Field::kTempSlowdown] = Reading::of(90);
  s[Field::kPcieGen] = Reading::of(5);
  s[Field::kPcieGenMax] = Reading::of(5);
  s[Field::kPcieWidth] = Reading::of(16);
  s[Field::kPcieWidthMax] = Reading::of(16);
  s.processes_supported = true;
  s.processes.push_back({4242, "python", 70000, std::nullopt, std::nullopt, std::nullopt});
  return s;
}

TEST(Snapshot, BusyButIdleIsCalledOut) {
  const auto a = assess(nullptr, h100(99, 180, 18), 0);
  EXPECT_EQ(a.verdict, SnapshotVerdict::kBusyButIdle);
  ASSERT_TRUE(a.efficiency);
  EXPECT_NEAR(*a.efficiency, 180.0 / 700 * 0.18, 1e-9);
  EXPECT_EQ(verdict_line(2, a),
            "GPU 2: BUSY BUT IDLE: util 99 % but power 26 % of 700 W and SM activity 18 %");
}

TEST(Snapshot, WorkingGpu) {
  const auto a = assess(nullptr, h100(100, 660, 92), 0);
  EXPECT_EQ(a.verdict, SnapshotVerdict::kWorking);
  EXPECT_TRUE(a.efficiency_has_sm);
  EXPECT_NEAR(*a.efficiency, 660.0 / 700 * 0.92, 1e-9);
}

TEST(Snapshot, LowSmActivityAtModeratePowerIsLowEfficiency) {
  const auto a = assess(nullptr, h100(95, 500, 40), 0);
  EXPECT_EQ(a.verdict, SnapshotVerdict::kLowEfficiency);
}

TEST(Snapshot, WithoutSmActivityEfficiencyIsPowerAloneAndSaysSo) {
  const auto a = assess(nullptr, h100(99, 180, std::nullopt), 0);
  EXPECT_FALSE(a.efficiency_has_sm);
  EXPECT_NEAR(*a.efficiency, 180.0 / 700, 1e-9);
  EXPECT_NE(a.detail.find("no SM activity"), std::string::npos);
}

TEST(Snapshot, IdleHeldAndFree) {
  auto s = h100(0, 70, 0);
  EXPECT_EQ(assess(nullptr, s, 0).verdict, SnapshotVerdict::kIdle);
  s.processes.clear();
  s[Field::kMemUsed] = Reading::of(1);
  EXPECT_EQ(assess(nullptr, s, 0).verdict, SnapshotVerdict::kFree);
}

TEST(Snapshot, DefaultLimitIsTheDenominatorEvenWhenCapped) {
  auto s = h100(99, 298, 90);
  s[Field::kPowerLimitEnforced] = Reading::of(300);
  s[Field::kClockEventReasons] = Reading::of(0x4);
  const auto a = assess(nullptr, s, 0);
  EXPECT_EQ(a.verdict, SnapshotVerdict::kPowerCapped);
  EXPECT_DOUBLE_EQ(*a.limit_w, 700);
  EXPECT_TRUE(a.limit_is_default);
}

TEST(Snapshot, PowerCappedNeedsTheCapReasonWhenReasonsAreKnown) {
  auto s = h100(99, 298, 90);
  s[Field::kPowerLimitEnforced] = Reading::of(300);
  s[Field::kClockEventReasons] = Reading::of(0);  // known: no cap active
  EXPECT_NE(assess(nullptr, s, 0).verdict, SnapshotVerdict::kPowerCapped);
  s[Field::kClockEventReasons] = Reading::unsupported();  // unknown: power pinned at the limit
  EXPECT_EQ(assess(nullptr, s, 0).verdict, SnapshotVerdict::kPowerCapped);
}

TEST(Snapshot, HotWithoutSlowdownThresholdIsThermal) {
  auto s = h100(99, 500, 80);
  s[Field::kTempSlowdown] = Reading::unsupported();
  s[Field::kTemp] = Reading::of(88);
  const auto a = assess(nullptr, s, 0);
  EXPECT_EQ(a.verdict, SnapshotVerdict::kThermal);
  EXPECT_EQ(a.detail, "temperature 88 C, SM clock 1980 of 1980 MHz");
}

TEST(Snapshot, HeldWithoutMemoryReadingDoesNotInventZero) {
  auto s = h100(0, 70, 0);
  s[Field::kMemUsed] = Reading::unsupported();
  const auto a = assess(nullptr, s, 0);
  EXPECT_EQ(a.verdict, SnapshotVerdict::kIdle);
  EXPECT_EQ(a.detail, "util 0 % while the GPU is held by 1 process");
}

TEST(Snapshot, ThermalAndClockLimits) {
  auto s = h100(99, 500, 80);
  s[Field::kClockEventReasons] = Reading::of(0x40);
  s[Field::kTemp] = Reading::of(92);
  EXPECT_EQ(assess(nullptr, s, 0).verdict, SnapshotVerdict::kThermal);
  s = h100(99, 400, 80);
  s[Field::kClockEventReasons] = Reading::of(0x2);
  s[Field::kClockSm] = Reading::of(1005);
  EXPECT_EQ(assess(nullptr, s, 0).verdict, SnapshotVerdict::kClocksLimited);
}

TEST(Snapshot, MeanPowerFromEnergyCounter) {
  auto prev = h100(99, 600, 90), cur = h100(99, 999, 90);
  prev[Field::kEnergy] = Reading::of(1'000'000);
  cur[Field::kEnergy] = Reading::of(1'000'000 + 650 * 500);  // 650 W over 0.5 s, in mJ
  const auto a = assess(&prev, cur, 0.5);
  EXPECT_TRUE(a.power_from_energy);
  EXPECT_NEAR(*a.power_w, 650, 1e-9);
  // Too short a window for the counter: the reading is used.
  EXPECT_FALSE(assess(&prev, cur, 0.05).power_from_energy);
}

TEST(Snapshot, DegradedPcieLink) {
  auto s = h100(99, 660, 92);
  s[Field::kPcieWidth] = Reading::of(4);
  auto a = assess(nullptr, s, 0);
  EXPECT_TRUE(a.pcie_degraded);
  EXPECT_NE(verdict_line(0, a).find("PCIe link degraded: Gen5 x4 (max Gen5 x16)"),
            std::string::npos);
  // A lower generation at idle is power saving, not a fault.
  s = h100(0, 70, 0);
  s[Field::kPcieGen] = Reading::of(1);
  EXPECT_FALSE(assess(nullptr, s, 0).pcie_degraded);
}

TEST(Snapshot, LostAndNoPower) {
  DeviceSample lost;
  lost.lost = true;
  EXPECT_EQ(assess(nullptr, lost, 0).verdict, SnapshotVerdict::kLost);
  auto s = h100(99, 0, 50);
  s[Field::kPower] = Reading::unsupported();
  const auto a = assess(nullptr, s, 0);
  EXPECT_EQ(a.verdict, SnapshotVerdict::kUnknown);
  EXPECT_FALSE(a.efficiency.has_value());
}

TEST(WatchRenderer, CsvHasEmptyCellsForMissingValues) {
  std::vector<DeviceInfo> devices(1);
  Frame f;
  f.time_unix_ms = 1'700'000'000'123;
  f.devices.push_back(h100(99, 180, std::nullopt));
  const std::vector<GpuAssessment> as = {assess(nullptr, f.devices[0], 0)};
  WatchRenderer csv(WatchFormat::kCsv);
  EXPECT_EQ(csv.header(),
            "time,gpu,util_pct,sm_pct,power_w,power_pct,efficiency,pstate,sm_clock_mhz,temp_c,"
            "mem_used_mib,reasons,verdict,owner_kind,owner_id,owner,user,cause\n");
  EXPECT_EQ(csv.rows(devices, f, as),
            "2023-11-14T22:13:20.123Z,0,99,,180.0,25.7,0.257,,1980,60,70000,0x0,busy_but_idle,,,,"
            ",\n");
  // The live cause, once a diagnosis has one.
  EXPECT_NE(csv.rows(devices, f, as, {Cause::kLaunchOverhead}).find(",launch_overhead\n"),
            std::string::npos);
  // The owner's fields, quoted where CSV needs it.
  Owner unit;
  unit.kind = OwnerKind::kSystemdUnit;
  unit.id = "jupyter.service";
  unit.user = "carol, the \"admin\"";
  f.devices[0].owners = {unit};
  EXPECT_NE(csv.rows(devices, f, as)
                .find(",busy_but_idle,systemd_unit,jupyter.service,\"unit jupyter.service (carol, "
                      "the \"\"admin\"\")\",\"carol, the \"\"admin\"\"\",\n"),
            std::string::npos)
      << csv.rows(devices, f, as);
  WatchRenderer jsonl(WatchFormat::kJsonl);
  EXPECT_NE(jsonl.rows(devices, f, as).find("\"sm_pct\":null"), std::string::npos);
  EXPECT_FALSE(parse_watch_format("xml").ok());
}

}  // namespace
}  // namespace gpudoctor
