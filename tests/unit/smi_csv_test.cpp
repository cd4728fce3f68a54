#include "formats/smi_csv.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/reading.hpp"
#include "test_helpers.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using namespace test_util;

std::string fixture(const std::string& name) {
  return read_log("smi-csv", name);
}

Recording read_ok(const std::string& text, const SmiCsvOptions& opt = {},
                  const std::string& origin = "run.csv") {
  auto r = read_smi_csv(text, origin, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? std::string() : r.error().message);
  if (!r.ok()) return {};
  return std::move(r).value();
}

std::string read_error(const std::string& text, const SmiCsvOptions& opt = {},
                       const std::string& origin = "run.csv") {
  auto r = read_smi_csv(text, origin, opt);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {};
  EXPECT_EQ(r.error().kind, Error::Kind::kUsage);
  return r.error().message;
}

// ---------------------------------------------------------------------------------------------
// Fixtures in nvidia-smi's own layouts

TEST(SmiCsv, ReadsTwoGpusInterleavedWithUnitsAndHeader) {
  const Recording rec = read_ok(fixture("two_gpu_units.csv"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.source, "nvidia-smi csv: run.csv");
  EXPECT_EQ(rec.start_unix_ms, 1710411302123);  // 2024/03/14 10:15:02.123 read as UTC
  EXPECT_TRUE(has_note(rec, "UTC"));
  EXPECT_EQ(rec.system.driver_version, "525.85.12");

  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_EQ(g0.info.index, 0u);
  EXPECT_EQ(g1.info.index, 1u);
  EXPECT_EQ(g0.info.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g0.info.pci_bus_id, "00000000:07:00.0");
  EXPECT_EQ(g1.info.pci_bus_id, "00000000:0F:00.0");
  EXPECT_EQ(g1.info.uuid, "GPU-3e9b7d44-0c2a-4f1e-8d6b-7a5c9e3f2d10");
  EXPECT_EQ(g0.info.architecture, Architecture::kAmpere);

  ASSERT_EQ(g0.size(), 4u);
  ASSERT_EQ(g1.size(), 4u);
  EXPECT_DOUBLE_EQ(g0.time_s[0], 0.0);
  EXPECT_DOUBLE_EQ(g0.time_s[1], 1.002);
  EXPECT_DOUBLE_EQ(g0.time_s[3], 3.001);
  EXPECT_DOUBLE_EQ(g1.time_s[0], 0.004);

  EXPECT_EQ(col(g0, Field::kPower), (std::vector<double>{352.41, 398.76, 401.30, 88.25}));
  EXPECT_EQ(col(g1, Field::kPower), (std::vector<double>{348.07, 395.12, 388.64, 86.90}));
  EXPECT_EQ(col(g0, Field::kUtilGpu), (std::vector<double>{99, 100, 97, 0}));
  EXPECT_EQ(col(g1, Field::kUtilMem), (std::vector<double>{59, 62, 61, 0}));
  EXPECT_EQ(col(g0, Field::kMemUsed), (std::vector<double>{30512, 30512, 30514, 30514}));
  EXPECT_EQ(col(g0, Field::kMemTotal), (std::vector<double>(4, 81920)));
  EXPECT_EQ(col(g0, Field::kTemp), (std::vector<double>{64, 66, 67, 58}));
  EXPECT_EQ(col(g0, Field::kPstate), (std::vector<double>(4, 0)));
  // clocks.current.sm / clocks.current.memory: the names nvidia-smi prints for clocks.sm/.mem.
  EXPECT_EQ(col(g1, Field::kClockSm), (std::vector<double>{1410, 1380, 1395, 1410}));
  EXPECT_EQ(col(g1, Field::kClockMem), (std::vector<double>(4, 1593)));
  EXPECT_EQ(col(g0, Field::kClockEventReasons), (std::vector<double>{0, 4, 4, 1}));
  EXPECT_EQ(col(g0, Field::kPowerLimit), (std::vector<double>(4, 400)));
  // The log has its own limit: nothing inferred.
  EXPECT_FALSE(g0.has(Field::kPowerLimitDefault));
  EXPECT_FALSE(has_note(rec, "power limit"));
  EXPECT_FALSE(g0.has(Field::kFan));
  EXPECT_TRUE(g0.unsupported.empty());
}

TEST(SmiCsv, ReadsNounitsValuesUnderAnnotatedHeader) {
  const Recording rec = read_ok(fixture("h100_nounits.csv"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_EQ(g1.info.pci_bus_id, "00000000:2A:00.0");
  ASSERT_EQ(g1.size(), 3u);
  EXPECT_EQ(col(g1, Field::kPower), (std::vector<double>{699.87, 700.02, 699.95}));
  EXPECT_EQ(col(g1, Field::kPowerLimitEnforced), (std::vector<double>(3, 700)));
  EXPECT_EQ(col(g1, Field::kMemUsed), (std::vector<double>(3, 60187)));
  EXPECT_EQ(col(g1, Field::kClockSm), (std::vector<double>{1755, 1740, 1725}));
  // clocks_event_reasons.active (drivers 535+): 0x24 = SW power cap + SW thermal.
  EXPECT_EQ(col(g1, Field::kClockEventReasons), (std::vector<double>{4, 4, 0x24}));
  EXPECT_EQ(col(rec.gpus[0], Field::kUtilGpu), (std::vector<double>{100, 100, 99}));
  EXPECT_FALSE(has_note(rec, "power limit"));  // enforced.power.limit counts as a limit
}

TEST(SmiCsv, ReadsNoheaderNounitsWithColumns) {
  SmiCsvOptions opt;
  opt.columns = {"timestamp",  "index",       "utilization.gpu", "memory.used",
                 "power.draw", "power.limit", "clocks.sm"};
  const Recording rec = read_ok(fixture("l4_noheader_nounits.csv"), opt);
  ASSERT_EQ(rec.gpus.size(), 1u);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(rec.start_unix_ms, 1718923267031);
  EXPECT_EQ(g.time_s, (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(col(g, Field::kUtilGpu), (std::vector<double>{97, 98, 96, 31}));
  EXPECT_EQ(col(g, Field::kPower), (std::vector<double>{71.54, 71.92, 72.00, 44.18}));
  EXPECT_EQ(col(g, Field::kPowerLimit), (std::vector<double>(4, 72)));
  EXPECT_EQ(col(g, Field::kClockSm), (std::vector<double>{2040, 2025, 1995, 2040}));

  // The list as one comma-separated string, with header-style annotations, reads the same.
  SmiCsvOptions one;
  one.columns = {
      "timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W], "
      "power.limit [W], clocks.current.sm [MHz]"};
  const Recording again = read_ok(fixture("l4_noheader_nounits.csv"), one);
  ASSERT_EQ(again.gpus.size(), 1u);
  EXPECT_EQ(col(again.gpus[0], Field::kPower), col(g, Field::kPower));
}

TEST(SmiCsv, NoheaderWithoutColumnsIsAClearError) {
  const std::string msg = read_error(fixture("l4_noheader_nounits.csv"), {}, "l4.csv");
  EXPECT_NE(msg.find("l4.csv:1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--columns"), std::string::npos) << msg;
  EXPECT_NE(msg.find("noheader"), std::string::npos) << msg;
}

TEST(SmiCsv, ReadsMarkersRepeatedHeaderCrlfAndBom) {
  const std::string text = fixture("t4_na_repeated_header_crlf.csv");
  ASSERT_EQ(text.substr(0, 3), "\xEF\xBB\xBF");
  ASSERT_NE(text.find("\r\n"), std::string::npos);
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_EQ(g0.info.name, "Tesla T4");
  EXPECT_EQ(g1.info.pci_bus_id, "00000000:00:1F.0");
  ASSERT_EQ(g0.size(), 3u);  // the repeated header and the blank line are no rows
  ASSERT_EQ(g1.size(), 3u);
  EXPECT_EQ(rec.start_unix_ms, text::parse_timestamp_ms("2023/11/08 17:02:44.905").value());

  // [N/A], [Unknown Error] and a bare N/A are missing: NaN, never 0.
  const auto p1 = col(g1, Field::kPower);
  ASSERT_EQ(p1.size(), 3u);
  EXPECT_DOUBLE_EQ(p1[0], 62.80);
  EXPECT_TRUE(is_missing(p1[1]));
  EXPECT_DOUBLE_EQ(p1[2], 68.47);
  EXPECT_TRUE(is_missing(col(g1, Field::kUtilGpu)[1]));
  EXPECT_TRUE(is_missing(col(g0, Field::kMemUsed)[2]));
  EXPECT_DOUBLE_EQ(col(g0, Field::kMemUsed)[1], 9821);

  // Never anything but [Not Supported] / [Insufficient Permissions]: no column, and why.
  EXPECT_FALSE(g0.has(Field::kClockAppSm));
  EXPECT_EQ(g0.unsupported.at(Field::kClockAppSm), nvml_code::kNotSupported);
  EXPECT_EQ(g1.unsupported.at(Field::kClockAppSm), nvml_code::kNotSupported);
  EXPECT_FALSE(g0.has(Field::kPcieWidthMax));
  EXPECT_EQ(g0.unsupported.at(Field::kPcieWidthMax), nvml_code::kNoPermission);
  // [N/A] throughout: no column, no claim of "not supported", and a note.
  EXPECT_FALSE(g0.has(Field::kFan));
  EXPECT_EQ(g0.unsupported.count(Field::kFan), 0u);
  EXPECT_TRUE(has_note(rec, "fan.speed")) << all_notes(rec);

  // Nothing skipped, no header change reported for the repeated header.
  EXPECT_FALSE(has_note(rec, "skipped 1 line")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "header line changes")) << all_notes(rec);
}

TEST(SmiCsv, NotAvailableNeverReadsAsZero) {
  const Recording rec = read_ok(fixture("t4_na_repeated_header_crlf.csv"));
  size_t missing = 0;
  for (const auto& g : rec.gpus) {
    for (const auto& c : g.columns) {
      if (!c) continue;
      for (const double v : c.view()) {
        EXPECT_NE(v, 0.0);  // the fixture has no true zero anywhere
        if (is_missing(v)) ++missing;
      }
    }
  }
  EXPECT_EQ(missing, 3u);

  const Recording one =
      read_ok("index, power.draw [W], utilization.gpu [%]\n0, [N/A], N/A\n0, 10.00 W, 0 %\n");
  ASSERT_EQ(one.gpus.size(), 1u);
  EXPECT_TRUE(is_missing(col(one.gpus[0], Field::kPower)[0]));
  EXPECT_TRUE(is_missing(col(one.gpus[0], Field::kUtilGpu)[0]));
  EXPECT_EQ(col(one.gpus[0], Field::kUtilGpu)[1], 0.0);  // a real 0 stays 0
}

TEST(SmiCsv, OrsIndividualThrottleReasonColumns) {
  const Recording rec = read_ok(fixture("rtx4090_reason_columns.csv"));
  ASSERT_EQ(rec.gpus.size(), 1u);
  const auto mask = col(rec.gpus[0], Field::kClockEventReasons);
  ASSERT_EQ(mask.size(), 5u);
  EXPECT_EQ(mask[0], 0x1);           // gpu_idle
  EXPECT_EQ(mask[1], 0x4);           // sw_power_cap
  EXPECT_EQ(mask[2], 0x4 | 0x20);    // sw_power_cap + sw_thermal_slowdown
  EXPECT_EQ(mask[3], 0x20);          // sw_thermal_slowdown
  EXPECT_TRUE(is_missing(mask[4]));  // all [N/A]
  EXPECT_FALSE(has_note(rec, "ignored columns")) << all_notes(rec);

  // The clocks_event_reasons.* spelling of newer drivers.
  const Recording ev = read_ok(
      "index, clocks_event_reasons.hw_slowdown, clocks_event_reasons.hw_power_brake_slowdown, "
      "clocks_event_reasons.display_clock_setting\n"
      "0, Active, Active, Not Active\n0, Not Active, Not Active, Active\n");
  EXPECT_EQ(col(ev.gpus.at(0), Field::kClockEventReasons),
            (std::vector<double>{0x8 | 0x80, 0x100}));

  // With the .active bitmask present, it wins over the individual columns.
  const Recording both = read_ok(
      "index, clocks_throttle_reasons.active, clocks_throttle_reasons.sw_power_cap, "
      "clocks_throttle_reasons.supported\n"
      "0, 0x0000000000000040, Active, 0x00000000000001FF\n");
  EXPECT_EQ(col(both.gpus.at(0), Field::kClockEventReasons), (std::vector<double>{0x40}));
  EXPECT_FALSE(has_note(both, "ignored columns")) << all_notes(both);
}

TEST(SmiCsv, InfersPowerLimitFromModelTableOrOption) {
  const std::string text = fixture("a100_no_power_limit.csv");
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(col(rec.gpus[0], Field::kPowerLimitDefault), (std::vector<double>(3, 400)));
  EXPECT_TRUE(has_note(rec, "power limit 400 W from the model table for NVIDIA A100-SXM4-40GB"))
      << all_notes(rec);
  // Unknown columns are ignored and named in one note; temperature.memory is temp_mem_c.
  EXPECT_TRUE(has_note(rec, "gpudoctor does not read: count")) << all_notes(rec);
  EXPECT_EQ(col(rec.gpus[0], Field::kTempMem), (std::vector<double>{71, 72, 70}));
  EXPECT_EQ(col(rec.gpus[0], Field::kPower), (std::vector<double>{312.54, 318.02, 204.77}));

  SmiCsvOptions opt;
  opt.power_limit_w = 350;
  const Recording with = read_ok(text, opt);
  EXPECT_EQ(col(with.gpus.at(0), Field::kPowerLimitDefault), (std::vector<double>(3, 350)));
  EXPECT_TRUE(has_note(with, "power limit 350 W from --power-limit")) << all_notes(with);
  EXPECT_FALSE(has_note(with, "model table"));

  // A log with its own limit keeps it; the option is said to be ignored.
  const Recording own = read_ok(fixture("two_gpu_units.csv"), opt);
  EXPECT_FALSE(own.gpus.at(0).has(Field::kPowerLimitDefault));
  EXPECT_TRUE(has_note(own, "--power-limit ignored")) << all_notes(own);

  // A name the table knows by another spelling: the note says which board it was taken as.
  const Recording alias = read_ok("index, name, power.draw [W]\n0, A100 40GB SXM, 100.00 W\n");
  EXPECT_TRUE(has_note(alias,
                       "power limit 400 W from the model table for A100 40GB SXM (taken "
                       "as NVIDIA A100-SXM4-40GB)"))
      << all_notes(alias);

  // Neither: say that efficiency cannot be computed.
  const Recording unknown = read_ok("index, name, power.draw [W]\n0, Mystery GPU 9000, 100.00 W\n");
  EXPECT_FALSE(unknown.gpus.at(0).has(Field::kPowerLimitDefault));
  EXPECT_TRUE(has_note(unknown, "efficiency cannot be computed")) << all_notes(unknown);

  SmiCsvOptions bad;
  bad.power_limit_w = -5;
  EXPECT_NE(read_error(text, bad).find("--power-limit"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Inline cases

TEST(SmiCsv, ReadsIdentityColumnsAndAliases) {
  const Recording rec = read_ok(
      "gpu_name, gpu_bus_id, gpu_uuid, serial, driver_version, persistence_mode, "
      "mig.mode.current, pstate, clocks.current.memory [MHz], power.draw.average [W], "
      "power.draw [W]\n"
      "NVIDIA H100 80GB HBM3, 00000000:18:00.0, GPU-aaaa, 1654922001234, 550.54.15, Enabled, "
      "Disabled, P8, 2619 MHz, 70.50 W, 71.00 W\n");
  ASSERT_EQ(rec.gpus.size(), 1u);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(g.info.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.info.pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(g.info.uuid, "GPU-aaaa");
  EXPECT_EQ(g.info.serial, "1654922001234");
  EXPECT_EQ(g.info.persistence_mode, true);
  EXPECT_EQ(g.info.mig_mode, false);
  EXPECT_EQ(g.info.architecture, Architecture::kHopper);
  EXPECT_EQ(rec.system.driver_version, "550.54.15");
  EXPECT_EQ(col(g, Field::kPstate), (std::vector<double>{8}));
  EXPECT_EQ(col(g, Field::kClockMem), (std::vector<double>{2619}));
  // power.draw.average and power.draw are one quantity: the first column wins, with a note.
  EXPECT_EQ(col(g, Field::kPower), (std::vector<double>{70.5}));
  EXPECT_TRUE(has_note(rec, "power.draw [W] ignored")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "no time column")) << all_notes(rec);
}

TEST(SmiCsv, KeysGpusByBusIdThenUuid) {
  const Recording by_bus = read_ok(
      "timestamp, pci.bus_id, power.draw [W]\n"
      "2024/01/01 00:00:00.000, 00000000:3B:00.0, 10.00 W\n"
      "2024/01/01 00:00:00.001, 00000000:5E:00.0, 20.00 W\n"
      "2024/01/01 00:00:01.000, 00000000:3B:00.0, 11.00 W\n"
      "2024/01/01 00:00:01.001, 00000000:5E:00.0, 21.00 W\n");
  ASSERT_EQ(by_bus.gpus.size(), 2u);
  EXPECT_EQ(by_bus.gpus[1].info.pci_bus_id, "00000000:5E:00.0");
  EXPECT_EQ(col(by_bus.gpus[1], Field::kPower), (std::vector<double>{20, 21}));

  const Recording by_uuid =
      read_ok("uuid, power.draw [W]\nGPU-a, 1.00 W\nGPU-b, 2.00 W\nGPU-a, 3.00 W\nGPU-b, 4.00 W\n");
  ASSERT_EQ(by_uuid.gpus.size(), 2u);
  EXPECT_EQ(col(by_uuid.gpus[0], Field::kPower), (std::vector<double>{1, 3}));
  EXPECT_EQ(by_uuid.gpus[0].time_s, (std::vector<double>{0, 1}));
}

TEST(SmiCsv, KeysGpusByPositionWithinEachRound) {
  const Recording rec = read_ok(
      "timestamp, name, power.draw [W]\n"
      "2024/01/01 00:00:00.000, NVIDIA L4, 10.00 W\n"
      "2024/01/01 00:00:00.003, NVIDIA L4, 20.00 W\n"
      "2024/01/01 00:00:01.001, NVIDIA L4, 11.00 W\n"
      "2024/01/01 00:00:01.004, NVIDIA L4, 21.00 W\n"
      "2024/01/01 00:00:02.000, NVIDIA L4, 12.00 W\n"
      "2024/01/01 00:00:02.002, NVIDIA L4, 22.00 W\n");
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(col(rec.gpus[0], Field::kPower), (std::vector<double>{10, 11, 12}));
  EXPECT_EQ(col(rec.gpus[1], Field::kPower), (std::vector<double>{20, 21, 22}));
  EXPECT_TRUE(has_note(rec, "position")) << all_notes(rec);

  // Equal timestamps within a round.
  const Recording same = read_ok(
      "timestamp, power.draw [W]\n2024/01/01 00:00:00.000, 1 W\n2024/01/01 00:00:00.000, 2 W\n"
      "2024/01/01 00:00:00.000, 3 W\n2024/01/01 00:00:00.500, 4 W\n"
      "2024/01/01 00:00:00.500, 5 W\n2024/01/01 00:00:00.500, 6 W\n");
  ASSERT_EQ(same.gpus.size(), 3u) << all_notes(same);
  EXPECT_EQ(col(same.gpus[2], Field::kPower), (std::vector<double>{3, 6}));

  // One GPU, irregular interval: stays one GPU.
  const Recording single = read_ok(
      "timestamp, power.draw [W]\n2024/01/01 00:00:00.000, 1 W\n2024/01/01 00:00:01.000, 2 W\n"
      "2024/01/01 00:00:06.000, 3 W\n2024/01/01 00:00:07.000, 4 W\n"
      "2024/01/01 00:00:08.000, 5 W\n");
  ASSERT_EQ(single.gpus.size(), 1u);
  EXPECT_EQ(single.gpus[0].size(), 5u);
  EXPECT_TRUE(has_note(single, "all rows read as one GPU")) << all_notes(single);
}

TEST(SmiCsv, TimesRowGroupsOneSecondApartWithoutTimestamps) {
  const Recording rec =
      read_ok("index, power.draw [W]\n0, 1 W\n1, 2 W\n0, 3 W\n1, 4 W\n0, 5 W\n1, 6 W\n");
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(rec.gpus[1].time_s, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(col(rec.gpus[1], Field::kPower), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(rec.start_unix_ms, 0);
  EXPECT_TRUE(has_note(rec, "1 s apart")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "UTC"));
}

TEST(SmiCsv, SkipsRowsWithTheWrongCellCountAndSaysSo) {
  const Recording rec = read_ok(
      "timestamp, index, utilization.gpu [%], power.draw [W], memory.used [MiB]\n"
      "2024/01/01 00:00:00.000, 0, 50 %, 100.00 W, 1000 MiB\n"
      "2024/01/01 00:00:01.000, 0, 51 %, 101.00 W, 1001 MiB\n"
      "2024/01/01 00:00:02.000, 0, 52 %\n"
      "2024/01/01 00:00:03.000, 0, 53 %, 103.00 W, 1003 MiB\n");
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(col(rec.gpus[0], Field::kUtilGpu), (std::vector<double>{50, 51, 53}));
  EXPECT_TRUE(has_note(rec, "skipped 1 line(s)")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "run.csv:4: expected 5 cells, found 3")) << all_notes(rec);

  const std::string msg =
      read_error("timestamp, index, power.draw [W]\n2024/01/01 00:00:00.000, 0\n", {}, "x.csv");
  EXPECT_NE(msg.find("x.csv:2: expected 3 cells, found 2"), std::string::npos) << msg;
}

TEST(SmiCsv, SkipsRowsWhoseTimeDoesNotAdvance) {
  const Recording rec = read_ok(
      "timestamp, index, power.draw [W]\n"
      "2024/01/01 00:00:01.000, 0, 1 W\n2024/01/01 00:00:01.000, 0, 2 W\n"
      "2024/01/01 00:00:00.500, 0, 3 W\n2024/01/01 00:00:02.000, 0, 4 W\n");
  EXPECT_EQ(col(rec.gpus.at(0), Field::kPower), (std::vector<double>{1, 4}));
  EXPECT_TRUE(has_note(rec, "skipped 2 line(s) whose time did not advance")) << all_notes(rec);
}

TEST(SmiCsv, ReadsCrlfBomUnitsAndLeadingSpacesInline) {
  const Recording rec = read_ok(
      "\xEF\xBB\xBF  timestamp,index,memory.used [MiB],power.draw [W],clocks.sm [MHz]\r\n"
      "2024/01/01 00:00:00.000,   0,  30 GiB,  500 mW,  1.98 GHz\r\n");
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(col(rec.gpus[0], Field::kMemUsed), (std::vector<double>{30720}));
  EXPECT_EQ(col(rec.gpus[0], Field::kPower), (std::vector<double>{0.5}));
  EXPECT_DOUBLE_EQ(col(rec.gpus[0], Field::kClockSm).at(0), 1980);

  // A value in a unit the column cannot have is missing, with a note, not a wrong number.
  const Recording bad = read_ok("index, power.draw [W]\n0, 12 MiB\n0, 13 W\n");
  EXPECT_TRUE(is_missing(col(bad.gpus.at(0), Field::kPower)[0]));
  EXPECT_TRUE(has_note(bad, "run.csv:2: power.draw [W]: cannot read \"12 MiB\"")) << all_notes(bad);
}

TEST(SmiCsv, FollowsAHeaderThatChangesMidFile) {
  const Recording rec = read_ok(
      "index, power.draw [W]\n0, 1 W\n0, 2 W\n"
      "index, utilization.gpu [%], power.draw [W]\n0, 50 %, 3 W\n");
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(col(rec.gpus[0], Field::kPower), (std::vector<double>{1, 2, 3}));
  const auto util = col(rec.gpus[0], Field::kUtilGpu);
  ASSERT_EQ(util.size(), 3u);
  EXPECT_TRUE(is_missing(util[0]));
  EXPECT_EQ(util[2], 50);
  EXPECT_TRUE(has_note(rec, "header line changes")) << all_notes(rec);
}

TEST(SmiCsv, Errors) {
  EXPECT_NE(read_error("").find("run.csv: empty file"), std::string::npos);
  EXPECT_NE(read_error("\n  \r\n\n").find("empty file"), std::string::npos);
  EXPECT_NE(read_error("\xEF\xBB\xBF").find("empty file"), std::string::npos);

  std::string garbage;
  for (int i = 0; i < 2000; ++i) garbage.push_back(static_cast<char>((i * 7919 + 13) % 256));
  EXPECT_NE(read_error(garbage).find("binary"), std::string::npos);
  EXPECT_FALSE(looks_like_smi_csv(garbage));

  EXPECT_NE(read_error(std::string("\xFF\xFEt\0i\0", 6)).find("UTF-16"), std::string::npos);

  const std::string header_only =
      "timestamp, index, power.draw [W]\n\ntimestamp, index, power.draw [W]\n";
  EXPECT_NE(read_error(header_only).find("no data rows"), std::string::npos);

  const std::string text_not_csv = read_error("hello, world\nthis is not a log\n");
  EXPECT_NE(text_not_csv.find("--columns"), std::string::npos) << text_not_csv;

  SmiCsvOptions opt;
  opt.columns = {"foo", "bar"};
  const std::string cols = read_error("1, 2\n", opt);
  EXPECT_NE(cols.find("--columns"), std::string::npos) << cols;
  EXPECT_NE(cols.find("foo"), std::string::npos) << cols;

  const std::string times =
      read_error("timestamp, index, power.draw [W]\nyesterday, 0, 1 W\n", {}, "t.csv");
  EXPECT_NE(times.find("t.csv:2: cannot read the time \"yesterday\""), std::string::npos) << times;
}

TEST(SmiCsv, LooksLikeSmiCsv) {
  for (const char* name :
       {"two_gpu_units.csv", "h100_nounits.csv", "l4_noheader_nounits.csv",
        "t4_na_repeated_header_crlf.csv", "rtx4090_reason_columns.csv", "a100_no_power_limit.csv"})
    EXPECT_TRUE(looks_like_smi_csv(fixture(name))) << name;
  EXPECT_TRUE(looks_like_smi_csv("power.draw [W]\n"));
  EXPECT_TRUE(looks_like_smi_csv("\n\ntimestamp, index, memory.used [MiB]\n"));
  EXPECT_FALSE(looks_like_smi_csv(""));
  EXPECT_FALSE(looks_like_smi_csv("hello world\n"));
  EXPECT_FALSE(looks_like_smi_csv("{\"gpus\": []}\n"));
  EXPECT_FALSE(looks_like_smi_csv("timestamp,value\n2024-01-01,3\n"));
  EXPECT_FALSE(looks_like_smi_csv("index,name\n0,foo\n"));
  EXPECT_FALSE(looks_like_smi_csv("# gpu    pwr  gtemp  mtemp     sm    mem\n"));
  EXPECT_FALSE(looks_like_smi_csv("time_s,gpu,power_w\n0,0,100\n"));
}

// ---------------------------------------------------------------------------------------------
// Writer and round trip

Recording sample_recording() {
  Recording rec;
  rec.start_unix_ms = 1710411302123;
  rec.source = "test";
  for (unsigned i = 0; i < 2; ++i) {
    GpuSeries g;
    g.info.index = i;
    g.info.name = "NVIDIA H100 80GB HBM3";
    g.info.pci_bus_id = i == 0 ? "00000000:18:00.0" : "00000000:2A:00.0";
    g.info.uuid = i == 0 ? "GPU-0000" : "GPU-1111";
    for (int r = 0; r < 3; ++r) g.append_row(r * 1.0 + i * 0.002);
    g.column_for_write(Field::kUtilGpu) = {99, 100, kMissing};
    g.column_for_write(Field::kPower) = {152.34 + i, 699.99, 88.1};
    g.column_for_write(Field::kPowerLimit) = {700, 700, 700};
    g.column_for_write(Field::kTemp) = {45, 61, 70};
    g.column_for_write(Field::kClockSm) = {1980, 1755, kMissing};
    g.column_for_write(Field::kPstate) = {0, 0, 8};
    g.column_for_write(Field::kClockEventReasons) = {4, 0, 0x24};
    g.column_for_write(Field::kMemUsed) = {30512, 30512, 0};
    g.column_for_write(Field::kMemTotal) = {81559, 81559, 81559};
    g.column_for_write(Field::kPcieGen) = {5, 5, 1};
    if (i == 0)
      g.column_for_write(Field::kFan) = {30, 31, 32};
    else
      g.unsupported[Field::kFan] = nvml_code::kNotSupported;
    g.column_for_write(Field::kGpmSmUtil) = {50, 60, 70};  // no nvidia-smi name: not written
    rec.gpus.push_back(std::move(g));
  }
  return rec;
}

TEST(SmiCsv, WritesNvidiaSmiLayout) {
  const std::string csv = write_smi_csv(sample_recording());
  std::vector<std::string_view> lines;
  std::string_view rest = csv;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    rest.remove_prefix(nl + 1);
  }
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0],
            "timestamp, index, name, pci.bus_id, uuid, utilization.gpu [%], power.draw [W], "
            "power.limit [W], temperature.gpu, clocks.sm [MHz], pstate, "
            "clocks_event_reasons.active, memory.used [MiB], memory.total [MiB], "
            "pcie.link.gen.current, fan.speed [%]");
  EXPECT_EQ(lines[1],
            "2024/03/14 10:15:02.123, 0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, GPU-0000, 99 %, "
            "152.34 W, 700.00 W, 45, 1980 MHz, P0, 0x0000000000000004, 30512 MiB, 81559 MiB, 5, "
            "30 %");
  EXPECT_EQ(lines[2],
            "2024/03/14 10:15:02.125, 1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, GPU-1111, 99 %, "
            "153.34 W, 700.00 W, 45, 1980 MHz, P0, 0x0000000000000004, 30512 MiB, 81559 MiB, 5, "
            "[Not Supported]");
  EXPECT_EQ(lines[5],
            "2024/03/14 10:15:04.123, 0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, GPU-0000, "
            "[N/A], 88.10 W, 700.00 W, 70, [N/A], P8, 0x0000000000000024, 0 MiB, 81559 MiB, 1, "
            "32 %");

  const std::string nounits = write_smi_csv(sample_recording(), false);
  EXPECT_EQ(nounits.substr(0, nounits.find('\n')), lines[0]);  // the header keeps annotations
  EXPECT_NE(nounits.find("GPU-0000, 99, 152.34, 700.00, 45, 1980, P0, 0x0000000000000004, "
                         "30512, 81559, 5, 30\n"),
            std::string::npos)
      << nounits;

  EXPECT_EQ(write_smi_csv(Recording{}), "timestamp, index, name, pci.bus_id, uuid\n");
}

void expect_same(const Recording& a, const Recording& b, const std::vector<Field>& skip = {}) {
  EXPECT_EQ(a.start_unix_ms, b.start_unix_ms);
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (size_t gi = 0; gi < a.gpus.size(); ++gi) {
    const GpuSeries& x = a.gpus[gi];
    const GpuSeries& y = b.gpus[gi];
    EXPECT_EQ(x.info.index, y.info.index);
    EXPECT_EQ(x.info.name, y.info.name);
    EXPECT_EQ(x.info.pci_bus_id, y.info.pci_bus_id);
    EXPECT_EQ(x.info.uuid, y.info.uuid);
    EXPECT_EQ(x.unsupported, y.unsupported);
    ASSERT_EQ(x.size(), y.size());
    for (size_t r = 0; r < x.size(); ++r) EXPECT_NEAR(x.time_s[r], y.time_s[r], 5e-4);
    for (const auto& fi : all_fields()) {
      if (canonical_smi_name(fi.field).empty()) continue;
      if (std::find(skip.begin(), skip.end(), fi.field) != skip.end()) continue;
      ASSERT_EQ(x.has(fi.field), y.has(fi.field)) << fi.id;
      if (!x.has(fi.field)) continue;
      const auto& cx = *x.column(fi.field);
      const auto& cy = *y.column(fi.field);
      for (size_t r = 0; r < cx.size(); ++r) {
        if (is_missing(cx[r])) {
          EXPECT_TRUE(is_missing(cy[r])) << fi.id << " row " << r;
        } else {
          // nvidia-smi prints watts with 2 decimals, the rest as integers.
          EXPECT_NEAR(cx[r], cy[r], fi.unit == Unit::kWatt ? 0.005 : 0.5) << fi.id << " row " << r;
        }
      }
    }
  }
}

TEST(SmiCsv, RoundTripsItsOwnOutput) {
  const Recording rec = sample_recording();
  for (const bool units : {true, false}) {
    const Recording back = read_ok(write_smi_csv(rec, units));
    expect_same(rec, back);
    EXPECT_FALSE(back.gpus.at(0).has(Field::kGpmSmUtil));
    EXPECT_EQ(back.gpus.at(1).unsupported.at(Field::kFan), nvml_code::kNotSupported);
    EXPECT_EQ(col(back.gpus.at(0), Field::kMemUsed)[2], 0.0);  // a real 0 survives
    EXPECT_FALSE(has_note(back, "skipped")) << all_notes(back);
  }
  // Every fixture survives read -> write -> read.
  for (const char* name :
       {"two_gpu_units.csv", "h100_nounits.csv", "t4_na_repeated_header_crlf.csv",
        "rtx4090_reason_columns.csv", "a100_no_power_limit.csv"}) {
    SCOPED_TRACE(name);
    const Recording first = read_ok(fixture(name));
    const Recording second = read_ok(write_smi_csv(first));
    expect_same(first, second);
  }
}

// ---------------------------------------------------------------------------------------------
// Text helpers

// A text of pseudo-random length below max_len, each byte (or run) made by add(text, r) from the
// next pseudo-random number r: the same texts on every run, for the text helpers' tests.
template <class Add>
std::string random_text(uint64_t& state, size_t max_len, Add add) {
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  std::string text;
  const size_t len = next() % max_len;
  for (size_t i = 0; i < len; ++i) add(text, next());
  return text;
}

// split looks at sixteen bytes at a time: the same cells as a byte-by-byte cut, wherever the
// separators fall in a block, for every separator, bytes with the high bit set and separators
// side by side included.
TEST(Text, SplitCutsAtEverySeparatorWhereverItFalls) {
  auto by_byte = [](std::string_view line, char sep) {
    std::vector<std::string_view> out;
    size_t start = 0;
    for (size_t i = 0; i < line.size(); ++i)
      if (line[i] == sep) out.push_back(line.substr(start, i - start)), start = i + 1;
    out.push_back(line.substr(start));
    return out;
  };
  const std::string alphabet = std::string("ab ,;\t\x80\xFF\x01\x2D\x2B", 11);
  uint64_t state = 12345;
  std::vector<std::string_view> cells;
  for (int k = 0; k < 3000; ++k) {
    const std::string line = random_text(
        state, 70, [&](std::string& s, uint64_t r) { s += alphabet[r % alphabet.size()]; });
    for (const char sep : {',', ';', '\t', '\xFF'}) {
      text::split(line, sep, cells);
      ASSERT_EQ(cells, by_byte(line, sep)) << "line " << k << " sep " << int(sep);
    }
  }
}

// split_ws finds where whitespace turns to a token and back sixteen bytes at a time: the same
// tokens as a byte loop, whatever the whitespace (all six kinds, bytes next to them in value, bytes
// past ASCII) and wherever it falls against the blocks, runs of spaces longer than a block too.
TEST(Text, SplitWsIsTheTokensBetweenWhitespace) {
  auto by_byte = [](std::string_view s) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && text::is_space(s[i])) ++i;
      const size_t b = i;
      while (i < s.size() && !text::is_space(s[i])) ++i;
      if (i > b) out.push_back(s.substr(b, i - b));
    }
    return out;
  };
  const std::string alphabet = std::string(" \t\n\v\f\r\x08\x0E\x1F!a7\x80\xFF\x89", 15);
  uint64_t state = 777;
  std::vector<std::string_view> tokens;
  for (int k = 0; k < 4000; ++k) {
    const std::string s = random_text(state, 100, [&](std::string& t, uint64_t r) {
      if (r % 5 == 0)
        t.append(r / 5 % 20, ' ');  // aligned columns' runs of spaces
      else
        t += alphabet[r / 5 % alphabet.size()];
    });
    text::split_ws(s, tokens);
    ASSERT_EQ(tokens, by_byte(s)) << "text " << k;
  }
}

// split_line_trimmed finds the line's end, its cells, any stop byte and any byte past ASCII in one
// pass, sixteen bytes at a time: the same as finding the end, then the stop, then splitting and
// trimming, wherever the bytes fall against the blocks (lines of 0-90 bytes, several to a text,
// with and without an end).
TEST(Text, SplitLineTrimmedIsTheLineSplitAndTrimmed) {
  const std::string alphabet = std::string("ab ,;\t\n\r\"\x80\xFF\x01", 12);
  uint64_t state = 54321;
  std::vector<std::string_view> cells, expected;
  size_t stopped = 0, ended = 0, highs = 0;
  for (int k = 0; k < 4000; ++k) {
    // Mostly cell bytes, so that lines run past a block or several.
    const std::string text = random_text(state, 90, [&](std::string& t, uint64_t r) {
      t += r % 4 != 0 ? "ab 7"[r % 3 + (r % 2)] : alphabet[r / 4 % alphabet.size()];
    });
    for (const char sep : {',', ';', '\t'}) {
      const size_t end = std::min(text.find('\n'), text.size());
      const std::string_view line = std::string_view(text).substr(0, end);
      bool non_ascii = false;
      const size_t got = text::split_line_trimmed(text, sep, '"', cells, non_ascii);
      if (line.find('"') != std::string_view::npos) {
        ASSERT_EQ(got, std::string_view::npos) << "text " << k;
        ++stopped;
        continue;
      }
      ASSERT_EQ(got, end) << "text " << k << " sep " << int(sep);
      text::split_trimmed(line, sep, expected);
      ASSERT_EQ(cells, expected) << "text " << k << " sep " << int(sep);
      const bool high = std::any_of(line.begin(), line.end(),
                                    [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
      ASSERT_EQ(non_ascii, high) << "text " << k;
      ended += end < text.size();
      highs += high;
    }
  }
  // Both outcomes came up often: the test saw lines with quotes and lines with ends.
  EXPECT_GT(stopped, 1000u);
  EXPECT_GT(ended, 1000u);
  EXPECT_GT(highs, 1000u);
}

// equal_small compares words, overlapping at the end: the same answer as ==, whatever the length
// and wherever the texts differ.
TEST(Text, EqualSmallIsEqualityAtEveryLengthAndByte) {
  for (size_t n = 0; n <= 40; ++n) {
    const std::string a(n, 'x');
    EXPECT_TRUE(text::equal_small(a, std::string(n, 'x'))) << n;
    EXPECT_FALSE(text::equal_small(a, std::string(n + 1, 'x'))) << n;
    for (size_t at = 0; at < n; ++at) {
      std::string b = a;
      b[at] = '\x80';
      EXPECT_FALSE(text::equal_small(a, b)) << n << " " << at;
      EXPECT_FALSE(text::equal_small(std::string_view(b).substr(0, n), a)) << n << " " << at;
    }
  }
}

TEST(Text, SplitsTrimsAndParsesNumbersWithUnits) {
  std::vector<std::string_view> cells;
  text::split_trimmed(" a, b ,,c ", ',', cells);
  EXPECT_EQ(cells, (std::vector<std::string_view>{"a", "b", "", "c"}));
  text::split("", ',', cells);
  EXPECT_EQ(cells.size(), 1u);
  EXPECT_EQ(text::trim(" \t x y \r\n"), "x y");
  EXPECT_EQ(text::strip_bom("\xEF\xBB\xBFx"), "x");
  EXPECT_TRUE(text::iequals("Power.Draw", "power.draw"));

  const auto w = text::parse_number_with_unit(" 152.34 W");
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->value, 152.34);
  EXPECT_EQ(w->unit, "W");
  EXPECT_EQ(text::parse_number_with_unit("99 %")->unit, "%");
  EXPECT_EQ(text::parse_number_with_unit("30512MiB")->value, 30512);
  EXPECT_EQ(text::parse_number_with_unit("-3")->unit, "");
  EXPECT_FALSE(text::parse_number_with_unit("[N/A]"));
  EXPECT_FALSE(text::parse_number_with_unit("nan"));
  EXPECT_FALSE(text::parse_number_with_unit("inf W"));
  EXPECT_FALSE(text::parse_number_with_unit(""));
  EXPECT_EQ(text::parse_double("1.5"), 1.5);
  EXPECT_FALSE(text::parse_double("1.5 W"));
  EXPECT_EQ(text::parse_int(" 42 "), 42);
  EXPECT_EQ(text::parse_hex("0x0000000000000024"), 0x24u);
  EXPECT_FALSE(text::parse_hex("0x"));

  text::LineReader lines("a\r\nb\n\nc");
  std::vector<std::string_view> got;
  std::string_view line;
  while (lines.next(line)) got.push_back(line);
  EXPECT_EQ(got, (std::vector<std::string_view>{"a", "b", "", "c"}));
  EXPECT_EQ(lines.line_number(), 4u);
}

TEST(Text, ParsesAndFormatsTimestamps) {
  EXPECT_EQ(text::parse_timestamp_ms("1970/01/01 00:00:00.000"), 0);
  EXPECT_EQ(text::parse_timestamp_ms("2024/03/14 10:15:02.123"), 1710411302123);
  EXPECT_EQ(text::parse_timestamp_ms("2000-02-29T12:00:00Z"), 951825600000);
  EXPECT_EQ(text::parse_timestamp_ms("2000-02-29 12:00:00.5"), 951825600500);
  EXPECT_FALSE(text::parse_timestamp_ms("2024/13/01 00:00:00"));
  EXPECT_FALSE(text::parse_timestamp_ms("2024/03/14"));
  EXPECT_FALSE(text::parse_timestamp_ms("2024/03-14 00:00:00"));
  EXPECT_FALSE(text::parse_timestamp_ms("2024/03/14 00:00:00."));
  EXPECT_EQ(text::format_timestamp_ms(1710411302123), "2024/03/14 10:15:02.123");
  EXPECT_EQ(text::format_timestamp_ms(951825600500, '-'), "2000-02-29 12:00:00.500");
  EXPECT_EQ(text::format_timestamp_ms(-1), "1969/12/31 23:59:59.999");
  for (const int64_t ms : {int64_t{0}, int64_t{1}, int64_t{86399999}, int64_t{4102444800000}})
    EXPECT_EQ(text::parse_timestamp_ms(text::format_timestamp_ms(ms)), ms);
}

}  // namespace
}  // namespace gpudoctor
