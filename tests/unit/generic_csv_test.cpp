#include "formats/generic_csv.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/reading.hpp"
#include "formats/export.hpp"
#include "formats/log_time.hpp"
#include "test_helpers.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using namespace test_util;

std::string logs_dir() {
  return std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/logs/";
}

std::string fixture(const std::string& name) {
  return read_file(logs_dir() + "generic-csv/" + name);
}

Recording read_ok(const std::string& text, const GenericCsvOptions& opt = {},
                  const std::string& origin = "run.csv") {
  auto r = read_generic_csv(text, origin, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? std::string() : r.error().message);
  if (!r.ok()) return {};
  return std::move(r).value();
}

std::string read_error(const std::string& text, const GenericCsvOptions& opt = {},
                       const std::string& origin = "run.csv") {
  auto r = read_generic_csv(text, origin, opt);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {};
  EXPECT_EQ(r.error().kind, Error::Kind::kUsage);
  return r.error().message;
}

GenericCsvOptions with_map(std::vector<std::pair<std::string, std::string>> map) {
  GenericCsvOptions o;
  o.map = std::move(map);
  return o;
}

void expect_values(ColumnView got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "row " << i << ": " << got[i];
    else
      EXPECT_NEAR(got[i], want[i], 1e-9 * std::max(1.0, std::fabs(want[i]))) << "row " << i;
  }
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------------------------
// Fixtures: the layouts home-made loggers write

TEST(GenericCsv, ReadsPynvmlLoggerWithEpochSecondsAndRatios) {
  const Recording rec = read_ok(fixture("pynvml_logger_2gpu.csv"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.source, "csv: run.csv");
  EXPECT_EQ(rec.start_unix_ms, 1715682667412);
  EXPECT_TRUE(has_note(rec, "Unix epoch seconds")) << all_notes(rec);

  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_EQ(g0.info.index, 0u);
  EXPECT_EQ(g1.info.index, 1u);
  EXPECT_EQ(g0.info.name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(g0.info.architecture, Architecture::kAmpere);
  ASSERT_EQ(g0.size(), 5u);
  expect_values(g0.time_s, {0, 1.001, 2.0, 3.002, 4.0});
  expect_values(g1.time_s, {0.006, 1.007, 2.006, 3.008, 4.007});

  expect_values(col(g0, Field::kPower), {152.34, 398.71, 401.02, 287.66, 71.40});
  expect_values(col(g1, Field::kPower), {148.90, 399.25, kNaN, 281.13, 69.85});  // "nan"
  expect_values(col(g0, Field::kUtilGpu), {99, 100, 100, 87, 0});
  expect_values(col(g0, Field::kUtilMem), {41, 57, 58, 44, 0});
  expect_values(col(g0, Field::kMemUsed), {30512, 30512, 30514, 30514, 30514});
  expect_values(col(g0, Field::kTemp), {61, 66, 69, 68, 58});
  expect_values(col(g0, Field::kClockSm), {1410, 1275, 1245, 1410, 1410});
  // sm_active is a 0-1 ratio: read as percent; the empty cell is missing, never 0.
  expect_values(col(g0, Field::kGpmSmUtil), {87.3, 94.2, kNaN, 70.1, 0});
  EXPECT_TRUE(has_note(rec, "sm_active: all values between 0 and 1")) << all_notes(rec);
  expect_values(col(g0, Field::kClockEventReasons), {0, 4, 4, 0, 1});

  // No power limit column: the A100's from the model table.
  expect_values(col(g0, Field::kPowerLimitDefault), {400, 400, 400, 400, 400});
  EXPECT_TRUE(has_note(rec, "power limit 400 W from the model table")) << all_notes(rec);
  // The unknown column is named once, not fatal.
  EXPECT_TRUE(has_note(rec, "ignored columns gpudoctor does not read: step")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "sm_active -> gpm_sm_util_pct (values 0-1: a ratio, x100)"))
      << all_notes(rec);
}

TEST(GenericCsv, WideGpuColumnsNeedTheQuantityFromMap) {
  const std::string text = fixture("wide_power_iso.csv");
  const std::string err = read_error(text);
  EXPECT_NE(err.find("run.csv:1:"), std::string::npos) << err;
  EXPECT_NE(err.find("GPU0, GPU1, GPU2, GPU3"), std::string::npos) << err;
  EXPECT_NE(err.find("--map 'GPU*=power_w'"), std::string::npos) << err;

  const Recording rec = read_ok(text, with_map({{"GPU*", "power_w"}}));
  ASSERT_EQ(rec.gpus.size(), 4u) << all_notes(rec);
  // 12:31:07.412+02:00 is 10:31:07.412 UTC; a zoned time needs no UTC note.
  EXPECT_EQ(rec.start_unix_ms, 1715682667412);
  EXPECT_FALSE(has_note(rec, "read as UTC")) << all_notes(rec);
  for (unsigned i = 0; i < 4; ++i) {
    EXPECT_EQ(rec.gpus[i].info.index, i);
    expect_values(rec.gpus[i].time_s, {0, 1, 2, 3, 4});
  }
  expect_values(col(rec.gpus[0], Field::kPower), {152.3, 398.7, 401.0, 287.7, 71.4});
  expect_values(col(rec.gpus[1], Field::kPower), {148.9, 399.2, kNaN, 281.1, 69.9});
  expect_values(col(rec.gpus[3], Field::kPower), {149.7, 397.9, 399.8, 285.0, 72.8});
  EXPECT_TRUE(has_note(rec, "GPU0, GPU1, GPU2, GPU3 -> power_w of each GPU (--map)"))
      << all_notes(rec);
}

// A cell of the same text as the one above it is not parsed again: what it gave is taken again.
// The same values as parsing each, every bad cell said, nothing carried across a header that
// gives the columns other units, nor into a second reading of the rows (GPUs told apart by their
// position in rounds), which must learn the decimal commas again.
TEST(GenericCsv, RepeatedCellsReadAsIfEachWereParsed) {
  const Recording rec = read_ok(
      "timestamp,gpu,power_w,util_pct\n"
      "1,0,150.5,90\n"
      "2,0,150.5,90\n"
      "3,0,oops,N/A\n"
      "4,0,oops,90\n"
      "5,0,150.5,[Not Supported]\n"
      "6,0,150.5,[Not Supported]\n"
      "7,0,150.5,90\n"
      "timestamp,gpu,power_mw,util_pct\n"
      "8,0,150.5,90\n"
      "9,0,200000,90\n");
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  expect_values(g.column(Field::kPower),
                {150.5, 150.5, kNaN, kNaN, 150.5, 150.5, 150.5, 0.1505, 200});
  expect_values(g.column(Field::kUtilGpu), {90, 90, kNaN, 90, kNaN, kNaN, 90, 90, 90});
  EXPECT_TRUE(has_note(rec, "2 unreadable value(s) taken as missing (first: run.csv:4:"))
      << all_notes(rec);

  const Recording rounds = read_ok(
      "time;power_w;enforced_power_limit\n"
      "2024-01-01T00:00:00.000Z;10;250,5\n2024-01-01T00:00:00.002Z;20;250,5\n"
      "2024-01-01T00:00:01.000Z;11;250,5\n2024-01-01T00:00:01.002Z;21;250,5\n"
      "2024-01-01T00:00:02.000Z;12;250,5\n2024-01-01T00:00:02.002Z;22;250,5\n");
  ASSERT_EQ(rounds.gpus.size(), 2u) << all_notes(rounds);
  expect_values(rounds.gpus[1].column(Field::kPowerLimitEnforced), {250.5, 250.5, 250.5});
  EXPECT_TRUE(has_note(rounds, "decimal commas read as decimal points")) << all_notes(rounds);
}

TEST(GenericCsv, ReadsSemicolonsMilliwattsEpochMillisecondsAndDecimalCommas) {
  const Recording rec = read_ok(fixture("semicolon_mw_ms.csv"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.start_unix_ms, 1715682667412);
  EXPECT_TRUE(has_note(rec, "Unix epoch milliseconds")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "decimal commas")) << all_notes(rec);
  expect_values(rec.gpus[0].time_s, {0, 1, 2, 3});
  expect_values(col(rec.gpus[0], Field::kPower), {152.34, 398.71, 401.02, 71.4});
  expect_values(col(rec.gpus[1], Field::kPower), {148.9, 399.25, 400.88, 69.85});
  expect_values(col(rec.gpus[0], Field::kUtilGpu), {99, 100, 100, 0});
  expect_values(col(rec.gpus[0], Field::kTemp), {61, 66, 69, 58});
  expect_values(col(rec.gpus[1], Field::kGpmSmUtil), {86.1, 93.8, 94.4, 0});
  EXPECT_TRUE(has_note(rec, "power (mW) -> power_w (mW)")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "no power limit in the log")) << all_notes(rec);
}

TEST(GenericCsv, ReadsGpudoctorsOwnExportBackExactly) {
  const std::string text = fixture("gpudoctor_export.csv");
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_TRUE(rec.notes.empty()) << all_notes(rec);  // nothing to assume
  EXPECT_EQ(rec.start_unix_ms, 1715682667412);
  expect_values(col(rec.gpus[1], Field::kPower), {148.9, 399.25, kNaN, 281.13});
  expect_values(col(rec.gpus[0], Field::kEnergy), {893412337, 893811047, 894212067, 894499727});
  EXPECT_FALSE(rec.gpus[1].has(Field::kGpmSmUtil));  // never a value for GPU 1
  // Written out again, byte for byte the same file.
  EXPECT_EQ(write_csv(rec), text);
}

TEST(GenericCsv, RoundTripsAnyRecordingThroughExportCsv) {
  Recording in;
  in.start_unix_ms = 1715682667000;
  const std::vector<Field> fields = {
      Field::kUtilGpu, Field::kPower,   Field::kEnergy,    Field::kPowerLimitEnforced,
      Field::kTemp,    Field::kClockSm, Field::kPstate,    Field::kClockEventReasons,
      Field::kMemUsed, Field::kPcieRx,  Field::kGpmSmUtil, Field::kGpmDramBw};
  for (unsigned gi = 0; gi < 3; ++gi) {
    GpuSeries g;
    g.info.index = gi;
    for (int r = 0; r < 50; ++r) {
      const size_t row = g.append_row(r * 0.25 + gi * 0.001);
      for (size_t k = 0; k < fields.size(); ++k) {
        if ((r + static_cast<int>(k) + static_cast<int>(gi)) % 7 == 0) continue;  // gaps
        if (gi == 2 && fields[k] == Field::kGpmSmUtil) continue;  // GPU 2 has no GPM
        const double v = fields[k] == Field::kClockEventReasons ? static_cast<double>((r % 3) * 4)
                         : fields[k] == Field::kPstate          ? static_cast<double>(r % 2 * 8)
                                                                : 1.0 / 3 + r * 17.125 + k;
        g.column_for_write(fields[k])[row] = v;
      }
    }
    in.gpus.push_back(std::move(g));
  }
  const std::string csv = write_csv(in);
  const Recording out = read_ok(csv);
  ASSERT_EQ(out.gpus.size(), 3u) << all_notes(out);
  EXPECT_EQ(out.start_unix_ms, in.start_unix_ms);
  for (size_t gi = 0; gi < 3; ++gi) {
    const GpuSeries& a = in.gpus[gi];
    const GpuSeries& b = out.gpus[gi];
    EXPECT_EQ(b.info.index, a.info.index);
    ASSERT_EQ(b.size(), a.size());
    for (size_t r = 0; r < a.size(); ++r) EXPECT_NEAR(b.time_s[r], a.time_s[r], 1e-9);
    for (const Field f : fields) {
      ASSERT_EQ(a.has(f), b.has(f)) << info(f).id;
      if (!a.has(f)) continue;
      const auto& x = *a.column(f);
      const auto& y = *b.column(f);
      for (size_t r = 0; r < x.size(); ++r) {
        if (std::isnan(x[r]))
          EXPECT_TRUE(std::isnan(y[r])) << info(f).id << " row " << r;
        else
          EXPECT_EQ(x[r], y[r]) << info(f).id << " row " << r;  // exact: shortest round trip
      }
    }
  }
  EXPECT_EQ(write_csv(out), csv);
}

TEST(GenericCsv, ReadsDcgmExporterNamesAcrossTwoHosts) {
  const Recording rec = read_ok(fixture("dcgm_exporter_two_hosts.csv"));
  ASSERT_EQ(rec.gpus.size(), 4u) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "2 hosts in one file")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "have no time zone: read as UTC")) << all_notes(rec);
  EXPECT_EQ(rec.start_unix_ms, 1715682667000);
  EXPECT_EQ(rec.gpus[0].info.uuid, "GPU-6f3c1c2e-8a4b-4d2f-9c1e-000000000a00");
  EXPECT_EQ(rec.gpus[2].info.uuid, "GPU-6f3c1c2e-8a4b-4d2f-9c1e-000000000b00");
  EXPECT_EQ(rec.gpus[3].info.index, 3u);
  EXPECT_EQ(rec.gpus[0].info.architecture, Architecture::kHopper);
  expect_values(rec.gpus[0].time_s, {0, 10});
  expect_values(col(rec.gpus[0], Field::kPower), {612.418, 655.1});
  // DCGM's profiling ratios are 0-1: x100.
  expect_values(col(rec.gpus[2], Field::kGpmSmUtil), {31.1, 31.8});
  expect_values(col(rec.gpus[2], Field::kGpmTensorAny), {10.2, 10.4});
  expect_values(col(rec.gpus[1], Field::kMemUsed), {71230, 71230});
  expect_values(col(rec.gpus[2], Field::kClockEventReasons), {4, 4});  // hex
  expect_values(col(rec.gpus[0], Field::kPowerLimitDefault), {700, 700});
}

// Columns under gpudoctor's own Prometheus names (e.g. from a Prometheus CSV download) are in
// Prometheus' base units: its energy counter is in joules, ours in millijoules.
TEST(GenericCsv, ReadsGpudoctorPrometheusNamesInTheirUnits) {
  const Recording rec = read_ok(
      "timestamp,gpu,gpudoctor_power_watts,gpudoctor_energy_joules_total\n"
      "1715682667,0,250.5,1200.25\n"
      "1715682668,0,251,1450.75\n");
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  expect_values(col(rec.gpus[0], Field::kEnergy), {1200250, 1450750});
  expect_values(col(rec.gpus[0], Field::kPower), {250.5, 251});
}

// ---------------------------------------------------------------------------------------------
// --map

TEST(GenericCsv, MapOverridesNamesUnitsAndRoles) {
  const std::string text = fixture("pynvml_logger_2gpu.csv");
  // sm_active said to be percent already: no x100; step ignored on purpose: no note.
  const Recording rec =
      read_ok(text, with_map({{"sm_active", "gpm_sm_util_pct"}, {"STEP", "ignore"}}));
  expect_values(col(rec.gpus[0], Field::kGpmSmUtil), {0.873, 0.942, kNaN, 0.701, 0});
  EXPECT_FALSE(has_note(rec, "ignored columns")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "all values between 0 and 1")) << all_notes(rec);

  // A column of an unknown name, and a unit given through the map target.
  const Recording r2 = read_ok(
      "when,card,watts_now,busy\n"
      "1715682667,0,152000,50\n"
      "1715682668,0,398000,99\n",
      with_map({{"when", "time"}, {"card", "gpu"}, {"watts_now", "power_mw"}, {"busy", "util"}}));
  ASSERT_EQ(r2.gpus.size(), 1u) << all_notes(r2);
  EXPECT_EQ(r2.start_unix_ms, 1715682667000);
  expect_values(col(r2.gpus[0], Field::kPower), {152, 398});
  expect_values(col(r2.gpus[0], Field::kUtilGpu), {50, 99});
  EXPECT_TRUE(has_note(r2, "watts_now -> power_w (mW, --map)")) << all_notes(r2);
}

TEST(GenericCsv, MapErrorsNameTheProblem) {
  const std::string text = "time,power\n1715682667,100\n";
  std::string err = read_error(text, with_map({{"power", "wattage"}}));
  EXPECT_NE(err.find("\"wattage\" is not a field id"), std::string::npos) << err;
  err = read_error(text, with_map({{"pwr_draw", "power_w"}}));
  EXPECT_NE(err.find("no column pwr_draw in the header (time, power)"), std::string::npos) << err;
  err = read_error(text, with_map({{"power", ""}}));
  EXPECT_NE(err.find("expected COLUMN=FIELD"), std::string::npos) << err;
}

TEST(GenericCsv, GlobMapLeavesIdentityColumnsAlone) {
  const Recording rec = read_ok(
      "time,gpu_index,gpu_a,gpu_b\n"
      "0,0,10,20\n"
      "1,0,11,21\n",
      with_map({{"gpu*", "ignore"}, {"gpu_a", "power_w"}}));
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  expect_values(col(rec.gpus[0], Field::kPower), {10, 11});
  EXPECT_FALSE(rec.gpus[0].has(Field::kTemp));
}

// ---------------------------------------------------------------------------------------------
// Names, units, layouts

TEST(GenericCsv, RecognisesNamesInManySpellings) {
  const Recording rec = read_ok(
      "Time (s),GPU ID,Power Draw [W],GPU-Util (%),memoryUsedMiB,Temperature (C),"
      "utilization.memory,DCGM_FI_DEV_SM_CLOCK,clocks_event_reasons,Fan Speed %,pstate\n"
      "0.0,0,152.5,99,30512,61,41,1410,0x4,35,P0\n"
      "0.5,0,153.5,98,30514,62,42,1395,0x0,36,P2\n");
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_TRUE(has_note(rec, "elapsed seconds")) << all_notes(rec);
  EXPECT_EQ(rec.start_unix_ms, 0);
  expect_values(g.time_s, {0, 0.5});
  expect_values(col(g, Field::kPower), {152.5, 153.5});
  expect_values(col(g, Field::kUtilGpu), {99, 98});
  expect_values(col(g, Field::kMemUsed), {30512, 30514});
  expect_values(col(g, Field::kTemp), {61, 62});
  expect_values(col(g, Field::kUtilMem), {41, 42});
  expect_values(col(g, Field::kClockSm), {1410, 1395});
  expect_values(col(g, Field::kClockEventReasons), {4, 0});
  expect_values(col(g, Field::kFan), {35, 36});
  expect_values(col(g, Field::kPstate), {0, 2});
  EXPECT_FALSE(has_note(rec, "ignored columns")) << all_notes(rec);

  // Brackets that are not a unit: part of the name, else a remark.
  const Recording r2 = read_ok(
      "time (unix ms),power_w (avg over 1 s),temp (F)\n1715682667000,100,140\n"
      "1715682668000,101,141\n");
  EXPECT_EQ(r2.start_unix_ms, 1715682667000);
  expect_values(col(r2.gpus.at(0), Field::kPower), {100, 101});
  EXPECT_FALSE(r2.gpus.at(0).has(Field::kTemp));  // Fahrenheit is not read as Celsius
  EXPECT_TRUE(
      has_note(r2, "column temp (F) ignored: its unit is not one gpudoctor reads for temp_c"))
      << all_notes(r2);
  // A unit that does not fit the quantity: the column is left out, and the note says why.
  const Recording r3 = read_ok("time,power_w,power (%)\n0,100,25\n1,101,26\n");
  EXPECT_TRUE(has_note(r3,
                       "column power (%) ignored: its unit is not one gpudoctor reads for "
                       "power_w (watt)"))
      << all_notes(r3);
}

TEST(GenericCsv, EveryCommonNameResolves) {
  struct Case {
    const char* name;
    Field field;
    const char* cell;
    double value;
  };
  const Case cases[] = {
      {"power_w", Field::kPower, "152.5", 152.5},
      {"power", Field::kPower, "152.5", 152.5},
      {"power_draw", Field::kPower, "152.5", 152.5},
      {"power_mw", Field::kPower, "152500", 152.5},
      {"power_usage", Field::kPower, "152500", 152.5},  // pynvml's mW, told by size
      {"gpu_util", Field::kUtilGpu, "87", 87},
      {"gpu_util_pct", Field::kUtilGpu, "87", 87},
      {"utilization", Field::kUtilGpu, "87", 87},
      {"util", Field::kUtilGpu, "0.87", 87},
      {"mem_util", Field::kUtilMem, "41", 41},
      {"sm_active", Field::kGpmSmUtil, "0.5", 50},
      {"sm_activity", Field::kGpmSmUtil, "50.5", 50.5},
      {"tensor_active", Field::kGpmTensorAny, "0.25", 25},
      {"dram_active", Field::kGpmDramBw, "0.125", 12.5},
      {"DCGM_FI_PROF_SM_ACTIVE", Field::kGpmSmUtil, "0.5", 50},
      {"DCGM_FI_DEV_GPU_TEMP", Field::kTemp, "61", 61},
      {"temp", Field::kTemp, "61", 61},
      {"temperature", Field::kTemp, "61", 61},
      {"gpu_temp", Field::kTemp, "61", 61},
      {"temperature.gpu", Field::kTemp, "61", 61},
      {"sm_clock", Field::kClockSm, "1410", 1410},
      {"graphics_clock", Field::kClockSm, "1410", 1410},
      {"mem_clock", Field::kClockMem, "1215", 1215},
      {"memory_used", Field::kMemUsed, "30512", 30512},
      {"memory_used_bytes", Field::kMemUsed, "1048576", 1},
      {"throttle_reasons", Field::kClockEventReasons, "0x44", 68},
      {"clocks_throttle_reasons", Field::kClockEventReasons, "68", 68},
      {"clock_event_reasons", Field::kClockEventReasons, "4", 4},
      {"power_limit", Field::kPowerLimit, "400", 400},
      {"enforced_power_limit", Field::kPowerLimitEnforced, "400000", 400},
      {"energy_mj", Field::kEnergy, "1000", 1000},
      {"pstate", Field::kPstate, "P8", 8},
      {"gpudoctor_power_watts", Field::kPower, "152.5", 152.5},
  };
  for (const auto& c : cases) {
    const std::string text = fmt::format("time,{}\n0,{}\n1,{}\n", c.name, c.cell, c.cell);
    const Recording rec = read_ok(text);
    ASSERT_EQ(rec.gpus.size(), 1u) << c.name;
    expect_values(col(rec.gpus[0], c.field), {c.value, c.value});
    EXPECT_FALSE(has_note(rec, "ignored columns")) << c.name << "\n" << all_notes(rec);
  }
  // The GPU id and time names.
  for (const char* id : {"gpu", "gpu_id", "gpu_index", "index", "device"}) {
    const Recording rec = read_ok(fmt::format("time,{},power_w\n0,1,5\n0,0,6\n", id));
    EXPECT_EQ(rec.gpus.size(), 2u) << id;
  }
  for (const char* t :
       {"time", "timestamp", "ts", "datetime", "date", "elapsed", "elapsed_s", "t"}) {
    const Recording rec = read_ok(fmt::format("{},power_w\n0.5,5\n2,6\n", t));
    expect_values(rec.gpus.at(0).time_s, {0, 1.5});
  }
}

TEST(GenericCsv, TellsUnitsFromTheValuesWhereTheNameDoesNot) {
  // pynvml's power calls return mW, memory info bytes; utilization here is a 0-1 ratio.
  const Recording rec = read_ok(
      "timestamp,gpu,power,power_limit,memory_used,utilization\n"
      "1715682667,0,152340,400000,31994150912,0.99\n"
      "1715682668,0,398710,400000,31996248064,0.5\n");
  const GpuSeries& g = rec.gpus.at(0);
  expect_values(col(g, Field::kPower), {152.34, 398.71});
  expect_values(col(g, Field::kPowerLimit), {400, 400});
  expect_values(col(g, Field::kMemUsed), {30512, 30514});
  expect_values(col(g, Field::kUtilGpu), {99, 50});
  EXPECT_TRUE(has_note(rec, "power -> power_w (mW: most values exceed 3000)")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "memory_used -> mem_used_mib (bytes")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "from the model table")) << all_notes(rec);

  // The same names in W, MiB and percent stay as they are (an idle 0/1 % is not a ratio).
  const Recording r2 = read_ok(
      "timestamp,gpu,power,memory_used,utilization\n"
      "1715682667,0,152.34,30512,1\n"
      "1715682668,0,398.71,30514,0\n");
  expect_values(col(r2.gpus.at(0), Field::kPower), {152.34, 398.71});
  expect_values(col(r2.gpus.at(0), Field::kMemUsed), {30512, 30514});
  expect_values(col(r2.gpus.at(0), Field::kUtilGpu), {1, 0});

  // Names with a unit suffix, and values with their unit.
  const Recording r3 = read_ok(
      "time,gpu,power_mw,mem_used_bytes,sm_active_pct,temp\n"
      "1715682667,0,152340,31994150912,0.5,\"61 C\"\n"
      "1715682668,0,398710,31996248064,0.25,62 \xC2\xB0"
      "C\n");
  expect_values(col(r3.gpus.at(0), Field::kPower), {152.34, 398.71});
  expect_values(col(r3.gpus.at(0), Field::kMemUsed), {30512, 30514});
  expect_values(col(r3.gpus.at(0), Field::kGpmSmUtil), {0.5, 0.25});  // "_pct": percent
  expect_values(col(r3.gpus.at(0), Field::kTemp), {61, 62});
}

TEST(GenericCsv, ReadsPrefixedAndSuffixedPerGpuColumns) {
  const Recording rec = read_ok(
      "timestamp,gpu0_power_w,gpu0_util,gpu1_power,power_gpu2 (mW),gpu1_name,model\n"
      "2024-05-14T10:31:07Z,152.3,99,148.9,151000,NVIDIA H100 80GB HBM3,NVIDIA A100-SXM4-40GB\n"
      "2024-05-14T10:31:08Z,398.7,100,399.2,401500,NVIDIA H100 80GB HBM3,NVIDIA A100-SXM4-40GB\n");
  ASSERT_EQ(rec.gpus.size(), 3u) << all_notes(rec);
  expect_values(col(rec.gpus[0], Field::kPower), {152.3, 398.7});
  expect_values(col(rec.gpus[0], Field::kUtilGpu), {99, 100});
  EXPECT_FALSE(rec.gpus[1].has(Field::kUtilGpu));
  expect_values(col(rec.gpus[1], Field::kPower), {148.9, 399.2});
  expect_values(col(rec.gpus[2], Field::kPower), {151, 401.5});
  EXPECT_EQ(rec.gpus[1].info.name, "NVIDIA H100 80GB HBM3");  // its own column first
  EXPECT_EQ(rec.gpus[0].info.name, "NVIDIA A100-SXM4-40GB");  // the shared one
  expect_values(col(rec.gpus[1], Field::kPowerLimitDefault), {700, 700});
}

TEST(GenericCsv, KeepsWideBareColumnsOutWhenOthersCanBeRead) {
  const Recording rec = read_ok(
      "time,gpu0_power,gpu1_power,GPU0,GPU1\n"
      "0,100,200,1,2\n"
      "1,101,201,1,2\n");
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_TRUE(has_note(rec, "columns GPU0, GPU1 ignored")) << all_notes(rec);
}

TEST(GenericCsv, ReadsRfc4180Quotes) {
  const Recording rec = read_ok(
      "\"time\",\"gpu\",\"name\",\"power, W\",\"note \"\"x\"\"\"\n"
      "\"2024-05-14 10:31:07.412\",\"0\",\"NVIDIA A100-SXM4-40GB\",\"152.3\",\"a, \"\"quoted\"\"\n"
      "multi-line note\"\n"
      "\"2024-05-14 10:31:08.412\",0,\"NVIDIA A100-SXM4-40GB\",153.4,plain\n");
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  expect_values(col(rec.gpus[0], Field::kPower), {152.3, 153.4});
  EXPECT_EQ(rec.gpus[0].info.name, "NVIDIA A100-SXM4-40GB");
  EXPECT_TRUE(has_note(rec, "note \"x\"")) << all_notes(rec);  // unknown, named as written
  EXPECT_TRUE(has_note(rec, "read as UTC")) << all_notes(rec);
}

TEST(GenericCsv, ReadsTabsExcelSeparatorLinesAndCommentHeaders) {
  const Recording tabs = read_ok("time\tgpu\tpower_w\n0\t0\t100\n1\t0\t101\n");
  expect_values(col(tabs.gpus.at(0), Field::kPower), {100, 101});

  const Recording excel = read_ok("sep=;\ntime;power_w\n0;100,5\n1;101,5\n");
  expect_values(col(excel.gpus.at(0), Field::kPower), {100.5, 101.5});

  const Recording comment =
      read_ok("# logger v2, started 2024-05-14\n# time,gpu,power_w\n0,0,100\n1,0,101\n");
  expect_values(col(comment.gpus.at(0), Field::kPower), {100, 101});
}

// ---------------------------------------------------------------------------------------------
// Times

TEST(GenericCsv, TellsEpochUnitsByMagnitude) {
  for (const auto& [t0, t1] : std::vector<std::pair<std::string, std::string>>{
           {"1715682667.5", "1715682668.5"},
           {"1715682667500", "1715682668500"},
           {"1715682667500000", "1715682668500000"},
           {"1715682667500000000", "1715682668500000000"}}) {
    const Recording rec = read_ok("ts,power_w\n" + t0 + ",1\n" + t1 + ",2\n");
    EXPECT_EQ(rec.start_unix_ms, 1715682667500) << t0;
    expect_values(rec.gpus.at(0).time_s, {0, 1});
  }
  // A unit in the name wins over the magnitude: elapsed milliseconds.
  const Recording ms = read_ok("elapsed_ms,power_w\n0,1\n250,2\n");
  EXPECT_EQ(ms.start_unix_ms, 0);
  expect_values(ms.gpus.at(0).time_s, {0, 0.25});
  EXPECT_TRUE(has_note(ms, "elapsed milliseconds")) << all_notes(ms);
}

TEST(GenericCsv, ReadsIsoTimesWithAndWithoutZones) {
  const Recording rec = read_ok(
      "datetime,power_w\n"
      "2024-05-14T10:31:07.412-05:00,1\n"
      "2024-05-14 15:31:08.412Z,2\n"
      "2024-05-14T17:31:09.412+0200,3\n"
      "2024-05-14 15:31:10.412 UTC,4\n");
  EXPECT_EQ(rec.start_unix_ms, 1715700667412);  // 15:31:07.412 UTC
  expect_values(rec.gpus.at(0).time_s, {0, 1, 2, 3});
  EXPECT_FALSE(has_note(rec, "read as UTC")) << all_notes(rec);

  const Recording minutes = read_ok("time,power_w\n2024-05-14T10:31Z,1\n2024-05-14T10:32Z,2\n");
  EXPECT_EQ(minutes.start_unix_ms, 1715682660000);
  expect_values(minutes.gpus.at(0).time_s, {0, 60});

  const Recording local = read_ok("time,power_w\n2024-05-14T10:31:07.412,1\n");
  EXPECT_EQ(local.start_unix_ms, 1715682667412);
  EXPECT_TRUE(has_note(local, "no time zone: read as UTC")) << all_notes(local);
}

TEST(GenericCsv, ReadsDateAndTimeColumnsAndTimeOfDay) {
  const Recording dt = read_ok("date,time,power_w\n2024-05-14,10:31:07,1\n2024-05-14,10:31:08,2\n");
  EXPECT_EQ(dt.start_unix_ms, 1715682667000);
  expect_values(dt.gpus.at(0).time_s, {0, 1});

  const Recording tod = read_ok("time,power_w\n23:59:59,1\n00:00:00.500,2\n00:00:01,3\n");
  EXPECT_EQ(tod.start_unix_ms, 0);
  expect_values(tod.gpus.at(0).time_s, {0, 1.5, 2});
  EXPECT_TRUE(has_note(tod, "time of day only")) << all_notes(tod);
}

// Found by fuzzing: a header change that drops the date column under times read with it. The
// rows below are timed again from their own column; those that then go backwards are skipped.
TEST(GenericCsv, AHeaderChangeThatDropsTheDateColumnDecidesTheTimeAgain) {
  const Recording rec = read_ok(
      "date,time,gpu,power_w\n2024-05-14,10:31:07,0,1\n2024-05-14,10:31:08,0,2\n"
      "time,gpu,power_w\n10:31:09,0,3\n");
  ASSERT_EQ(rec.gpus.size(), 1u);
  expect_values(rec.gpus[0].time_s, {0, 1});
  EXPECT_TRUE(has_note(rec, "header line changes 1 time(s)")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "skipped 1 line(s) whose time did not advance")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "dates in column  ")) << all_notes(rec);
}

// Found by fuzzing (dcgmi/nvidia-smi dmon through this reader): a third header that makes no
// layout kept the file's first header, not the second the rows below still have: their cells
// were then read by columns they do not have (past the row's end).
TEST(GenericCsv, AHeaderThatMakesNoLayoutKeepsTheHeaderInForce) {
  const Recording rec = read_ok(
      "time,gpu,power_w,util\n0,0,100,55\n"
      "time,gpu,power_w\n1,0,110\n"
      "gpu0_power_w,gpu1_power_w,gpu2_power_w\n2,0,120\n");
  ASSERT_EQ(rec.gpus.size(), 1u);
  expect_values(rec.gpus[0].time_s, {0, 1, 2});
  expect_values(col(rec.gpus[0], Field::kPower), {100, 110, 120});
  expect_values(col(rec.gpus[0], Field::kUtilGpu), {55, kNaN, kNaN});
  EXPECT_TRUE(has_note(rec, "header line changes 1 time(s)")) << all_notes(rec);
}

// A time that differs from the last only in its seconds is read from the last's minute
// (generic_csv_rows.cpp, iso_seconds): every time as parse_datetime reads it, to the millisecond,
// across minutes, hours and days, fractions of 0 to 4 digits after '.' or ',', a leap second,
// ' ' or 'T', '-' or '/', and zoned times (never read that way).
TEST(GenericCsv, TimesReadFromTheMinuteAreTheTimesParsed) {
  uint64_t state = 12345;
  auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  for (const std::string zone : {"", "", "Z", "+02:00"}) {
    for (const char sep : {' ', 'T'}) {
      for (const char date_sep : {'-', '/'}) {
        std::string text = "time;power_w\n";
        std::vector<std::string> times;
        int64_t t = 1'715'682'660'000 + static_cast<int64_t>(next(86'400'000));
        for (int i = 0; i < 3000; ++i) {
          t += 1 + static_cast<int64_t>(next(4) == 0 ? next(200'000) : next(1500));
          const int64_t days = t / 86'400'000, ms_of_day = t % 86'400'000;
          const std::string date = text::format_timestamp_ms(days * 86'400'000, date_sep);
          const int64_t h = ms_of_day / 3'600'000, m = ms_of_day / 60'000 % 60;
          const int64_t sec = ms_of_day / 1000 % 60, ms = ms_of_day % 1000;
          const size_t digits = next(5);  // 0-4: a fourth is rounded, and read in full
          std::string frac;
          if (digits > 0) {
            frac = fmt::format("{}{:03}", next(2) ? '.' : ',', ms)
                       .substr(0, 1 + std::min<size_t>(digits, 3));
            if (digits == 4) frac += '7';
          }
          const std::string leap = next(500) == 0 ? "60" : fmt::format("{:02}", sec);
          times.push_back(fmt::format("{}{}{:02}:{:02}:{}{}{}", date.substr(0, 10), sep, h, m, leap,
                                      frac, zone));
          text += times.back() + ";" + std::to_string(100 + i % 7) + "\n";
        }
        const Recording rec = read_ok(text);
        ASSERT_EQ(rec.gpus.size(), 1u);
        std::vector<double> want;
        int64_t first = 0;
        for (size_t i = 0; i < times.size(); ++i) {
          bool zoned = false;
          const auto x = csv::parse_datetime(times[i], zoned);
          ASSERT_TRUE(x) << times[i];
          if (i == 0) first = *x;
          if (want.empty() || static_cast<double>(*x - first) / 1000.0 > want.back())
            want.push_back(static_cast<double>(*x - first) / 1000.0);
        }
        expect_values(rec.gpus[0].time_s, want);
      }
    }
  }
}

TEST(GenericCsv, WithoutATimeColumnRowsAreOneSecondApart) {
  const Recording rec = read_ok("gpu,power_w\n0,1\n1,2\n0,3\n1,4\n");
  ASSERT_EQ(rec.gpus.size(), 2u);
  expect_values(rec.gpus[1].time_s, {0, 1});
  expect_values(col(rec.gpus[1], Field::kPower), {2, 4});
  EXPECT_TRUE(has_note(rec, "no time column")) << all_notes(rec);
}

// ---------------------------------------------------------------------------------------------
// GPUs and rows

TEST(GenericCsv, KeysGpusByIdColumns) {
  const Recording cuda = read_ok("t,device,power_w\n0,cuda:1,1\n0,cuda:0,2\n1,cuda:1,3\n");
  ASSERT_EQ(cuda.gpus.size(), 2u);
  EXPECT_EQ(cuda.gpus[0].info.index, 0u);
  expect_values(col(cuda.gpus[0], Field::kPower), {2});
  expect_values(col(cuda.gpus[1], Field::kPower), {1, 3});

  const Recording uuid = read_ok(
      "t,uuid,pci_bus_id,power_w\n0,GPU-bbb,00000000:0F:00.0,1\n0,GPU-aaa,00000000:07:00.0,2\n");
  ASSERT_EQ(uuid.gpus.size(), 2u);
  EXPECT_EQ(uuid.gpus[0].info.pci_bus_id, "00000000:0F:00.0");  // bus id keys: first seen
  EXPECT_EQ(uuid.gpus[0].info.uuid, "GPU-bbb");

  const Recording none = read_ok("t,power_w\n0,1\n1,2\n");
  ASSERT_EQ(none.gpus.size(), 1u);
  EXPECT_TRUE(has_note(none, "all rows read as one GPU")) << all_notes(none);
}

TEST(GenericCsv, IgnoresAnIndexColumnThatNumbersRows) {
  std::string text = "index,time,power_w\n";
  for (int i = 0; i < 20; ++i) text += std::to_string(i) + "," + std::to_string(i) + ",100\n";
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  EXPECT_EQ(rec.gpus[0].size(), 20u);
  EXPECT_TRUE(has_note(rec, "column index ignored: its values never repeat")) << all_notes(rec);

  // A snapshot of many GPUs at one time keeps them apart.
  std::string snap = "index,time,power_w\n";
  for (int i = 0; i < 16; ++i) snap += std::to_string(i) + ",5,100\n";
  EXPECT_EQ(read_ok(snap).gpus.size(), 16u);
}

TEST(GenericCsv, SkipsBadRowsAndSaysSo) {
  const Recording rec = read_ok(
      "time,gpu,power_w,temp_c\n"
      "0,0,100,50\n"
      "1,0,101\n"                  // too few cells
      "2,0,102,52,\n"              // a trailing separator: fine
      "time,gpu,power_w,temp_c\n"  // the header again
      "2,0,103,53\n"               // time did not advance
      "x,0,104,54\n"               // unreadable time
      "4,0,lots,[Not Supported]\n"
      "5,,106,56\n");  // no GPU
  const GpuSeries& g = rec.gpus.at(0);
  expect_values(g.time_s, {0, 2, 4});
  expect_values(col(g, Field::kPower), {100, 102, kNaN});
  expect_values(col(g, Field::kTemp), {50, 52, kNaN});
  EXPECT_TRUE(has_note(rec, "skipped 1 line(s) with the wrong number of cells (first: run.csv:3:"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "header line repeats 1 time(s)")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "skipped 1 line(s) whose time did not advance")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "skipped 1 line(s) with an unreadable time (first: run.csv:7:"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "skipped 1 line(s) without a GPU")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "1 unreadable value(s) taken as missing (first: run.csv:8: power_w"))
      << all_notes(rec);
}

TEST(GenericCsv, NotSupportedThroughoutIsRecordedAsSuch) {
  const Recording rec = read_ok("time,power_w,fan_pct\n0,100,[Not Supported]\n1,101,N/A\n");
  const GpuSeries& g = rec.gpus.at(0);
  EXPECT_FALSE(g.has(Field::kFan));
  ASSERT_EQ(g.unsupported.count(Field::kFan), 1u);
  EXPECT_EQ(g.unsupported.at(Field::kFan), nvml_code::kNotSupported);
}

TEST(GenericCsv, PowerLimitFromTheOptionOrTheLog) {
  GenericCsvOptions o;
  o.power_limit_w = 350;
  const Recording rec = read_ok("time,power_w\n0,100\n1,101\n", o);
  expect_values(col(rec.gpus.at(0), Field::kPowerLimitDefault), {350, 350});
  EXPECT_TRUE(has_note(rec, "power limit 350 W from --power-limit")) << all_notes(rec);

  const Recording own = read_ok("time,power_w,enforced_power_limit\n0,100,300\n1,101,300\n", o);
  EXPECT_FALSE(own.gpus.at(0).has(Field::kPowerLimitDefault));
  EXPECT_TRUE(has_note(own, "--power-limit ignored")) << all_notes(own);

  o.power_limit_w = -1;
  EXPECT_NE(read_error("time,power_w\n0,1\n", o).find("--power-limit"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(GenericCsv, ErrorsAreClear) {
  std::string err = read_error("when,foo,bar\n1,2,3\n");
  EXPECT_NE(err.find("run.csv:1: no column gpudoctor recognises in the header (when, foo, bar)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("--map COLUMN=FIELD"), std::string::npos) << err;

  err = read_error(std::string("SQLite format 3\0\0\x10\0", 20));
  EXPECT_NE(err.find("binary data"), std::string::npos) << err;
  EXPECT_EQ(read_error(""), "run.csv: empty file");
  EXPECT_EQ(read_error("  \n\n"), "run.csv: empty file");
  EXPECT_NE(read_error("# only a comment\n").find("no header line"), std::string::npos);
  EXPECT_NE(read_error("\xFF\xFEt\0i\0").find("UTF-16"), std::string::npos);
  EXPECT_EQ(read_error("time,power_w\n"), "run.csv:1: a header line but no data rows");
  err = read_error("time,power_w\nx,1\n");
  EXPECT_NE(err.find("no readable rows (run.csv:2: cannot read the time \"x\")"), std::string::npos)
      << err;
}

// ---------------------------------------------------------------------------------------------
// Detection

TEST(GenericCsv, LooksLikeItsOwnFixturesOnly) {
  for (const auto& name : {"pynvml_logger_2gpu.csv", "wide_power_iso.csv", "semicolon_mw_ms.csv",
                           "gpudoctor_export.csv", "dcgm_exporter_two_hosts.csv"})
    EXPECT_TRUE(looks_like_generic_csv(fixture(name))) << name;
  size_t others = 0;
  for (const std::string dir : {"smi-csv", "dmon"}) {
    for (const auto& e : std::filesystem::directory_iterator(logs_dir() + dir)) {
      const std::string text = read_file(e.path().string());
      EXPECT_FALSE(looks_like_generic_csv(text.substr(0, 4096))) << e.path();
      ++others;
    }
  }
  EXPECT_GE(others, 6u);
  EXPECT_FALSE(looks_like_generic_csv(
      "timestamp, index, name, utilization.gpu [%], power.draw [W]\n"
      "2024/05/14 10:31:07.412, 0, NVIDIA A100-SXM4-40GB, 99 %, 152.34 W\n"));
  EXPECT_FALSE(looks_like_generic_csv("2024/05/14 10:31:07.412, 0, 99 %, 152.34 W\n"));
  EXPECT_FALSE(looks_like_generic_csv(  // no dotted name, but nvidia-smi's timestamps
      "timestamp, name, pstate\n2024/05/14 10:31:07.412, NVIDIA A100-SXM4-40GB, P0\n"));
  EXPECT_TRUE(looks_like_generic_csv("timestamp,gpu_name,pstate,power_w\n1715682667,A100,P0,1\n"));
  EXPECT_FALSE(looks_like_generic_csv(
      "# gpu    pwr  gtemp     sm    mem\n# Idx      W      C      %      %\n    0     61     33"
      "      0      0\n"));
  EXPECT_FALSE(looks_like_generic_csv("{\"format\": \"gpudoctor-nvml-capture\", \"power_w\": 1}"));
  EXPECT_FALSE(looks_like_generic_csv("[{\"time\": 0, \"power_w\": 1}]\n"));
  EXPECT_FALSE(
      looks_like_generic_csv("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization.\n"
                             "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-x\"} 99\n"));
  EXPECT_FALSE(looks_like_generic_csv(std::string("SQLite format 3\0", 16)));
  EXPECT_FALSE(looks_like_generic_csv(""));
  EXPECT_FALSE(looks_like_generic_csv("name,age\nbob,42\n"));
  EXPECT_TRUE(looks_like_generic_csv("time;GPU0;GPU1\n0;1;2\n"));
  EXPECT_TRUE(looks_like_generic_csv("# time,gpu,power_w\n0,0,100\n"));
}

TEST(GenericCsv, NeverThrowsOnOddInput) {
  const std::string base = fixture("pynvml_logger_2gpu.csv");
  for (size_t cut = 0; cut < base.size(); cut += 7) {
    const std::string s = base.substr(0, cut) + "\"" + base.substr(cut);
    (void)looks_like_generic_csv(s);
    auto r = read_generic_csv(s, "x.csv", {});
    // The reader's guard turns an exception into an error: one of those is a throw, a failure.
    if (!r.ok()) {
      EXPECT_NE(r.error().code, Error::Code::kInternal)
          << "cut at " << cut << ": " << r.error().message;
      continue;
    }
    for (const auto& g : r->gpus)
      for (size_t i = 1; i < g.size(); ++i) EXPECT_GT(g.time_s[i], g.time_s[i - 1]);
  }
}

// What the nvidia-smi CSV taught the one CSV reader, for any CSV: rows of several GPUs without a
// GPU column, a header that changes mid-file, a headerless file named with --columns, the GPU's
// details, and a reason bitmask that wins over the columns of one reason each.
TEST(GenericCsv, ReadsWhatNvidiaSmiLogsTaughtItInAnyCsv) {
  // A logger that writes one row per GPU each second, 2 ms apart, and no GPU column.
  const Recording rounds = read_ok(
      "time,power_w\n2024-01-01T00:00:00.000Z,10\n2024-01-01T00:00:00.002Z,20\n"
      "2024-01-01T00:00:01.000Z,11\n2024-01-01T00:00:01.002Z,21\n"
      "2024-01-01T00:00:02.000Z,12\n2024-01-01T00:00:02.002Z,22\n");
  ASSERT_EQ(rounds.gpus.size(), 2u) << all_notes(rounds);
  expect_values(col(rounds.gpus[1], Field::kPower), {20, 21, 22});
  EXPECT_TRUE(has_note(rounds, "2 GPUs told apart by their position")) << all_notes(rounds);
  EXPECT_EQ(rounds.source, "csv: run.csv");  // no tool named

  // Found by fuzzing: a round longer than most (a third row 2 ms after the second) belongs to no
  // GPU the rounds know: skipped and counted, not read past the GPUs' names.
  std::string longer = "time,power_w\n";
  for (int s = 0; s < 6; ++s)
    longer += fmt::format("2024-01-01T00:00:0{}.000Z,{}\n2024-01-01T00:00:0{}.002Z,{}\n", s, 10 + s,
                          s, 20 + s);
  longer +=
      "2024-01-01T00:00:06.000Z,16\n2024-01-01T00:00:06.002Z,26\n"
      "2024-01-01T00:00:06.004Z,99\n";
  const Recording uneven = read_ok(longer);
  ASSERT_EQ(uneven.gpus.size(), 2u) << all_notes(uneven);
  EXPECT_EQ(uneven.gpus[1].size(), 7u);
  EXPECT_TRUE(has_note(uneven, "a row past the 2 GPUs of a sampling round")) << all_notes(uneven);

  // A header that changes: the rows below read by it.
  const Recording changed = read_ok("gpu,power_w\n0,1\n0,2\ngpu,util_gpu_pct,power_w\n0,50,3\n");
  ASSERT_EQ(changed.gpus.size(), 1u);
  expect_values(*changed.gpus[0].column(Field::kPower), {1, 2, 3});
  expect_values(*changed.gpus[0].column(Field::kUtilGpu), {kNaN, kNaN, 50});
  EXPECT_TRUE(has_note(changed, "the header line changes 1 time(s) mid-file (first: run.csv:4)"))
      << all_notes(changed);

  // Headerless, named by the options; a first line of values without them says what to do.
  GenericCsvOptions named;
  named.header = {"gpu, power_w", "util_gpu_pct"};
  const Recording headerless = read_ok("0,5,90\n0,6,91\n", named);
  ASSERT_EQ(headerless.gpus.size(), 1u);
  expect_values(*headerless.gpus[0].column(Field::kPower), {5, 6});
  const std::string why = read_error("0,5,90\n0,6,91\n");
  EXPECT_NE(why.find("--columns"), std::string::npos) << why;

  // Details, and the bitmask over the flag columns.
  const Recording details = read_ok(
      "gpu,serial,driver_version,persistence_mode,clocks_event_reasons.active,"
      "clocks_event_reasons.sw_power_cap\n0,1654922001234,550.54.15,Enabled,0x40,Active\n");
  ASSERT_EQ(details.gpus.size(), 1u);
  EXPECT_EQ(details.gpus[0].info.serial, "1654922001234");
  EXPECT_EQ(details.gpus[0].info.persistence_mode, true);
  EXPECT_EQ(details.system.driver_version, "550.54.15");
  expect_values(*details.gpus[0].column(Field::kClockEventReasons), {0x40});
}

}  // namespace
}  // namespace gpudoctor
