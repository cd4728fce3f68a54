// The plain nvidia-smi table reader against fixtures in tests/data/logs/smi-table/, written in the
// layouts that real `nvidia-smi` / `nvidia-smi -l` output of each driver generation has (column
// widths, banners, N/A and Not Supported cells, names cut short, process tables as printed by
// R390, R418, R470, R535, R570 and R580 drivers in public bug reports), with made-up values.
#include "formats/smi_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/reading.hpp"
#include "formats/load.hpp"
#include "test_helpers.hpp"

namespace gpudoctor {
namespace {

using namespace test_util;

const std::string kDir = std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/logs/smi-table/";

std::string fixture(const std::string& name) {
  std::ifstream in(kDir + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << name;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Recording read_ok(const std::string& text, const SmiTableOptions& opt = {},
                  const std::string& origin = "smi.log") {
  auto r = read_smi_table(text, origin, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? std::string() : r.error().message);
  if (!r.ok()) return {};
  return std::move(r).value();
}

std::string read_error(const std::string& text, const SmiTableOptions& opt = {}) {
  auto r = read_smi_table(text, "smi.log", opt);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {};
  EXPECT_EQ(r.error().kind, Error::Kind::kUsage);
  return r.error().message;
}

// The snapshots of a fixture: each from its date line to the next.
std::vector<std::string> snapshots(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const bool date = line.size() > 20 && line[0] >= 'A' && line[0] <= 'Z' && line[3] == ' ' &&
                      line.find(':') != std::string::npos;
    if (date || out.empty()) out.emplace_back();
    out.back() += line + "\n";
  }
  return out;
}

// Removes the table rows of one GPU (its two or three rows and the separator below them).
std::string without_gpu(const std::string& snapshot, unsigned index) {
  std::istringstream in(snapshot);
  std::string out, line;
  std::string key = "|";
  key.append(index < 10 ? 3 : 2, ' ');
  key += std::to_string(index);
  key += "  ";
  bool skipping = false;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0 && line.find("MiB") == std::string::npos) skipping = true;
    if (skipping) {
      if (line[0] == '+') skipping = false;
      continue;
    }
    out += line + "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Real layouts of each driver generation

TEST(SmiTable, ReadsTheR418LayoutWithoutMigRowAndTheOldProcessTable) {
  const Recording rec = read_ok(fixture("v100_418_4gpu_l5.txt"));
  ASSERT_EQ(rec.gpus.size(), 4u) << all_notes(rec);
  EXPECT_EQ(rec.source, "nvidia-smi table: smi.log");
  EXPECT_EQ(rec.system.driver_version, "418.87.01");
  EXPECT_EQ(rec.system.cuda_driver_version, "10.1");
  EXPECT_EQ(rec.start_unix_ms, 1583157911000);  // Mon Mar  2 14:05:11 2020, read as UTC
  EXPECT_TRUE(has_note(rec, "local time of the machine that ran nvidia-smi")) << all_notes(rec);

  const GpuSeries& g0 = rec.gpus[0];
  EXPECT_EQ(g0.info.index, 0u);
  EXPECT_EQ(g0.info.name, "Tesla V100-SXM2...");
  EXPECT_EQ(g0.info.pci_bus_id, "00000000:1A:00.0");
  EXPECT_EQ(g0.info.persistence_mode, true);
  EXPECT_FALSE(g0.info.mig_mode.has_value());             // no MIG M. row before R450
  EXPECT_EQ(g0.info.architecture, Architecture::kVolta);  // both V100-SXM2 boards are Volta
  EXPECT_EQ(g0.time_s, (std::vector<double>{0, 5, 10, 15, 20, 25}));
  EXPECT_EQ(col(g0, Field::kPower), (std::vector<double>{41, 231, 284, 252, 262, 275}));
  EXPECT_EQ(col(g0, Field::kPowerLimitEnforced), std::vector<double>(6, 300));
  EXPECT_FALSE(g0.has(Field::kPowerLimitDefault));
  EXPECT_EQ(g0.power_limit_source, "log");
  EXPECT_EQ(col(g0, Field::kUtilGpu), (std::vector<double>{0, 99, 100, 99, 100, 100}));
  EXPECT_EQ(col(g0, Field::kMemUsed)[1], 15847);
  EXPECT_EQ(col(g0, Field::kMemTotal)[0], 32480);
  EXPECT_EQ(col(g0, Field::kTemp)[0], 38);
  EXPECT_EQ(col(g0, Field::kPstate)[0], 0);
  EXPECT_FALSE(g0.has(Field::kFan));  // N/A throughout: no column, no zeros
  EXPECT_EQ(g0.unsupported.count(Field::kFan), 0u);
  EXPECT_TRUE(has_note(rec, "no values in the log (N/A throughout) for: fan.speed [%]"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec,
                       "GPU name \"Tesla V100-SXM2...\" is cut short in nvidia-smi's table: "
                       "it fits Tesla V100-SXM2-16GB, Tesla V100-SXM2-32GB"))
      << all_notes(rec);
  EXPECT_FALSE(has_note(rec, "power limit")) << all_notes(rec);

  // Processes: the first snapshot has none; ranks 1-3 also hold a context on GPU 0; rank 3 is
  // restarted as pid 30388 and gone from the last snapshot.
  EXPECT_TRUE(g0.processes_recorded);
  ASSERT_EQ(g0.processes.size(), 5u);
  EXPECT_EQ(g0.processes[0].pid, 30211u);
  EXPECT_EQ(g0.processes[0].name, "/opt/conda/bin/python");
  EXPECT_EQ(g0.processes[0].first_s, 5);
  EXPECT_EQ(g0.processes[0].last_s, 25);
  EXPECT_EQ(g0.processes[0].max_memory_mib, 14609);
  EXPECT_EQ(g0.processes[3].pid, 30214u);
  EXPECT_EQ(g0.processes[3].last_s, 15);
  EXPECT_EQ(g0.processes[4].pid, 30388u);
  EXPECT_EQ(g0.processes[4].first_s, 20);
  EXPECT_EQ(g0.processes[4].last_s, 20);
  const GpuSeries& g3 = rec.gpus[3];
  ASSERT_EQ(g3.processes.size(), 2u);
  EXPECT_EQ(g3.processes[0].pid, 30214u);
  EXPECT_EQ(g3.processes[0].last_s, 15);
  EXPECT_EQ(g3.processes[1].pid, 30388u);
  EXPECT_EQ(col(g3, Field::kUtilGpu).back(), 0);
}

TEST(SmiTable, ReadsTheR470LayoutSkipsGarbageAndTheSnapshotCutShortAtTheEnd) {
  const Recording rec = read_ok(fixture("a100_470_4gpu_mig_row.txt"));
  ASSERT_EQ(rec.gpus.size(), 4u) << all_notes(rec);
  for (const auto& g : rec.gpus) {
    EXPECT_EQ(g.size(), 5u) << all_notes(rec);
    EXPECT_EQ(g.info.mig_mode, false);
    EXPECT_EQ(g.info.architecture, Architecture::kAmpere);
    EXPECT_EQ(g.info.name, "NVIDIA A100-SXM...");
  }
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(col(rec.gpus[3], Field::kPowerLimitEnforced)[0], 250);  // a lowered cap, as logged
  EXPECT_EQ(col(rec.gpus[0], Field::kPowerLimitEnforced)[0], 400);
  EXPECT_EQ(rec.system.driver_version, "470.82.01");
  EXPECT_TRUE(has_note(rec,
                       "skipped 1 snapshot(s) cut short (first: smi.log:182: no complete GPU "
                       "table at the end of the file)"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec,
                       "skipped 1 line(s) that are not part of an nvidia-smi table (first: "
                       "smi.log:109:"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "it fits NVIDIA A100-SXM4-40GB, NVIDIA A100-SXM4-80GB"))
      << all_notes(rec);
  // Two jobs on GPU 2, each one span over the whole log; GI/CI columns do not shift the pid.
  const GpuSeries& g2 = rec.gpus[2];
  ASSERT_EQ(g2.processes.size(), 2u);
  EXPECT_EQ(g2.processes[0].pid, 33724u);
  EXPECT_EQ(g2.processes[0].name, "tritonserver");
  EXPECT_EQ(g2.processes[0].max_memory_mib, 12247);
  EXPECT_EQ(g2.processes[1].pid, 34965u);
  EXPECT_EQ(g2.processes[1].first_s, 0);
  EXPECT_EQ(g2.processes[1].last_s, 8);
}

TEST(SmiTable, SpreadsTablesOfOneDateSecondAndReadsErrAsMissing) {
  const Recording rec = read_ok(fixture("h100_535_2gpu_lms500.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.gpus[1].time_s, (std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5}));
  EXPECT_TRUE(has_note(rec, "6 snapshots share their date second")) << all_notes(rec);
  const auto p1 = col(rec.gpus[1], Field::kPower);
  ASSERT_EQ(p1.size(), 6u);
  EXPECT_EQ(p1[1], 598);
  EXPECT_TRUE(std::isnan(p1[2]));  // ERR!: no value, never 0
  EXPECT_TRUE(has_note(rec, "1 value(s) nvidia-smi showed as ERR!")) << all_notes(rec);
  EXPECT_EQ(rec.gpus[0].info.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(rec.gpus[0].info.architecture, Architecture::kHopper);
  EXPECT_EQ(rec.gpus[0].info.mig_mode, false);
  EXPECT_EQ(rec.system.cuda_driver_version, "12.2");
  ASSERT_EQ(rec.gpus[1].processes.size(), 1u);
  EXPECT_EQ(rec.gpus[1].processes[0].pid, 3375096u);
  EXPECT_EQ(rec.gpus[1].processes[0].last_s, 2.5);
}

TEST(SmiTable, ReadsTheR570LayoutWithFansGraphicsProcessesAndCrlf) {
  const Recording rec = read_ok(fixture("rtx6000ada_570_2gpu_crlf.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_EQ(g0.info.name, "NVIDIA RTX 6000 Ada Gene...");
  EXPECT_EQ(g0.info.pci_bus_id, "00000000:01:00.0");
  EXPECT_EQ(g0.info.architecture, Architecture::kAda);
  EXPECT_EQ(col(g0, Field::kFan), (std::vector<double>{30, 30, 30}));
  EXPECT_EQ(col(g1, Field::kPstate), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(col(g1, Field::kMemTotal)[0], 49140);
  EXPECT_EQ(rec.system.driver_version, "570.133.20");
  EXPECT_TRUE(has_note(rec, "it fits NVIDIA RTX 6000 Ada Generation")) << all_notes(rec);
  // GPU 0: Xorg and gnome-shell are graphics only; blender (C+G) is compute work until it quits.
  ASSERT_EQ(g0.processes.size(), 1u);
  EXPECT_EQ(g0.processes[0].pid, 4412u);
  EXPECT_EQ(g0.processes[0].name, "/opt/blender-4.1/blender");
  EXPECT_EQ(g0.processes[0].last_s, 1);
  EXPECT_TRUE(has_note(rec, "graphics processes (type G")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "/usr/lib/xorg/Xorg, /usr/bin/gnome-shell")) << all_notes(rec);
  // GPU 1: a name nvidia-smi cut short from the left is kept as printed.
  ASSERT_EQ(g1.processes.size(), 2u);
  EXPECT_EQ(g1.processes[0].name, "...es/ray/core/src/ray/raylet/raylet");
  EXPECT_EQ(g1.processes[1].max_memory_mib, 39802);
}

TEST(SmiTable, NaPowerCapAndUnsupportedMemoryOnGb10) {
  const Recording rec = read_ok(fixture("gb10_580_na_cap.txt"));
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(col(g, Field::kPower), (std::vector<double>{105, 98, 101}));
  EXPECT_FALSE(g.has(Field::kPowerLimitEnforced));
  EXPECT_FALSE(g.has(Field::kMemUsed));
  EXPECT_EQ(g.unsupported.at(Field::kMemUsed), nvml_code::kNotSupported);
  EXPECT_EQ(g.unsupported.at(Field::kMemTotal), nvml_code::kNotSupported);
  EXPECT_EQ(g.info.mig_mode, std::nullopt);  // MIG M. "N/A"
  EXPECT_EQ(g.power_limit_source, "");
  EXPECT_TRUE(has_note(rec, "no power limit in the log and none known for \"NVIDIA GB10\""))
      << all_notes(rec);
  EXPECT_EQ(rec.system.cuda_driver_version, "13.0");

  SmiTableOptions opt;
  opt.power_limit_w = 140;
  const Recording with = read_ok(fixture("gb10_580_na_cap.txt"), opt);
  EXPECT_EQ(with.gpus[0].power_limit_source, "flag");
  EXPECT_EQ(col(with.gpus[0], Field::kPowerLimitDefault), std::vector<double>(3, 140));
  EXPECT_TRUE(has_note(with, "power limit 140 W from --power-limit")) << all_notes(with);
}

TEST(SmiTable, OldDriverWithoutCudaVersionNaPowerAndNoProcessList) {
  const Recording rec = read_ok(fixture("gtx560ti_390_na_power.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.system.driver_version, "390.116");
  EXPECT_EQ(rec.system.cuda_driver_version, "");
  EXPECT_FALSE(rec.gpus[0].has(Field::kPower));
  EXPECT_FALSE(rec.gpus[0].has(Field::kUtilGpu));
  EXPECT_EQ(col(rec.gpus[0], Field::kFan), (std::vector<double>{40, 40}));
  EXPECT_EQ(rec.gpus[1].info.persistence_mode, false);
  EXPECT_FALSE(rec.gpus[0].processes_recorded);
  EXPECT_TRUE(rec.gpus[0].processes.empty());
  EXPECT_TRUE(has_note(rec, "could not list the processes of GPU(s) 0, 1")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "for: power.draw [W], enforced.power.limit [W], utilization.gpu [%]"))
      << all_notes(rec);
}

// MIG mode on (R535 layout): memory and GPU-Util of the whole GPU are N/A, the MIG devices
// table is skipped, processes carry GPU instance ids and one pid in two instances adds up.
TEST(SmiTable, MigEnabledGpuWithItsMigDevicesTable) {
  const std::string table = R"(Wed Feb 14 08:49:09 2024
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                   On |
| N/A   33C    P0              85W / 400W |                  N/A |     N/A      Default |
|                                         |                      |              Enabled |
+-----------------------------------------+----------------------+----------------------+

+---------------------------------------------------------------------------------------+
| MIG devices:                                                                          |
+------------------+--------------------------------+-----------+-----------------------+
| GPU  GI  CI  MIG |                   Memory-Usage |        Vol|      Shared           |
|      ID  ID  Dev |                     BAR1-Usage | SM     Unc| CE ENC DEC OFA JPG    |
|                  |                                |        ECC|                       |
|==================+================================+===========+=======================|
|  0    1   0   0  |           9820MiB / 40192MiB   | 42      0 |  3   0    2    0    0 |
|                  |              2MiB / 65535MiB   |           |                       |
+------------------+--------------------------------+-----------+-----------------------+
|  0    2   0   1  |           9820MiB / 40192MiB   | 42      0 |  3   0    2    0    0 |
|                  |              2MiB / 65535MiB   |           |                       |
+------------------+--------------------------------+-----------+-----------------------+
+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    0    1    0      34965      C   python                                     9807MiB |
|    0    2    0      34965      C   python                                     9807MiB |
|    0    2    0      46505      C   /usr/bin/python3                            149MiB |
+---------------------------------------------------------------------------------------+
)";
  std::string text = table;
  std::string second = table;
  second.replace(second.find("08:49:09"), 8, "08:49:10");
  text += second;
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(g.size(), 2u) << all_notes(rec);
  EXPECT_EQ(g.info.mig_mode, true);
  EXPECT_EQ(g.info.architecture, Architecture::kAmpere);
  EXPECT_FALSE(g.has(Field::kMemUsed));
  EXPECT_FALSE(g.has(Field::kUtilGpu));
  EXPECT_EQ(col(g, Field::kPower), (std::vector<double>{85, 85}));
  ASSERT_EQ(g.processes.size(), 2u);
  EXPECT_EQ(g.processes[0].pid, 34965u);
  EXPECT_EQ(g.processes[0].max_memory_mib, 2 * 9807);
  EXPECT_EQ(g.processes[0].last_s, 1);
  EXPECT_EQ(g.processes[1].name, "/usr/bin/python3");
  EXPECT_FALSE(has_note(rec, "skipped")) << all_notes(rec);
}

// ---------------------------------------------------------------------------------------------
// Bad input

TEST(SmiTable, SkipsASnapshotWithOtherGpusAndSaysSo) {
  const auto snaps = snapshots(fixture("h100_535_2gpu_lms500.txt"));
  ASSERT_EQ(snaps.size(), 6u);
  const std::string text = snaps[0] + snaps[2] + without_gpu(snaps[4], 1);
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_EQ(rec.gpus[0].size(), 2u) << all_notes(rec);
  EXPECT_TRUE(has_note(rec,
                       "skipped 1 snapshot(s) with other GPUs than the first snapshot "
                       "(first: smi.log:"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "GPU(s) 0 where the first snapshot has 2 GPU(s)")) << all_notes(rec);
}

TEST(SmiTable, SkipsSnapshotsWhoseTimeGoesBack) {
  const auto snaps = snapshots(fixture("v100_418_4gpu_l5.txt"));
  const Recording rec = read_ok(snaps[0] + snaps[2] + snaps[1] + snaps[3]);
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 10, 15}));
  EXPECT_TRUE(has_note(rec, "skipped 1 snapshot(s) whose time did not advance")) << all_notes(rec);
}

TEST(SmiTable, GarbageBetweenSnapshotsAndAGarbledRow) {
  auto snaps = snapshots(fixture("v100_418_4gpu_l5.txt"));
  std::string broken = snaps[2];
  const size_t at = broken.find("| N/A   ");
  ASSERT_NE(at, std::string::npos);
  broken.replace(at, 8, "| N/A ?? ");  // a row that no longer has fan, temp, perf, power
  const std::string text =
      "$ nvidia-smi -l 5 | tee smi.log\n" + snaps[0] + snaps[1] + "Killed\n\n" + broken + snaps[3];
  const Recording rec = read_ok(text);
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 5, 15})) << all_notes(rec);
  EXPECT_TRUE(has_note(rec,
                       "skipped 2 line(s) that are not part of an nvidia-smi table "
                       "(first: smi.log:1: \"$ nvidia-smi -l 5 | tee smi.log\")"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "skipped 1 snapshot(s) with a table gpudoctor cannot read"))
      << all_notes(rec);
}

// The GPU rows are read by the column catalogue's reader under the nvidia-smi query names: a cell
// it cannot read is no value (never 0), counted with the table's own line and the column's name.
TEST(SmiTable, AnUnreadableCellIsNamedByItsQueryNameAndLine) {
  std::string text = fixture("gb10_580_na_cap.txt");
  const size_t at = text.find("105W");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 4, "1x5W");
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  const auto power = col(rec.gpus[0], Field::kPower);
  ASSERT_EQ(power.size(), 3u);
  EXPECT_TRUE(std::isnan(power[0]));
  EXPECT_EQ(power[1], 98);
  EXPECT_TRUE(has_note(rec,
                       "1 unreadable value(s) taken as missing (first: smi.log:10: "
                       "power.draw [W]: cannot read \"1x5W\")"))
      << all_notes(rec);
  EXPECT_EQ(rec.source, "nvidia-smi table: smi.log");
  EXPECT_EQ(rec.start_unix_ms, 1762204065000);  // 2025-11-03 21:07:45, read as UTC
}

TEST(SmiTable, APowerCapOfNaTakesTheModelTablesLimit) {
  auto snaps = snapshots(fixture("h100_535_2gpu_lms500.txt"));
  std::string text = snaps[0] + snaps[2];
  for (size_t at; (at = text.find(" / 700W")) != std::string::npos;) text.replace(at, 7, " /  N/A");
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_EQ(rec.gpus[0].power_limit_source, "model-table");
  EXPECT_EQ(col(rec.gpus[0], Field::kPowerLimitDefault), (std::vector<double>{700, 700}));
  EXPECT_TRUE(has_note(rec, "power limit 700 W from the model table for NVIDIA H100 80GB HBM3"))
      << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "for: fan.speed [%], enforced.power.limit [W]")) << all_notes(rec);
}

TEST(SmiTable, ATableWithoutDateLinesIsOneSecondApart) {
  std::string text;
  for (const auto& s : snapshots(fixture("gb10_580_na_cap.txt")))
    text += s.substr(s.find('\n') + 1);
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u);
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(rec.start_unix_ms, 0);
  EXPECT_TRUE(has_note(rec, "no time column: rows taken as 1 s apart")) << all_notes(rec);
}

TEST(SmiTable, ClearErrors) {
  EXPECT_NE(read_error("hello\nworld\n").find("no nvidia-smi table"), std::string::npos);
  const std::string cut = fixture("v100_418_4gpu_l5.txt").substr(0, 600);
  EXPECT_NE(read_error(cut).find("no complete nvidia-smi snapshot"), std::string::npos)
      << read_error(cut);
  EXPECT_NE(read_error("").find("empty"), std::string::npos);
  SmiTableOptions bad;
  bad.power_limit_w = -5;
  EXPECT_NE(read_error(fixture("gb10_580_na_cap.txt"), bad).find("--power-limit"),
            std::string::npos);
}

TEST(SmiTable, NeverThrowsOrCrashesOnMangledInput) {
  const std::string text = fixture("a100_470_4gpu_mig_row.txt");
  for (size_t cut = 0; cut < text.size(); cut += 97) {
    auto r = read_smi_table(text.substr(0, cut), "x", {});
    // The reader's guard turns an exception into an error: one of those is a throw, a failure.
    if (!r.ok()) {
      EXPECT_NE(r.error().code, Error::Code::kInternal)
          << "cut at " << cut << ": " << r.error().message;
      continue;
    }
    for (const auto& g : r.value().gpus) EXPECT_GT(g.size(), 0u);
  }
  // Every line dropped once.
  std::vector<std::string> lines;
  std::istringstream in(fixture("rtx6000ada_570_2gpu_crlf.txt"));
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (size_t drop = 0; drop < lines.size(); ++drop) {
    std::string t;
    for (size_t i = 0; i < lines.size(); ++i)
      if (i != drop) t += lines[i] + "\n";
    auto r = read_smi_table(t, "x", {});
    if (r.ok()) {
      EXPECT_GE(r.value().gpus.size(), 1u);
    } else {
      EXPECT_NE(r.error().code, Error::Code::kInternal)
          << "line " << drop << " dropped: " << r.error().message;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Detection

TEST(SmiTable, IsRecognisedByContentAndOffered) {
  for (const char* f :
       {"v100_418_4gpu_l5.txt", "a100_470_4gpu_mig_row.txt", "h100_535_2gpu_lms500.txt",
        "rtx6000ada_570_2gpu_crlf.txt", "gb10_580_na_cap.txt", "gtx560ti_390_na_power.txt"}) {
    EXPECT_TRUE(looks_like_smi_table(fixture(f).substr(0, 4096))) << f;
    LoadOptions o;
    auto r = load_telemetry(kDir + f, o);
    ASSERT_TRUE(r.ok()) << f << ": " << r.error().message;
    EXPECT_EQ(r.value().source.rfind("nvidia-smi table: ", 0), 0u) << f;
  }
  EXPECT_FALSE(
      looks_like_smi_table("timestamp, index, power.draw [W]\n2024/05/14 10:31:07.412, "
                           "0, 152.34 W\n"));
  EXPECT_FALSE(
      looks_like_smi_table("# gpu    pwr  gtemp\n# Idx      W      C\n    0     61     33\n"));
  const auto formats = input_formats();
  EXPECT_NE(std::find(formats.begin(), formats.end(), "smi-table"), formats.end());
}

// ---------------------------------------------------------------------------------------------
// nvitop -1 / --once: the same GPU table drawn in box-drawing characters (fixtures written in the
// layout nvitop's device, host and process panels print, with made-up values)

// nvitop's --ascii output of a snapshot drawn in box drawing (the characters nvitop maps).
std::string nvitop_ascii(std::string s) {
  static const std::vector<std::pair<std::string, std::string>> kMap = {
      {"═", "="}, {"─", "-"}, {"╒", "+"}, {"╕", "+"}, {"╪", "+"}, {"╘", "+"},
      {"╧", "+"}, {"╛", "+"}, {"┬", "+"}, {"┼", "+"}, {"│", "|"}, {"╞", "|"},
      {"╡", "|"}, {"├", "|"}, {"┤", "|"}, {"█", "|"}, {"▏", "|"}, {"▎", "|"},
      {"▍", "|"}, {"▌", "|"}, {"▋", "|"}, {"▊", "|"}, {"▉", "|"}, {"░", "|"}};
  for (const auto& [from, to] : kMap)
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at))
      s.replace(at, from.size(), to);
  return s;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

TEST(NvitopTable, ReadsALoopOfOnceSnapshotsWithProcessesAndHostBars) {
  const Recording rec = read_ok(fixture("nvitop_rtx4090_2gpu_loop.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.source, "nvitop table: smi.log");
  EXPECT_EQ(rec.system.driver_version, "550.54.14");
  EXPECT_EQ(rec.system.cuda_driver_version, "12.4");  // "CUDA Driver Version: 12.4"
  EXPECT_EQ(rec.start_unix_ms, 1796119200000);        // Tue Dec 01 10:00:00 2026, read as UTC
  EXPECT_TRUE(has_note(rec, "local time of the machine that ran nvitop")) << all_notes(rec);
  // The host bars between the tables and the rules between GPUs are not garbage.
  EXPECT_FALSE(has_note(rec, "skipped")) << all_notes(rec);

  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_EQ(g0.info.name, "GeForce RTX 4090");  // nvitop drops "NVIDIA "
  EXPECT_EQ(g0.info.pci_bus_id, "00000000:01:00.0");
  EXPECT_EQ(g0.info.persistence_mode, false);
  EXPECT_FALSE(g0.info.mig_mode.has_value());  // no MIG M. column on these boards
  EXPECT_EQ(g0.info.architecture, Architecture::kAda);
  EXPECT_EQ(g0.time_s, (std::vector<double>{0, 5, 10}));
  EXPECT_EQ(col(g0, Field::kFan), (std::vector<double>{30, 31, 31}));
  EXPECT_EQ(col(g0, Field::kTemp), (std::vector<double>{62, 63, 63}));
  EXPECT_EQ(col(g0, Field::kPstate), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(col(g0, Field::kPower), (std::vector<double>{412, 415, 409}));
  EXPECT_EQ(col(g0, Field::kPowerLimitEnforced), std::vector<double>(3, 450));
  EXPECT_EQ(g0.power_limit_source, "log");
  EXPECT_EQ(col(g0, Field::kUtilGpu), (std::vector<double>{98, 99, 98}));
  EXPECT_EQ(col(g0, Field::kMemUsed)[0], 21852.16);   // "21.34GiB"
  EXPECT_EQ(col(g0, Field::kMemTotal)[0], 24565.76);  // "23.99GiB"
  EXPECT_EQ(col(g1, Field::kMemUsed), (std::vector<double>{18637, 18637, 312.5}));
  EXPECT_EQ(col(g1, Field::kPstate).back(), 8);
  EXPECT_EQ(col(g1, Field::kUtilGpu).back(), 0);

  // Processes: Xorg is graphics only; the trainer on GPU 0 runs throughout, the one on GPU 1
  // ends after the second snapshot. The name is nvitop's COMMAND, as cut to the terminal.
  EXPECT_TRUE(has_note(rec, "graphics processes (type G")) << all_notes(rec);
  EXPECT_TRUE(has_note(rec, "/usr/lib/..")) << all_notes(rec);
  ASSERT_EQ(g0.processes.size(), 1u);
  EXPECT_EQ(g0.processes[0].pid, 48213u);
  EXPECT_EQ(g0.processes[0].name, "python tr..");
  EXPECT_EQ(g0.processes[0].first_s, 0);
  EXPECT_EQ(g0.processes[0].last_s, 10);
  EXPECT_EQ(g0.processes[0].max_memory_mib, 21432.32);  // "20.93GiB"
  ASSERT_EQ(g1.processes.size(), 1u);
  EXPECT_EQ(g1.processes[0].pid, 48214u);
  EXPECT_EQ(g1.processes[0].last_s, 5);
  EXPECT_EQ(g1.processes[0].max_memory_mib, 18225);
}

TEST(NvitopTable, ReadsAWideSnapshotWithBarsMigModeAndMigDevices) {
  const Recording rec = read_ok(fixture("nvitop_h100_mig_wide.txt"));
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.start_unix_ms, 1796134951000);  // Tue Dec 01 14:22:31 2026
  EXPECT_FALSE(has_note(rec, "skipped")) << all_notes(rec);
  const GpuSeries& g0 = rec.gpus[0];
  const GpuSeries& g1 = rec.gpus[1];
  EXPECT_EQ(g0.info.name, "H100 80GB HBM3");
  EXPECT_EQ(g0.info.architecture, Architecture::kHopper);
  EXPECT_EQ(g0.info.mig_mode, false);  // the first row's "MIG M." cell
  EXPECT_EQ(g1.info.mig_mode, true);
  EXPECT_EQ(col(g0, Field::kPower), std::vector<double>{688});
  EXPECT_EQ(col(g0, Field::kPowerLimitEnforced), std::vector<double>{700});
  EXPECT_EQ(col(g0, Field::kUtilGpu), std::vector<double>{100});
  EXPECT_EQ(col(g0, Field::kMemUsed), std::vector<double>{72724.48});  // "71.02GiB"
  EXPECT_FALSE(g0.has(Field::kFan));                                   // N/A: no column, no 0
  EXPECT_FALSE(g1.has(Field::kUtilGpu));                               // N/A in MIG mode
  EXPECT_EQ(col(g1, Field::kPower), std::vector<double>{245});
  // The MIG devices' rows ("1:0", "1:1") are not GPUs; their processes are GPU 1's.
  ASSERT_EQ(g0.processes.size(), 1u);
  EXPECT_EQ(g0.processes[0].pid, 731942u);
  EXPECT_EQ(g0.processes[0].name, "/opt/conda/bin/python -m torch.distributed.run --np..");
  EXPECT_EQ(g0.processes[0].max_memory_mib, 72683.52);
  ASSERT_EQ(g1.processes.size(), 2u);
  EXPECT_EQ(g1.processes[0].pid, 733105u);
  EXPECT_EQ(g1.processes[0].name, "python serve.py --model llama-70b --port 8000");
  EXPECT_EQ(g1.processes[0].max_memory_mib, 38400);
  EXPECT_EQ(g1.processes[1].pid, 741377u);
  EXPECT_EQ(g1.processes[1].name, "");  // "No Such Process": nvitop could not read it
}

TEST(NvitopTable, ReadsAsciiOutputAcrossMidnightWithoutProcesses) {
  const Recording rec = read_ok(fixture("nvitop_t4_ascii_midnight.txt"));
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  EXPECT_EQ(rec.source, "nvitop table: smi.log");
  EXPECT_EQ(rec.system.driver_version, "470.239.06");
  EXPECT_EQ(rec.system.cuda_driver_version, "11.4");
  EXPECT_EQ(rec.start_unix_ms, 1796083198000);  // Mon Nov 30 23:59:58 2026
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(g.info.name, "Tesla T4");
  EXPECT_EQ(g.time_s, (std::vector<double>{0, 30}));
  EXPECT_EQ(col(g, Field::kPower), (std::vector<double>{9, 10}));
  EXPECT_EQ(col(g, Field::kMemUsed), (std::vector<double>{2, 2}));  // "2.00MiB"
  EXPECT_TRUE(g.processes_recorded);  // "No running processes found": known to be none
  EXPECT_TRUE(g.processes.empty());
  EXPECT_FALSE(has_note(rec, "skipped")) << all_notes(rec);
}

TEST(NvitopTable, AsciiAndBoxDrawingReadTheSame) {
  const std::string text = fixture("nvitop_rtx4090_2gpu_loop.txt");
  const std::string ascii = nvitop_ascii(text);
  ASSERT_EQ(ascii.find("\xE2"), std::string::npos);  // nothing left of the box drawing
  const Recording a = read_ok(text), b = read_ok(ascii);
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    EXPECT_EQ(a.gpus[i].time_s, b.gpus[i].time_s);
    for (const Field f : {Field::kPower, Field::kMemUsed, Field::kUtilGpu, Field::kFan})
      EXPECT_EQ(col(a.gpus[i], f), col(b.gpus[i], f));
    EXPECT_EQ(a.gpus[i].processes.size(), b.gpus[i].processes.size());
  }
  EXPECT_EQ(a.notes, b.notes);
  // Colour codes (nvitop --colorful, or a terminal captured with script) change nothing.
  const std::string colored = replaced(replaced(text, "│ ", "│\x1b[32m "), " │", " \x1b[0m│");
  const Recording c = read_ok(colored);
  ASSERT_EQ(c.gpus.size(), 2u) << all_notes(c);
  EXPECT_EQ(col(c.gpus[1], Field::kPower), col(a.gpus[1], Field::kPower));
  EXPECT_EQ(c.gpus[0].processes.size(), 1u);
}

TEST(NvitopTable, WithoutDateLinesSnapshotsAreOneSecondApart) {
  std::string text;
  std::istringstream in(fixture("nvitop_rtx4090_2gpu_loop.txt"));
  for (std::string l; std::getline(in, l);)
    if (!l.starts_with("Tue Dec")) text += l + "\n";
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 2u) << all_notes(rec);
  EXPECT_EQ(rec.gpus[0].time_s, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(rec.start_unix_ms, 0);
  EXPECT_TRUE(has_note(rec, "no time column: rows taken as 1 s apart")) << all_notes(rec);
  EXPECT_EQ(rec.gpus[1].processes.at(0).last_s, 1);
}

TEST(NvitopTable, NamesCutOnTheLeftFansAtMaxAndMemoryInBytes) {
  std::string text = fixture("nvitop_t4_ascii_midnight.txt");
  text = replaced(text, "Tesla T4        ", "..0 SFF Ada Generation");
  text = replaced(text, "| N/A   34C    P8      9W", "| MAX   34C    P8      9W");
  text = replaced(text, "2.00MiB / 15360MiB", "0B / 15360MiB");
  const Recording rec = read_ok(text);
  ASSERT_EQ(rec.gpus.size(), 1u) << all_notes(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(g.info.name, "..0 SFF Ada Generation");
  EXPECT_EQ(g.info.architecture, Architecture::kAda);
  EXPECT_TRUE(
      has_note(rec,
               "GPU name \"..0 SFF Ada Generation\" is cut short in nvitop's table: it fits "
               "NVIDIA RTX 4000 SFF Ada Generation"))
      << all_notes(rec);
  const auto fan = col(g, Field::kFan);
  ASSERT_EQ(fan.size(), 2u);
  EXPECT_EQ(fan[0], 100);                                           // "MAX": 100 % or more
  EXPECT_TRUE(std::isnan(fan[1]));                                  // "N/A"
  EXPECT_EQ(col(g, Field::kMemUsed), (std::vector<double>{0, 0}));  // "0B"
  EXPECT_FALSE(has_note(rec, "unreadable")) << all_notes(rec);
}

TEST(NvitopTable, ClearErrorsAndCutSnapshots) {
  const std::string text = fixture("nvitop_rtx4090_2gpu_loop.txt");
  // Cut inside the first GPU table: nothing whole to read, said as nvitop's.
  EXPECT_EQ(read_error(text.substr(0, 1200)),
            "smi.log: no complete nvitop snapshot (smi.log:1: no complete GPU table at the end of "
            "the file)");
  // Cut inside the last snapshot's process table: that snapshot is skipped and counted.
  const Recording rec = read_ok(text.substr(0, text.size() - 200));
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_EQ(rec.gpus[0].size(), 2u);
  EXPECT_TRUE(has_note(rec, "skipped 1 snapshot(s) cut short")) << all_notes(rec);
  // A process row nvitop did not write (no PID): that snapshot is skipped, with the row quoted.
  const Recording bad = read_ok(replaced(text, "│   1   48214 C", "│   1   ????? C"));
  EXPECT_EQ(bad.gpus[0].size(), 1u);
  EXPECT_TRUE(has_note(bad, "with a table gpudoctor cannot read")) << all_notes(bad);
  EXPECT_TRUE(has_note(bad, "cannot read the process table row \"|   1   ????? C"))
      << all_notes(bad);
}

TEST(NvitopTable, IsRecognisedByContentAndOffered) {
  for (const char* f : {"nvitop_rtx4090_2gpu_loop.txt", "nvitop_h100_mig_wide.txt",
                        "nvitop_t4_ascii_midnight.txt"}) {
    EXPECT_TRUE(looks_like_smi_table(fixture(f).substr(0, 4096))) << f;
    LoadOptions o;
    auto r = load_telemetry(kDir + f, o);
    ASSERT_TRUE(r.ok()) << f << ": " << r.error().message;
    EXPECT_EQ(r.value().source.rfind("nvitop table: ", 0), 0u) << f;
    o.input_format = "nvitop";
    ASSERT_TRUE(load_telemetry(kDir + f, o).ok()) << f;
  }
}

}  // namespace
}  // namespace gpudoctor
