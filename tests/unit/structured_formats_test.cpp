// JSON samples, W&B run files and Prometheus exposition snapshots (formats/json_samples, wandb,
// prom_text): each fixture read through content detection, as `diagnose FILE` reads it, and its
// damaged and empty forms.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/fields.hpp"
#include "formats/encoding.hpp"
#include "formats/flat_table.hpp"
#include "formats/load.hpp"
#include "formats/prom_text.hpp"
#include "formats/wandb.hpp"
#include "test_helpers.hpp"

namespace gpudoctor {
namespace {

using namespace test_util;

std::string logs(const std::string& rel) {
  return std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/logs/" + rel;
}

std::string notes_of(const Recording& rec) {
  std::string all;
  for (const auto& n : rec.notes) all += n + "\n";
  return all;
}

double mean_of(const GpuSeries& g, Field f) {
  const auto c = g.column(f);
  if (!c) return std::nan("");
  double sum = 0;
  size_t n = 0;
  for (double v : *c)
    if (!is_missing(v)) sum += v, ++n;
  return n ? sum / static_cast<double>(n) : std::nan("");
}

Recording load_ok(const std::string& text, const std::string& origin, LoadOptions opt = {}) {
  auto r = load_text(text, origin, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r.value()) : Recording{};
}

TEST(FlatTable, UnionOfNamesAndQuotedCells) {
  log_reader::FlatTable t;
  t.begin_row();
  t.set("a", "1");
  t.set("b,c", "say \"hi\"");
  t.begin_row();
  t.set("d", "4");
  t.set("a", "2");
  t.begin_row();
  t.drop_empty_row();
  EXPECT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.csv(), "a,\"b,c\",d\n1,\"say \"\"hi\"\"\",\n2,,4\n");
}

// Cells past one block of them (65,536), a name set twice in a row (the later value wins, in
// whichever block the first one fell), rows with no cell of a column.
TEST(FlatTable, ManyRowsAcrossBlocks) {
  log_reader::FlatTable t;
  std::vector<std::string> numbers;
  for (int r = 0; r < 50000; ++r) numbers.push_back(std::to_string(r));
  for (int r = 0; r < 50000; ++r) {
    t.begin_row();
    t.set_view("a", "first");
    if (r % 7 != 0) t.set_view("b", numbers[static_cast<size_t>(r)]);
    t.set_view("a", numbers[static_cast<size_t>(49999 - r)]);
  }
  ASSERT_EQ(t.rows(), 50000u);
  ASSERT_EQ(t.columns(), 2u);
  std::vector<std::string_view> cells;
  for (size_t r = 0; r < 50000; r += 997) {
    t.row(r, cells);
    ASSERT_EQ(cells.size(), 2u);
    EXPECT_EQ(cells[0], numbers[49999 - r]);
    EXPECT_EQ(cells[1], r % 7 != 0 ? std::string_view(numbers[r]) : std::string_view());
  }
  t.row(49999, cells);
  EXPECT_EQ(cells[0], "0");
  EXPECT_EQ(cells[1], "49999");
}

// Read once in order, telling the table each row is done with: the rows ahead stay as they were
// (their cells and places in blocks let go behind), and a row dropped empty is no row.
TEST(FlatTable, RowsBehindTheReaderGo) {
  log_reader::FlatTable t;
  std::vector<std::string> numbers;
  for (int r = 0; r < 150000; ++r) numbers.push_back(std::to_string(r));
  for (int r = 0; r < 150000; ++r) {
    t.begin_row();
    t.set_view("a", numbers[static_cast<size_t>(r)]);
    t.set_view("b", numbers[static_cast<size_t>(149999 - r)]);
    t.begin_row();
    t.drop_empty_row();
  }
  ASSERT_EQ(t.rows(), 150000u);
  std::vector<std::string_view> cells;
  for (size_t r = 0; r < 150000; ++r) {
    t.done_before(r);
    t.row(r, cells);
    ASSERT_EQ(cells.size(), 2u);
    ASSERT_EQ(cells[0], numbers[r]);
    ASSERT_EQ(cells[1], numbers[149999 - r]);
  }
}

// Columns no reader reads keep their names and no cells: a row of only such cells is a row still,
// a name set twice keeps its last value, and a row's names are found where the row before set
// them, an unread one between them or not.
// Blocks of 65,536: sorted in place across them; those wholly behind an element let go, the rest
// kept as they were.
TEST(StableBlocks, SortsAcrossBlocksAndLetsThoseBehindGo) {
  log_reader::StableBlocks<uint32_t> b;
  constexpr uint32_t n = 200000;
  for (uint32_t i = 0; i < n; ++i) b.push_back((i * 7919u) % n);  // (7919 is prime: each once)
  std::sort(b.begin(), b.end());
  ASSERT_EQ(b.end() - b.begin(), static_cast<std::ptrdiff_t>(n));
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(b[i], i);
  b.release_before(150000);  // blocks 0 and 1 (to 131,071) go
  for (uint32_t i = 131072; i < n; ++i) ASSERT_EQ(b[i], i);
  b.release_before(1000);  // (behind what is gone: nothing more)
  b.push_back(n);
  EXPECT_EQ(b[n], n);
  EXPECT_EQ(b.size(), n + 1);
}

TEST(FlatTable, UnreadColumnsKeepTheirNamesNotTheirCells) {
  for (const bool unread : {false, true}) {
    SCOPED_TRACE(unread ? "unread x*" : "every cell kept");
    log_reader::FlatTable t;
    if (unread) t.unread_columns([](std::string_view name) { return name.front() == 'x'; });
    for (int r = 0; r < 5; ++r) {
      t.begin_row();
      t.set_view("a", "1");
      t.set_view("xb", "2");
      t.set_view("c", r % 2 ? "3" : "4");
      t.set("xb", "5");
      t.drop_empty_row();
    }
    t.begin_row();
    t.set_view("xd", "6");  // only an unread cell: a row
    t.drop_empty_row();
    t.begin_row();
    t.drop_empty_row();  // nothing: no row
    t.begin_row();
    EXPECT_EQ(t.find("c", 2), 2u);  // (the row before set xd first: a miss, then the index)
    EXPECT_EQ(t.find("xb", 1), 1u);
    ASSERT_TRUE(t.set_at(t.find("c"), "7"));
    EXPECT_FALSE(t.set_at(t.find("c"), "8"));  // set again: overwritten
    ASSERT_TRUE(t.set_at(t.find("xd"), "9"));
    t.drop_empty_row();
    ASSERT_EQ(t.rows(), 7u);
    ASSERT_EQ(t.columns(), 4u);
    EXPECT_EQ(t.name(1), "xb");
    EXPECT_EQ(t.name(3), "xd");
    std::vector<std::string_view> cells;
    t.row(1, cells);
    EXPECT_EQ(cells, (std::vector<std::string_view>{"1", unread ? "" : "5", "3", ""}));
    t.row(5, cells);
    EXPECT_EQ(cells, (std::vector<std::string_view>{"", "", "", unread ? "" : "6"}));
    t.row(6, cells);
    EXPECT_EQ(cells, (std::vector<std::string_view>{"", "", "8", unread ? "" : "9"}));
  }
}

// put_first: the columns named first in that order (a name the table lacks passed over), the
// others after them as they came, the cells under their names.
TEST(FlatTable, PutFirstOrdersTheColumnsNotTheCells) {
  log_reader::FlatTable t;
  t.begin_row();
  t.set_view("load", "1");
  t.set_view("time", "t0");
  t.begin_row();
  t.set_view("temp", "40");
  t.set_view("gpu", "3");
  t.set_view("time", "t1");
  t.put_first({"time", "gpu", "name"});
  ASSERT_EQ(t.columns(), 4u);
  EXPECT_EQ(t.name(0), "time");
  EXPECT_EQ(t.name(1), "gpu");
  EXPECT_EQ(t.name(2), "load");
  EXPECT_EQ(t.name(3), "temp");
  std::vector<std::string_view> cells;
  t.row(0, cells);
  EXPECT_EQ(cells, (std::vector<std::string_view>{"t0", "", "1", ""}));
  t.row(1, cells);
  EXPECT_EQ(cells, (std::vector<std::string_view>{"t1", "3", "", "40"}));
  EXPECT_EQ(t.csv(), "time,gpu,load,temp\nt0,,1,\nt1,3,,40\n");
}

// Cells an 8-byte cell cannot place (before the row's first cell, 64 KiB or longer, a column past
// 65,534, no text at all) are kept whole, and read back as the others.
TEST(FlatTable, CellsFarFromTheirRowReadBack) {
  const std::string text = "0123456789abcdefghij";
  const std::string big(70000, 'x');
  log_reader::FlatTable t;
  t.begin_row();
  t.set_view("late", std::string_view(text).substr(10, 3));  // the row's first: "abc"
  t.set_view("early", std::string_view(text).substr(2, 2));  // before it: "23"
  t.set_view("big", big);
  t.set_view("none", std::string_view());
  t.begin_row();
  t.set_view("early", std::string_view(text).substr(0, 1));
  char name[16];
  for (int c = 0; c < 65600; ++c) {
    std::snprintf(name, sizeof name, "c%d", c);
    t.set_view(name, std::string_view(text).substr(5, 1));
  }
  ASSERT_EQ(t.rows(), 2u);
  ASSERT_EQ(t.columns(), 4u + 65600u);
  std::vector<std::string_view> cells;
  t.row(0, cells);
  EXPECT_EQ(cells[0], "abc");
  EXPECT_EQ(cells[1], "23");
  EXPECT_EQ(cells[2], big);
  EXPECT_EQ(cells[3], "");
  EXPECT_EQ(cells[4], "");
  t.row(1, cells);
  EXPECT_EQ(cells[0], "");
  EXPECT_EQ(cells[1], "0");
  EXPECT_EQ(cells[4], "5");
  EXPECT_EQ(cells[4 + 65599], "5");
  EXPECT_EQ(t.find("c65599"), 4u + 65599u);
  // A row whose first cell is a copy (W&B's time), then views in another order than the text's.
  t.begin_row();
  t.set("late", "copied");
  t.set_view("early", std::string_view(text).substr(15, 5));
  t.set_view("big", std::string_view(text).substr(1, 2));
  t.row(2, cells);
  EXPECT_EQ(cells[0], "copied");
  EXPECT_EQ(cells[1], "fghij");
  EXPECT_EQ(cells[2], "12");
}

// Rows kept as lines: runs of consecutive lines under one header, a header row between them, a
// line skipped (a comment), the GPU cell blanked where it is no index, a dropped cell.
TEST(LineRows, LinesHeadersAndRunsReadBack) {
  log_reader::LineRows t;
  t.add_header({"gpu", "pwr"}, 1);
  t.add_row(" 0  45", 2, 0);
  t.add_row(" 1  46", 3, 0);
  t.add_row(" x  47", 5, 0);  // a line skipped before it
  t.add_header({"gpu", "pwr", "sm"}, 6);
  t.add_row(" 0  48  90", 7, 0);
  t.add_row(" 0  49  91  extra", 8, 0, 3);
  ASSERT_EQ(t.rows(), 6u);
  EXPECT_EQ(t.header_line(), 1u);
  const std::vector<size_t> lines{2, 3, 5, 6, 7, 8};
  std::vector<std::string_view> cells;
  for (size_t r = 0; r < t.rows(); ++r) {
    EXPECT_EQ(t.line(r), lines[r]) << r;
    EXPECT_EQ(t.is_header(r), r == 3) << r;
  }
  t.row(2, cells);
  EXPECT_EQ(cells, (std::vector<std::string_view>{"", "47"}));
  t.row(3, cells);
  EXPECT_EQ(cells, (std::vector<std::string_view>{"gpu", "pwr", "sm"}));
  t.row(5, cells);
  EXPECT_EQ(cells, (std::vector<std::string_view>{"0", "49", "91"}));
}

// A row is kept as its place after its group's mark and its length in 16 bits each: rows whose
// place or length does not fit (lines of 64 KiB and more, a line far from its group's first, in
// another buffer) read back as they are too, in any order.
TEST(LineRows, LongAndFarLinesReadBack) {
  std::string text;
  std::vector<std::pair<size_t, size_t>> at;  // each line's place and length in text
  for (size_t k = 0; k < 200; ++k) {
    const std::string line =
        std::to_string(k) + " " + std::string(k % 7 == 3 ? 70000 : k % 5, 'x') + "y";
    at.emplace_back(text.size(), line.size());
    text += line + "\n";
  }
  const std::string elsewhere = "900 elsewhere";  // a copy, not in the text
  log_reader::LineRows t;
  t.add_header({"n", "v"}, 1);
  for (size_t k = 0; k < at.size(); ++k) {
    if (k == 40) t.add_row(elsewhere, k + 2);
    const size_t line = k + 2 + (k >= 40);
    t.add_row(std::string_view(text).substr(at[k].first, at[k].second), line);
  }
  ASSERT_EQ(t.rows(), 201u);
  std::vector<std::string_view> cells;
  for (size_t r : {200u, 0u, 40u, 3u, 17u, 41u, 199u, 100u, 10u}) {
    t.row(r, cells);
    ASSERT_EQ(cells.size(), 2u) << r;
    if (r == 40) {
      EXPECT_EQ(cells[1], "elsewhere");
      continue;
    }
    const size_t k = r - (r > 40);
    EXPECT_EQ(cells[0], std::to_string(k)) << r;
    EXPECT_EQ(cells[1], std::string(k % 7 == 3 ? 70000 : k % 5, 'x') + "y") << r;
    EXPECT_EQ(cells[1].data(), text.data() + at[k].first + cells[0].size() + 1) << r;
  }
}

TEST(Wandb, Crc32IsZlibs) {
  EXPECT_EQ(crc32_ieee("123456789"), 0xCBF43926u);
  EXPECT_EQ(crc32_ieee("6789", crc32_ieee("12345")), 0xCBF43926u);
}

// Every length from 0 to 600 bytes (the folding path from 64, its 16-byte steps and the tail
// after them) and a record's worth, from several starting values, against a bit at a time.
TEST(Wandb, Crc32OfEveryLengthIsTheBitwiseOne) {
  const auto bitwise = [](std::string_view d, uint32_t crc) {
    crc = ~crc;
    for (const char ch : d) {
      crc ^= static_cast<uint8_t>(ch);
      for (int k = 0; k < 8; ++k) crc = (crc & 1) ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
    }
    return ~crc;
  };
  std::mt19937 rng(27);
  std::string bytes(33000, '\0');
  for (char& b : bytes) b = static_cast<char>(rng());
  for (size_t n = 0; n <= 600; ++n)
    for (const uint32_t start : {0u, 0xFFFFFFFFu, static_cast<uint32_t>(rng())}) {
      const std::string_view d(bytes.data() + n % 13, n);
      ASSERT_EQ(crc32_ieee(d, start), bitwise(d, start)) << n << " bytes from " << start;
    }
  const std::string_view block(bytes.data() + 5, 32761);
  EXPECT_EQ(crc32_ieee(block), bitwise(block, 0));
  EXPECT_EQ(crc32_ieee(block.substr(1000), crc32_ieee(block.substr(0, 1000))), bitwise(block, 0));
}

TEST(Wandb, RunFileReadsSystemMetricsPerGpu) {
  const Recording rec = load_ok(read_file(logs("wandb/run-fixture.wandb")), "run-fixture.wandb");
  ASSERT_EQ(rec.gpus.size(), 2u) << notes_of(rec);
  EXPECT_EQ(rec.system.hostname, "trainer-07");
  EXPECT_TRUE(has_note(rec, "W&B run file: 40 system-metrics record(s)")) << notes_of(rec);
  EXPECT_TRUE(has_note(rec, "gpu.process.")) << notes_of(rec);
  const GpuSeries& g0 = rec.gpus[0];
  ASSERT_EQ(g0.time_s.size(), 40u);
  EXPECT_NEAR(g0.time_s[1] - g0.time_s[0], 15.0, 1e-6);
  EXPECT_NEAR(mean_of(g0, Field::kPower), 385.0, 1e-9);
  EXPECT_NEAR(mean_of(g0, Field::kUtilGpu), 98.0, 1e-9);
  EXPECT_NEAR(mean_of(g0, Field::kClockSm), 1980.0, 1e-6);
  EXPECT_NEAR(mean_of(rec.gpus[1], Field::kUtilGpu), 0.0, 1e-9);
  EXPECT_NEAR(mean_of(rec.gpus[1], Field::kPower), 60.5, 1e-6);
}

TEST(Wandb, EventsFileAndRunFileAgree) {
  const Recording run = load_ok(read_file(logs("wandb/run-fixture.wandb")), "run.wandb");
  const Recording events =
      load_ok(read_file(logs("wandb/wandb-events.jsonl")), "wandb-events.jsonl");
  ASSERT_EQ(events.gpus.size(), 2u) << notes_of(events);
  ASSERT_EQ(run.gpus.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    for (Field f : {Field::kPower, Field::kUtilGpu, Field::kClockSm, Field::kTemp}) {
      ASSERT_TRUE(events.gpus[i].has(f)) << info(f).id;
      EXPECT_EQ(*events.gpus[i].column(f), *run.gpus[i].column(f)) << info(f).id;
    }
  EXPECT_EQ(events.start_unix_ms, run.start_unix_ms);
}

TEST(Wandb, CutShortReadsUpToTheLastWholeRecord) {
  const std::string whole = read_file(logs("wandb/run-fixture.wandb"));
  const Recording rec = load_ok(whole.substr(0, whole.size() - 40), "cut.wandb");
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_EQ(rec.gpus[0].time_s.size(), 39u);
  EXPECT_TRUE(has_note(rec, "ends inside a record")) << notes_of(rec);
}

TEST(Wandb, DamagedRecordIsSkippedAndCounted) {
  std::string bytes = read_file(logs("wandb/run-fixture.wandb"));
  bytes[200] = static_cast<char>(bytes[200] ^ 0x55);  // inside the second stats record
  const Recording rec = load_ok(bytes, "damaged.wandb");
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_EQ(rec.gpus[0].time_s.size(), 39u);
  EXPECT_TRUE(has_note(rec, "1 damaged record(s) skipped")) << notes_of(rec);
}

// A run file of stats records, each (seconds, nanoseconds, GPU 0's utilisation), one record per
// block-fitting full record.
std::string run_file_of(const std::vector<std::tuple<uint64_t, uint64_t, int>>& rows) {
  const auto varint = [](uint64_t v) {
    std::string out;
    for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7F) | 0x80);
    return out + static_cast<char>(v);
  };
  const auto bytes_field = [&](uint64_t n, const std::string& d) {
    return varint(n << 3 | 2) + varint(d.size()) + d;
  };
  std::string file(":W&B\xE1\xBE\x00", 7);
  for (const auto& [secs, nanos, util] : rows) {
    const std::string ts = varint(1 << 3) + varint(secs) + varint(2 << 3) + varint(nanos);
    const std::string item = bytes_field(1, "gpu.0.gpu") + bytes_field(16, std::to_string(util));
    const std::string data = bytes_field(7, bytes_field(2, ts) + bytes_field(3, item));
    const char type = 1;  // a full record
    const uint32_t crc = crc32_ieee(data, crc32_ieee(std::string_view(&type, 1)));
    for (int k = 0; k < 4; ++k) file += static_cast<char>(crc >> (8 * k));
    file += static_cast<char>(data.size() & 0xFF);
    file += static_cast<char>(data.size() >> 8);
    file += type + data;
  }
  return file;
}

// A record's time is its seconds and nanoseconds (to the millisecond, as every log's time is read),
// the nanoseconds carried into the next second where they round up to it.
TEST(Wandb, RecordTimesAreTheirSecondsAndNanoseconds) {
  const Recording rec = load_ok(run_file_of({{1'700'000'000, 0, 10},
                                             {1'700'000'001, 123'456'500, 20},
                                             {1'700'000'001, 999'999'600, 30}}),
                                "times.wandb");
  ASSERT_EQ(rec.gpus.size(), 1u);
  ASSERT_EQ(rec.gpus[0].time_s.size(), 3u);
  EXPECT_EQ(rec.start_unix_ms, 1'700'000'000'000);
  EXPECT_NEAR(rec.gpus[0].time_s[1], 1.123, 1e-9);
  EXPECT_NEAR(rec.gpus[0].time_s[2], 2.0, 1e-9);
  EXPECT_EQ(rec.gpus[0].column(Field::kUtilGpu)[1], 20);
}

TEST(Wandb, HeaderOnlyAndOtherVersionsAreRefusedWithAReason) {
  const std::string header(":W&B\xE1\xBE\x00", 7);
  auto empty = load_text(header, "empty.wandb", {});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("without system metrics"), std::string::npos);
  auto v1 = load_text(std::string(":W&B\xE1\xBE\x01", 7), "v1.wandb", {});
  ASSERT_FALSE(v1.ok());
  EXPECT_NE(v1.error().message.find("version 1"), std::string::npos);
}

TEST(JsonSamples, GpustatLoopGivesOneRowPerGpuAndSnapshot) {
  const Recording rec = load_ok(read_file(logs("json/gpustat-loop.json")), "gpustat.json");
  ASSERT_EQ(rec.gpus.size(), 2u) << notes_of(rec);
  EXPECT_EQ(rec.gpus[0].time_s.size(), 60u);
  EXPECT_NEAR(rec.gpus[0].time_s[1] - rec.gpus[0].time_s[0], 2.0, 1e-6);
  EXPECT_NEAR(mean_of(rec.gpus[0], Field::kUtilGpu), 97.0, 1e-9);
  EXPECT_NEAR(mean_of(rec.gpus[1], Field::kPower), 62.0, 1e-9);
  EXPECT_EQ(rec.gpus[0].info.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_TRUE(has_note(rec, "a sequence of JSON objects")) << notes_of(rec);
  EXPECT_TRUE(has_note(rec, "list(s) of objects inside a sample left out")) << notes_of(rec);
}

TEST(JsonSamples, AnObjectCutShortIsSkippedNotTheRest) {
  std::string text = read_file(logs("json/gpustat-loop.json"));
  const size_t second = text.find("\n{", 10);
  ASSERT_NE(second, std::string::npos);
  text.erase(second - 200, 200);  // the first object loses its end
  const Recording rec = load_ok(text, "gpustat.json");
  ASSERT_EQ(rec.gpus.size(), 2u);
  EXPECT_EQ(rec.gpus[0].time_s.size(), 59u);
  EXPECT_TRUE(has_note(rec, "gpustat.json:1: not a JSON object")) << notes_of(rec);
}

// A problem in a JSON-lines log names the line its sample is on: after a blank line, an object
// over several lines, a line of two GPUs' rows, a sample without a metric and a line that is not
// an object.
TEST(JsonSamples, ProblemsNameTheirSamplesLine) {
  std::string text;
  auto row = [](int t, int gpu, const char* power) {
    return fmt::format("{{\"timestamp\": {}, \"gpu\": {}, \"power_w\": {}, \"util_pct\": 50}}\n",
                       1700000000 + t, gpu, power);
  };
  text += row(0, 0, "100");                                                 // 1
  text += "\n";                                                             // 2
  text += "{\"timestamp\": 1700000001, \"gpu\": 0,\n \"power_w\": 101}\n";  // 3-4
  text +=
      "{\"timestamp\": 1700000002, \"gpus\": [{\"gpu\": 0, \"power_w\": 102}, "
      "{\"gpu\": 1, \"power_w\": 50}]}\n";  // 5: two rows
  text += "{\"timestamp\": 1700000003}\n";  // 6: no metric, no row
  text += "not json\n";                     // 7
  text += row(4, 0, "\"abc\"");             // 8
  text += row(5, 0, "105");                 // 9
  text += row(5, 0, "106");                 // 10: time not after the last
  const Recording rec = load_ok(text, "lines.jsonl");
  EXPECT_TRUE(has_note(rec, "lines.jsonl:7: not a JSON object")) << notes_of(rec);
  EXPECT_TRUE(has_note(rec, "lines.jsonl:8: power_w: cannot read \"abc\"")) << notes_of(rec);
  EXPECT_TRUE(has_note(rec, "lines.jsonl:10: time")) << notes_of(rec);
}

// A W&B events log's keys gpudoctor does not read (the CPU's, the disk's, the network's) keep no
// cells in its table, and the recording is what keeping them gives (a --map keeps every cell:
// it may name any key), those keys still named as not read.
TEST(JsonSamples, KeysNoReaderReadsKeepNoCellsAndChangeNothing) {
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += fmt::format(
        "{{\"system.gpu.0.gpu\": {}, \"system.gpu.0.temp\": {}, \"system.gpu.1.gpu\": {}, "
        "\"system.gpu.1.temp\": 41, \"system.cpu\": {}, \"system.disk\": 12.5, "
        "\"system.network.sent\": {}, \"_wandb\": true, \"_timestamp\": {}, \"_runtime\": {}}}\n",
        i % 100, 50 + i % 7, 99 - i % 100, i % 13, 1000 * i, 1575560000 + 2 * i, 2 * i);
  const Recording plain = load_ok(text, "wandb-events.jsonl");
  LoadOptions mapped;
  mapped.map = {{"system.gpu.0.temp", "temp_c"}};
  const Recording all = load_ok(text, "wandb-events.jsonl", mapped);
  ASSERT_EQ(plain.gpus.size(), 2u) << notes_of(plain);
  ASSERT_EQ(all.gpus.size(), 2u);
  for (size_t g = 0; g < 2; ++g) {
    EXPECT_EQ(plain.gpus[g].time_s, all.gpus[g].time_s);
    for (size_t f = 0; f < kFieldCount; ++f) {
      const auto a = plain.gpus[g].column(static_cast<Field>(f));
      const auto b = all.gpus[g].column(static_cast<Field>(f));
      ASSERT_EQ(bool(a), bool(b)) << g << " " << f;
      if (a) {
        EXPECT_EQ(*a, b->to_vector()) << g << " " << f;
      }
    }
  }
  EXPECT_EQ(mean_of(plain.gpus[1], Field::kTemp), 41);
  EXPECT_TRUE(has_note(plain, "system.cpu")) << notes_of(plain);
  EXPECT_TRUE(has_note(plain, "system.network.sent")) << notes_of(plain);
}

TEST(JsonSamples, ArrayOfFlatSamples) {
  const Recording rec = load_ok(read_file(logs("json/samples-array.json")), "samples.json");
  ASSERT_EQ(rec.gpus.size(), 2u) << notes_of(rec);
  EXPECT_EQ(rec.gpus[0].time_s.size(), 180u);
  EXPECT_NEAR(mean_of(rec.gpus[0], Field::kPower), 280.5, 1e-9);
  EXPECT_TRUE(has_note(rec, "a JSON array of samples")) << notes_of(rec);
}

TEST(JsonSamples, ColumnarListsNeedTheQuantityNamedWithMap) {
  const std::string text = read_file(logs("json/columnar.json"));
  auto plain = load_text(text, "trace.json", {});
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.error().message.find("--map"), std::string::npos) << plain.error().message;
  LoadOptions opt;
  opt.map = {{"per_gpu.*", "power_w"}};
  const Recording rec = load_ok(text, "trace.json", opt);
  ASSERT_EQ(rec.gpus.size(), 2u) << notes_of(rec);
  EXPECT_EQ(rec.gpus[0].time_s.size(), 300u);
  EXPECT_NEAR(rec.gpus[0].time_s[100], 101.0, 1e-6);
  EXPECT_NEAR((*rec.gpus[1].column(Field::kPower))[100], 499.0, 1e-9);
}

TEST(JsonSamples, SavedPrometheusAnswerGoesThroughThePrometheusReader) {
  const std::string text = read_file(std::string(GPUDOCTOR_SOURCE_DIR) +
                                     "/tests/data/prometheus/dcgm_exporter_range.json");
  const Recording rec = load_ok(text, "range.json");
  EXPECT_FALSE(rec.gpus.empty());
  EXPECT_TRUE(has_note(rec, "saved Prometheus API answer")) << notes_of(rec);
}

// JSON read in place (formats/json_scan) and JSON read by nlohmann's DOM give the same recording:
// the same samples twice, once as loggers write them and once with an escape in each sample (a
// "\u0078" for "x": only the DOM reads escapes), through every framing, over numbers in every
// form JSON writes (integers, -0, trailing zeros, tiny and long decimals, exponents), strings,
// booleans, nulls, lists, nested objects, lists of GPUs, keys out of order and given twice.
std::string random_value(std::mt19937& rng, int depth) {
  static const char* kNumbers[] = {"0",
                                   "-0",
                                   "7",
                                   "-12",
                                   "250",
                                   "400.0",
                                   "1.50",
                                   "-0.0",
                                   "0.25",
                                   "0.0001",
                                   "0.00001",
                                   "1e3",
                                   "2.5E-2",
                                   "12345678901234567",
                                   "0.1234567890123456789",
                                   "98.76",
                                   "1234567890123456789012",
                                   "3.14159",
                                   "100.000",
                                   "-273.15"};
  const int pick = static_cast<int>(rng() % (depth > 1 ? 7 : 9));
  switch (pick) {
    case 0:
    case 1:
    case 2:
      return kNumbers[rng() % std::size(kNumbers)];
    case 3:
      return rng() % 2 ? "\"A100\"" : "\"GPU-1a2b\"";
    case 4:
      return rng() % 2 ? "true" : "false";
    case 5:
      return "null";
    case 6: {
      std::string l = "[";
      for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i)
        l += (i ? ", " : "") + std::string(rng() % 5 ? kNumbers[rng() % 8] : "null");
      return l + "]";
    }
    case 7: {  // a nested object
      std::string o = "{";
      for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; ++i)
        o += (i ? ", " : "") + std::string("\"k") + std::to_string(rng() % 4) +
             "\": " + random_value(rng, depth + 1);
      return o + "}";
    }
    default: {  // a list of GPUs
      std::string l = "[";
      for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; ++i)
        l += (i ? ", " : "") + std::string("{\"index\": ") + std::to_string(i) +
             ", \"utilization.gpu\": " + kNumbers[rng() % 8] + ", \"name\": \"A100\"}";
      return l + "]";
    }
  }
}

std::string random_sample(std::mt19937& rng, int t, bool escaped) {
  static const char* kKeys[] = {"power_w",      "util", "temp_c", "gpu", "mem_used_mib",
                                "sm_clock_mhz", "b.c",  "Zeta",   "a",   "gpus"};
  std::string o = "{\"time\": " + std::to_string(1764583200 + t);
  for (int i = 0, n = 1 + static_cast<int>(rng() % 6); i < n; ++i)
    o += std::string(", \"") + kKeys[rng() % std::size(kKeys)] + "\": " + random_value(rng, 0);
  o += escaped ? ", \"zz\": \"\\u0078\"}" : ", \"zz\": \"x\"}";
  return o;
}

void expect_same_recording(const Recording& a, const Recording& b) {
  EXPECT_EQ(a.notes, b.notes);
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  EXPECT_EQ(a.start_unix_ms, b.start_unix_ms);
  for (size_t g = 0; g < a.gpus.size(); ++g) {
    EXPECT_EQ(a.gpus[g].time_s, b.gpus[g].time_s);
    EXPECT_EQ(a.gpus[g].info.name, b.gpus[g].info.name);
    for (const auto& fi : all_fields()) {
      const auto x = a.gpus[g].column(fi.field);
      const auto y = b.gpus[g].column(fi.field);
      ASSERT_EQ(x == nullptr, y == nullptr) << fi.id;
      if (!x) continue;
      ASSERT_EQ(x->size(), y->size()) << fi.id;
      for (size_t i = 0; i < x->size(); ++i) {
        const double p = (*x)[i], q = (*y)[i];
        EXPECT_TRUE((std::isnan(p) && std::isnan(q)) ||
                    (p == q && std::signbit(p) == std::signbit(q)))
            << fi.id << "[" << i << "]: " << p << " vs " << q;
      }
    }
  }
}

TEST(JsonSamples, ReadInPlaceAsTheDomReadsIt) {
  std::mt19937 rng(20261201);
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE(round);
    std::vector<std::string> plain, escaped;
    for (int t = 0; t < 12; ++t) {
      const auto state = rng;
      plain.push_back(random_sample(rng, t, false));
      rng = state;  // the same sample again, with the escape
      escaped.push_back(random_sample(rng, t, true));
    }
    auto joined_by = [](const std::vector<std::string>& v, std::string_view sep,
                        std::string_view open, std::string_view close) {
      std::string s(open);
      for (size_t i = 0; i < v.size(); ++i) s += (i ? std::string(sep) : "") + v[i];
      return s + std::string(close);
    };
    const std::pair<std::string, std::string> framings[] = {
        {joined_by(plain, "\n", "", "\n"), joined_by(escaped, "\n", "", "\n")},        // JSON lines
        {joined_by(plain, ",\n ", "[", "]\n"), joined_by(escaped, ",\n ", "[", "]")},  // an array
        {plain.front(), escaped.front()},                                              // one sample
        {joined_by(plain, "\n", "", ""), joined_by(escaped, "\n", "", "")},
    };
    for (const auto& [text, dom] : framings) {
      const auto a = load_text(text, "x.json", {});
      const auto b = load_text(dom, "x.json", {});
      ASSERT_EQ(a.ok(), b.ok()) << (a.ok() ? b.error().message : a.error().message) << "\n" << text;
      if (!a.ok()) {
        EXPECT_EQ(a.error().message, b.error().message);
        continue;
      }
      expect_same_recording(*a, *b);
    }
  }
}

// Cut anywhere, or with a byte changed anywhere, a JSON log (read in place or by the DOM, as the
// damage falls) reads or is refused, and never crashes (run under ASan in CI).
TEST(JsonSamples, CutOrDamagedAnywhereReadsOrIsRefused) {
  for (const char* f : {"json/gpustat-loop.json", "json/samples-array.json", "json/columnar.json",
                        "wandb/wandb-events.jsonl"}) {
    SCOPED_TRACE(f);
    const std::string text = read_file(logs(f));
    const size_t step = text.size() / 47 + 1;  // (about 50 places in each)
    for (size_t cut = 1; cut < text.size(); cut += step) {
      const auto r = load_text(text.substr(0, cut), "x.json", {});
      if (r.ok()) {
        EXPECT_FALSE(r->gpus.empty());
      }
    }
    for (size_t at = 0; at < text.size(); at += step) {
      for (const char c : {'{', '}', '"', ',', '\n', '0', '\\'}) {
        std::string damaged = text;
        damaged[at] = c;
        const auto r = load_text(damaged, "x.json", {});
        if (r.ok()) {
          EXPECT_FALSE(r->gpus.empty());
        }
      }
    }
  }
}

TEST(JsonSamples, NoSamplesIsAnError) {
  for (const std::string text : {"[]", "{}", "[1, 2, 3]", "{\"a\": \"b\"}\n{\"c\": null}\n"}) {
    auto r = load_text(text, "x.json", {});
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_FALSE(r.error().message.empty());
    }
  }
}

TEST(PromText, DateLinesStampTheSnapshotsOfALoop) {
  const Recording rec = load_ok(read_file(logs("prom-text/dcgm-loop.prom")), "loop.prom");
  ASSERT_EQ(rec.gpus.size(), 2u) << notes_of(rec);
  EXPECT_EQ(rec.start_unix_ms, 1733047200000);
  ASSERT_EQ(rec.gpus[0].time_s.size(), 36u);
  EXPECT_NEAR(rec.gpus[0].time_s[1] - rec.gpus[0].time_s[0], 5.0, 1e-9);
  EXPECT_NEAR(mean_of(rec.gpus[0], Field::kPower), 640.0, 1e-9);
  EXPECT_NEAR(mean_of(rec.gpus[0], Field::kGpmSmUtil), 82.0, 1e-6);
  EXPECT_NEAR(mean_of(rec.gpus[1], Field::kUtilGpu), 49.5, 0.6);
  EXPECT_FALSE(has_note(rec, "placed 1 s apart")) << notes_of(rec);
}

TEST(PromText, SampleTimestampsWin) {
  const Recording rec = load_ok(read_file(logs("prom-text/dcgm-stamped.prom")), "stamped.prom");
  ASSERT_EQ(rec.gpus.size(), 2u) << notes_of(rec);
  ASSERT_EQ(rec.gpus[0].time_s.size(), 5u);
  EXPECT_NEAR(rec.gpus[0].time_s[4], 240.0, 1e-9);
}

TEST(PromText, UnstampedSnapshotsAreSaidToBeOneSecondApart) {
  const std::string text =
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 100\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 50\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 110\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 60\n"
      "garbage line here\n";
  const Recording rec = load_ok(text, "two.prom");
  ASSERT_EQ(rec.gpus.size(), 1u);
  ASSERT_EQ(rec.gpus[0].time_s.size(), 2u);
  EXPECT_NEAR(rec.gpus[0].time_s[1], 1.0, 1e-9);
  EXPECT_TRUE(has_note(rec, "placed 1 s apart")) << notes_of(rec);
  EXPECT_TRUE(has_note(rec, "two.prom:5: not a sample line")) << notes_of(rec);
}

// Series in another order from one snapshot to the next, snapshots out of time order, a time
// given twice (the later snapshot wins) and a series at a time no other has: the GPU's rows are
// every time once, in order. (The reader tries the series that came next last time, and takes a
// GPU's times from one series when all share them: neither may change what is read.)
TEST(PromText, SeriesInAnyOrderAndSnapshotsOutOfTimeOrder) {
  const std::string text =
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 100 1733047210000\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 50 1733047210000\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 60 1733047205000\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 90 1733047205000\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 120 1733047210000\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 55 1733047210000\n"
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"GPU-a\"} 1500 1733047215000\n";
  const Recording rec = load_ok(text, "order.prom");
  ASSERT_EQ(rec.gpus.size(), 1u) << notes_of(rec);
  const GpuSeries& g = rec.gpus[0];
  EXPECT_EQ(rec.start_unix_ms, 1733047205000);
  ASSERT_EQ(g.time_s, (std::vector<double>{0, 5, 10}));
  const ColumnView power = g.column(Field::kPower), util = g.column(Field::kUtilGpu),
                   clock = g.column(Field::kClockSm);
  ASSERT_TRUE(power && util && clock);
  EXPECT_EQ(power[0], 90);
  EXPECT_EQ(power[1], 120);
  EXPECT_TRUE(is_missing(power[2]));
  EXPECT_EQ(util[0], 60);
  EXPECT_EQ(util[1], 55);
  EXPECT_TRUE(is_missing(util[2]));
  EXPECT_TRUE(is_missing(clock[0]));
  EXPECT_EQ(clock[2], 1500);
}

// OpenMetrics (a text that ends with "# EOF"): sample timestamps are seconds, so one of 13 digits
// is out of range, where the text format reads it as milliseconds.
TEST(PromText, OpenMetricsTimestampsAreSeconds) {
  const std::string samples =
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 100 1733047200.5\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 101 1733047205\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 102 1733047210000\n";
  const Recording om = load_ok(samples + "# EOF\n", "scrape.om");
  ASSERT_EQ(om.gpus.size(), 1u);
  ASSERT_EQ(om.gpus[0].time_s.size(), 2u);
  EXPECT_EQ(om.start_unix_ms, 1733047200500);
  EXPECT_NEAR(om.gpus[0].time_s[1], 4.5, 1e-9);
  EXPECT_TRUE(has_note(om, "scrape.om:3: a sample time out of range")) << notes_of(om);
  // The same without the end marker: the text format, the 13 digits milliseconds.
  const Recording prom = load_ok(samples, "scrape.prom");
  ASSERT_EQ(prom.gpus.size(), 1u);
  ASSERT_EQ(prom.gpus[0].time_s.size(), 3u);
  EXPECT_NEAR(prom.gpus[0].time_s[2], 9.5, 1e-9);
}

TEST(PromText, SampleTimesOutOfRangeAreSkipped) {
  // Found by fuzz_prom_text: a timestamp past any date overflowed int64 once in ms.
  const std::string text =
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 100 1733047200000\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 101 9e300\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 102 -5\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 103 1733047205000\n";
  const Recording rec = load_ok(text, "far.prom");
  ASSERT_EQ(rec.gpus.size(), 1u);
  ASSERT_EQ(rec.gpus[0].time_s.size(), 2u);
  EXPECT_NEAR(rec.gpus[0].time_s[1], 5.0, 1e-9);
  EXPECT_TRUE(has_note(rec, "skipped 2 line(s)")) << notes_of(rec);
  EXPECT_TRUE(has_note(rec, "far.prom:2: a sample time out of range")) << notes_of(rec);
}

TEST(Encoding, BytesOfABinaryLookingLogNeverReachANoteUndecoded) {
  // Found by fuzz_tool_logs: NUL bytes in the head skipped the decoding, and a reader that still
  // took the text quoted latin-1 bytes in its notes (invalid UTF-8 in JSON output).
  std::string text =
      "=== 2026-12-01 12:00:00 ===\nGPU 0: NVIDIA GeForce RTX 3090\n  GPU Load: 3%\n"
      "  Temperature: 45.0 C\n";
  text += std::string("GPU\0\0\0 \xE9t\xE9\n", 12);
  text += "=== 2026-12-01 12:00:01 ===\nGPU 0: NVIDIA GeForce RTX 3090\n  GPU Load: 4%\n";
  const auto r = load_text(text, "blocks.log", {});
  if (r.ok()) {
    for (const auto& n : r->notes) EXPECT_TRUE(text::valid_utf8(n)) << n;
    for (const auto& g : r->gpus) EXPECT_TRUE(text::valid_utf8(g.info.name));
  } else {
    EXPECT_TRUE(text::valid_utf8(r.error().message)) << r.error().message;
  }
}

TEST(PromText, NoGpuSeriesIsAnError) {
  auto r =
      load_text("# HELP up x\n# TYPE up gauge\nup{job=\"a\",instance=\"b\"} 1\n", "up.prom", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no GPU series"), std::string::npos);
}

TEST(PromText, StampLines) {
  EXPECT_EQ(parse_stamp_line_ms("Sun Dec  1 10:00:00 UTC 2024"), 1733047200000);
  EXPECT_EQ(parse_stamp_line_ms("1733047200"), 1733047200000);
  EXPECT_EQ(parse_stamp_line_ms("1733047200123"), 1733047200123);
  EXPECT_EQ(parse_stamp_line_ms("2024-12-01T10:00:00Z"), 1733047200000);
  EXPECT_FALSE(parse_stamp_line_ms("Sun Foo  1 10:00:00 UTC 2024"));
  EXPECT_FALSE(parse_stamp_line_ms("42"));
}

}  // namespace
}  // namespace gpudoctor
