// Bad input for every reader family: files cut short (mid-line, mid-value, mid-header), binary
// garbage, wrong delimiters, a header with no rows, timestamps going backwards, duplicate rows,
// empty files, UTF-16 (with and without its byte order mark: decoded) and very long lines. Each
// case ends in a precise error (with file:line where there is a line to name) or in the bad rows
// skipped and counted in a note; none crashes, hangs or reads a wrong value. Then shapes that once
// took quadratic time, unit conversions, and the inputs the fuzz targets (fuzz/) found, minimized.
// docs/formats.md ("Bad input") lists the same outcomes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/capture_reader.hpp"
#include "formats/dcgm.hpp"
#include "formats/generic_csv.hpp"
#include "formats/load.hpp"
#include "formats/smi_csv.hpp"
#include "test_helpers.hpp"

namespace gpudoctor {
namespace {

using test_util::all_notes;

// What a reader must do with an input: refuse it with exactly `error`, or read `rows` samples
// (all GPUs together) and have `note` among its notes ("" for none in particular) and no note
// with "skipped" when `clean`.
struct Want {
  std::string error;
  size_t rows = 0;
  std::string note;
};

Want refused(std::string error) {
  return {std::move(error), 0, {}};
}
Want read(size_t rows, std::string note = {}) {
  return {{}, rows, std::move(note)};
}

struct Case {
  std::string format;  // --input-format ("auto": chosen by content)
  std::string name;
  std::string text;
  Want want;
};

std::string cut(std::string_view s, size_t n) {
  return std::string(s.substr(0, n));
}
// s without its last n bytes.
std::string drop(std::string_view s, size_t n) {
  return std::string(s.substr(0, s.size() - n));
}
std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  size_t start = 0;
  for (size_t at = s.find(from); at != std::string_view::npos; at = s.find(from, start)) {
    out.append(s.substr(start, at - start));
    out.append(to);
    start = at + from.size();
  }
  out.append(s.substr(start));
  return out;
}
// ASCII text as UTF-16LE, as Windows PowerShell's > writes it.
std::string utf16(std::string_view s, bool bom) {
  std::string out = bom ? "\xFF\xFE" : "";
  for (const char c : s) {
    out += c;
    out += '\0';
  }
  return out;
}
// Bytes no text log has (deterministic).
std::string garbage() {
  std::string g;
  for (int i = 0; i < 2000; ++i) g.push_back(static_cast<char>((i * 7919 + 13) % 256));
  return g;
}
const std::string kMegabyte(1 << 20, 'x');
const std::string kMegabyteOfDigits(1 << 20, '7');
// A message about kMegabyteOfDigits, as notes cut it: at 200 bytes, "..." added.
std::string cut_message(std::string_view start) {
  return std::string(start) + std::string(200 - start.size(), '7') + "...";
}

// UTF-16 is decoded at the edge (formats/encoding.hpp), whatever the reader.
const std::string kUtf16LeNote = "the file is UTF-16 LE text: decoded to UTF-8";

// ---------------------------------------------------------------------------------------------
// nvidia-smi --query-gpu CSV

const std::string kSmiHeader = "timestamp, index, name, utilization.gpu [%], power.draw [W]\n";
const std::string kSmiRow1 = "2024/05/14 10:31:07.412, 0, NVIDIA A100-SXM4-40GB, 99 %, 152.34 W\n";
const std::string kSmiRow2 = "2024/05/14 10:31:08.412, 0, NVIDIA A100-SXM4-40GB, 98 %, 150.00 W\n";
const std::string kSmiRow3 = "2024/05/14 10:31:09.412, 0, NVIDIA A100-SXM4-40GB, 97 %, 149.00 W\n";
const std::string kSmi = kSmiHeader + kSmiRow1 + kSmiRow2 + kSmiRow3;

std::vector<Case> smi_csv_cases() {
  const std::string f = "smi-csv";
  return {
      {f, "complete", kSmi, read(3)},
      {f, "cut mid-line", drop(kSmi, 30),
       read(2,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:4: the last line "
            "is cut short (3 of 5 cells, no line end))")},
      // "149.0" would read as a number: the unended last line is never taken.
      {f, "cut mid-value", drop(kSmi, 4),
       read(2,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:4: the last line "
            "is cut short (5 of 5 cells, no line end))")},
      {f, "cut mid-header", cut(kSmi, 30),
       refused("in.log:1: a header line but no data rows (the file ends inside it: cut short)")},
      {f, "binary garbage", garbage(), refused("in.log: binary data, not a CSV log")},
      // Another separator (a spreadsheet's export): read all the same.
      {f, "semicolons", replace_all(kSmi, ", ", ";"), read(3)},
      {f, "tabs", replace_all(kSmi, ", ", "\t"), read(3)},
      {"auto", "semicolons, by content", replace_all(kSmi, ", ", ";"), read(3)},
      {f, "header, no rows", kSmiHeader, refused("in.log:1: a header line but no data rows")},
      {f, "header twice, no rows", kSmiHeader + "\n" + kSmiHeader,
       refused("in.log:1: a header line but no data rows")},
      {f, "time going backwards", kSmiHeader + kSmiRow1 + kSmiRow3 + kSmiRow2,
       read(2,
            "skipped 1 line(s) whose time did not advance for their GPU (first: in.log:4: time 1 "
            "s is not after the GPU's previous row (2 s))")},
      {f, "duplicate row", kSmiHeader + kSmiRow1 + kSmiRow2 + kSmiRow2 + kSmiRow3,
       read(3,
            "skipped 1 line(s) whose time did not advance for their GPU (first: in.log:4: time 1 "
            "s is not after the GPU's previous row (1 s))")},
      {f, "empty", "", refused("in.log: empty file")},
      {f, "blank lines only", "\n \r\n\t\n", refused("in.log: empty file")},
      {f, "UTF-16", utf16(kSmi, true), read(3, kUtf16LeNote)},
      {f, "UTF-16 without BOM", utf16(kSmi, false), read(3, kUtf16LeNote)},
      {f, "a megabyte value",
       kSmiHeader + kSmiRow1 + replace_all(kSmiRow2, "150.00", kMegabyteOfDigits),
       read(2, std::string("1 unreadable value(s) taken as missing (first: in.log:3: ") +
                   cut_message("power.draw [W]: cannot read \"") + ")")},
      {f, "a megabyte line of text", kSmiHeader + kSmiRow1 + kMegabyte + "\n" + kSmiRow2,
       read(2,
            "skipped 1 line(s) with the wrong number of cells (first: in.log:3: expected 5 "
            "cells, found 1)")},
  };
}

// ---------------------------------------------------------------------------------------------
// Plain nvidia-smi table snapshots

// clang-format off
std::string smi_snapshot(std::string_view date, std::string_view power) {
  return std::string(date) + "\n"
         "+---------------------------------------------------------------------------------------+\n"
         "| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
         "|-----------------------------------------+----------------------+----------------------+\n"
         "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
         "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |\n"
         "|                                         |                      |               MIG M. |\n"
         "|=========================================+======================+======================|\n"
         "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |\n"
         "| N/A   36C    P0             " + std::string(power) + " / 700W |  16273MiB / 81559MiB |     26%      Default |\n"
         "|                                         |                      |             Disabled |\n"
         "+-----------------------------------------+----------------------+----------------------+\n"
         "\n"
         "+---------------------------------------------------------------------------------------+\n"
         "| Processes:                                                                            |\n"
         "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |\n"
         "|        ID   ID                                                             Usage      |\n"
         "|=======================================================================================|\n"
         "|    0   N/A  N/A   3375095      C   /usr/bin/python                           16254MiB |\n"
         "+---------------------------------------------------------------------------------------+\n";
}
// clang-format on
const std::string kTable1 = smi_snapshot("Wed Feb 14 08:49:09 2024", "245W");
const std::string kTable2 = smi_snapshot("Wed Feb 14 08:49:10 2024", "246W");
const std::string kTable3 = smi_snapshot("Wed Feb 14 08:49:11 2024", "247W");
const std::string kTables = kTable1 + kTable2 + kTable3;

std::vector<Case> smi_table_cases() {
  const std::string f = "smi-table";
  // The line the third snapshot starts on.
  const std::string third = std::to_string(2 * 20 + 1);
  return {
      {f, "complete", kTables, read(3)},
      {f, "cut mid-line", drop(kTables, 100),
       read(2, std::string("skipped 1 snapshot(s) cut short (first: in.log:") + third +
                   ": no complete process table at the end of the file)")},
      {f, "cut mid-GPU-table", kTable1 + kTable2 + cut(kTable3, 800),
       read(2, std::string("skipped 1 snapshot(s) cut short (first: in.log:") + third +
                   ": no complete GPU table at the end of the file)")},
      {f, "cut mid-banner", cut(kTables, 150),
       refused("in.log: no nvidia-smi table (\"| NVIDIA-SMI ... Driver Version: ... |\" and the "
               "GPU table below it); is this the output of plain nvidia-smi?")},
      {f, "binary garbage", garbage(), refused("in.log: binary data, not nvidia-smi table output")},
      {f, "CSV instead of a table", kSmi,
       refused("in.log: no nvidia-smi table (\"| NVIDIA-SMI ... Driver Version: ... |\" and the "
               "GPU table below it); is this the output of plain nvidia-smi?")},
      {f, "header, no GPU rows", cut(kTable1, 660),
       refused("in.log: no complete nvidia-smi snapshot (in.log:1: no complete GPU table at the "
               "end of the file)")},
      {f, "time going backwards", kTable1 + kTable3 + kTable2,
       read(2, std::string("skipped 1 snapshot(s) whose time did not advance (first: in.log:") +
                   third + ": 2024-02-14 08:49:10.000 is not after the snapshot before)")},
      // A snapshot twice with one date: as nvidia-smi -lms prints several a second, spread over
      // that second and said so.
      {f, "duplicate snapshot", kTable1 + kTable2 + kTable2 + kTable3,
       read(4,
            "2 snapshots share their date second with another (nvidia-smi -lms, or a late "
            "sample): spread evenly over that second")},
      {f, "empty", "", refused("in.log: empty file")},
      {f, "UTF-16", utf16(kTables, true), read(3, kUtf16LeNote)},
      {f, "UTF-16 without BOM", utf16(kTables, false), read(3, kUtf16LeNote)},
      {f, "a megabyte line between snapshots", kTable1 + kMegabyte + "\n" + kTable2,
       read(
           2,
           std::string(
               "skipped 1 line(s) that are not part of an nvidia-smi table (first: in.log:21: \"") +
               std::string(60, 'x') + "\")")},
  };
}

// ---------------------------------------------------------------------------------------------
// nvitop -1 (the same table reader: box drawing, host bars, its own process table)

// clang-format off
std::string nvitop_snapshot(std::string_view date, std::string_view power) {
  return std::string(date) + "\n"
         "╒═════════════════════════════════════════════════════════════════════════════╕\n"
         "│ NVITOP 1.3.2       Driver Version: 550.54.14      CUDA Driver Version: 12.4 │\n"
         "├───────────────────────────────┬──────────────────────┬──────────────────────┤\n"
         "│ GPU  Name        Persistence-M│ Bus-Id        Disp.A │ Volatile Uncorr. ECC │\n"
         "│ Fan  Temp  Perf  Pwr:Usage/Cap│         Memory-Usage │ GPU-Util  Compute M. │\n"
         "╞═══════════════════════════════╪══════════════════════╪══════════════════════╡\n"
         "│   0  GeForce RTX 4090     Off │ 00000000:01:00.0  On │                  N/A │\n"
         "│ 30%   62C    P2   " + std::string(power) + " / 450W │  21.34GiB / 23.99GiB │     98%      Default │\n"
         "╘═══════════════════════════════╧══════════════════════╧══════════════════════╛\n"
         "[ CPU: █████▍ 18.4%     UPTIME: 3.2 days ]  ( Load Average:  2.31  2.20  2.05 )\n"
         "[ MEM: ████████████▏ 41.7%               ]  [ SWP: ▏ 0.0%                     ]\n"
         "\n"
         "╒═════════════════════════════════════════════════════════════════════════════╕\n"
         "│ Processes:                                                    alice@ws-4090 │\n"
         "│ GPU     PID      USER  GPU-MEM %SM %GMBW  %CPU  %MEM     TIME  COMMAND      │\n"
         "╞═════════════════════════════════════════════════════════════════════════════╡\n"
         "│   0   48213 C   alice 20.93GiB  97    41 100.3   2.1  1:02:17  python tr..  │\n"
         "╘═════════════════════════════════════════════════════════════════════════════╛\n";
}
// clang-format on
const std::string kNvitop1 = nvitop_snapshot("Tue Dec 01 10:00:00 2026", "412W");
const std::string kNvitop2 = nvitop_snapshot("Tue Dec 01 10:00:01 2026", "415W");
const std::string kNvitop3 = nvitop_snapshot("Tue Dec 01 10:00:02 2026", "409W");
const std::string kNvitops = kNvitop1 + kNvitop2 + kNvitop3;

// nvitop --ascii: the same snapshots without box drawing.
std::string nvitop_ascii(std::string s) {
  for (const auto& [from, to] :
       std::vector<std::pair<std::string_view, std::string_view>>{{"═", "="},
                                                                  {"─", "-"},
                                                                  {"╒", "+"},
                                                                  {"╕", "+"},
                                                                  {"╪", "+"},
                                                                  {"╘", "+"},
                                                                  {"╧", "+"},
                                                                  {"╛", "+"},
                                                                  {"┬", "+"},
                                                                  {"│", "|"},
                                                                  {"╞", "|"},
                                                                  {"╡", "|"},
                                                                  {"├", "|"},
                                                                  {"┤", "|"},
                                                                  {"█", "|"},
                                                                  {"▏", "|"},
                                                                  {"▍", "|"}})
    s = replace_all(s, from, to);
  return s;
}

std::vector<Case> nvitop_cases() {
  const std::string f = "nvitop";
  const std::string third = std::to_string(2 * 19 + 1);
  return {
      {f, "complete", kNvitops, read(3)},
      {f, "cut mid-line", drop(kNvitops, 100),
       read(2, std::string("skipped 1 snapshot(s) cut short (first: in.log:") + third +
                   ": no complete process table at the end of the file)")},
      {f, "cut mid-GPU-table", kNvitop1 + kNvitop2 + cut(kNvitop3, 800),
       read(2, std::string("skipped 1 snapshot(s) cut short (first: in.log:") + third +
                   ": no complete GPU table at the end of the file)")},
      {f, "cut mid-banner", cut(kNvitops, 150),
       refused("in.log: no nvidia-smi table (\"| NVIDIA-SMI ... Driver Version: ... |\" and the "
               "GPU table below it); is this the output of plain nvidia-smi?")},
      {f, "binary garbage", garbage(), refused("in.log: binary data, not nvidia-smi table output")},
      {f, "header, no GPU rows", kNvitop1.substr(0, kNvitop1.find("│   0  GeForce")),
       refused("in.log: no complete nvitop snapshot (in.log:1: no complete GPU table at the end "
               "of the file)")},
      {f, "time going backwards", kNvitop1 + kNvitop3 + kNvitop2,
       read(2, std::string("skipped 1 snapshot(s) whose time did not advance (first: in.log:") +
                   third + ": 2026-12-01 10:00:01.000 is not after the snapshot before)")},
      {f, "duplicate snapshot", kNvitop1 + kNvitop2 + kNvitop2 + kNvitop3,
       read(4,
            "2 snapshots share their date second with another (a loop faster than once a second, "
            "or a late sample): spread evenly over that second")},
      {f, "empty", "", refused("in.log: empty file")},
      {f, "UTF-16 (--ascii, PowerShell's >)", utf16(nvitop_ascii(kNvitops), true),
       read(3, kUtf16LeNote)},
      {f, "a megabyte line between snapshots", kNvitop1 + kMegabyte + "\n" + kNvitop2,
       read(2, std::string("skipped 1 line(s) that are not part of an nvitop table (first: "
                           "in.log:20: \"") +
                   std::string(60, 'x') + "\")")},
  };
}

// ---------------------------------------------------------------------------------------------
// nvidia-smi dmon

const std::string kDmonHeader =
    "#Date       Time        gpu    pwr  gtemp     sm    mem\n"
    "#YYYYMMDD   HH:MM:SS    Idx      W      C      %      %\n";
const std::string kDmonRow1 = " 20240514   10:31:07      0     61     33     10     20\n";
const std::string kDmonRow2 = " 20240514   10:31:08      0     62     33     11     21\n";
const std::string kDmonRow3 = " 20240514   10:31:09      0     63     34     12     22\n";
const std::string kDmon = kDmonHeader + kDmonRow1 + kDmonRow2 + kDmonRow3;

std::vector<Case> dmon_cases() {
  const std::string f = "dmon";
  return {
      {f, "complete", kDmon, read(3)},
      {f, "cut mid-line", drop(kDmon, 20),
       read(2,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:5: the last line "
            "is cut short (4 of 7 cells, no line end))")},
      {f, "cut mid-value", drop(kDmon, 2),
       read(2,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:5: the last line "
            "is cut short (7 of 7 cells, no line end))")},
      {f, "cut mid-header", cut(kDmon, 30),
       refused("in.log:1: a header line but no data rows (the file ends inside it: cut short)")},
      {f, "binary garbage", garbage(), refused("in.log: binary data, not nvidia-smi dmon output")},
      {f, "commas", replace_all(replace_all(kDmon, "   ", ","), ",,", ","),
       refused("in.log: no nvidia-smi dmon header line (\"# gpu   pwr  gtemp ...\"); is this "
               "dmon output?")},
      {f, "rows with commas", kDmonHeader + replace_all(kDmonRow1, "     ", ","),
       refused("in.log: no readable rows (in.log:3: expected 7 cells, found 3)")},
      {f, "header, no rows", kDmonHeader, refused("in.log:1: a header line but no data rows")},
      {f, "time going backwards", kDmonHeader + kDmonRow1 + kDmonRow3 + kDmonRow2,
       read(2,
            "skipped 1 line(s) whose time did not advance for their GPU (first: in.log:5: time 1 "
            "s is not after the GPU's previous row (2 s))")},
      {f, "duplicate row", kDmonHeader + kDmonRow1 + kDmonRow2 + kDmonRow2 + kDmonRow3,
       read(3,
            "skipped 1 line(s) whose time did not advance for their GPU (first: in.log:5: time 1 "
            "s is not after the GPU's previous row (1 s))")},
      {f, "empty", "", refused("in.log: empty file")},
      {f, "UTF-16", utf16(kDmon, true), read(3, kUtf16LeNote)},
      {f, "UTF-16 without BOM", utf16(kDmon, false), read(3, kUtf16LeNote)},
      {f, "a megabyte value",
       kDmonHeader + kDmonRow1 +
           replace_all(kDmonRow2, " 62 ", std::string(" ") + kMegabyteOfDigits + " "),
       read(2, std::string("1 unreadable value(s) taken as missing (first: in.log:4: ") +
                   cut_message("pwr [W]: cannot read \"") + ")")},
      {f, "a megabyte line of text", kDmonHeader + kDmonRow1 + kMegabyte + "\n" + kDmonRow2,
       read(2,
            "skipped 1 line(s) with the wrong number of cells (first: in.log:4: expected 7 "
            "cells, found 1)")},
  };
}

// ---------------------------------------------------------------------------------------------
// dcgmi dmon

const std::string kDcgmiHeader =
    "#Entity   POWER    GPUTL  SMACT\n"
    "ID        W        %\n";
const std::string kDcgmiRow1 = "GPU 0     312.480  99     0.181\n";
const std::string kDcgmiRow2 = "GPU 0     309.120  98     0.177\n";
const std::string kDcgmiRow3 = "GPU 0     300.000  97     0.170\n";
const std::string kDcgmi = kDcgmiHeader + kDcgmiRow1 + kDcgmiRow2 + kDcgmiRow3;

std::vector<Case> dcgmi_dmon_cases() {
  const std::string f = "dcgmi-dmon";
  return {
      {f, "complete", kDcgmi, read(3)},
      {f, "cut mid-line", drop(kDcgmi, 10),
       read(2,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:5: the last line "
            "is cut short (3 of 4 cells, no line end))")},
      {f, "cut mid-value", drop(kDcgmi, 2),
       read(2,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:5: the last line "
            "is cut short (4 of 4 cells, no line end))")},
      {f, "cut mid-header", cut(kDcgmi, 20),
       refused("in.log:1: a dcgmi dmon header but no data rows (the file ends inside it: cut "
               "short)")},
      {f, "binary garbage", garbage(), refused("in.log: binary data, not dcgmi dmon output")},
      {f, "commas", kDcgmiHeader + "GPU,0,312.480,99,0.181\n",
       refused("in.log: no readable rows (in.log:3: not a dcgmi dmon row: \"GPU,0,312.480,99,"
               "0.181\")")},
      {f, "header, no rows", kDcgmiHeader,
       refused("in.log:1: a dcgmi dmon header but no data rows")},
      // dcgmi dmon prints no times: a row again is the next round's sample.
      {f, "duplicate row", kDcgmiHeader + kDcgmiRow1 + kDcgmiRow1 + kDcgmiRow2, read(3)},
      {f, "empty", "", refused("in.log: empty file")},
      {f, "UTF-16", utf16(kDcgmi, true), read(3, kUtf16LeNote)},
      {f, "UTF-16 without BOM", utf16(kDcgmi, false), read(3, kUtf16LeNote)},
      {f, "a megabyte value",
       kDcgmiHeader + kDcgmiRow1 + replace_all(kDcgmiRow2, "309.120", kMegabyteOfDigits),
       read(2, std::string("1 unreadable value(s) taken as missing (first: in.log:4: ") +
                   cut_message("POWER: cannot read \"") + ")")},
      {f, "a megabyte line of text", kDcgmiHeader + kDcgmiRow1 + kMegabyte + "\n" + kDcgmiRow2,
       read(2, std::string("skipped 1 line(s) that are not dcgmi dmon output (first: in.log:4: "
                           "not a dcgmi dmon row: \"") +
                   std::string(60, 'x') + "\")")},
  };
}

// ---------------------------------------------------------------------------------------------
// DCGM long field dumps

const std::string kDumpHeader = "GPUId,TimeStampUs,Field,Values\n";
const std::string kDumpRound1 = "0,1715682667412000,155,152.34\n0,1715682667412000,203,99\n";
const std::string kDumpRound2 = "0,1715682668412000,155,150.00\n0,1715682668412000,203,98\n";
const std::string kDumpRound3 = "0,1715682669412000,155,149.00\n0,1715682669412000,203,97\n";
const std::string kDump = kDumpHeader + kDumpRound1 + kDumpRound2 + kDumpRound3;

std::vector<Case> dcgm_dump_cases() {
  const std::string f = "dcgm-dump";
  return {
      {f, "complete", kDump, read(3)},
      {f, "cut mid-line", drop(kDump, 5),
       read(3,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:7: the last line "
            "is cut short (3 of 4 columns, no line end))")},
      {f, "cut mid-value", drop(kDump, 2),
       read(3,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:7: the last line "
            "is cut short (4 of 4 columns, no line end))")},
      {f, "cut mid-header", cut(kDump, 20),
       refused("in.log:1: no DCGM dump header line (\"GPUId,TimeStampUs,Field,Values\"); is this "
               "a DCGM field dump?")},
      {f, "binary garbage", garbage(), refused("in.log: binary data, not a DCGM field dump")},
      {f, "semicolons", replace_all(kDump, ",", ";"),
       refused("in.log:1: no DCGM dump header line (\"GPUId,TimeStampUs,Field,Values\"); is this "
               "a DCGM field dump?")},
      {f, "header, no rows", kDumpHeader, refused("in.log:1: a DCGM dump header but no data rows")},
      // DCGM stamps each value: rows are merged by time, in whatever order the file has them.
      {f, "time going backwards", kDumpHeader + kDumpRound3 + kDumpRound1 + kDumpRound2, read(3)},
      {f, "duplicate rows", kDumpHeader + kDumpRound1 + kDumpRound2 + kDumpRound2 + kDumpRound3,
       read(3, "2 repeated value(s) (same GPU, field and time) ignored")},
      {f, "empty", "", refused("in.log: empty file")},
      {f, "UTF-16", utf16(kDump, true), read(3, kUtf16LeNote)},
      {f, "UTF-16 without BOM", utf16(kDump, false), read(3, kUtf16LeNote)},
      {f, "a megabyte value",
       kDumpHeader + kDumpRound1 + "0,1715682668412000,155," + kMegabyteOfDigits + "\n",
       read(2, std::string("1 unreadable value(s) taken as missing (first: in.log:4: ") +
                   cut_message("DCGM_FI_DEV_POWER_USAGE: cannot read \"") + ")")},
      {f, "a megabyte line of text", kDumpHeader + kDumpRound1 + kMegabyte + "\n" + kDumpRound2,
       read(2,
            "skipped 1 line(s) with the wrong number of columns (first: in.log:4: expected 4 "
            "columns, found 1)")},
  };
}

// ---------------------------------------------------------------------------------------------
// Generic CSV

const std::string kCsvHeader = "time,gpu,power_w,util_gpu_pct\n";
const std::string kCsvRow1 = "2024-05-14T10:31:07.412Z,0,152.34,99\n";
const std::string kCsvRow2 = "2024-05-14T10:31:08.412Z,0,150,98\n";
const std::string kCsvRow3 = "2024-05-14T10:31:09.412Z,0,149,97\n";
const std::string kCsv = kCsvHeader + kCsvRow1 + kCsvRow2 + kCsvRow3;

std::vector<Case> generic_csv_cases() {
  const std::string f = "generic-csv";
  return {
      {f, "complete", kCsv, read(3)},
      {f, "cut mid-line", drop(kCsv, 10),
       read(2,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:4: the last line "
            "is cut short (1 of 4 cells, no line end))")},
      {f, "cut mid-value", drop(kCsv, 2),
       read(2,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:4: the last line "
            "is cut short (4 of 4 cells, no line end))")},
      {f, "cut mid-header", cut(kCsv, 12),
       refused("in.log:1: a header line but no data rows (the file ends inside it: cut short)")},
      {f, "binary garbage", garbage(), refused("in.log: binary data, not a CSV log")},
      // ',' ';' and tab are all read; '|' is not a separator.
      {f, "semicolons", replace_all(kCsv, ",", ";"), read(3)},
      {f, "tabs", replace_all(kCsv, ",", "\t"), read(3)},
      {f, "pipes", replace_all(kCsv, ",", "|"),
       refused("in.log:1: no column gpudoctor recognises in the header (time|gpu|power_w|"
               "util_gpu_pct); name the columns with --map COLUMN=FIELD (field ids: gpudoctor "
               "fields), or with --columns when the file has no header line")},
      {f, "header, no rows", kCsvHeader, refused("in.log:1: a header line but no data rows")},
      {f, "time going backwards", kCsvHeader + kCsvRow1 + kCsvRow3 + kCsvRow2,
       read(2,
            "skipped 1 line(s) whose time did not advance for their GPU (first: in.log:4: time 1 "
            "s is not after the GPU's previous row (2 s))")},
      {f, "duplicate row", kCsvHeader + kCsvRow1 + kCsvRow2 + kCsvRow2 + kCsvRow3,
       read(3,
            "skipped 1 line(s) whose time did not advance for their GPU (first: in.log:4: time 1 "
            "s is not after the GPU's previous row (1 s))")},
      {f, "empty", "", refused("in.log: empty file")},
      {f, "UTF-16", utf16(kCsv, true), read(3, kUtf16LeNote)},
      {f, "UTF-16 without BOM", utf16(kCsv, false), read(3, kUtf16LeNote)},
      {f, "a megabyte value",
       kCsvHeader + kCsvRow1 +
           replace_all(kCsvRow2, ",150,", std::string(",") + kMegabyteOfDigits + ","),
       read(2, std::string("1 unreadable value(s) taken as missing (first: in.log:3: ") +
                   cut_message("power_w: cannot read \"") + ")")},
      {f, "a megabyte line of text", kCsvHeader + kCsvRow1 + kMegabyte + "\n" + kCsvRow2,
       read(2,
            "skipped 1 line(s) with the wrong number of cells (first: in.log:3: expected 4 cells, "
            "found 1)")},
      {f, "a quote never closed", kCsvHeader + kCsvRow1 + std::string("\"") + kCsvRow2 + kCsvRow3,
       read(2,
            "skipped 1 line(s) with a broken quote (first: in.log:3: a quote that is never "
            "closed)")},
  };
}

// ---------------------------------------------------------------------------------------------
// Captures

const std::string kCapture =
    R"({"format": "gpudoctor-nvml-capture", "version": 1, "devices": [{"index": 0,
"name": "NVIDIA A100-SXM4-40GB", "samples": [
{"t_s": 0, "values": {"power_w": 152.34}},
{"t_s": 1, "values": {"power_w": 150}},
{"t_s": 2, "values": {"power_w": 149}}]}]}
)";

std::vector<Case> capture_cases() {
  const std::string f = "capture";
  return {
      {f, "complete", kCapture, read(3)},
      {f, "cut mid-line", drop(kCapture, 30),
       refused("in.log: not valid JSON: [json.exception.parse_error.101] parse error at line 5, "
               "column 14: syntax error while parsing object key - invalid string: missing "
               "closing quote; last read: '\"v'; expected string literal")},
      {f, "binary garbage", garbage(),
       refused("in.log: binary data, not a gpudoctor capture (JSON)")},
      {f, "not a capture", R"({"format": "something else"})",
       refused("in.log: not a gpudoctor capture (format marker missing)")},
      {f, "time going backwards", replace_all(kCapture, R"("t_s": 1,)", R"("t_s": -1,)"),
       read(2,
            "skipped 1 sample(s) whose time did not advance (first: in.log: GPU 0, sample 2: t_s "
            "-1 is not after 0)")},
      {f, "duplicate sample", replace_all(kCapture, R"("t_s": 2,)", R"("t_s": 1,)"),
       read(2,
            "skipped 1 sample(s) whose time did not advance (first: in.log: GPU 0, sample 3: t_s "
            "1 is not after 1)")},
      {f, "empty", "", refused("in.log: empty file")},
      {f, "UTF-16", utf16(kCapture, true), read(3, kUtf16LeNote)},
      {f, "UTF-16 without BOM", utf16(kCapture, false), read(3, kUtf16LeNote)},
      {f, "a megabyte name", replace_all(kCapture, "NVIDIA A100-SXM4-40GB", kMegabyte), read(3)},
  };
}

// ---------------------------------------------------------------------------------------------
// Choosing the reader by content

std::vector<Case> detection_cases() {
  const std::string f = "auto";
  return {
      {f, "empty", "", refused("in.log: the file is empty")},
      {f, "blank lines only", "\n\n  \n", refused("in.log: empty file")},
      {f, "binary garbage", garbage(),
       refused("in.log: binary data, not a format gpudoctor reads")},
      {f, "UTF-16 CSV", utf16(kSmi, true), read(3, kUtf16LeNote)},
      {f, "UTF-16 dmon without BOM", utf16(kDmon, false), read(3, kUtf16LeNote)},
      {f, "UTF-16 BE CSV", "\xFE\xFF" + std::string(1, '\0') + drop(utf16(kSmi, false), 1),
       read(3, "the file is UTF-16 BE text: decoded to UTF-8")},
      {f, "Windows-1252 degree sign",
       "time,GPU Temperature [\xB0"
       "C],GPU Load [%]\n1,40,90\n2,41,91\n3,42,92\n",
       read(3, "the file is Windows-1252 (latin-1) text: decoded to UTF-8")},
      {f, "prose", "hello\nthis is not a log\n",
       refused("in.log: not a format gpudoctor reads (recordings, captures, W&B run files, "
               "PyTorch profiler traces, JSON samples, nvidia-smi table snapshots, nvidia-smi "
               "dmon, dcgmi dmon, DCGM "
               "field dumps, Prometheus text snapshots, Afterburner .hml, key: value blocks, "
               "gpustat snapshots, nvidia-smi --query-gpu CSV, CSV with recognised column "
               "names, whitespace-aligned tables); "
               "--input-format forces one")},
      {f, "nvidia-smi CSV cut mid-value", drop(kSmi, 4),
       read(2,
            "skipped 1 line(s) cut short at the end of the file (first: in.log:4: the last line "
            "is cut short (5 of 5 cells, no line end))")},
  };
}

std::vector<Case> all_cases() {
  std::vector<Case> all;
  for (auto part :
       {smi_csv_cases(), smi_table_cases(), nvitop_cases(), dmon_cases(), dcgmi_dmon_cases(),
        dcgm_dump_cases(), generic_csv_cases(), capture_cases(), detection_cases()})
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

TEST(BadInput, EveryReaderSaysPreciselyWhatIsWrong) {
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.format + ": " + c.name);
    LoadOptions options;
    options.input_format = c.format;
    const auto r = load_text(c.text, "in.log", options);
    if (!c.want.error.empty()) {
      ASSERT_FALSE(r.ok()) << "read " << r->gpus.size() << " GPU(s)";
      EXPECT_EQ(r.error().message, c.want.error);
      EXPECT_EQ(r.error().kind, Error::Kind::kUsage);
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.error().message;
    size_t rows = 0;
    for (const auto& g : r->gpus) rows += g.size();
    EXPECT_EQ(rows, c.want.rows) << all_notes(*r);
    if (!c.want.note.empty()) {
      EXPECT_NE(std::find(r->notes.begin(), r->notes.end(), c.want.note), r->notes.end())
          << "want the note\n  " << c.want.note << "\nhave\n"
          << all_notes(*r);
    } else {
      for (const auto& n : r->notes) EXPECT_EQ(n.find("skipped"), std::string::npos) << n;
    }
  }
}

// A value in a kept row is the value the log has: a row cut short never becomes a sample.
TEST(BadInput, ACutLastValueIsNeverRead) {
  LoadOptions options;
  const auto r = load_text(drop(kSmi, 4), "in.log", options);  // "..., 97 %, 149.0"
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto power = r->gpus.at(0).column(Field::kPower);
  ASSERT_NE(power, nullptr);
  EXPECT_EQ(*power, (std::vector<double>{152.34, 150}));
}

// A file that names another GPU on every line stops at log_reader::kMaxGpus GPUs, in linear time.
TEST(BadInput, ANewGpuOnEveryLineIsBounded) {
  std::string text = "index, power.draw [W]\n";
  for (int i = 0; i < 20000; ++i) text += std::to_string(i) + ", 1 W\n";
  const auto r = load_text(text, "in.log", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->gpus.size(), 16384u);
  EXPECT_NE(std::find(r->notes.begin(), r->notes.end(),
                      "skipped 3616 line(s) of GPUs beyond the first 16384 (first: in.log:16386: "
                      "GPU \"16384\")"),
            r->notes.end())
      << all_notes(*r);
}

// Shapes that took time growing with the square of the file (a scan per line of what earlier lines
// added): now linear. 100000 lines each: well under a second in a release build, a few in a debug
// build with sanitizers; the quadratic readers took 15-40 s in release.
TEST(BadInput, AdversarialShapesTakeLinearTime) {
  struct Shape {
    std::string format, name, text;
    size_t gpus;
  };
  std::vector<Shape> shapes;
  std::string t = kDumpHeader;
  for (int i = 0; i < 100000; ++i) t += fmt::format("0,1715682667412000,F{},1\n", i);
  shapes.push_back({"dcgm-dump", "a new unknown field on every line", t + kDumpRound1, 1});
  t = kDcgmiHeader;
  for (int i = 0; i < 100000; ++i) t += fmt::format("E{} 0 1 2 3\n", i);
  shapes.push_back({"dcgmi-dmon", "a new entity on every line", t + kDcgmiRow1, 1});
  t = "# gpu pwr";
  for (int i = 0; i < 100000; ++i) t += fmt::format(" x{}", i);
  shapes.push_back({"dmon", "100000 unknown columns",
                    t + "\n 0 1" + replace_all(std::string(100000, '1'), "1", " 1") + "\n", 1});
  t = "time,index,power_w\n";
  for (int i = 0; i < 100000; ++i) t += fmt::format("{},{},1\n", i, i);
  shapes.push_back({"generic-csv", "an index column that numbers the rows", t, 1});
  t = "time";
  for (int g = 0; g < 4000; ++g) t += fmt::format(",gpu{}_power", g);
  t += "\n";
  for (int r = 0; r < 300; ++r) {
    t += std::to_string(r);
    for (int g = 0; g < 4000; ++g) t += ",1";
    t += "\n";
  }
  shapes.push_back({"generic-csv", "4000 GPUs in one row", t, 4000});
  const size_t gpu_at = kTable1.find("|   0  NVIDIA");
  const size_t border_at = kTable1.find("+---", gpu_at);
  const size_t proc_at = kTable1.find("|    0   N/A");
  const size_t proc_end = kTable1.find('\n', proc_at) + 1;
  t = kTable1.substr(0, gpu_at);
  for (int g = 0; g < 2000; ++g)
    t +=
        replace_all(kTable1.substr(gpu_at, border_at - gpu_at), "|   0  ", fmt::format("|{}  ", g));
  t += kTable1.substr(border_at, proc_at - border_at);
  for (int p = 1; p <= 50000; ++p)
    t += fmt::format("|    0   N/A  N/A   {}      C   /usr/bin/python   16254MiB |\n", p);
  t += kTable1.substr(proc_end);
  shapes.push_back({"smi-table", "2000 GPUs and 50000 processes in one snapshot", t, 2000});

  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape.format + ": " + shape.name);
    LoadOptions options;
    options.input_format = shape.format;
    const auto start = std::chrono::steady_clock::now();
    const auto r = load_text(shape.text, "in.log", options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->gpus.size(), shape.gpus);
    EXPECT_LT(seconds, 30.0);
  }
}

// A unit conversion keeps the digits the log wrote: 398710 mW is 398.71 W and a 0.942 ratio is
// 94.2 %, exactly as those numbers read (the plain products were 398.71000000000004 and
// 94.19999999999999, which the golden exports showed).
TEST(BadInput, UnitConversionsKeepTheLogsDigits) {
  const auto csv =
      read_generic_csv("time,gpu,power_mw,sm_active\n1,0,398710,0.942\n2,0,1,0.5\n", "in.csv", {});
  ASSERT_TRUE(csv.ok()) << csv.error().message;
  EXPECT_EQ(csv->gpus.at(0).column(Field::kPower)->at(0), 398.71);
  EXPECT_EQ(csv->gpus.at(0).column(Field::kGpmSmUtil)->at(0), 94.2);
  const auto dcgmi = read_dcgmi_dmon("#Entity SMACT\nGPU 0 0.285\n", "in.log", {});
  ASSERT_TRUE(dcgmi.ok()) << dcgmi.error().message;
  EXPECT_EQ(dcgmi->gpus.at(0).column(Field::kGpmSmUtil)->at(0), 28.5);
  const auto smi = read_smi_csv("index, power.draw\n0, 69850 mW\n", "in.csv", {});
  ASSERT_TRUE(smi.ok()) << smi.error().message;
  EXPECT_EQ(smi->gpus.at(0).column(Field::kPower)->at(0), 69.85);
}

// ---------------------------------------------------------------------------------------------
// Inputs the fuzz targets (fuzz/) found, minimized

// fuzz_dcgmi_dmon: a one-character line was looked at two bytes past its end (the check for the
// units line "ID ..."); AddressSanitizer: heap-buffer-overflow.
TEST(FuzzRegression, DcgmiDmonOneCharacterLine) {
  const auto r = read_dcgmi_dmon("1", "in.log", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "in.log: no dcgmi dmon header line (\"#Entity   POWER   GPUTL ...\"); is this dcgmi "
            "dmon output?");
}

// fuzz_capture: samples whose t_s went backwards were kept in file order, so a GPU's times were
// not increasing (every other reader guarantees they are).
TEST(FuzzRegression, CaptureTimesGoingBackwards) {
  const auto r = read_capture(
      R"({"format":"gpudoctor-nvml-capture","devices":[{"samples":[{"t_s":5},{"t_s":3},{"t_s":7}]}]})",
      "in.json");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->gpus.at(0).time_s, (std::vector<double>{5, 7}));
}

// fuzz_generic_csv: a column naming a GPU's identity ("gpu0_uuid") in a file with one GPU per row
// was looked up in the per-GPU column lists past their end (heap-buffer-overflow; introduced with
// those lists, found before it shipped).
TEST(FuzzRegression, GenericCsvPerGpuIdentityInARowPerGpuFile) {
  const auto r = read_generic_csv("time,gpu0_uuid,power_w\n1,x,1\n", "in.csv", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 1u);
  EXPECT_EQ(r->gpus[0].info.uuid, "x");  // the file's one GPU
}

}  // namespace
}  // namespace gpudoctor
