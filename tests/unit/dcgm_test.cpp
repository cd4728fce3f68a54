#include "formats/dcgm.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/reading.hpp"
#include "formats/column_catalogue.hpp"
#include "formats/dmon.hpp"
#include "formats/smi_csv.hpp"
#include "test_helpers.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using namespace test_util;

std::string fixture(const std::string& name) {
  return read_log("dcgm", name);
}

Recording dmon_ok(const std::string& text, const DcgmOptions& opt = {}) {
  auto r = read_dcgmi_dmon(text, "dcgm.log", opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? std::string() : r.error().message);
  if (!r.ok()) return {};
  return std::move(r).value();
}

std::string dmon_error(const std::string& text, const DcgmOptions& opt = {}) {
  auto r = read_dcgmi_dmon(text, "dcgm.log", opt);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {};
  EXPECT_EQ(r.error().kind, Error::Kind::kUsage);
  return r.error().message;
}

Recording long_ok(const std::string& text, const DcgmOptions& opt = {}) {
  auto r = read_dcgm_long(text, "dcgm.csv", opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? std::string() : r.error().message);
  if (!r.ok()) return {};
  return std::move(r).value();
}

std::string long_error(const std::string& text, const DcgmOptions& opt = {}) {
  auto r = read_dcgm_long(text, "dcgm.csv", opt);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {};
  EXPECT_EQ(r.error().kind, Error::Kind::kUsage);
  return r.error().message;
}

// Fixtures (tests/data/logs/dcgm), written in the layouts DCGM prints:
//   h100_2gpu_prof.txt     dcgmi dmon -e 155,150,140,203,204,100,101,252,1001-1005,1009-1012 on two
//                          H100s: "#Entity" in 10 columns, each field width + 6 plus 2 (widths of
//                          dcgm_fields.cpp), doubles to 3 decimals, N/A, the header again after
//                          15 rounds (dcgmi/DeviceMonitor.cpp).
//   a100_mig_names.txt     dcgmi dmon -e 50,155,160,1001,1002, two A100s in MIG mode (GPU-I and
//                          GPU-CI rows), names with spaces, dcgmi's Ctrl-C message at the end.
//   h100_long_names.csv    "GPUId,TimeStampUs,Field,Values" with DCGM_FI_ names, fields stamped
//                          37 us apart as DCGM reads them, an energy counter beyond 2^31.
//   l4_long_ids_blanks.csv numeric field ids, rows grouped per field, DCGM_FP64_BLANK,
//                          DCGM_INT32_BLANK, DCGM_INT64_NOT_SUPPORTED and N/A.
//   a100_sample_tags.csv   what DCGM's field-value sample prints (field tags, derived
//                          throttle_reason_* rows) with its stderr configuration before the header.
const char* const kDmonFixtures[] = {"h100_2gpu_prof.txt", "a100_mig_names.txt"};
const char* const kLongFixtures[] = {"h100_long_names.csv", "l4_long_ids_blanks.csv",
                                     "a100_sample_tags.csv"};

// `dcgmi dmon -e 155,1002`, as dcgmi lays it out.
constexpr std::string_view kDmonHeader =
    "#Entity   POWER             SMACT        \n"
    "ID         W                             \n";

constexpr std::string_view kLongHeader = "GPUId,TimeStampUs,Field,Values\n";

// A long dump row of GPU 0's energy counter (field 156).
std::string energy_row(long long ts_us, std::string_view value) {
  return "0," + std::to_string(ts_us) + ",156," + std::string(value) + "\n";
}

// ---------------------------------------------------------------------------------------------
// dcgmi dmon

TEST(DcgmiDmon, ReadsTwoGpusWithProfilingFieldsAndARepeatedHeader) {
  const Recording rec = dmon_ok(fixture("h100_2gpu_prof.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.source, "dcgmi dmon: dcgm.log");
  EXPECT_EQ(rec.start_unix_ms, 0);  // no times in dcgmi dmon
  EXPECT_TRUE(has_note(rec, "1 s apart")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "(-d, 1 s unless set) is not in its log")) << all_notes(rec);
  // The header pair repeats after 15 rounds: no change of columns, nothing skipped.
  EXPECT_FALSE(has_note(rec, "change")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "skipped")) << all_notes(rec);

  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_EQ(g0.info.index, 0u);
  EXPECT_EQ(g1.info.index, 1u);
  ASSERT_EQ(g0.size(), 17u);
  ASSERT_EQ(g1.size(), 17u);
  for (size_t i = 0; i < g0.size(); ++i) {
    EXPECT_DOUBLE_EQ(g0.time_s[i], static_cast<double>(i));
    EXPECT_DOUBLE_EQ(g1.time_s[i], static_cast<double>(i));
  }
  // Device fields as DCGM gives them.
  EXPECT_DOUBLE_EQ(col(g0, Field::kPower)[0], 71.842);
  EXPECT_DOUBLE_EQ(col(g1, Field::kPower)[1], 241.617);
  EXPECT_DOUBLE_EQ(col(g0, Field::kTemp)[2], 37);
  EXPECT_DOUBLE_EQ(col(g0, Field::kUtilGpu)[1], 25);
  EXPECT_DOUBLE_EQ(col(g1, Field::kUtilMem)[2], 20);
  EXPECT_DOUBLE_EQ(col(g0, Field::kClockSm)[0], 345);
  EXPECT_DOUBLE_EQ(col(g0, Field::kClockSm)[10], 1755);
  EXPECT_DOUBLE_EQ(col(g0, Field::kClockMem)[5], 2619);
  EXPECT_DOUBLE_EQ(col(g1, Field::kMemUsed)[3], 71417);
  // Profiling ratios (0-1) become percent; byte rates MiB/s.
  EXPECT_NEAR(col(g0, Field::kGpmGraphicsUtil)[1], 24.5, 1e-9);
  EXPECT_NEAR(col(g0, Field::kGpmSmUtil)[1], 22.6, 1e-9);
  EXPECT_NEAR(col(g1, Field::kGpmSmUtil)[4], 89.3, 1e-9);
  EXPECT_NEAR(col(g0, Field::kGpmSmOccupancy)[4], 31, 1e-9);
  EXPECT_NEAR(col(g0, Field::kGpmTensorAny)[16], 53.2, 1e-9);
  EXPECT_NEAR(col(g0, Field::kGpmDramBw)[2], 21, 1e-9);
  EXPECT_NEAR(col(g0, Field::kGpmPcieTx)[1], 864035668.0 / 1048576, 1e-9);
  EXPECT_NEAR(col(g0, Field::kGpmPcieRx)[1], 12544318.0 / 1048576, 1e-9);
  EXPECT_NEAR(col(g0, Field::kGpmNvlinkTx)[1], 45679901237.0 / 1048576, 1e-6);
  EXPECT_NEAR(col(g1, Field::kGpmNvlinkRx)[1], 45611225465.0 / 1048576, 1e-6);
  EXPECT_TRUE(g0.info.gpm_supported);
  // N/A is missing, never 0: the profiling fields of the first round, one power reading.
  for (const Field f :
       {Field::kGpmSmUtil, Field::kGpmTensorAny, Field::kGpmPcieTx, Field::kGpmNvlinkRx}) {
    EXPECT_TRUE(std::isnan(col(g0, f)[0]));
    EXPECT_TRUE(std::isnan(col(g1, f)[0]));
  }
  EXPECT_TRUE(std::isnan(col(g1, Field::kPower)[7]));
  EXPECT_DOUBLE_EQ(col(g0, Field::kPower)[7], 699.871);
  // The first rows after the repeated header, and the last round.
  EXPECT_DOUBLE_EQ(col(g0, Field::kPower)[15], 698.447);
  EXPECT_DOUBLE_EQ(col(g1, Field::kPower)[16], 690.66);
  // MMTMP (memory temperature) has no gpudoctor field.
  EXPECT_TRUE(has_note(rec, "gpudoctor does not read: MMTMP")) << all_notes(rec);
  // No power limit and no name in this selection.
  EXPECT_FALSE(g0.has(Field::kPowerLimitDefault));
  EXPECT_TRUE(g0.info.name.empty());
  EXPECT_TRUE(has_note(rec, "give --power-limit")) << all_notes(rec);
}

TEST(DcgmiDmon, SkipsMigEntitiesAndReadsNamesWithSpaces) {
  const Recording rec = dmon_ok(fixture("a100_mig_names.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  for (const auto& g : rec.gpus) {
    EXPECT_EQ(g.info.name, "NVIDIA A100 80GB PCIe");
    EXPECT_EQ(g.info.architecture, Architecture::kAmpere);
    ASSERT_EQ(g.size(), 5u);
    EXPECT_EQ(g.time_s, (std::vector<double>{0, 1, 2, 3, 4}));
    // PMLMT is the log's own limit: nothing inferred.
    EXPECT_EQ(col(g, Field::kPowerLimit), std::vector<double>(5, 300));
    EXPECT_FALSE(g.has(Field::kPowerLimitDefault));
  }
  EXPECT_DOUBLE_EQ(col(rec.gpus[0], Field::kPower)[1], 181.54);
  EXPECT_DOUBLE_EQ(col(rec.gpus[1], Field::kPower)[0], 103.367);
  EXPECT_NEAR(col(rec.gpus[1], Field::kGpmSmUtil)[0], 1.5, 1e-9);
  EXPECT_NEAR(col(rec.gpus[0], Field::kGpmGraphicsUtil)[4], 44, 1e-9);
  EXPECT_TRUE(has_note(rec, "30 row(s) of entities that are not whole GPUs (15 GPU-I, 15 GPU-CI)"))
      << all_notes(rec);
  // dcgmi's Ctrl-C message is not a problem; nothing about power limits either.
  EXPECT_FALSE(has_note(rec, "skipped 1")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "power limit")) << all_notes(rec);
}

// The short tags are the column catalogue's (formats/column_catalogue): identity tags, and tags
// of fields not every tool logs, read from one table.
TEST(DcgmiDmon, ShortTagsFromTheColumnCatalogue) {
  auto line = [](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      std::string c = cells[i];
      c.resize(std::max<size_t>(c.size() + 2, i == 0 ? 10 : 22), ' ');
      out += c;
    }
    return out + "\n";
  };
  const std::string text =
      line({"#Entity", "SRNUM", "UUID#", "PCBID", "POWINST", "PMMAX", "PCILG", "SMACT", "DRVER"}) +
      line({"ID", "", "", "", "W", "W", "", "", ""}) +
      line({"GPU 0", "1324021012345", "GPU-1b2c", "00000000:07:00.0", "301.500", "700", "5",
            "0.750", "550.54.15"});
  const Recording rec = dmon_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(g.info.serial, "1324021012345");
  EXPECT_EQ(g.info.uuid, "GPU-1b2c");
  EXPECT_EQ(g.info.pci_bus_id, "00000000:07:00.0");
  EXPECT_EQ(rec.system.driver_version, "550.54.15");
  EXPECT_EQ(col(g, Field::kPowerInstant), (std::vector<double>{301.5}));
  EXPECT_EQ(col(g, Field::kPowerLimitMax), (std::vector<double>{700}));
  EXPECT_EQ(col(g, Field::kPcieGen), (std::vector<double>{5}));
  EXPECT_EQ(col(g, Field::kGpmSmUtil), (std::vector<double>{75}));
  // One table: every "dcgmi dmon" row is a short tag, and a name that is none finds nothing.
  EXPECT_EQ(csv::dcgm_short_tag("NOSUCH"), nullptr);
  ASSERT_NE(csv::dcgm_short_tag("POWER"), nullptr);
  EXPECT_EQ(csv::dcgm_short_tag("POWER")->field, Field::kPower);
  for (const auto& e : csv::catalogue())
    if (e.tool == "dcgmi dmon") {
      SCOPED_TRACE(std::string(e.name));
      EXPECT_EQ(csv::dcgm_short_tag(e.name), &e);
    }
}

TEST(DcgmiDmon, PowerLimitFromTheLogTheOptionOrTheModelTable) {
  const std::string named =
      "#Entity   DVNAM                       POWER             \n"
      "ID                                     W                \n"
      "GPU 0     NVIDIA H100 80GB HBM3       512.118           \n"
      "GPU 0     NVIDIA H100 80GB HBM3       515.030           \n";
  Recording rec = dmon_ok(named);
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(col(rec.gpus[0], Field::kPowerLimitDefault), (std::vector<double>{700, 700}));
  EXPECT_TRUE(has_note(rec, "power limit 700 W from the model table for NVIDIA H100 80GB HBM3"))
      << all_notes(rec);
  EXPECT_EQ(rec.gpus[0].info.architecture, Architecture::kHopper);

  DcgmOptions opt;
  opt.power_limit_w = 500;
  rec = dmon_ok(named, opt);
  EXPECT_EQ(col(rec.gpus[0], Field::kPowerLimitDefault), (std::vector<double>{500, 500}));
  EXPECT_TRUE(has_note(rec, "power limit 500 W from --power-limit")) << all_notes(rec);

  // EPLMT in the log wins over the option.
  rec = dmon_ok(
      "#Entity   POWER             EPLMT             \n"
      "ID         W                 W                \n"
      "GPU 0     301.500           350.000           \n",
      opt);
  EXPECT_EQ(col(rec.gpus[0], Field::kPowerLimitEnforced), (std::vector<double>{350}));
  EXPECT_FALSE(rec.gpus[0].has(Field::kPowerLimitDefault));
  EXPECT_TRUE(has_note(rec, "--power-limit ignored")) << all_notes(rec);

  // A limit column that is N/A throughout is no limit.
  rec = dmon_ok(
      "#Entity   POWER             PMLMT             \n"
      "ID         W                 W                \n"
      "GPU 0     301.500           N/A               \n",
      opt);
  EXPECT_EQ(col(rec.gpus[0], Field::kPowerLimitDefault), (std::vector<double>{500}));
  EXPECT_TRUE(has_note(rec, "N/A throughout) for: PMLMT")) << all_notes(rec);

  opt.power_limit_w = -1;
  EXPECT_NE(dmon_error(named, opt).find("--power-limit"), std::string::npos);
}

// DCGM's blank sentinels are no value in dcgmi's rows too (the framing blanks them before the
// catalogue's reader would take them for numbers), and so is P-state 32 (NVML's "unknown").
TEST(DcgmiDmon, BlankSentinelsAndUnknownPstateAreMissing) {
  const Recording rec = dmon_ok(
      "#Entity   POWER             SMACT        PSTAT   TOTEC\n"
      "ID         W                                      mJ\n"
      "GPU 0     152.342           140737488355328   0   2147483632\n"
      "GPU 0     153.000           0.2   32  9223372036854775794\n"
      "GPU 0     154.000           0.3   2   99999999999\n");
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 3u);
  EXPECT_TRUE(std::isnan(col(g, Field::kGpmSmUtil)[0]));
  EXPECT_DOUBLE_EQ(col(g, Field::kGpmSmUtil)[1], 20);
  EXPECT_DOUBLE_EQ(col(g, Field::kPstate)[0], 0);
  EXPECT_TRUE(std::isnan(col(g, Field::kPstate)[1]));
  EXPECT_DOUBLE_EQ(col(g, Field::kPstate)[2], 2);
  EXPECT_TRUE(std::isnan(col(g, Field::kEnergy)[0]));
  EXPECT_TRUE(std::isnan(col(g, Field::kEnergy)[1]));
  EXPECT_DOUBLE_EQ(col(g, Field::kEnergy)[2], 99999999999.0);
  EXPECT_FALSE(has_note(rec, "cannot read")) << all_notes(rec);
}

TEST(DcgmiDmon, NaThroughoutGivesNoColumnAndANote) {
  std::string text(kDmonHeader);
  for (int i = 0; i < 3; ++i) text += "GPU 0     152.342           N/A          \n";
  const Recording rec = dmon_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_FALSE(rec.gpus[0].has(Field::kGpmSmUtil));
  EXPECT_FALSE(rec.gpus[0].info.gpm_supported);
  EXPECT_TRUE(has_note(rec, "(N/A throughout) for: SMACT")) << all_notes(rec);
  EXPECT_EQ(col(rec.gpus[0], Field::kPower), std::vector<double>(3, 152.342));
}

TEST(DcgmiDmon, FollowsHeaderChangesAndSkipsBadLines) {
  std::string text(kDmonHeader);
  text += "GPU 0     152.342           0.181        \n";
  text += "GPU 0     153.000           0.190        0.5\n";  // a column too many
  text += "GPU 0     154.000           abc          \n";     // unreadable value
  text += "Error: connection to host engine lost\n";
  text += "#Entity   GPUTL             POWER             SMACT        SMACT        \n";
  text += "ID                           W                                          \n";
  text += "GPU 0     99                160.000           0.800        0.800        \n";
  text += "GPU 0     98                161.0";  // cut short at the end of the file
  const Recording rec = dmon_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(col(g, Field::kPower), (std::vector<double>{152.342, 154, 160}));
  EXPECT_TRUE(std::isnan(col(g, Field::kGpmSmUtil)[1]));
  EXPECT_DOUBLE_EQ(col(g, Field::kGpmSmUtil)[2], 80);
  EXPECT_TRUE(std::isnan(col(g, Field::kUtilGpu)[0]));  // not in the first part
  EXPECT_DOUBLE_EQ(col(g, Field::kUtilGpu)[2], 99);
  EXPECT_TRUE(has_note(rec, "changes 1 time(s)")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "column SMACT ignored: the same quantity as SMACT")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "dcgm.log:4: expected 3 cells, found 4")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "dcgm.log:5: SMACT: cannot read \"abc\"")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "dcgm.log:6: not a dcgmi dmon row")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "dcgm.log:10: the last line is cut short")) << all_notes(rec);
}

TEST(DcgmiDmon, ReadsCrlfAndRowsOfUnevenGpus) {
  std::string text =
      "#Entity   POWER             SMACT        \r\n"
      "ID         W                             \r\n"
      "GPU 2     100.000           0.100        \r\n"
      "GPU 0     200.000           0.200        \r\n"
      "\r\n"
      "GPU 2     101.000           0.110        \r\n"
      "GPU 0     201.000           0.210        \r\n"
      "GPU 2     102.000           0.120        \r\n";
  const Recording rec = dmon_ok(text);
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_EQ(rec.gpus[0].info.index, 0u);  // sorted by index
  EXPECT_EQ(rec.gpus[1].info.index, 2u);
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 1}));
  EXPECT_EQ(rec.gpus[1].time_s, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(col(rec.gpus[1], Field::kPower), (std::vector<double>{100, 101, 102}));
}

TEST(DcgmiDmon, ReadsTheOlderRightAlignedLayout) {
  // DCGM 1.x/2.x: "# Entity", an "Id" line, rows indented.
  const Recording rec = dmon_ok(
      "# Entity  TENSO  DRAMA\n"
      "      Id\n"
      "    GPU 0  0.000  0.012\n"
      "    GPU 1  0.417  0.388\n"
      "    GPU 0  0.001  0.013\n");
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 1}));
  EXPECT_NEAR(col(rec.gpus[1], Field::kGpmTensorAny)[0], 41.7, 1e-9);
  EXPECT_NEAR(col(rec.gpus[0], Field::kGpmDramBw)[1], 1.3, 1e-9);
  EXPECT_FALSE(has_note(rec, "skipped")) << all_notes(rec);
}

TEST(DcgmiDmon, Errors) {
  EXPECT_NE(dmon_error("").find("empty"), std::string::npos);
  EXPECT_NE(dmon_error(" \n\r\n").find("empty"), std::string::npos);
  EXPECT_NE(dmon_error(std::string(kDmonHeader)).find("header but no data rows"),
            std::string::npos);
  EXPECT_NE(dmon_error("hello\nworld\n").find("no dcgmi dmon header"), std::string::npos);
  // nvidia-smi dmon is not dcgmi dmon.
  EXPECT_NE(dmon_error(read_log("dmon", "a100_default_2gpu.txt")).find("no dcgmi dmon header"),
            std::string::npos);
  EXPECT_NE(dmon_error(std::string(kDmonHeader) + "GPU-I 1   N/A               0.100        \n")
                .find("only GPU-I entities"),
            std::string::npos);
  const std::string garbage = dmon_error(std::string(kDmonHeader) + "GPU 0     1.0\n");
  EXPECT_NE(garbage.find("no readable rows (dcgm.log:3: expected 3 cells, found 2)"),
            std::string::npos)
      << garbage;
  std::string bin(
      "\x7f"
      "ELF\x02\x01\x01\0\0\0\0\0",
      12);
  bin += std::string(200, '\0');
  EXPECT_NE(dmon_error(bin).find("binary"), std::string::npos);
  EXPECT_NE(dmon_error(std::string("\xFF\xFE#\0E\0n\0t\0", 10)).find("UTF-16"), std::string::npos);
}

TEST(DcgmiDmon, LooksLikeDcgmiDmon) {
  for (const char* name : kDmonFixtures) EXPECT_TRUE(looks_like_dcgmi_dmon(fixture(name))) << name;
  EXPECT_TRUE(looks_like_dcgmi_dmon(std::string(kDmonHeader)));
  EXPECT_TRUE(looks_like_dcgmi_dmon("# Entity  TENSO\n      Id\n    GPU 0  0.000\n"));
  EXPECT_TRUE(looks_like_dcgmi_dmon("\xEF\xBB\xBF#Entity   POWER\n"));

  for (const char* name : kLongFixtures) EXPECT_FALSE(looks_like_dcgmi_dmon(fixture(name))) << name;
  for (const char* name : {"two_gpu_units.csv", "h100_nounits.csv", "l4_noheader_nounits.csv",
                           "t4_na_repeated_header_crlf.csv"})
    EXPECT_FALSE(looks_like_dcgmi_dmon(read_log("smi-csv", name))) << name;
  for (const char* name : {"a100_default_2gpu.txt", "h100_dt_pucm.txt", "h100_gpm_metrics.txt"})
    EXPECT_FALSE(looks_like_dcgmi_dmon(read_log("dmon", name))) << name;
  EXPECT_FALSE(looks_like_dcgmi_dmon(""));
  EXPECT_FALSE(looks_like_dcgmi_dmon("# gpu    pwr  gtemp\n# Idx      W      C\n"));
  EXPECT_FALSE(looks_like_dcgmi_dmon("{\"Entity\": \"GPU 0\", \"POWER\": 152.3}\n"));
  EXPECT_FALSE(looks_like_dcgmi_dmon(std::string("\0\x01\x02#Entity POWER\n", 17)));
}

// ---------------------------------------------------------------------------------------------
// DCGM long field dumps

TEST(DcgmLong, ReadsNamesAndMergesTheFieldsOfOneRound) {
  const Recording rec = long_ok(fixture("h100_long_names.csv"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.source, "dcgm dump: dcgm.csv");
  EXPECT_EQ(rec.start_unix_ms, 1710411302123);  // 2024-03-14 10:15:02.123456 UTC
  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  ASSERT_EQ(g0.size(), 4u);
  ASSERT_EQ(g1.size(), 4u);
  // A sample's time is its first value's (the name row, at .123456, is no value); microseconds
  // are kept (to within one: milliseconds since 1970 in a double are exact to about 0.25 us).
  EXPECT_NEAR(g0.time_s[0], 0.000493, 1e-6);
  EXPECT_NEAR(g0.time_s[3], 3.000493, 1e-6);
  EXPECT_NEAR(g1.time_s[1], 1.000704, 1e-6);
  EXPECT_TRUE(has_note(rec, "up to 0.37 ms apart merged into one sample")) << all_notes(rec);

  EXPECT_EQ(g0.info.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g0.info.architecture, Architecture::kHopper);
  EXPECT_EQ(col(g0, Field::kPower), (std::vector<double>{312.48, 688.02, 699.87, 641.15}));
  EXPECT_EQ(col(g1, Field::kTemp), (std::vector<double>{55, 56, 57, 58}));
  EXPECT_EQ(col(g0, Field::kUtilGpu), (std::vector<double>{41, 100, 100, 97}));
  EXPECT_EQ(col(g0, Field::kClockSm), (std::vector<double>{1980, 1980, 1755, 1830}));
  EXPECT_DOUBLE_EQ(col(g1, Field::kMemUsed)[2], 71294);
  // Energy counters pass 2^31 mJ: values, not DCGM_INT32_BLANK.
  EXPECT_DOUBLE_EQ(col(g0, Field::kEnergy)[0], 4283912345.0);
  EXPECT_DOUBLE_EQ(col(g1, Field::kEnergy)[3], 4285983345.0);
  // The name DCGM used for field 112 before 3.3.
  EXPECT_EQ(col(g0, Field::kClockEventReasons), (std::vector<double>{0, 0, 4, 4}));
  EXPECT_NEAR(col(g0, Field::kGpmSmUtil)[1], 88, 1e-9);
  EXPECT_NEAR(col(g1, Field::kGpmSmUtil)[1], 87, 1e-9);
  EXPECT_NEAR(col(g0, Field::kGpmTensorAny)[2], 52, 1e-9);
  // The log's power limit.
  EXPECT_EQ(col(g0, Field::kPowerLimit), std::vector<double>(4, 700));
  EXPECT_FALSE(g0.has(Field::kPowerLimitDefault));
  EXPECT_FALSE(has_note(rec, "power limit")) << all_notes(rec);
  // The memory temperature is a catalogue field too (DCGM_FI_DEV_MEMORY_TEMP: temp_mem_c).
  EXPECT_EQ(col(g0, Field::kTempMem)[0], 63);
  EXPECT_EQ(col(g1, Field::kTempMem)[0], 64);
  EXPECT_FALSE(has_note(rec, "does not read")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "skipped")) << all_notes(rec);
}

TEST(DcgmLong, MapReachesTheFieldsByTheirDcgmNames) {
  // Whichever spelling the dump uses (an id here), --map names a field by its DCGM_FI_ name.
  DcgmOptions opt;
  opt.map = {{"DCGM_FI_DEV_POWER_USAGE", "ignore"}};
  const Recording rec = long_ok(fixture("l4_long_ids_blanks.csv"), opt);
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  EXPECT_FALSE(rec.gpus[0].has(Field::kPower));
  EXPECT_TRUE(rec.gpus[0].has(Field::kTemp));
  EXPECT_TRUE(long_ok(fixture("l4_long_ids_blanks.csv")).gpus[0].has(Field::kPower));
}

TEST(DcgmLong, ReadsNumericIdsAndBlankSentinelsAsMissing) {
  const Recording rec = long_ok(fixture("l4_long_ids_blanks.csv"));
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(rec.start_unix_ms, 1710460797500);
  ASSERT_EQ(g.size(), 6u);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g.time_s[i], 0.5 * i + 0.000053, 1e-6);
  // DCGM_FP64_BLANK (2^47, printed "140737488355328.00") in power, DCGM_INT32_BLANK in temp,
  // "N/A" in SM activity: missing, never 0.
  const auto p = col(g, Field::kPower);
  EXPECT_DOUBLE_EQ(p[1], 35.07);
  EXPECT_TRUE(std::isnan(p[2]));
  EXPECT_DOUBLE_EQ(p[3], 68.93);
  EXPECT_TRUE(std::isnan(col(g, Field::kTemp)[3]));
  EXPECT_DOUBLE_EQ(col(g, Field::kTemp)[4], 52);
  EXPECT_TRUE(std::isnan(col(g, Field::kGpmSmUtil)[0]));
  EXPECT_NEAR(col(g, Field::kGpmSmUtil)[2], 93, 1e-9);
  EXPECT_DOUBLE_EQ(col(g, Field::kGpmTensorAny)[0], 0);  // a real 0 stays 0
  EXPECT_DOUBLE_EQ(col(g, Field::kMemUsed)[3], 20512);
  // DCGM_INT64_NOT_SUPPORTED throughout: no column, unsupported.
  EXPECT_FALSE(g.has(Field::kGpmNvlinkTx));
  ASSERT_EQ(g.unsupported.count(Field::kGpmNvlinkTx), 1u);
  EXPECT_EQ(g.unsupported.at(Field::kGpmNvlinkTx), nvml_code::kNotSupported);
  EXPECT_DOUBLE_EQ(col(g, Field::kEnergy)[5], 2147683000.0);
  // Field 140 is the memory temperature (temp_mem_c); the name gives the power limit.
  EXPECT_EQ(col(g, Field::kTempMem), (std::vector<double>{38, 39, 40, 41, 42, 43}));
  EXPECT_FALSE(has_note(rec, "does not read")) << all_notes(rec);
  EXPECT_EQ(g.info.name, "NVIDIA L4");
  EXPECT_EQ(col(g, Field::kPowerLimitDefault), std::vector<double>(6, 72));
  EXPECT_TRUE(has_note(rec, "power limit 72 W from the model table for NVIDIA L4"))
      << all_notes(rec);
}

TEST(DcgmLong, ReadsTheTagsOfDcgmsFieldValueSample) {
  const Recording rec = long_ok(fixture("a100_sample_tags.csv"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g1 = rec.gpus[1];
  ASSERT_EQ(g1.size(), 3u);
  EXPECT_EQ(col(g1, Field::kPowerInstant), (std::vector<double>{403.77, 399.15, 406.62}));
  EXPECT_EQ(col(g1, Field::kPower), (std::vector<double>{401.27, 396.65, 404.12}));
  EXPECT_EQ(col(g1, Field::kClockEventReasons), (std::vector<double>{4, 4, 0}));
  EXPECT_NEAR(col(g1, Field::kGpmSmUtil)[1], 74, 1e-9);
  // The sample's stderr (its configuration) before the header, and its derived reason rows.
  EXPECT_TRUE(has_note(rec, "skipped 6 line(s) before the header (first: dcgm.csv:1:"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "ignored: throttle_reason_sw_power_cap")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "give --power-limit")) << all_notes(rec);
}

TEST(DcgmLong, RowsOfOneTimestampMergeInAnyOrder) {
  std::string text(kLongHeader);
  // Out of order, fields of one GPU and time together, a repeated row, a GPU in between.
  text += "0,1710000001000000,DCGM_FI_DEV_POWER_USAGE,201.50\n";
  text += "0,1710000000000000,DCGM_FI_DEV_GPU_UTIL,97\n";
  text += "1,1710000000000000,155,99.00\n";
  text += "0,1710000000000000,DCGM_FI_DEV_POWER_USAGE,200.25\n";
  text += "0,1710000000000000,DCGM_FI_DEV_POWER_USAGE,200.25\n";
  text += "0,1710000001000000,DCGM_FI_DEV_GPU_UTIL,98\n";
  text += "0,1710000002000000,DCGM_FI_DEV_GPU_UTIL,99\n";
  DcgmOptions opt;
  opt.power_limit_w = 400;
  const Recording rec = long_ok(text, opt);
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g0 = rec.gpus[0];
  EXPECT_EQ(rec.start_unix_ms, 1710000000000);
  EXPECT_EQ(g0.time_s, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(col(g0, Field::kUtilGpu), (std::vector<double>{97, 98, 99}));
  const auto p = col(g0, Field::kPower);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_DOUBLE_EQ(p[0], 200.25);
  EXPECT_DOUBLE_EQ(p[1], 201.5);
  EXPECT_TRUE(std::isnan(p[2]));
  EXPECT_EQ(rec.gpus[1].time_s, (std::vector<double>{0}));
  EXPECT_TRUE(has_note(rec, "1 repeated value(s)")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "merged")) << all_notes(rec);  // same timestamps: nothing to say
  EXPECT_EQ(col(g0, Field::kPowerLimitDefault), std::vector<double>(3, 400));
  EXPECT_TRUE(has_note(rec, "power limit 400 W from --power-limit")) << all_notes(rec);
}

// A dump of more values than a block holds (65,536), in file order, backwards (sorted when
// merged), and with its columns in another order (the value not last): the same samples.
TEST(DcgmLong, LargeDumpsReadTheSameInAnyLineOrColumnOrder) {
  constexpr int kRounds = 40000;
  std::vector<std::string> lines;
  for (int k = 0; k < kRounds; ++k)
    for (int g = 0; g < 2; ++g) {
      const long long ts = 1710000000000000LL + k * 1000000LL + g * 100;
      lines.push_back(fmt::format("{},{},DCGM_FI_DEV_POWER_USAGE,{}.25", g, ts, 100 + k % 300));
      lines.push_back(fmt::format("{},{},DCGM_FI_DEV_GPU_UTIL,{}", g, ts + 300, k % 101));
    }
  std::string forward(kLongHeader), backward(kLongHeader);
  std::string moved = "TimeStampUs,Values,GPUId,Field\n";
  for (const auto& l : lines) forward += l + "\n";
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) backward += *it + "\n";
  for (const auto& l : lines) {
    std::vector<std::string_view> c;
    text::split_trimmed(l, ',', c);
    moved += fmt::format("{},{},{},{}\n", c[1], c[3], c[0], c[2]);
  }
  const Recording a = long_ok(forward), b = long_ok(backward), m = long_ok(moved);
  ASSERT_EQ(a.gpus.size(), 2u);
  ASSERT_EQ(b.gpus.size(), 2u);
  ASSERT_EQ(m.gpus.size(), 2u);
  for (size_t g = 0; g < 2; ++g) {
    ASSERT_EQ(a.gpus[g].size(), static_cast<size_t>(kRounds));
    for (const Recording* other : {&b, &m}) {
      EXPECT_EQ(other->gpus[g].time_s, a.gpus[g].time_s);
      EXPECT_EQ(col(other->gpus[g], Field::kPower), col(a.gpus[g], Field::kPower));
      EXPECT_EQ(col(other->gpus[g], Field::kUtilGpu), col(a.gpus[g], Field::kUtilGpu));
    }
  }
  EXPECT_EQ(col(a.gpus[1], Field::kPower)[kRounds - 1], 100 + (kRounds - 1) % 300 + 0.25);
  EXPECT_EQ(col(a.gpus[0], Field::kUtilGpu)[kRounds - 1], (kRounds - 1) % 101);
}

// Rounds two hours apart (gaps past what 32 bits of microseconds hold): their fields, seconds
// apart, are one sample each.
TEST(DcgmLong, RoundsHoursApartMergeTheirFields) {
  std::string text(kLongHeader);
  for (int k = 0; k < 5; ++k) {
    const long long ts = 1710000000000000LL + k * 7200000000LL;
    text += fmt::format("0,{},DCGM_FI_DEV_POWER_USAGE,{}\n", ts, 200 + k);
    text += fmt::format("0,{},DCGM_FI_DEV_GPU_UTIL,{}\n", ts + 10000000, 90 + k);
  }
  DcgmOptions opt;
  opt.power_limit_w = 400;
  const Recording rec = long_ok(text, opt);
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(col(rec.gpus[0], Field::kUtilGpu), (std::vector<double>{90, 91, 92, 93, 94}));
  EXPECT_EQ(col(rec.gpus[0], Field::kPower), (std::vector<double>{200, 201, 202, 203, 204}));
  EXPECT_TRUE(has_note(rec, "up to 10000 ms apart merged")) << all_notes(rec);
}

// A GPU column whose values never repeat numbers rows: the reader reads the table again without
// it, so the first pass must leave every row to be read again.
TEST(DcgmLong, AGpuColumnThatNumbersRowsIsReadAgain) {
  std::string text(kLongHeader);
  for (int g = 0; g < 10; ++g)
    text += fmt::format("{},{},DCGM_FI_DEV_GPU_UTIL,{}\n", g, 1710000000000000LL + g * 1000000LL,
                        50 + g);
  const Recording rec = long_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  EXPECT_EQ(col(rec.gpus[0], Field::kUtilGpu),
            (std::vector<double>{50, 51, 52, 53, 54, 55, 56, 57, 58, 59}));
  EXPECT_TRUE(has_note(rec, "it numbers rows, not GPUs")) << all_notes(rec);
}

TEST(DcgmLong, EveryBlankKindIsMissing) {
  std::string text(kLongHeader);
  const char* const blanks[] = {
      "9223372036854775792",  // DCGM_INT64_BLANK
      "9223372036854775793",  // DCGM_INT64_NOT_FOUND
      "2147483632",           // DCGM_INT32_BLANK
      "2147483634",           // DCGM_INT32_NOT_SUPPORTED
      "140737488355328",      // DCGM_FP64_BLANK written as an integer
      "140737488355329.00",   // DCGM_FP64_NOT_FOUND
      "1.40737488355328e+14", "<<<NULL>>>", "<<<NOT_SUPPORTED>>>", "N/A", "",
  };
  long long ts = 1710000000000000;
  for (const char* b : blanks) {
    text += energy_row(ts, b);
    ts += 1000000;
  }
  text += energy_row(ts, "2147483631");  // just below DCGM_INT32_BLANK: a value
  const Recording rec = long_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  const auto e = col(rec.gpus[0], Field::kEnergy);
  ASSERT_EQ(e.size(), std::size(blanks) + 1);
  for (size_t i = 0; i < std::size(blanks); ++i) EXPECT_TRUE(std::isnan(e[i])) << blanks[i];
  EXPECT_DOUBLE_EQ(e.back(), 2147483631.0);

  // Not supported / no permission throughout: recorded as unsupported, with no column.
  text = std::string(kLongHeader) + "3,1710000000000000,1002,140737488355330.00\n" +
         "3,1710000000000000,1005,9223372036854775795\n" + "3,1710000000000000,155,70.00\n";
  const Recording rec2 = long_ok(text);
  ASSERT_EQ(rec2.gpus.size(), 1u);
  const GpuSeries& g = rec2.gpus[0];
  EXPECT_EQ(g.info.index, 3u);
  EXPECT_FALSE(g.has(Field::kGpmSmUtil));
  EXPECT_EQ(g.unsupported.at(Field::kGpmSmUtil), nvml_code::kNotSupported);
  EXPECT_EQ(g.unsupported.at(Field::kGpmDramBw), nvml_code::kNoPermission);
}

TEST(DcgmLong, SkipsBadRowsWithFileAndLine) {
  std::string text(kLongHeader);
  text += "0,1710000000000000,155,100.00\n";
  text += "x,1710000000000000,155,100.00\n";
  text += "0,17100,155,100.00\n";
  text += "0,1710000001000000,155\n";
  text += "0,1710000001000000,155,lots\n";
  text += "0,1710000002000000,155,102.00\n";
  text += "0,1710000003000000,15";
  const Recording rec = long_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(rec.gpus[0].size(), 3u);
  EXPECT_TRUE(has_note(rec, "dcgm.csv:3: not a GPU id: \"x\"")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "dcgm.csv:4: not a time in microseconds")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "dcgm.csv:5: expected 4 columns, found 3")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "dcgm.csv:6: DCGM_FI_DEV_POWER_USAGE: cannot read \"lots\""))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "dcgm.csv:8: the last line is cut short")) << all_notes(rec);
}

TEST(DcgmLong, Errors) {
  EXPECT_NE(long_error("").find("empty"), std::string::npos);
  EXPECT_NE(long_error("\n \n").find("empty"), std::string::npos);
  EXPECT_NE(long_error(std::string(kLongHeader)).find("header but no data rows"),
            std::string::npos);
  const std::string smi = long_error(read_log("smi-csv", "two_gpu_units.csv"));
  EXPECT_NE(smi.find("dcgm.csv:1: no DCGM dump header line"), std::string::npos) << smi;
  EXPECT_NE(long_error(std::string(kLongHeader) + "0,1,155,1.0\n")
                .find("no readable rows (dcgm.csv:2: not a time in microseconds"),
            std::string::npos);
  // 240: DCGM_FI_DEV_POWER_VIOLATION, which gpudoctor does not read.
  EXPECT_NE(long_error(std::string(kLongHeader) + "0,1710000000000000,240,40\n")
                .find("no values of fields gpudoctor reads (fields in the file: 240)"),
            std::string::npos);
  std::string bin("GPUId\0\0\0\0\0\0\0", 12);
  bin += std::string(100, '\x01');
  EXPECT_NE(long_error(bin).find("binary"), std::string::npos);
  DcgmOptions opt;
  opt.power_limit_w = 0;
  EXPECT_NE(long_error(fixture("h100_long_names.csv"), opt).find("--power-limit"),
            std::string::npos);
}

TEST(DcgmLong, LooksLikeDcgmLong) {
  for (const char* name : kLongFixtures) EXPECT_TRUE(looks_like_dcgm_long(fixture(name))) << name;
  EXPECT_TRUE(looks_like_dcgm_long(std::string(kLongHeader)));
  EXPECT_TRUE(looks_like_dcgm_long("\xEF\xBB\xBFGPUId, TimeStampUs, Field, Values\r\n"));

  for (const char* name : kDmonFixtures) EXPECT_FALSE(looks_like_dcgm_long(fixture(name))) << name;
  for (const char* name : {"two_gpu_units.csv", "h100_nounits.csv", "l4_noheader_nounits.csv",
                           "t4_na_repeated_header_crlf.csv"})
    EXPECT_FALSE(looks_like_dcgm_long(read_log("smi-csv", name))) << name;
  for (const char* name : {"a100_default_2gpu.txt", "h100_gpm_metrics.txt"})
    EXPECT_FALSE(looks_like_dcgm_long(read_log("dmon", name))) << name;
  EXPECT_FALSE(looks_like_dcgm_long(""));
  EXPECT_FALSE(looks_like_dcgm_long("GPUId,TimeStampUs\n"));
  EXPECT_FALSE(looks_like_dcgm_long("{\"GPUId\": 0, \"TimeStampUs\": 1, \"Field\": 155}\n"));
  EXPECT_FALSE(looks_like_dcgm_long(std::string("\0GPUId,TimeStampUs,Field,Values\n", 32)));
}

// ---------------------------------------------------------------------------------------------

TEST(Dcgm, OtherReadersDoNotClaimDcgmLogs) {
  // Auto-detection asks each reader in turn: nvidia-smi's readers must not take DCGM's logs.
  for (const char* name : kDmonFixtures) {
    EXPECT_FALSE(looks_like_dmon(fixture(name))) << name;
    EXPECT_FALSE(looks_like_smi_csv(fixture(name))) << name;
  }
  for (const char* name : kLongFixtures) {
    EXPECT_FALSE(looks_like_dmon(fixture(name))) << name;
    EXPECT_FALSE(looks_like_smi_csv(fixture(name))) << name;
  }
}

TEST(Dcgm, NeverThrowsOnMangledInput) {
  // Every prefix of every fixture, read by both readers, reads or fails cleanly; times increase.
  auto check = [](const Result<Recording>& r) {
    // The reader's guard turns an exception into an error: one of those is a throw, a failure.
    if (!r.ok()) {
      EXPECT_NE(r.error().code, Error::Code::kInternal) << r.error().message;
      return;
    }
    for (const auto& g : r->gpus) {
      EXPECT_GT(g.size(), 0u);
      for (size_t i = 1; i < g.size(); ++i) EXPECT_GT(g.time_s[i], g.time_s[i - 1]);
      for (const auto& c : g.columns) {
        if (c) {
          EXPECT_EQ(c.size(), g.size());
        }
      }
    }
  };
  for (const char* name : {"h100_2gpu_prof.txt", "a100_mig_names.txt", "h100_long_names.csv",
                           "l4_long_ids_blanks.csv", "a100_sample_tags.csv"}) {
    const std::string text = fixture(name);
    for (size_t n = 0; n <= text.size(); n += 5) {
      const std::string_view cut(text.data(), n);
      (void)looks_like_dcgmi_dmon(cut);
      (void)looks_like_dcgm_long(cut);
      check(read_dcgmi_dmon(cut, "cut.log", {}));
      check(read_dcgm_long(cut, "cut.csv", {}));
    }
  }
}

}  // namespace
}  // namespace gpudoctor
