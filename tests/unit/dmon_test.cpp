#include "formats/dmon.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "test_helpers.hpp"

namespace gpudoctor {
namespace {

using namespace test_util;

std::string fixture(const std::string& name) {
  return read_log("dmon", name);
}

std::string smi_fixture(const std::string& name) {
  const std::string path = std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/logs/smi-csv/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Recording read_ok(const std::string& text, const DmonOptions& opt = {},
                  const std::string& origin = "dmon.log") {
  auto r = read_dmon(text, origin, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? std::string() : r.error().message);
  if (!r.ok()) return {};
  return std::move(r).value();
}

std::string read_error(const std::string& text, const DmonOptions& opt = {},
                       const std::string& origin = "dmon.log") {
  auto r = read_dmon(text, origin, opt);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {};
  EXPECT_EQ(r.error().kind, Error::Kind::kUsage);
  return r.error().message;
}

const char* const kFixtures[] = {
    "a100_default_2gpu.txt", "h100_dt_pucm.txt",
    "l4_power_only.txt",     "p100_old_pucvmet_dashes_crlf.txt",
    "h100_gpm_metrics.txt",  "a10_time_only_mutc.txt",
};

// The default layout (dmon -s puc) of a current driver, as a test writes it inline.
constexpr std::string_view kHeader =
    "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk \n"
    "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz \n";

// ---------------------------------------------------------------------------------------------
// Fixtures in dmon's own layouts

TEST(Dmon, ReadsDefaultOutputOfTwoGpusWithRepeatedHeaders) {
  const Recording rec = read_ok(fixture("a100_default_2gpu.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.source, "nvidia-smi dmon: dmon.log");
  EXPECT_EQ(rec.start_unix_ms, 0);  // no -o DT: the start time is unknown
  EXPECT_TRUE(has_note(rec, "1 s apart")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "interval (-d, 1 s unless set) is not in its log")) << all_notes(rec);
  // The header pair repeats every 20 rows: neither a change of columns nor a skipped line.
  EXPECT_FALSE(has_note(rec, "change")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "skipped")) << all_notes(rec);

  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_EQ(g0.info.index, 0u);
  EXPECT_EQ(g1.info.index, 1u);
  EXPECT_TRUE(g0.info.name.empty());
  ASSERT_EQ(g0.size(), 24u);
  ASSERT_EQ(g1.size(), 24u);
  for (size_t i = 0; i < g0.size(); ++i) {
    EXPECT_DOUBLE_EQ(g0.time_s[i], static_cast<double>(i));
    EXPECT_DOUBLE_EQ(g1.time_s[i], static_cast<double>(i));
  }
  // Row 1 of the file: "    0     61     33     45      0      0 ...   1593    210".
  EXPECT_DOUBLE_EQ(col(g0, Field::kPower)[0], 61);
  EXPECT_DOUBLE_EQ(col(g0, Field::kTemp)[0], 33);
  EXPECT_DOUBLE_EQ(col(g0, Field::kUtilGpu)[0], 0);
  EXPECT_DOUBLE_EQ(col(g0, Field::kClockMem)[0], 1593);
  EXPECT_DOUBLE_EQ(col(g0, Field::kClockSm)[0], 210);
  EXPECT_DOUBLE_EQ(col(g1, Field::kPower)[0], 63);
  // Round 4 (sm is GPU-Util, read into util_gpu_pct; mem into util_mem_pct).
  EXPECT_DOUBLE_EQ(col(g0, Field::kPower)[3], 180);
  EXPECT_DOUBLE_EQ(col(g0, Field::kUtilGpu)[3], 97);
  EXPECT_DOUBLE_EQ(col(g0, Field::kUtilMem)[3], 61);
  EXPECT_DOUBLE_EQ(col(g0, Field::kClockSm)[3], 1410);
  EXPECT_DOUBLE_EQ(col(g1, Field::kUtilGpu)[3], 96);
  // The first row after the second header pair (file line 25), and the last round.
  EXPECT_DOUBLE_EQ(col(g0, Field::kPower)[10], 351);
  EXPECT_DOUBLE_EQ(col(g1, Field::kPower)[10], 344);
  EXPECT_DOUBLE_EQ(col(g0, Field::kPower)[23], 387);
  EXPECT_DOUBLE_EQ(col(g1, Field::kClockSm)[23], 1380);
  // Columns the selection did not have, and those gpudoctor does not read.
  EXPECT_FALSE(g0.has(Field::kMemUsed));
  EXPECT_FALSE(g0.has(Field::kPcieRx));
  EXPECT_FALSE(g0.has(Field::kGpmSmUtil));
  EXPECT_FALSE(g0.info.gpm_supported);
  EXPECT_TRUE(has_note(rec, "does not read: jpg, ofa")) << all_notes(rec);
  // mtemp, enc and dec are the memory temperature and the video engines.
  EXPECT_DOUBLE_EQ(col(g0, Field::kTempMem)[0], 45);
  EXPECT_DOUBLE_EQ(col(g1, Field::kTempMem)[0], 46);
  EXPECT_DOUBLE_EQ(col(g0, Field::kUtilEnc)[0], 0);
  EXPECT_DOUBLE_EQ(col(g0, Field::kUtilDec)[0], 0);
  // No power limit in dmon, and no name to look one up by.
  EXPECT_FALSE(g0.has(Field::kPowerLimitDefault));
  EXPECT_FALSE(g0.has(Field::kPowerLimit));
  EXPECT_TRUE(has_note(rec, "give --power-limit")) << all_notes(rec);
}

TEST(Dmon, ReadsDateAndTimeColumnsAcrossMidnight) {
  const Recording rec = read_ok(fixture("h100_dt_pucm.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.start_unix_ms, 1710460797000);  // 20240314 23:59:57 read as UTC
  EXPECT_TRUE(has_note(rec, "read as UTC")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "1 s apart")) << all_notes(rec);
  const std::vector<double> t{0, 1, 2, 4, 5, 6, 7, 8};  // a second skipped, as dmon does
  EXPECT_EQ(rec.gpus[0].time_s, t);
  EXPECT_EQ(rec.gpus[1].time_s, t);  // both GPUs share each second
  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_DOUBLE_EQ(col(g0, Field::kPower)[0], 512);
  EXPECT_DOUBLE_EQ(col(g1, Field::kPower)[0], 501);
  EXPECT_DOUBLE_EQ(col(g0, Field::kPower)[4], 699);  // 20240315 00:00:02
  EXPECT_DOUBLE_EQ(col(g0, Field::kClockSm)[4], 1965);
  EXPECT_DOUBLE_EQ(col(g0, Field::kClockMem)[4], 2619);
  // -s m: fb is MiB (dmon's "MB"); bar1 and ccpm are ignored.
  EXPECT_DOUBLE_EQ(col(g0, Field::kMemUsed)[0], 71283);
  EXPECT_DOUBLE_EQ(col(g1, Field::kMemUsed)[1], 71417);
  EXPECT_TRUE(has_note(rec, "bar1, ccpm")) << all_notes(rec);
}

// Found by fuzzing: a header that names nothing this reader knows, after a second header with
// fewer columns than the first. The rows below have the second's cells and are read by it; they
// were read by the first, past their end.
TEST(Dmon, AHeaderOfNothingKnownKeepsTheHeaderInForce) {
  const Recording rec = read_ok(
      "# gpu    pwr  gtemp     sm    mem   mclk   pclk\n"
      "# Idx      W      C      %      %    MHz    MHz\n"
      "    0    100     40     50     20   1593   1410\n"
      "# gpu    pwr  gtemp\n# Idx      W      C\n    0    110     41\n"
      "# gpu   pwrx  gtempx\n# Idx      W      C\n    0    120     42\n    0    130     43\n");
  ASSERT_EQ(rec.gpus.size(), 1u);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(col(g, Field::kPower), (std::vector<double>{100, 110, 120, 130}));
  EXPECT_EQ(col(g, Field::kTemp), (std::vector<double>{40, 41, 42, 43}));
  const auto sm = col(g, Field::kClockSm);
  ASSERT_EQ(sm.size(), 4u);
  EXPECT_DOUBLE_EQ(sm[0], 1410);
  for (size_t i = 1; i < sm.size(); ++i) EXPECT_TRUE(std::isnan(sm[i])) << i << ": " << sm[i];
}

// A table's rows (dmon's, and every tool log read as one) reserve a GPU's times and columns for
// the rows the table holds, guessed from the rows read (3,000 rows: doublings would end at 4,096).
TEST(Dmon, ColumnsGrowToTheRowsTheTableHolds) {
  constexpr size_t kRows = 3000;
  std::string text(kHeader);
  for (size_t r = 0; r < kRows; ++r)
    for (int g = 0; g < 2; ++g)
      text += fmt::format(
          "    {}    {}     40     45     {}      9      0      0      0      0   "
          "1593   1410 \n",
          g, 100 + r % 89, r % 100);
  Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 2u);
  for (GpuSeries& g : rec.gpus) {
    ASSERT_EQ(g.size(), kRows);
    EXPECT_LE(g.time_s.capacity(), kRows * 5 / 4);
    const std::vector<double>& power = g.columns[index_of(Field::kPower)].values();
    EXPECT_EQ(power.size(), kRows);
    EXPECT_LE(power.capacity(), kRows * 5 / 4);
  }
}

TEST(Dmon, ReadsPowerOnlySelection) {
  const Recording rec = read_ok(fixture("l4_power_only.txt"));
  ASSERT_EQ(rec.gpus.size(), 1u);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 10u);
  EXPECT_EQ(col(g, Field::kPower), (std::vector<double>{16, 16, 35, 68, 71, 72, 72, 69, 72, 27}));
  EXPECT_DOUBLE_EQ(col(g, Field::kTemp)[9], 46);
  EXPECT_FALSE(g.has(Field::kUtilGpu));
  EXPECT_FALSE(g.has(Field::kClockSm));
  EXPECT_DOUBLE_EQ(g.time_s[9], 9);
  // A GDDR board: dmon prints '-' for the memory temperature, which is no column, not 0.
  EXPECT_FALSE(g.has(Field::kTempMem));
  EXPECT_TRUE(has_note(rec, "throughout) for: mtemp")) << all_notes(rec);
}

TEST(Dmon, MapReachesDmonsColumns) {
  // --map names a column dmon prints that gpudoctor does not read, and overrides one it does; the
  // names are dmon's, as the notes give them.
  const std::string text =
      "# gpu    pwr  gtemp    jpg     sm\n"
      "# Idx      W      C      %      %\n"
      "    0    150     60     41     90\n"
      "    0    152     61     43     91\n";
  const Recording plain = read_ok(text);
  ASSERT_EQ(plain.gpus.size(), 1u);
  EXPECT_FALSE(plain.gpus[0].has(Field::kUtilMem));
  EXPECT_TRUE(has_note(plain, "ignored columns gpudoctor does not read: jpg (name them with --map"))
      << all_notes(plain);
  DmonOptions opt;
  opt.map = {{"jpg", "util_mem_pct"}, {"pwr*", "ignore"}};
  const Recording mapped = read_ok(text, opt);
  ASSERT_EQ(mapped.gpus.size(), 1u);
  EXPECT_EQ(col(mapped.gpus[0], Field::kUtilMem), (std::vector<double>{41, 43}));
  EXPECT_FALSE(mapped.gpus[0].has(Field::kPower));
  EXPECT_EQ(col(mapped.gpus[0], Field::kUtilGpu), (std::vector<double>{90, 91}));
  EXPECT_FALSE(has_note(mapped, "ignored columns")) << all_notes(mapped);
}

TEST(Dmon, DashIsMissingNeverZero) {
  // An older driver (-s pucvmet, "temp", 5-wide columns), CRLF, a blank line, '-' values, and a
  // last line cut short.
  const Recording rec = read_ok(fixture("p100_old_pucvmet_dashes_crlf.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  ASSERT_EQ(g0.size(), 6u);
  ASSERT_EQ(g1.size(), 6u);
  const auto p0 = col(g0, Field::kPower);
  EXPECT_DOUBLE_EQ(p0[0], 111);
  EXPECT_TRUE(std::isnan(p0[1]));  // "0     -    64 ..."
  EXPECT_TRUE(std::isnan(p0[5]));
  const auto u1 = col(g1, Field::kUtilGpu);
  EXPECT_TRUE(std::isnan(u1[1]));
  EXPECT_DOUBLE_EQ(u1[2], 84);
  // Round 6 of GPU 0: pwr, temp, sm and mem all '-', the clocks still read.
  EXPECT_TRUE(std::isnan(col(g0, Field::kTemp)[5]));
  EXPECT_TRUE(std::isnan(col(g0, Field::kUtilMem)[5]));
  EXPECT_DOUBLE_EQ(col(g0, Field::kClockSm)[5], 1290);
  // -s m and -s t of the older driver.
  EXPECT_DOUBLE_EQ(col(g0, Field::kTemp)[0], 63);  // "temp", before gtemp/mtemp
  EXPECT_DOUBLE_EQ(col(g0, Field::kMemUsed)[4], 11663);
  EXPECT_DOUBLE_EQ(col(g0, Field::kPcieRx)[0], 41);
  EXPECT_DOUBLE_EQ(col(g0, Field::kPcieTx)[0], 8);
  EXPECT_TRUE(has_note(rec, "pviol, tviol, bar1, sbecc, dbecc, pci")) << all_notes(rec);
  // The cut-short last line: skipped and counted.
  EXPECT_TRUE(has_note(rec, "skipped 1 line(s) cut short")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "dmon.log:16:")) << all_notes(rec);
}

TEST(Dmon, DashThroughoutGivesNoColumnAndANote) {
  std::string text(kHeader);
  for (int i = 0; i < 3; ++i)
    text += "    0      -     40      -     12      3      0      0      0      0   1593    210 \n";
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_FALSE(rec.gpus[0].has(Field::kPower));
  EXPECT_TRUE(has_note(rec, "'-' throughout) for: pwr")) << all_notes(rec);
  EXPECT_DOUBLE_EQ(col(rec.gpus[0], Field::kUtilGpu)[2], 12);
}

TEST(Dmon, ReadsGpmMetrics) {
  const Recording rec = read_ok(fixture("h100_gpm_metrics.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  ASSERT_EQ(g0.size(), 5u);
  EXPECT_TRUE(g0.info.gpm_supported);
  // The first GPM sample is '-' (GPM needs two samples): missing, not 0.
  for (const Field f :
       {Field::kGpmGraphicsUtil, Field::kGpmSmUtil, Field::kGpmSmOccupancy, Field::kGpmTensorAny,
        Field::kGpmDramBw, Field::kGpmFp64, Field::kGpmFp32, Field::kGpmFp16, Field::kGpmPcieTx,
        Field::kGpmPcieRx, Field::kGpmNvlinkRx, Field::kGpmNvlinkTx}) {
    ASSERT_TRUE(g0.has(f)) << info(f).id;
    EXPECT_TRUE(std::isnan(col(g0, f)[0])) << info(f).id;
  }
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmGraphicsUtil)[1], 97);
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmSmUtil)[1], 71);
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmSmOccupancy)[1], 28);
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmTensorAny)[1], 44);  // mmaact
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmDramBw)[1], 36);
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmFp64)[1], 0);
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmFp32)[1], 9);
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmFp16)[1], 2);
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmPcieTx)[1], 611);
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmPcieRx)[1], 2130);
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmNvlinkRx)[1], 18911);
  EXPECT_DOUBLE_EQ(col(g0, Field::kGpmNvlinkTx)[1], 18874);
  EXPECT_DOUBLE_EQ(col(g1, Field::kGpmSmUtil)[4], 79);
  // sm (GPU-Util) and smutil (SM activity) are different quantities.
  EXPECT_DOUBLE_EQ(col(g0, Field::kUtilGpu)[1], 100);
  EXPECT_TRUE(has_note(rec, "intutil")) << all_notes(rec);
}

TEST(Dmon, ReadsTimeOfDayOnlyAndColumnsInSelectionOrder) {
  const Recording rec = read_ok(fixture("a10_time_only_mutc.txt"));
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  EXPECT_EQ(rec.start_unix_ms, 0);
  EXPECT_TRUE(has_note(rec, "time of day only")) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(g.time_s, (std::vector<double>{0, 1, 2, 3, 4}));  // 23:59:58 .. 00:00:02
  EXPECT_EQ(col(g, Field::kMemUsed), (std::vector<double>{239, 1874, 14210, 14210, 14212}));
  EXPECT_DOUBLE_EQ(col(g, Field::kUtilGpu)[2], 71);
  EXPECT_DOUBLE_EQ(col(g, Field::kPcieRx)[2], 4013);
  EXPECT_DOUBLE_EQ(col(g, Field::kPcieTx)[1], 677);
  EXPECT_DOUBLE_EQ(col(g, Field::kClockMem)[0], 6251);
  EXPECT_DOUBLE_EQ(col(g, Field::kClockSm)[4], 1665);
}

TEST(Dmon, DateOnlyRowsAreOneSecondApart) {
  const Recording rec = read_ok(
      "#Date       gpu    pwr\n#YYYYMMDD   Idx      W\n 20240104     0    100\n"
      " 20240104     0    110\n 20240104     0    120\n");
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 1, 2}));
  EXPECT_TRUE(has_note(rec, "20240104")) << all_notes(rec);
}

// ---------------------------------------------------------------------------------------------
// Options and notes

TEST(Dmon, PowerLimitComesFromTheOptionOnly) {
  DmonOptions opt;
  opt.power_limit_w = 400;
  const Recording rec = read_ok(fixture("a100_default_2gpu.txt"), opt);
  for (const auto& g : rec.gpus) {
    const auto pl = col(g, Field::kPowerLimitDefault);
    ASSERT_EQ(pl.size(), g.size());
    EXPECT_TRUE(std::all_of(pl.begin(), pl.end(), [](double v) { return v == 400; }));
  }
  EXPECT_TRUE(has_note(rec, "power limit 400 W from --power-limit")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "give --power-limit"));

  opt.power_limit_w = -5;
  EXPECT_NE(read_error(fixture("a100_default_2gpu.txt"), opt).find("--power-limit"),
            std::string::npos);
  opt.power_limit_w = std::nan("");
  EXPECT_NE(read_error(fixture("a100_default_2gpu.txt"), opt).find("--power-limit"),
            std::string::npos);
}

TEST(Dmon, FollowsTheLatestHeader) {
  // dmon restarted with another selection, appending to the same file.
  std::string text(kHeader);
  text += "    0     61     33     45      5      1      0      0      0      0   1593    210 \n";
  text += "    0     62     33     45      6      1      0      0      0      0   1593    210 \n";
  text += "# gpu     fb   bar1   ccpm    pwr \n# Idx     MB     MB     MB      W \n";
  text += "    0   4096     12      0     77 \n";
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(col(g, Field::kPower), (std::vector<double>{61, 62, 77}));
  const auto fb = col(g, Field::kMemUsed);
  EXPECT_TRUE(std::isnan(fb[0]));
  EXPECT_DOUBLE_EQ(fb[2], 4096);
  EXPECT_TRUE(std::isnan(col(g, Field::kUtilGpu)[2]));
  EXPECT_TRUE(has_note(rec, "changes 1 time(s)")) << all_notes(rec);
}

TEST(Dmon, SameColumnsRespacedIsNoChange) {
  std::string text(kHeader);
  text += "    0     61     33     45      5      1      0      0      0      0   1593    210 \n";
  text += "# gpu   pwr  gtemp  mtemp    sm   mem   enc   dec   jpg   ofa  mclk  pclk\n";
  text += "# Idx     W      C      C     %     %     %     %     %     %   MHz   MHz\n";
  text += "    0    62     33     45     6     1     0     0     0     0  1593   210\n";
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(rec.gpus[0].size(), 2u);
  EXPECT_FALSE(has_note(rec, "change")) << all_notes(rec);
}

TEST(Dmon, ReadsNamesWithSpacesByTheUnitsLine) {
  // A header whose GPM names hold a space, right-aligned over their columns as dmon does.
  const std::string text =
      "# gpu    pwr    sm util   sm occ\n"
      "# Idx      W      GPM:%    GPM:%\n"
      "    0    300         71       28\n"
      "    0    310         73       29\n";
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(col(g, Field::kGpmSmUtil), (std::vector<double>{71, 73}));
  EXPECT_EQ(col(g, Field::kGpmSmOccupancy), (std::vector<double>{28, 29}));
  EXPECT_EQ(col(g, Field::kPower), (std::vector<double>{300, 310}));
  EXPECT_FALSE(has_note(rec, "ignored")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "skipped")) << all_notes(rec);
}

TEST(Dmon, ScalesByTheUnitsLine) {
  const Recording rec = read_ok(
      "# gpu    pwr     fb   pclk    sm\n# Idx     mW    GiB    GHz  furlong\n"
      "    0 250000      2    1.5    50\n");
  ASSERT_EQ(rec.gpus.size(), 1u);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_DOUBLE_EQ(col(g, Field::kPower)[0], 250);
  EXPECT_DOUBLE_EQ(col(g, Field::kMemUsed)[0], 2048);
  EXPECT_DOUBLE_EQ(col(g, Field::kClockSm)[0], 1500);
  // A unit no reader knows: the column is not read as if it had none, and the note says why.
  EXPECT_FALSE(g.has(Field::kUtilGpu));
  EXPECT_TRUE(has_note(rec, "sm [furlong] ignored: its unit is not one gpudoctor reads"))
      << all_notes(rec);
}

TEST(Dmon, InterleavesUnevenGpusAndSortsByIndex) {
  // -i 3,1: GPU 3 printed first; GPU 1 misses a round (dmon prints what it could read).
  std::string text =
      "# gpu    pwr\n# Idx      W\n"
      "    3    100\n    1    200\n"
      "    3    101\n"
      "    3    102\n    1    202\n";
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_EQ(rec.gpus[0].info.index, 1u);
  EXPECT_EQ(rec.gpus[1].info.index, 3u);
  EXPECT_EQ(rec.gpus[1].time_s, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 2}));
  EXPECT_EQ(col(rec.gpus[0], Field::kPower), (std::vector<double>{200, 202}));
}

TEST(Dmon, RobustToCrlfTrailingSpacesBlankLinesAndGarbage) {
  std::string text =
      "\r\n# gpu    pwr  gtemp \r\n# Idx      W      C   \r\n"
      "    0     50     30   \r\n"
      "\r\n"
      "Failed to read something\r\n"
      "    x     51     31\r\n"
      "    0     52     32\t\r\n"
      "# a comment of someone's\r\n"
      "    0     5x     33\r\n";
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(g.time_s, (std::vector<double>{0, 1, 2}));
  const auto p = col(g, Field::kPower);
  EXPECT_DOUBLE_EQ(p[1], 52);
  EXPECT_TRUE(std::isnan(p[2]));  // "5x": unreadable, missing
  EXPECT_DOUBLE_EQ(col(g, Field::kTemp)[2], 33);
  EXPECT_TRUE(has_note(rec, "skipped 1 line(s) with the wrong number of cells")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "dmon.log:6:")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "skipped 1 line(s) without a GPU")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "1 unreadable value(s)")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "'#' comments")) << all_notes(rec);
}

TEST(Dmon, SkipsRowsWhoseTimeDoesNotAdvance) {
  const Recording rec = read_ok(
      "#Date       Time        gpu    pwr\n#YYYYMMDD   HH:MM:SS    Idx      W\n"
      " 20240104   13:54:35      0    100\n 20240104   13:54:36      0    101\n"
      " 20240104   13:54:36      0    102\n 20240104   13:54:30      0    103\n"
      " 20240104   13:54:37      0    104\n 20241304   13:54:38      0    105\n");
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(col(rec.gpus[0], Field::kPower), (std::vector<double>{100, 101, 104}));
  EXPECT_TRUE(has_note(rec, "skipped 2 line(s) whose time did not advance")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "cannot read the date and time \"20241304 13:54:38\""))
      << all_notes(rec);
}

TEST(Dmon, RowsBeforeTheFirstHeaderAreSkipped) {
  // A log cut from the middle (tail): rows before the next header pair.
  std::string text =
      "    0     61     33     45      5      1      0      0      0      0   1593    210 \n";
  text += kHeader;
  text += "    0     62     33     45      6      1      0      0      0      0   1593    210 \n";
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(rec.gpus[0].size(), 1u);
  EXPECT_TRUE(has_note(rec, "before the first dmon header")) << all_notes(rec);
}

TEST(Dmon, Errors) {
  EXPECT_NE(read_error("").find("empty"), std::string::npos);
  EXPECT_NE(read_error(" \n\r\n").find("empty"), std::string::npos);
  EXPECT_NE(read_error(std::string(kHeader)).find("no data rows"), std::string::npos)
      << read_error(std::string(kHeader));
  EXPECT_NE(read_error("hello\nworld\n").find("no nvidia-smi dmon header"), std::string::npos);
  EXPECT_NE(read_error(smi_fixture("two_gpu_units.csv")).find("no nvidia-smi dmon header"),
            std::string::npos);
  // Nothing readable: the first problem is in the message, with file and line.
  const std::string garbage = read_error(std::string(kHeader) + "Failed to process\nfoo bar\n");
  EXPECT_NE(garbage.find("no readable rows"), std::string::npos) << garbage;
  EXPECT_NE(garbage.find("dmon.log:3: expected 12 cells, found 3"), std::string::npos) << garbage;
  // pmon is the per-process monitor: say so.
  const std::string pmon = read_error(
      "# gpu         pid   type     sm    mem    enc    dec    command\n"
      "# Idx           #    C/G      %      %      %      %    name\n"
      "    0       2635     C      98     41      -      -    python\n");
  EXPECT_NE(pmon.find("pmon"), std::string::npos) << pmon;
  // Binary and UTF-16.
  std::string bin(
      "\x7f"
      "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0",
      16);
  bin += std::string(200, '\0');
  EXPECT_NE(read_error(bin).find("binary"), std::string::npos);
  EXPECT_NE(read_error(std::string("\xFF\xFE#\0 \0g\0p\0u\0", 12)).find("UTF-16"),
            std::string::npos);
}

TEST(Dmon, LooksLikeDmon) {
  for (const char* name : kFixtures) EXPECT_TRUE(looks_like_dmon(fixture(name))) << name;
  EXPECT_TRUE(looks_like_dmon(std::string(kHeader)));
  EXPECT_TRUE(looks_like_dmon("#Date       Time        gpu    pwr\n"));
  EXPECT_TRUE(looks_like_dmon("\xEF\xBB\xBF# gpu   sm   mem\n"));
  // The head of a log cut from the middle: rows before the header pair.
  EXPECT_TRUE(looks_like_dmon("    0     61     33\n    1     60     32\n# gpu    pwr  gtemp\n"));

  for (const char* name : {"two_gpu_units.csv", "h100_nounits.csv", "l4_noheader_nounits.csv",
                           "t4_na_repeated_header_crlf.csv"})
    EXPECT_FALSE(looks_like_dmon(smi_fixture(name))) << name;
  EXPECT_FALSE(looks_like_dmon(""));
  EXPECT_FALSE(looks_like_dmon("hello world\n"));
  EXPECT_FALSE(looks_like_dmon("{\"gpus\": [{\"gpu\": 0, \"pwr\": 100}]}\n"));
  EXPECT_FALSE(looks_like_dmon("[\n  {\"index\": 0}\n]\n"));
  EXPECT_FALSE(
      looks_like_dmon("timestamp, index, power.draw [W]\n2024/03/14 10:15:02.123, 0, 1\n"));
  EXPECT_FALSE(looks_like_dmon(std::string("\0\x01\x02# gpu pwr\n", 13)));
  EXPECT_FALSE(
      looks_like_dmon("# gpu         pid   type     sm    mem    enc    dec    command\n"
                      "# Idx           #    C/G      %      %      %      %    name\n"));
  EXPECT_FALSE(looks_like_dmon("# gpu\n"));                   // no metric column
  EXPECT_FALSE(looks_like_dmon("#Entity   POWER  GTEMP\n"));  // dcgmi dmon
  EXPECT_FALSE(looks_like_dmon("a\nb\nc\nd\n# gpu pwr\n"));   // too far in
  // A CSV whose header is also written above it as a comment.
  EXPECT_FALSE(
      looks_like_dmon("# Date, GPU Temperature [C], GPU Load [%]\n"
                      "Date, GPU Temperature [C], GPU Load [%]\n"
                      "2026-12-03 10:00:00, 40, 99\n"));
}

TEST(Dmon, NeverThrowsOnMangledInput) {
  // Every prefix of every fixture reads or fails cleanly; times always increase.
  for (const char* name : kFixtures) {
    const std::string text = fixture(name);
    for (size_t n = 0; n <= text.size(); n += 7) {
      const std::string_view cut(text.data(), n);
      (void)looks_like_dmon(cut);
      auto r = read_dmon(cut, "cut.log", {});
      // The reader's guard turns an exception into an error: one of those is a throw, a failure.
      if (!r.ok()) {
        EXPECT_NE(r.error().code, Error::Code::kInternal)
            << name << " cut at " << n << ": " << r.error().message;
        continue;
      }
      for (const auto& g : r->gpus) {
        for (size_t i = 1; i < g.size(); ++i) EXPECT_GT(g.time_s[i], g.time_s[i - 1]);
        for (const auto& c : g.columns) {
          if (c) {
            EXPECT_EQ(c.size(), g.size());
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace gpudoctor

#include "core/gpu_models.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor {
namespace {

TEST(DmonWriter, ReadsBackWhatItWrote) {
  const Recording rec =
      sim::simulate_recording(sim::parse_sim_spec("straggler,duration=40s,interval=1s").value(),
                              *gpu_model_by_key("h100-sxm"));
  const std::string text = write_dmon(rec);
  EXPECT_TRUE(looks_like_dmon(text));
  auto back = read_dmon(text, "written.dmon", {});
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->gpus.size(), rec.gpus.size());
  for (size_t g = 0; g < rec.gpus.size(); ++g) {
    ASSERT_EQ(back->gpus[g].size(), rec.gpus[g].size());
    for (Field f : {Field::kPower, Field::kUtilGpu, Field::kClockSm, Field::kTemp}) {
      const auto& a = *rec.gpus[g].column(f);
      const auto& b = *back->gpus[g].column(f);
      for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.5) << info(f).id << " " << i;
    }
    EXPECT_FALSE(back->gpus[g].has(Field::kGpmSmUtil));  // dmon -s pucmt has no GPM columns
  }
  EXPECT_EQ(back->start_unix_ms, rec.start_unix_ms + 1000);  // the first read is at t = 1 s
}

}  // namespace
}  // namespace gpudoctor
