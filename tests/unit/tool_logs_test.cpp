// Logs of the tools people really use (tests/data/logs/tools/: fixtures written for gpudoctor
// with the headers and quirks of GPU-Z, HWiNFO64, dcgmi, Weights & Biases, MLflow, Lightning, a
// pynvml monitor and a shell loop around nvidia-smi), the column catalogue itself, the encodings
// decoded at the edge, and every real log of ../shared/data/real-logs/ read without error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/clock_reasons.hpp"
#include "formats/column_catalogue.hpp"
#include "formats/encoding.hpp"
#include "formats/generic_csv.hpp"
#include "formats/load.hpp"
#include "report/formats_doc.hpp"
#include "test_helpers.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

using namespace test_util;

namespace fs = std::filesystem;

std::string tool_log(const std::string& name) {
  return std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/logs/tools/" + name;
}

Recording load_ok(const std::string& name, const LoadOptions& opt = {}) {
  auto r = load_telemetry(tool_log(name), opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? std::string() : r.error().message);
  if (!r.ok()) return {};
  return std::move(r).value();
}

double at(const GpuSeries& g, Field f, size_t row) {
  const auto c = g.column(f);
  EXPECT_NE(c, nullptr) << info(f).id;
  if (c == nullptr || row >= c->size()) return -1;
  return (*c)[row];
}

uint64_t bit(std::string_view code) {
  for (const auto& r : clock_reasons())
    if (r.code == code) return r.bit;
  return 0;
}

// Every field's column present in both or neither, the values the same to the bit.
void expect_same_columns(const GpuSeries& x, const GpuSeries& y) {
  for (size_t f = 0; f < kFieldCount; ++f) {
    const auto a = x.column(static_cast<Field>(f));
    const auto b = y.column(static_cast<Field>(f));
    ASSERT_EQ(bool(a), bool(b)) << f;
    if (a) {
      EXPECT_TRUE(std::equal(a->begin(), a->end(), b->begin(), b->end(), [](double u, double v) {
        return same_bits(u, v);
      })) << f;
    }
  }
}

TEST(ToolLogs, GpuzSensorLogInLatin1) {
  const Recording rec = load_ok("gpuz_sensor_log.txt");
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 6u) << all_notes(rec);
  EXPECT_EQ(at(g, Field::kUtilGpu, 0), 99);
  EXPECT_EQ(at(g, Field::kUtilMem, 0), 45);
  EXPECT_DOUBLE_EQ(at(g, Field::kPower, 0), 104.2);
  EXPECT_EQ(at(g, Field::kTemp, 0), 62);
  EXPECT_EQ(at(g, Field::kClockSm, 0), 1980);
  EXPECT_EQ(at(g, Field::kMemUsed, 0), 7100);
  // PerfCap Reason: 1 Pwr, 2 Thrm, 0 none, 16 Util (GPU-Z's codes, not NVML's bits).
  EXPECT_EQ(at(g, Field::kClockEventReasons, 0), static_cast<double>(bit("sw_power_cap")));
  EXPECT_EQ(at(g, Field::kClockEventReasons, 3), static_cast<double>(bit("sw_thermal")));
  EXPECT_EQ(at(g, Field::kClockEventReasons, 4), 0);
  EXPECT_EQ(at(g, Field::kClockEventReasons, 5), static_cast<double>(bit("gpu_idle")));
  EXPECT_EQ(rec.start_unix_ms, 1796119200000);
  EXPECT_TRUE(has_note(rec, "Windows-1252")) << all_notes(rec);
  // Every note is valid UTF-8 (the "°C" of the header was latin-1): JSON and HTML can hold it.
  for (const auto& n : rec.notes) EXPECT_TRUE(text::valid_utf8(n)) << n;
  EXPECT_TRUE(has_note(rec, "GPU Chip Power Draw [W]")) << all_notes(rec);  // named, not read
}

TEST(ToolLogs, Hwinfo64Csv) {
  const Recording rec = load_ok("hwinfo64.csv");
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 4u) << all_notes(rec);
  EXPECT_EQ(at(g, Field::kUtilGpu, 0), 100);
  EXPECT_DOUBLE_EQ(at(g, Field::kPower, 1), 319.9);
  EXPECT_EQ(at(g, Field::kClockMem, 0), 10501);
  // d.m.yyyy and h:m:s.ms, no zone: read as UTC.
  EXPECT_EQ(rec.start_unix_ms, 1796115901250);
  EXPECT_NEAR(g.time_s[1], 2.001, 1e-9);
  // Performance Limit - Power / Thermal [Yes/No] -> the reason bits.
  EXPECT_EQ(at(g, Field::kClockEventReasons, 0), static_cast<double>(bit("sw_power_cap")));
  EXPECT_EQ(at(g, Field::kClockEventReasons, 3),
            static_cast<double>(bit("sw_power_cap") | bit("sw_thermal")));
  EXPECT_TRUE(has_note(rec, "the header line repeats 1 time(s)")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "Total CPU Usage [%]")) << all_notes(rec);
}

// A whole node's HWiNFO log: the NVIDIA GPU's and the integrated GPU's sensors under the same
// names, each column's sensor group on the last line.
TEST(ToolLogs, Hwinfo64NodeWithAnIntegratedGpu) {
  const Recording rec = load_ok("hwinfo64_node.csv");
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& nv = rec.gpus[0];
  const GpuSeries& igpu = rec.gpus[1];
  EXPECT_EQ(nv.info.index, 0u);
  EXPECT_EQ(igpu.info.index, 1u);
  EXPECT_EQ(nv.info.name, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(igpu.info.name, "Intel UHD Graphics 770");
  ASSERT_EQ(nv.size(), 4u) << all_notes(rec);
  ASSERT_EQ(igpu.size(), 4u) << all_notes(rec);
  EXPECT_EQ(at(nv, Field::kUtilGpu, 1), 100);
  EXPECT_EQ(at(igpu, Field::kUtilGpu, 1), 5);
  EXPECT_DOUBLE_EQ(at(nv, Field::kPower, 0), 301.5);
  EXPECT_DOUBLE_EQ(at(igpu, Field::kPower, 0), 2.1);
  EXPECT_EQ(at(igpu, Field::kClockSm, 1), 350);
  EXPECT_EQ(at(igpu, Field::kTemp, 2), 46);
  // The power limit flag of the NVIDIA GPU's "Performance Limit Reasons" group is its own.
  EXPECT_EQ(at(nv, Field::kClockEventReasons, 0), static_cast<double>(bit("sw_power_cap")));
  EXPECT_EQ(at(nv, Field::kClockEventReasons, 2), 0);
  EXPECT_FALSE(igpu.has(Field::kClockEventReasons));
  EXPECT_TRUE(has_note(rec, "GPU 1 = GPU [#1] (Intel UHD Graphics 770)")) << all_notes(rec);
  // The footer is no data row: nothing skipped.
  EXPECT_FALSE(has_note(rec, "skipped 1")) << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "unreadable")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "GPU D3D Usage [%]")) << all_notes(rec);
}

// The same mechanism without a footer: the n-th column of a repeated name is GPU n; a group that
// names no GPU is not read as one.
TEST(ToolLogs, RepeatedColumnNamesAreGpusSideBySide) {
  const std::string csv =
      "time,power_w,util_gpu_pct,power_w,util_gpu_pct,temp_c\n"
      "2026-12-01T10:00:00Z,300,99,20,4,70\n"
      "2026-12-01T10:00:01Z,310,100,21,6,71\n";
  const auto r = load_text(csv, "repeated.csv", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 2u) << all_notes(*r);
  EXPECT_EQ(at(r->gpus[0], Field::kPower, 1), 310);
  EXPECT_EQ(at(r->gpus[1], Field::kPower, 1), 21);
  EXPECT_EQ(at(r->gpus[1], Field::kUtilGpu, 0), 4);
  EXPECT_EQ(at(r->gpus[0], Field::kTemp, 0), 70);  // named once: the first GPU's
  EXPECT_FALSE(r->gpus[1].has(Field::kTemp));
  EXPECT_TRUE(has_note(*r, "read as 2 GPUs side by side")) << all_notes(*r);

  const std::string footer =
      "time,power_w,clock_mem_mhz,power_w\n"
      "2026-12-01T10:00:00Z,300,2000,20\n"
      "2026-12-01T10:00:01Z,310,2000,21\n"
      ",Board GPU,Memory Timings,Board GPU\n";
  const auto f = load_text(footer, "footer.csv", {});
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->gpus.size(), 1u) << all_notes(*f);
  EXPECT_EQ(f->gpus[0].size(), 2u);
  EXPECT_EQ(f->gpus[0].info.name, "Board GPU");
  EXPECT_TRUE(has_note(*f, "column clock_mem_mhz ignored: its group (Memory Timings) is not a GPU"))
      << all_notes(*f);

  // A last line of words that name no GPU names none.
  const auto m = load_text(
      "time,power_w,util_gpu_pct\n2026-12-01T10:00:00Z,300,99\n2026-12-01T10:00:01Z,310,98\n"
      ",mean,mean\n",
      "mean.csv", {});
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->gpus.size(), 1u) << all_notes(*m);
  EXPECT_EQ(m->gpus[0].size(), 2u);
  EXPECT_EQ(m->gpus[0].info.name, "");

  // A GPU per row: repeated names stay one GPU's, the second ignored.
  const std::string keyed =
      "time,gpu,power_w,power_w\n2026-12-01T10:00:00Z,0,300,20\n2026-12-01T10:00:01Z,0,310,21\n";
  const auto k = load_text(keyed, "keyed.csv", {});
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->gpus.size(), 1u) << all_notes(*k);
}

// dcgmi's identity tags in a CSV: the serial fills the GPU's details, the driver the system's.
TEST(ToolLogs, DcgmIdentityTagsInACsv) {
  const auto r = load_text(
      "EntityId,SRNUM,DRVER,POWER,TimeStamp\n"
      "0,1324021012345,550.54.15,301.5,2026-12-01T10:00:00Z\n"
      "0,1324021012345,550.54.15,305.5,2026-12-01T10:00:01Z\n",
      "ids.csv", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 1u);
  EXPECT_EQ(r->gpus[0].info.serial, "1324021012345");
  EXPECT_EQ(r->system.driver_version, "550.54.15");
  EXPECT_EQ(at(r->gpus[0], Field::kPower, 1), 305.5);
}

TEST(ToolLogs, DcgmShortTags) {
  const Recording rec = load_ok("dcgm_short_tags.csv");
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_DOUBLE_EQ(at(rec.gpus[0], Field::kGpmGraphicsUtil, 0), 91);
  EXPECT_DOUBLE_EQ(at(rec.gpus[1], Field::kGpmGraphicsUtil, 0), 93);
  EXPECT_DOUBLE_EQ(at(rec.gpus[0], Field::kGpmSmUtil, 1), 75);
  EXPECT_DOUBLE_EQ(at(rec.gpus[0], Field::kGpmDramBw, 0), 22);
  EXPECT_EQ(at(rec.gpus[1], Field::kMemUsed, 0), 61010);
  EXPECT_DOUBLE_EQ(at(rec.gpus[0], Field::kPower, 0), 395.2);
  EXPECT_EQ(rec.start_unix_ms, 1764583200000);
  EXPECT_EQ(rec.gpus[0].size(), 4u);
}

TEST(ToolLogs, WandbSystemMetricsExport) {
  const Recording rec = load_ok("wandb_system_export.csv");
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_EQ(g1.info.index, 1u);
  EXPECT_EQ(at(g1, Field::kUtilGpu, 0), 96);
  EXPECT_EQ(at(g1, Field::kUtilMem, 0), 42);
  EXPECT_DOUBLE_EQ(at(g1, Field::kPower, 0), 403.3);
  EXPECT_EQ(at(g1, Field::kPowerLimitEnforced, 0), 700);
  EXPECT_EQ(at(g1, Field::kClockSm, 0), 1980);
  EXPECT_NEAR(at(g1, Field::kMemUsed, 0), 64357777409.0 / 1048576.0, 1e-6);
  EXPECT_EQ(g1.power_limit_source, "log");
  EXPECT_EQ(rec.start_unix_ms, 1764583200500);  // _timestamp, not _runtime
  EXPECT_EQ(g1.size(), 4u);
}

TEST(ToolLogs, MlflowSystemMetrics) {
  const Recording rec = load_ok("mlflow_system_metrics.csv");
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(at(g, Field::kUtilGpu, 2), 90);
  EXPECT_DOUBLE_EQ(at(g, Field::kPower, 0), 251.5);
  EXPECT_NEAR(at(g, Field::kMemUsed, 0), 38211.2e6 / 1048576.0, 1e-6);  // MB of 10^6 bytes
  EXPECT_EQ(rec.start_unix_ms, 1764583200000);
}

TEST(ToolLogs, PynvmlMonitorWithAPowerCapInMilliwatts) {
  const Recording rec = load_ok("pynvml_powercap.csv");
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[1];
  EXPECT_EQ(at(g, Field::kUtilGpu, 0), 99);
  EXPECT_EQ(at(g, Field::kClockSm, 1), 1395);
  EXPECT_DOUBLE_EQ(at(g, Field::kPower, 0), 249.5);
  EXPECT_EQ(at(g, Field::kPowerLimitEnforced, 0), 250);  // a limit, not a draw
  EXPECT_EQ(g.power_limit_source, "log");
}

TEST(ToolLogs, LightningDeviceStatsMonitor) {
  const Recording rec = load_ok("lightning_device_stats.csv");
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 4u) << all_notes(rec);
  EXPECT_EQ(at(g, Field::kUtilGpu, 1), 96);
  EXPECT_EQ(at(g, Field::kMemUsed, 0), 30511);
  EXPECT_EQ(at(g, Field::kTemp, 0), 66);
  // "epoch" is the training epoch here (0), not a Unix time.
  EXPECT_TRUE(has_note(rec, "column epoch ignored: its values are not Unix times"))
      << all_notes(rec);
}

TEST(ToolLogs, HeaderlessNvidiaSmiWithEpochSeconds) {
  LoadOptions opt;
  opt.columns = {"timestamp",    "utilization.gpu", "utilization.memory", "memory.used",
                 "memory.total", "temperature.gpu", "power.draw"};
  const Recording rec = load_ok("smi_epoch_noheader.csv", opt);
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 4u) << all_notes(rec);
  EXPECT_EQ(rec.start_unix_ms, 1764583200000);
  EXPECT_EQ(g.time_s[3], 6);
  EXPECT_DOUBLE_EQ(at(g, Field::kPower, 1), 222.5);
  EXPECT_TRUE(has_note(rec, "read as Unix epoch seconds")) << all_notes(rec);
}

TEST(ToolLogs, MsiAfterburnerHml) {
  const Recording rec = load_ok("afterburner.hml");
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 4u) << all_notes(rec);
  EXPECT_EQ(rec.source, "msi afterburner: " + tool_log("afterburner.hml"));
  EXPECT_EQ(at(g, Field::kUtilGpu, 1), 99);
  EXPECT_EQ(at(g, Field::kUtilMem, 0), 41);
  EXPECT_DOUBLE_EQ(at(g, Field::kPower, 1), 319.5);
  EXPECT_TRUE(std::isnan(at(g, Field::kPower, 3)));  // "N/A"
  EXPECT_EQ(at(g, Field::kClockSm, 0), 1905);
  EXPECT_EQ(at(g, Field::kMemUsed, 0), 8123);
  EXPECT_EQ(at(g, Field::kClockEventReasons, 0), static_cast<double>(bit("sw_power_cap")));
  EXPECT_EQ(at(g, Field::kClockEventReasons, 3), static_cast<double>(bit("gpu_idle")));
  EXPECT_FALSE(g.has(Field::kPowerLimit));  // "Power limit" is a flag, not watts
  EXPECT_EQ(rec.start_unix_ms, 1796159051000);
}

// An Afterburner log is read as it is, in either encoding (its units' "°C" in Windows-1252, as
// Afterburner on Windows writes them, or UTF-8), never decoded whole first: the recording of the
// decoded text, and a line that is not UTF-8 where the head was sends the text back to be
// decoded whole.
TEST(ToolLogs, MsiAfterburnerIsReadAsItIs) {
  // (Pieces put together, not replace(): GCC 12 warns of an overlap that cannot be.)
  auto swapped = [](const std::string& s, std::string_view from, std::string_view to) {
    std::string out;
    size_t b = 0;
    for (size_t at; (at = s.find(from, b)) != std::string::npos; b = at + from.size())
      out.append(s, b, at - b).append(to);
    return out.append(s, b);
  };
  const std::string utf8 = read_file(tool_log("afterburner.hml"));
  // A data line with a byte past ASCII (a cell gpudoctor does not read).
  const std::string latin1 =
      swapped(swapped(utf8, "\u00B0", "\xB0"), "   12.000\r\n80, 01-12-2026 21:04:12",
              "   12.0\xB0 \r\n80, 01-12-2026 21:04:12");
  ASSERT_NE(latin1, utf8);
  std::string storage;
  const std::string decoded(text::decode_to_utf8(latin1, text::Encoding::kWindows1252, storage));
  for (const std::string* t : std::vector<const std::string*>{&utf8, &latin1}) {
    SCOPED_TRACE(t == &utf8 ? "UTF-8" : "Windows-1252");
    size_t copies = 0;
    LoadOptions counted;
    counted.texts_decoded_whole = &copies;
    auto raw = load_text(*t, "a.hml", counted);
    ASSERT_TRUE(raw.ok()) << raw.error().message;
    EXPECT_EQ(copies, 0u) << "the text was decoded whole first";
    auto dec = load_text(t == &utf8 ? utf8 : decoded, "a.hml", {});
    ASSERT_TRUE(dec.ok()) << dec.error().message;
    ASSERT_EQ(raw->gpus.size(), 1u);
    EXPECT_EQ(raw->gpus[0].size(), 4u);
    EXPECT_EQ(raw->gpus[0].info.name, "NVIDIA GeForce RTX 3080");
    EXPECT_EQ(raw->gpus[0].time_s, dec->gpus[0].time_s);
    expect_same_columns(raw->gpus[0], dec->gpus[0]);
    EXPECT_EQ(at(raw->gpus[0], Field::kTemp, 2), 68);
  }
  // UTF-8 in its head (4 KiB: lines of no kind Afterburner writes fill it), not further on:
  // decoded whole, as ever.
  std::string filler;
  while (filler.size() < 4096) filler += "99, a line gpudoctor passes over\r\n";
  const std::string mixed = swapped(
      swapped(utf8, "\r\n80, 01-12-2026 21:04:11", "\r\n" + filler + "80, 01-12-2026 21:04:11"),
      "   12.000\r\n80, 01-12-2026 21:04:12", "   12.0\xB0 \r\n80, 01-12-2026 21:04:12");
  ASSERT_GT(mixed.find("\xB0 \r\n"), 4096u);
  size_t copies = 0;
  LoadOptions counted;
  counted.texts_decoded_whole = &copies;
  auto m = load_text(mixed, "a.hml", counted);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(copies, 1u);
  EXPECT_EQ(m->gpus.at(0).size(), 4u);
}

TEST(ToolLogs, GputilKeyValueBlocks) {
  const Recording rec = load_ok("gputil_blocks.log");
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.gpus[1].info.name, "NVIDIA GeForce RTX 3090");
  EXPECT_EQ(at(rec.gpus[1], Field::kUtilGpu, 2), 95);
  EXPECT_EQ(at(rec.gpus[1], Field::kMemUsed, 0), 21234);
  EXPECT_EQ(at(rec.gpus[0], Field::kTemp, 1), 46);
  EXPECT_EQ(rec.gpus[0].time_s[2], 10);
}

// A block's key named as one of the columns the blocks make (its time, a GPU's number and name)
// is a column of its own after those: the block's time and the GPU lines' names stand.
TEST(ToolLogs, KeyValueBlocksKeysNamedAsTheirOwnColumns) {
  std::string text;
  for (int b = 0; b < 30; ++b)
    text += fmt::format(
        "=== 2026-12-01 12:{:02d}:{:02d} ===\nGPU 0: NVIDIA A100-SXM4-80GB\n  GPU Load: {}%\n"
        "  time: 12.5\n  name: not the GPU's\n  gpu: 7\n",
        b * 5 / 60, b * 5 % 60, 50 + b);
  const auto r = load_text(text, "blocks.log", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 1u) << all_notes(*r);
  EXPECT_EQ(r->gpus[0].info.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(r->gpus[0].info.index, 0u);
  ASSERT_EQ(r->gpus[0].size(), 30u);
  EXPECT_EQ(r->gpus[0].time_s[3], 15);
  EXPECT_EQ(at(r->gpus[0], Field::kUtilGpu, 3), 53);
}

TEST(ToolLogs, GpustatSnapshots) {
  const Recording rec = load_ok("gpustat.txt");
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  ASSERT_EQ(g.size(), 3u) << all_notes(rec);
  EXPECT_EQ(g.info.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(at(g, Field::kUtilGpu, 1), 97);
  EXPECT_EQ(at(g, Field::kTemp, 2), 47);
  EXPECT_EQ(at(g, Field::kPower, 0), 250);
  EXPECT_EQ(at(g, Field::kPowerLimitEnforced, 0), 400);
  EXPECT_EQ(at(g, Field::kMemUsed, 0), 40000);
  EXPECT_EQ(at(rec.gpus[1], Field::kUtilGpu, 0), 0);
  EXPECT_EQ(rec.start_unix_ms, 1796119200000);
}

// gpustat --color's codes are not the values; a GPU line before the first host line has no time
// and one without its memory part is no row; each row keeps its snapshot's time and its own line.
TEST(ToolLogs, GpustatColoursAndStrayLines) {
  const std::string plain = read_file(tool_log("gpustat.txt"));
  std::string coloured;
  text::LineReader lines(plain);
  std::string_view line;
  while (lines.next(line)) {
    std::string l(line);
    if (const size_t bar = l.find(" | "); bar != std::string::npos) {
      l.insert(bar, "\x1b[0m");
      l.insert(0, "\x1b[1m\x1b[36m");
    } else {
      l.insert(0, "\x1b[1m");
      l.append("\x1b[0m");
    }
    coloured.append(l).push_back('\n');
  }
  LoadOptions opt;
  opt.input_format = "gpustat";
  const auto a = load_text(plain, "g.txt", opt);
  const auto b = load_text(coloured, "g.txt", opt);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(b->gpus.size(), 2u);
  expect_same_columns(a->gpus[0], b->gpus[0]);
  expect_same_columns(a->gpus[1], b->gpus[1]);
  EXPECT_EQ(b->gpus[0].info.name, "NVIDIA A100-SXM4-80GB");

  std::string stray = "[0] NVIDIA A100 | 45°C,  98 %,  250 / 400 W | 1 / 81920 MB |\n";  // no time
  stray += plain;
  const size_t second = stray.find("node-07", stray.find("node-07") + 1);
  stray.insert(second, "[1] NVIDIA A100-SXM4-80GB | 31°C,  0 %,  61 / 400 W\n\n");  // cut
  stray += "[0] NVIDIA A100-SXM4-80GB | 48°C,   90 %,  253 / 400 W | 40000 / 81920 MB |\n";
  const auto c = load_text(stray, "s.txt", opt);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->gpus[0].size(), 3u);
  EXPECT_EQ(c->gpus[1].size(), 3u);
  // The last line is a row of the last snapshot (10:00:04, 4 s in), on the file's line 13.
  EXPECT_TRUE(has_note(*c, "s.txt:13: time 4 s is not after the GPU's previous row (4 s)"))
      << all_notes(*c);
}

TEST(ToolLogs, WhitespaceTableWithTitleAndRules) {
  const Recording rec = load_ok("home_monitor_table.txt");
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[1];
  ASSERT_EQ(g.size(), 3u) << all_notes(rec);
  EXPECT_EQ(rec.source, "whitespace table: " + tool_log("home_monitor_table.txt"));
  EXPECT_EQ(at(g, Field::kUtilGpu, 0), 97);
  EXPECT_EQ(at(g, Field::kUtilMem, 1), 57);
  EXPECT_EQ(at(g, Field::kMemUsed, 2), 30500);
  EXPECT_DOUBLE_EQ(at(g, Field::kPower, 2), 295.9);
  EXPECT_EQ(at(g, Field::kClockSm, 1), 1395);
  EXPECT_EQ(g.time_s[2], 4);
  EXPECT_TRUE(has_note(rec, "the header line repeats 1 time(s)")) << all_notes(rec);
}

// The CSV the structured readers (W&B run files, JSON samples, Prometheus text) flatten their
// input into: the tools' own metric names, read by the catalogue.
TEST(ToolLogs, NamesTheStructuredReadersWrite) {
  auto wandb = load_text(
      "_timestamp,gpu.0.gpu,gpu.0.powerWatts,gpu.0.powerPercent,gpu.0.smClock,gpu.0.temp,"
      "gpu.1.gpu,gpu.1.powerWatts,gpu.1.powerPercent,gpu.1.smClock,gpu.1.temp\n"
      "1764583200.25,99,350.5,50.1,1980,61,0,70.2,10.0,210,35\n"
      "1764583202.25,98,351.5,50.2,1965,62,0,70.1,10.0,210,35\n",
      "run.wandb", {});
  ASSERT_TRUE(wandb.ok()) << wandb.error().message;
  ASSERT_EQ(wandb->gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(at(wandb->gpus[0], Field::kPower, 1), 351.5);
  EXPECT_EQ(at(wandb->gpus[1], Field::kClockSm, 0), 210);
  EXPECT_EQ(wandb->start_unix_ms, 1764583200250);
  auto dcgm = load_text(
      "time,gpu,Hostname,modelName,DCGM_FI_DEV_GPU_UTIL,DCGM_FI_DEV_POWER_USAGE,"
      "DCGM_FI_PROF_SM_ACTIVE\n"
      "2026-12-01T10:00:00Z,0,node7,NVIDIA H100 80GB HBM3,100,512.5,0.41\n"
      "2026-12-01T10:00:00Z,1,node7,NVIDIA H100 80GB HBM3,100,690.1,0.93\n"
      "2026-12-01T10:00:15Z,0,node7,NVIDIA H100 80GB HBM3,100,515.0,0.40\n"
      "2026-12-01T10:00:15Z,1,node7,NVIDIA H100 80GB HBM3,100,688.3,0.92\n",
      "prom.csv", {});
  ASSERT_TRUE(dcgm.ok()) << dcgm.error().message;
  ASSERT_EQ(dcgm->gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(at(dcgm->gpus[1], Field::kGpmSmUtil, 0), 93);
  EXPECT_EQ(dcgm->gpus[1].info.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(dcgm->system.hostname, "node7");
}

// Units from the values where the header says none: GHz clocks, mW power caps, byte counts.
TEST(ToolLogs, UnitsFromTheValues) {
  auto r = load_text(
      "time,gpu,frequency,power,power_cap,memory_used\n0,0,1.41,249000,250000,32000000000\n"
      "1,0,1.395,248000,250000,32000000000\n",
      "u.csv", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const GpuSeries& g = r->gpus.at(0);
  EXPECT_EQ(at(g, Field::kClockSm, 1), 1395);
  EXPECT_EQ(at(g, Field::kPower, 0), 249);
  EXPECT_EQ(at(g, Field::kPowerLimitEnforced, 0), 250);
  EXPECT_NEAR(at(g, Field::kMemUsed, 0), 32000000000.0 / 1048576.0, 1e-6);
  EXPECT_TRUE(has_note(*r, "GHz: every value below 10")) << all_notes(*r);
  EXPECT_TRUE(has_note(*r, "mW: most values exceed 3000")) << all_notes(*r);
  // Whole numbers below 10 are not GHz (an idle clock of 5 MHz would be odd, but is not guessed).
  auto whole = load_text("time,gpu_clock\n0,5\n1,6\n", "w.csv", {});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(at(whole->gpus.at(0), Field::kClockSm, 0), 5);
}

// Bad input per layout: each refuses or skips precisely.
// The flattened layouts' messages name the file's own line (of the row, or of the block's GPU),
// not the line of the flattened table.
TEST(ToolLogs, FlattenedLayoutsNameTheFilesLines) {
  struct Case {
    std::string file, needle, bad, origin;
    size_t line;
  };
  for (const auto& c : std::vector<Case>{
           {"afterburner.hml", "  319.500", "    bogus", "a.hml", 18},
           {"gputil_blocks.log", "GPU Load: 93%", "GPU Load: bogus", "g.log", 6},
           {"gpustat.txt", "   61 / 400 W", "bogus / 400 W", "g.txt", 3},
           {"home_monitor_table.txt", "297.5", "bogus", "t.txt", 8},
       }) {
    SCOPED_TRACE(c.file);
    std::string text = read_file(tool_log(c.file));
    const size_t at = text.find(c.needle);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, c.needle.size(), c.bad);
    LoadOptions opt;
    if (c.file == "gpustat.txt") opt.input_format = "gpustat";
    const auto r = load_text(text, c.origin, opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(has_note(*r, fmt::format("{}:{}: ", c.origin, c.line))) << all_notes(*r);
    EXPECT_TRUE(has_note(*r, "bogus")) << all_notes(*r);
  }
}

TEST(ToolLogs, BadInputPerLayout) {
  const std::string gpuz = read_file(tool_log("gpuz_sensor_log.txt"));
  {  // cut mid-line: the last line is not read
    auto r = load_text(gpuz.substr(0, gpuz.size() - 20), "gpuz.txt", {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->gpus[0].size(), 5u);
    EXPECT_TRUE(has_note(*r, "cut short at the end of the file")) << all_notes(*r);
  }
  {  // the header alone
    auto r = load_text(gpuz.substr(0, gpuz.find('\n') + 1), "gpuz.txt", {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "gpuz.txt:1: a header line but no data rows");
  }
  {  // a PerfCap Reason gpudoctor cannot read is counted, not guessed
    auto r = load_text(
        "Date,GPU Load [%],PerfCap Reason []\n2026-12-01 10:00:00,50,Pwr\n"
        "2026-12-01 10:00:01,50,Bogus\n",
        "gpuz.txt", {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(has_note(*r, "PerfCap Reason []: cannot read \"Bogus\"")) << all_notes(*r);
  }
  {  // HWiNFO with a flag that is neither Yes nor No
    auto r = load_text(
        "\"Date\",\"Time\",\"GPU Core Load [%]\",\"Performance Limit - Power "
        "[Yes/No]\"\n\"1.12.2026\",\"9:5:1.0\",\"50\",\"Maybe\"\n",
        "hw.csv", {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(has_note(*r, "cannot read \"Maybe\"")) << all_notes(*r);
  }
  {  // wide W&B columns whose quantity is unknown: named, with the --map that reads them
    auto r =
        load_text("_timestamp,system.gpu.0.foo,system.gpu.1.foo\n1764583200,1,2\n", "w.csv", {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("system.gpu.0.foo"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("--map"), std::string::npos) << r.error().message;
  }
  {  // a table of unknown columns: named, with the --map that reads it; then read with it
    auto r = load_text("alpha,beta,gamma\n1,2,3\n2,3,4\n", "t.csv", {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message,
              "t.csv:1: a table whose columns (alpha, beta, gamma) gpudoctor does not recognise; "
              "name them with --map COLUMN=FIELD (field ids: gpudoctor fields; known column "
              "names: gpudoctor formats), e.g. --map 'gamma=util_gpu_pct'");
    LoadOptions opt;
    opt.map = {{"alpha", "time"}, {"beta", "util_gpu_pct"}};
    auto m = load_text("alpha,beta,gamma\n1,2,3\n2,3,4\n", "t.csv", opt);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->gpus.at(0).size(), 2u);
    EXPECT_TRUE(has_note(*m, "gamma")) << all_notes(*m);  // not read, and said so
  }
  {  // Afterburner without its column names
    auto r = load_text("00, 01-12-2026 21:04:10, Hardware monitoring log v1.6\n02,\n", "a.hml", {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message,
              "a.hml: an MSI Afterburner log without its 02 line (the column names)");
  }
  {  // gpustat: a host line and no GPU line
    LoadOptions opt;
    opt.input_format = "gpustat";
    auto r = load_text("node-07  Tue Dec  1 10:00:00 2026  535.104.05\n", "g.txt", opt);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("no gpustat snapshot"), std::string::npos);
  }
  {  // blocks whose values are unreadable: counted, not guessed
    auto r = load_text(
        "=== 2026-12-01 12:00:00 ===\nGPU 0: X\nGPU Load: lots\n"
        "=== 2026-12-01 12:00:05 ===\nGPU 0: X\nGPU Load: 5%\n",
        "b.log", {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(has_note(*r, "cannot read \"lots\"")) << all_notes(*r);
  }
  {  // a whitespace table with a row of too few cells: skipped and counted
    auto r = load_text(
        "Monitor\n==========\ntime  gpu  power_w\n----------\n1  0  100\n2  0\n"
        "3  0  102\n",
        "w.txt", {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->gpus.at(0).size(), 2u);
    EXPECT_TRUE(has_note(*r, "with the wrong number of cells")) << all_notes(*r);
  }
  {  // an impossible day-first date is an unreadable time
    auto r = load_text("Date,Time,GPU Load [%]\n1.12.2026,9:5:1,50\n35.12.2026,9:5:2,50\n",
                       "hw.csv", {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(has_note(*r, "with an unreadable time")) << all_notes(*r);
  }
}

TEST(Encodings, DecodedOnceAtTheEdge) {
  using text::Encoding;
  EXPECT_EQ(text::detect_encoding("a,b\n1,2\n"), Encoding::kUtf8);
  EXPECT_EQ(text::detect_encoding("\xEF\xBB\xBF"
                                  "a,b\n"),
            Encoding::kUtf8Bom);
  EXPECT_EQ(text::detect_encoding("temp [\xB0"
                                  "C]\n"),
            Encoding::kWindows1252);
  EXPECT_EQ(text::detect_encoding(std::string("\xFF\xFEt\0e\0", 6)), Encoding::kUtf16Le);
  EXPECT_EQ(text::detect_encoding(std::string("\0t\0e\0m\0p\0,\0x\0\n", 14)), Encoding::kUtf16Be);
  std::string storage;
  EXPECT_EQ(text::decode_to_utf8("temp [\xB0"
                                 "C] \x80",
                                 Encoding::kWindows1252, storage),
            "temp [\xC2\xB0"
            "C] \xE2\x82\xAC");
  // A surrogate pair and a lone surrogate.
  EXPECT_EQ(
      text::decode_to_utf8(std::string("\x3D\xD8\x00\xDE\x00\xD8", 6), Encoding::kUtf16Le, storage),
      "\xF0\x9F\x98\x80\xEF\xBF\xBD");
  EXPECT_FALSE(text::valid_utf8("\xC0\xAF"));      // overlong
  EXPECT_FALSE(text::valid_utf8("\xED\xA0\x80"));  // a surrogate
  EXPECT_TRUE(text::valid_utf8("\xE2\x82\xAC plain ascii after it, longer than eight bytes"));
  // A text of several 8 MiB pieces is checked on every CPU: a character across a piece's end is
  // whole, and one bad byte in any piece makes it Windows-1252.
  {
    std::string big(size_t{26} << 20, 'x');
    for (size_t i = 99; i < big.size(); i += 100) big[i] = '\n';
    for (const size_t at : {size_t{8} << 20, size_t{16} << 20}) big.replace(at - 1, 2, "\xC3\xA9");
    EXPECT_EQ(text::detect_encoding(big), Encoding::kUtf8);
    big[(size_t{17} << 20) + 5] = '\xE9';
    EXPECT_EQ(text::detect_encoding(big), Encoding::kWindows1252);
    big[(size_t{17} << 20) + 5] = 'x';
    big[big.size() - 3] = '\xE9';  // the last piece
    EXPECT_EQ(text::detect_encoding(big), Encoding::kWindows1252);
  }
  // ASCII is skipped 32 and 8 bytes at a time: a bad byte or a character is seen at any offset.
  for (size_t at = 0; at < 80; ++at) {
    std::string t(80, 'x');
    t[at] = '\xFF';
    EXPECT_FALSE(text::valid_utf8(t)) << at;
    t[at] = '\xC3';
    EXPECT_FALSE(text::valid_utf8(t)) << at;  // a lead byte without its continuation
    t.insert(at + 1, 1, '\xA9');
    EXPECT_TRUE(text::valid_utf8(t)) << at;
  }
  EXPECT_EQ(text::sanitize_utf8("a\xFF"
                                "b"),
            "a\xEF\xBF\xBD"
            "b");
}

// A CSV whose first 4 KiB are UTF-8 is not checked whole before it is read: the CSV reader checks
// each line as it reads it (ReadAs::kCheckUtf8), on one thread or in chunks, quoted records' lines
// and skipped lines too. A byte that is not UTF-8 anywhere makes load_text decode the whole text
// and read it again: the same recording as checking first, note included.
TEST(Encodings, TheCsvReaderChecksTheRestAsItReads) {
  auto csv = [](std::string_view late) {
    std::string t = "timestamp, index, name, utilization.gpu [%], power.draw [W], note\n";
    for (int i = 0; i < 400; ++i) {
      t += fmt::format("2026/01/01 00:{:02d}:{:02d}.000, 0, NVIDIA A100, {}, {}.5, {}\n", i / 60,
                       i % 60, i % 100, 100 + i, i == 300 ? late : "x");
      if (i == 200) t += "# a comment\n";
    }
    return t;
  };
  const std::string utf8 = csv("caf\xC3\xA9"), latin1 = csv("caf\xE9");
  ASSERT_GT(utf8.find("caf"), size_t{4096});  // past the head load_text checks itself
  {
    auto r = load_text(utf8, "u.csv", {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->gpus.at(0).size(), 400u);
    EXPECT_FALSE(has_note(*r, "decoded to UTF-8")) << all_notes(*r);
  }
  {
    auto r = load_text(latin1, "l.csv", {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->gpus.at(0).size(), 400u);
    EXPECT_TRUE(has_note(*r, "Windows-1252 (latin-1) text: decoded to UTF-8")) << all_notes(*r);
  }
  // The reader itself: an error of its own code, whether the bad byte is in a row, a comment, a
  // quoted record's second line or the header, on one thread or in chunks.
  size_t merged = 0;  // chunks read on other threads: the reading in chunks was tested
  auto check = [&](const std::string& text, unsigned threads) {
    GenericCsvOptions o;
    o.read_as = text::ReadAs::kCheckUtf8;
    o.threads = threads;
    o.chunk_bytes = 1024;
    o.chunks_merged = &merged;
    return read_generic_csv(text, "c.csv", o);
  };
  auto with_comment = utf8, quoted = utf8, header = utf8, quoted_comment = utf8, unclosed = utf8,
       last_line = utf8;
  with_comment.replace(with_comment.find("# a comment"), 11, "# a comm\xE9nt");
  const size_t q = quoted.find("caf\xC3\xA9");
  quoted.replace(q, 5, "\"two\nlin\xE9s\"");
  header.replace(header.find("note"), 4, "n\xF6te");
  quoted_comment.replace(quoted_comment.find("# a comment"), 11, "# a \"comm\xE9nt");
  unclosed.replace(unclosed.find("caf\xC3\xA9"), 5, "\"caf\xE9");            // a quote never closed
  last_line += "2026/01/01 00:07:00.000, 0, NVIDIA A100, 5, 50.5, caf\xE9";  // no line end
  for (const unsigned threads : {1u, 3u}) {
    SCOPED_TRACE(threads);
    merged = 0;
    auto good = check(utf8, threads);
    ASSERT_TRUE(good.ok()) << good.error().message;
    EXPECT_EQ(good->gpus.at(0).size(), 400u);
    EXPECT_EQ(merged > 0, threads > 1);
    for (const std::string* bad : std::vector<const std::string*>{
             &latin1, &with_comment, &quoted, &header, &quoted_comment, &unclosed, &last_line}) {
      auto r = check(*bad, threads);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().code, Error::Code::kNotUtf8);
    }
    // The same texts unchecked are read (the bytes as they are): the check is what refused them.
    GenericCsvOptions plain;
    plain.threads = threads;
    plain.chunk_bytes = 1024;
    EXPECT_TRUE(read_generic_csv(latin1, "c.csv", plain).ok());
  }
  // A quoted record of two valid lines is read whole.
  auto two_lines = utf8;
  two_lines.replace(two_lines.find("caf\xC3\xA9"), 5, "\"two\nlin\xC3\xA9s\"");
  auto r = check(two_lines, 1);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->gpus.at(0).size(), 400u);
}

// A CSV whose head is not UTF-8 (GPU-Z's "°C" in Windows-1252) is read as it is, its lines
// decoded where they need it (ReadAs::kWindows1252), not decoded whole first: the recording of the
// decoded text, with the note that says so. A UTF-8 text whose 4 KiB head ends inside a character
// is UTF-8 all the same.
TEST(Encodings, Windows1252CsvIsDecodedAsItIsRead) {
  std::string gpuz =
      "        Date        , GPU Temperature [\xB0"
      "C] , GPU Load [%] , "
      "Board Power Draw [W] , Name ,\r\n";
  for (int i = 0; i < 2000; ++i)
    gpuz +=
        fmt::format("2026-12-01 00:{:02d}:{:02d} , {:5.1f} , {:3} , {:6.1f} , RTX\x99 A6000 ,\r\n",
                    i / 60 % 60, i % 60, 60.0 + i % 7, i % 101, 100.0 + (i % 40) * 0.1);
  std::string storage;
  const std::string decoded(text::decode_to_utf8(gpuz, text::Encoding::kWindows1252, storage));
  size_t copies = 0;
  LoadOptions counted;
  counted.texts_decoded_whole = &copies;
  auto raw = load_text(gpuz, "g.txt", counted);
  EXPECT_EQ(copies, 0u) << "the text was decoded whole first";
  auto dec = load_text(decoded, "g.txt", {});
  ASSERT_TRUE(raw.ok()) << raw.error().message;
  ASSERT_TRUE(dec.ok()) << dec.error().message;
  EXPECT_TRUE(has_note(*raw, "Windows-1252 (latin-1) text: decoded to UTF-8")) << all_notes(*raw);
  ASSERT_EQ(raw->gpus.size(), 1u);
  EXPECT_EQ(raw->gpus[0].info.name, "RTX\u2122 A6000");
  EXPECT_EQ(raw->gpus[0].size(), 2000u);
  expect_same_columns(raw->gpus[0], dec->gpus[0]);
  // UTF-8 whose first 4 KiB end inside "°" (its first byte the head's last): no note, the name as
  // written.
  std::string utf8 = "timestamp, index, name, utilization.gpu [%]\n";
  for (int i = 0; i < 200; ++i) {
    std::string row =
        fmt::format("2026/01/01 00:{:02d}:{:02d}.000, 0, A100 \u00B0C, 5\n", i / 60, i % 60);
    const size_t at = utf8.size() + row.find("\u00B0");
    if (at < 4095 && at + row.size() > 4095) row.insert(row.find("A100"), 4095 - at, ' ');
    utf8 += row;
  }
  ASSERT_EQ(utf8.substr(4095, 2), "\u00B0");
  auto u = load_text(utf8, "u.csv", {});
  ASSERT_TRUE(u.ok()) << u.error().message;
  // (And a text no reader takes as it reads is decoded whole, as ever: the count counts.)
  std::string dmon = "# gpu    pwr  gtemp\n# Idx      W      C\n";
  for (int i = 0; i < 50; ++i) dmon += fmt::format("    0    {:3}     40 \xB0\n", 100 + i);
  const auto d = load_text(dmon, "d.txt", counted);
  EXPECT_EQ(copies, 1u);
  EXPECT_FALSE(has_note(*u, "decoded to UTF-8")) << all_notes(*u);
  EXPECT_EQ(u->gpus.at(0).info.name, "A100 \u00B0C");
}

// HWiNFO writes a header of hundreds of sensors, longer than the 4 KiB head that tells the
// encoding: a Windows-1252 one is still read as it is (not decoded whole first), and a UTF-8 one
// whose head ends inside a character of the header is read as UTF-8.
TEST(Encodings, AHeaderLongerThanTheHeadIsReadAsItGoes) {
  for (const bool latin1 : {true, false}) {
    SCOPED_TRACE(latin1 ? "Windows-1252" : "UTF-8");
    const std::string deg = latin1 ? "\xB0" : "\u00B0";
    std::string text = "Date,Time,GPU Temperature [" + deg + "C],GPU Power [W],GPU Core Load [%]";
    std::string cells;
    for (int k = 0; text.size() < 6000; ++k) {
      text.append(fmt::format(",Core {} Temperature [", k)).append(deg).append("C]");
      cells += ",40";
    }
    if (!latin1) {  // the head's last byte the first of a "°"
      const size_t at = text.rfind(deg, 4095);
      text.insert(text.rfind(',', at) + 1, 4095 - at, ' ');
      ASSERT_EQ(text.substr(4095, 2), deg);
    }
    text += "\r\n";
    for (int i = 0; i < 500; ++i)
      text += fmt::format("8.1.2026,22:{}:{}.5,{},{},{}{}\r\n", i / 60, i % 60, 50 + i % 9,
                          100 + i % 50, i % 100, cells);
    ASSERT_GT(text.find("\r\n"), 4096u);
    size_t copies = 0;
    LoadOptions counted;
    counted.texts_decoded_whole = &copies;
    auto r = load_text(text, "hwinfo.csv", counted);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(copies, 0u) << "the text was decoded whole first";
    EXPECT_EQ(has_note(*r, "decoded to UTF-8"), latin1) << all_notes(*r);
    ASSERT_EQ(r->gpus.size(), 1u);
    EXPECT_EQ(r->gpus[0].size(), 500u);
    EXPECT_EQ(r->gpus[0].column(Field::kTemp)[3], 53);
  }
}

// A CSV whose header is also written above it as a '#' comment is read as the CSV it is (a '#'
// line of names is how nvidia-smi dmon writes its header, but never with commas).
TEST(Encodings, ACsvHeaderWrittenAsACommentTooIsACsv) {
  std::string t =
      "# Date, GPU Temperature [C], Board Power Draw [W], GPU Load [%]\n"
      "Date, GPU Temperature [C], Board Power Draw [W], GPU Load [%]\n";
  for (int i = 0; i < 100; ++i)
    t += fmt::format("2026-12-03 10:{:02d}:{:02d}, {}, {}.5, {}\n", i / 60, i % 60, 40 + i % 30,
                     100 + i, i % 101);
  const auto r = load_text(t, "c.csv", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 1u);
  EXPECT_EQ(r->gpus[0].size(), 100u);
  EXPECT_TRUE(r->gpus[0].column(Field::kPower));
}

// The catalogue: each (name, per-GPU) once, every reason code real, every entry read as itself.
TEST(ColumnCatalogue, EveryEntryIsOneMeaningAndResolves) {
  std::set<std::pair<std::string_view, bool>> seen;
  for (const auto& e : csv::catalogue()) {
    SCOPED_TRACE(std::string(e.name));
    EXPECT_TRUE(seen.insert({e.name, e.per_gpu}).second) << "named twice";
    EXPECT_FALSE(e.tool.empty());
    EXPECT_EQ(e.name, csv::normalise(e.name)) << "not normalised";
    if (e.reasons == csv::Reasons::kFlag) {
      EXPECT_NE(bit(e.reason), 0u) << e.reason;
    }
    const auto m = csv::lookup(e.name, e.per_gpu);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->role, e.role);
    if (e.role == csv::Role::kField) {
      EXPECT_EQ(m->field, e.field);
    }
  }
  // Per-GPU names in W&B's and MLflow's spellings.
  for (const auto& [name, field, gpu] : std::vector<std::tuple<std::string, Field, int>>{
           {"system.gpu.0.gpu", Field::kUtilGpu, 0},
           {"gpu.3.powerWatts", Field::kPower, 3},
           {"system.gpu.1.memoryClock", Field::kClockMem, 1},
           {"system/gpu_2_utilization_percentage", Field::kUtilGpu, 2},
           {"DeviceStatsMonitor.on_train_batch_end/utilization.gpu", Field::kUtilGpu, -1},
           {"clocks_event_reasons.sw_power_cap", Field::kClockEventReasons, -1},
       }) {
    SCOPED_TRACE(name);
    const csv::Column c = csv::resolve(name);
    EXPECT_EQ(c.m.field, field);
    EXPECT_EQ(c.gpu, gpu);
  }
}

TEST(ColumnCatalogue, FormatsMdHoldsTheGeneratedTable) {
  const std::string doc = read_file(std::string(GPUDOCTOR_SOURCE_DIR) + "/docs/formats.md");
  const std::string table = render_catalogue_markdown();
  EXPECT_NE(doc.find(table), std::string::npos)
      << "docs/formats.md is stale: replace its column catalogue with `gpudoctor formats "
         "--markdown`";
  const std::string text = render_catalogue_text();
  for (const auto tool : {"GPU-Z", "HWiNFO", "dcgmi dmon", "Weights & Biases", "MLflow",
                          "nvidia-smi", "pynvml logger"})
    EXPECT_NE(text.find(tool), std::string::npos) << tool;
}

// Every real log of ../shared/data/real-logs/ is read without error, with the flags its label
// gives (LABELS.tsv: columns=, power-limit=), as a user would pass them. Two need more than the
// label: seongjunpark17's "timestamp,GPU0,GPU1" and eve123xy's processed JSON (per_gpu.0,
// per_gpu.1: lists of power values) name no quantity, so a user gives --map (the error says so,
// tested below).
TEST(RealLogs, EveryLogIsReadWithoutError) {
  const fs::path dir = fs::path(GPUDOCTOR_SOURCE_DIR) / ".." / "shared" / "data" / "real-logs";
  std::ifstream labels(dir / "LABELS.tsv");
  ASSERT_TRUE(labels.good()) << "missing " << (dir / "LABELS.tsv");
  std::string line;
  std::getline(labels, line);  // header
  size_t read = 0;
  while (std::getline(labels, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cells.push_back(c);
    if (cells.size() < 4) continue;
    const std::string& file = cells[0];
    SCOPED_TRACE(file);
    LoadOptions opt;
    std::stringstream flags(cells.size() > 6 ? cells[6] : "");
    for (std::string f; flags >> f;) {
      if (f.starts_with("columns=")) {
        std::stringstream cs(f.substr(8));
        for (std::string c; std::getline(cs, c, ',');) opt.columns.push_back(c);
      } else if (f.starts_with("power-limit=")) {
        opt.power_limit_w = std::stod(f.substr(12));
      }
    }
    if (cells[3] == "custom_wide") {
      auto bare = load_telemetry((dir / file).string(), opt);
      ASSERT_FALSE(bare.ok());
      EXPECT_NE(bare.error().message.find("--map 'GPU*=power_w'"), std::string::npos)
          << bare.error().message;
      opt.map = {{"GPU*", "power_w"}};
    }
    if (cells[3] == "processed_json") {
      auto bare = load_telemetry((dir / file).string(), opt);
      ASSERT_FALSE(bare.ok());
      EXPECT_NE(bare.error().message.find("per_gpu.0"), std::string::npos) << bare.error().message;
      EXPECT_NE(bare.error().message.find("--map"), std::string::npos) << bare.error().message;
      opt.map = {{"per_gpu.*", "power_w"}};
    }
    auto r = load_telemetry((dir / file).string(), opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_FALSE(r->gpus.empty());
    for (const auto& n : r->notes) EXPECT_TRUE(text::valid_utf8(n)) << n;
    ++read;
  }
  EXPECT_EQ(read, 48u);
}

}  // namespace
}  // namespace gpudoctor
