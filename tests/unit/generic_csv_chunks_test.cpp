// The CSV reader's rows on several threads (formats/generic_csv_chunks.cpp) give the recording one
// pass gives, bit for bit: every CSV-like fixture and real log cut into chunks of a few hundred
// bytes, and texts made to break each assumption a chunk's reader makes (a GPU's time going back
// across a cut, a new header, a quote, a GPU first seen late, cells and times unreadable past a
// cut, a cut last line).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/parallel.hpp"
#include "formats/csv_frame.hpp"
#include "formats/encoding.hpp"
#include "formats/generic_csv.hpp"

namespace gpudoctor {
namespace {

namespace fs = std::filesystem;

bool same_bits(ColumnView a, ColumnView b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!gpudoctor::same_bits(a[i], b[i])) return false;
  return true;
}

// Every member a reader fills, compared exactly (NaNs by their bits).
std::string differs(const Result<Recording>& a, const Result<Recording>& b) {
  if (a.ok() != b.ok()) return "one read, one failed";
  if (!a.ok()) return a.error().message == b.error().message ? "" : "errors differ";
  const Recording& x = a.value();
  const Recording& y = b.value();
  if (x.notes != y.notes) return "notes differ";
  if (x.start_unix_ms != y.start_unix_ms || x.source != y.source) return "start or source";
  if (x.system.driver_version != y.system.driver_version) return "driver version";
  if (x.gpus.size() != y.gpus.size()) return "GPU count";
  for (size_t i = 0; i < x.gpus.size(); ++i) {
    const GpuSeries& g = x.gpus[i];
    const GpuSeries& h = y.gpus[i];
    const std::string at = fmt::format("GPU {}: ", i);
    if (g.info.index != h.info.index || g.info.name != h.info.name || g.info.uuid != h.info.uuid ||
        g.info.pci_bus_id != h.info.pci_bus_id || g.info.serial != h.info.serial ||
        g.info.persistence_mode != h.info.persistence_mode || g.info.mig_mode != h.info.mig_mode ||
        g.info.architecture != h.info.architecture || g.host != h.host)
      return at + "identity";
    if (!same_bits(g.time_s, h.time_s)) return at + "times";
    for (size_t f = 0; f < kFieldCount; ++f) {
      if ((g.columns[f] == nullptr) != (h.columns[f] == nullptr)) return at + "column presence";
      if (g.columns[f] && !same_bits(g.columns[f].view(), h.columns[f].view()))
        return at + fmt::format("column {}", f);
    }
    if (g.unsupported != h.unsupported || g.power_limit_source != h.power_limit_source)
      return at + "unsupported or limit source";
  }
  return "";
}

Result<Recording> read(std::string_view text, unsigned threads, size_t chunk, size_t* merged,
                       std::string_view tool = {}) {
  GenericCsvOptions o;
  o.threads = threads;
  o.chunk_bytes = chunk;
  o.chunks_merged = merged;
  o.tool = tool;
  return read_generic_csv(text, "in.csv", o);
}

// One pass against chunks of three sizes (a few hundred, a few tens, a handful in the text) on 3
// threads; returns the chunks merged.
size_t expect_same(std::string_view text, const std::string& what, std::string_view tool = {}) {
  const auto one = read(text, 1, 0, nullptr, tool);
  size_t merged = 0;
  const size_t n = text.size();
  for (const size_t chunk : {std::max<size_t>(61, n / 400), std::max<size_t>(997, n / 23),
                             std::max<size_t>(4096, n / 5)}) {
    const auto many = read(text, 3, chunk, &merged, tool);
    EXPECT_EQ(differs(one, many), "") << what << ", chunks of " << chunk << " bytes";
  }
  // Checked for UTF-8 as it is read (how load_text reads a CSV): the same recording or error.
  GenericCsvOptions checked;
  checked.threads = 3;
  checked.chunk_bytes = std::max<size_t>(997, n / 23);
  checked.tool = tool;
  checked.read_as = text::ReadAs::kCheckUtf8;
  EXPECT_EQ(differs(one, read_generic_csv(text, "in.csv", checked)), "")
      << what << ", checked as read";
  return merged;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string utf8_of(const fs::path& p) {
  const std::string bytes = bytes_of(p);
  std::string storage;
  const std::string_view s = text::decode_to_utf8(bytes, text::detect_encoding(bytes), storage);
  return std::string(s);
}

// A Windows-1252 text read as it is (ReadAs::kWindows1252: the lines that need it decoded as they
// are read) gives the recording its decoded text gives, in one pass and in chunks.
void expect_decoded_as_read(const std::string& bytes, const std::string& what) {
  std::string storage;
  const std::string decoded(text::decode_to_utf8(bytes, text::Encoding::kWindows1252, storage));
  const auto want = read(decoded, 1, 0, nullptr);
  for (const auto& [threads, chunk] :
       {std::pair{1u, size_t{0}}, std::pair{3u, std::max<size_t>(61, bytes.size() / 50)}}) {
    GenericCsvOptions o;
    o.threads = threads;
    o.chunk_bytes = chunk;
    o.read_as = text::ReadAs::kWindows1252;
    EXPECT_EQ(differs(want, read_generic_csv(bytes, "in.csv", o)), "")
        << what << ", decoded as read, " << threads << " thread(s)";
  }
}

// Every fixture and real log the CSV reader takes (and those it refuses: the same error).
TEST(CsvChunks, EveryLogReadsAsInOnePass) {
  const fs::path root(GPUDOCTOR_SOURCE_DIR);
  size_t files = 0, chunked = 0, latin1 = 0;
  for (const fs::path& dir : {root / "tests/data/logs", root / "../shared/data/real-logs"}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file() || e.file_size() > (size_t{8} << 20)) continue;
      const std::string ext = e.path().extension().string();
      if (ext != ".csv" && ext != ".txt" && ext != ".log" && ext != ".tsv") continue;
      const std::string text = utf8_of(e.path());
      const std::string name = e.path().filename().string();
      ++files;
      chunked += expect_same(text, name) > 0;
      const std::string bytes = bytes_of(e.path());
      if (text::detect_encoding(bytes) == text::Encoding::kWindows1252) {
        ++latin1;
        expect_decoded_as_read(bytes, name);
      }
      if (e.path().parent_path().filename() == "smi-csv")
        chunked += expect_same(text, name + " as nvidia-smi's", "nvidia-smi") > 0;
    }
  }
  EXPECT_GE(files, 40U);
  EXPECT_GE(chunked, 20U) << "of " << files << " files";
  EXPECT_GE(latin1, 2U) << "Windows-1252 logs (GPU-Z, HWiNFO) among " << files << " files";
}

// An nvidia-smi-like log of `rows` rounds of `gpus` GPUs, 1 s apart; `edit` changes row r's line.
template <class Edit>
std::string smi_log(size_t rows, size_t gpus, Edit&& edit) {
  std::string s = "timestamp, index, name, power.draw [W], utilization.gpu [%]\n";
  for (size_t r = 0; r < rows; ++r)
    for (size_t g = 0; g < gpus; ++g) {
      std::string line =
          fmt::format("2026/12/03 10:{:02}:{:02}.000, {}, NVIDIA H100 80GB HBM3, {}.{} W, {} %\n",
                      r / 60 % 60, r % 60, g, 100 + (r * 7 + g) % 300, r % 100, (r * 13 + g) % 101);
      edit(r, g, line);
      s += line;
    }
  return s;
}

TEST(CsvChunks, PlainLogIsMergedChunkByChunk) {
  const std::string s = smi_log(600, 4, [](size_t, size_t, std::string&) {});
  EXPECT_GT(expect_same(s, "plain"), 50U);
}

// Logs without a GPU column: the rows' times, for the sampling rounds, are one GPU's series while
// every row is read into it, and kept apart from the first that is not (a row of a round, at the
// time of the row before; a row of another host); chunks of either kind merge to the one pass.
TEST(CsvChunks, RowTimesWithoutAGpuColumn) {
  auto log = [](size_t regular, size_t rounds, bool hosts) {
    std::string s = hosts ? "timestamp,hostname,utilization.gpu [%],power.draw [W]\n"
                          : "timestamp,utilization.gpu [%],power.draw [W]\n";
    size_t t = 1764583200;
    auto row = [&](size_t k, double at, size_t g) {
      s += fmt::format("{:.3f},", at);
      if (hosts) s += fmt::format("node{},", g);
      s += fmt::format("{},{}.5\n", (k * 13 + g) % 101, 100 + (k * 7 + g) % 300);
    };
    for (size_t k = 0; k < regular; ++k) row(k, static_cast<double>(t++), 0);
    for (size_t k = 0; k < rounds; ++k, ++t)
      for (size_t g = 0; g < 2; ++g)
        row(k, static_cast<double>(t) + 0.001 * static_cast<double>(g), g);
    return s;
  };
  for (const auto& [regular, rounds] :
       std::vector<std::pair<size_t, size_t>>{{3000, 0}, {0, 1500}, {1500, 750}, {2800, 100}}) {
    for (const bool hosts : {false, true}) {
      const std::string what =
          fmt::format("{} rows, then {} rounds{}", regular, rounds, hosts ? ", by host" : "");
      expect_same(log(regular, rounds, hosts), what);
    }
  }
  // In rounds throughout: two GPUs, told apart by their place in each round.
  const auto r = read(log(0, 1500, false), 3, 997, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 2U);
  EXPECT_EQ(r->gpus[1].size(), 1500U);
}

// Inside work already spread (a fleet worker's log) the default is one pass: no threads of the
// reader's own; threads asked for are still used.
TEST(CsvChunks, InsideSpreadWorkOnePass) {
  const std::string s = smi_log(600, 4, [](size_t, size_t, std::string&) {});
  size_t merged = 0;
  {
    const SpreadWork share;
    const auto spread = read(s, 0, 1024, &merged);
    ASSERT_TRUE(spread.ok()) << spread.error().message;
    EXPECT_EQ(merged, 0U);
    EXPECT_EQ(differs(read(s, 1, 0, nullptr), spread), "");
    EXPECT_TRUE(read(s, 3, 1024, &merged).ok());
    EXPECT_GT(merged, 0U);
  }
}

// A column of one value (a power limit) is read as that value once, in one pass and merged from
// chunks; one different value anywhere, in any chunk, builds it out with every value as written.
TEST(CsvChunks, ColumnsOfOneValueStayOne) {
  auto with_limit = [](size_t changed_row) {
    return smi_log(600, 4, [&](size_t r, size_t g, std::string& line) {
      line.insert(line.size() - 1, r == changed_row && g == 1 ? ", 650.00 W" : ", 700.00 W");
    });
  };
  for (const size_t changed : {size_t{600}, size_t{0}, size_t{333}, size_t{599}}) {
    std::string s = with_limit(changed);
    s.replace(0, s.find('\n'),
              "timestamp, index, name, power.draw [W], utilization.gpu [%], "
              "power.limit [W]");
    for (const auto& [threads, chunk] : {std::pair{1u, size_t{0}}, std::pair{3u, size_t{997}}}) {
      const auto rec = read(s, threads, chunk, nullptr);
      ASSERT_TRUE(rec.ok()) << rec.error().message;
      ASSERT_EQ(rec->gpus.size(), 4U);
      for (const auto& g : rec->gpus) {
        const bool one_value = changed == 600 || g.info.index != 1;
        const auto& c = g.columns[index_of(Field::kPowerLimit)];
        ASSERT_TRUE(c);
        EXPECT_EQ(c.is_constant(), one_value) << changed << " " << threads << " " << g.info.index;
        EXPECT_FALSE(g.columns[index_of(Field::kPower)].is_constant());
        ASSERT_EQ(c.size(), 600U);
        for (size_t r = 0; r < 600; ++r)
          ASSERT_EQ(c.view()[r], !one_value && r == changed ? 650 : 700) << r;
      }
    }
  }
}

// A GPU's time going back right after a cut: its chunk depends on the rows before it and is read
// again in order (the row skipped and counted as one pass does).
TEST(CsvChunks, TimeGoingBackAcrossACut) {
  const std::string s = smi_log(600, 4, [](size_t r, size_t g, std::string& line) {
    if (g == 2 && r % 37 == 5) line.replace(line.find("10:"), 8, "09:00:00");
  });
  expect_same(s, "time back");
  const auto rec = read(s, 3, 200, nullptr);
  ASSERT_TRUE(rec.ok());
  bool noted = false;
  for (const auto& n : rec.value().notes) noted = noted || n.find("not after") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(CsvChunks, UnreadableCellsAndTimesPastACutKeepTheirLines) {
  const std::string s = smi_log(300, 2, [](size_t r, size_t g, std::string& line) {
    if (r == 250 && g == 1) line.replace(line.find(" W,"), 3, " Wx,");
    if (r == 260 && g == 0) line.replace(0, 4, "20xx");
  });
  expect_same(s, "bad cells");
  const auto rec = read(s, 3, 200, nullptr);
  ASSERT_TRUE(rec.ok());
  bool line_named = false;
  for (const auto& n : rec.value().notes)
    line_named =
        line_named || n.find(fmt::format("in.csv:{}:", 2 + 250 * 2 + 1)) != std::string::npos;
  EXPECT_TRUE(line_named);
}

TEST(CsvChunks, NewHeaderQuoteLateGpuAndCutLastLine) {
  // The columns change two thirds of the way in (nvidia-smi restarted with others).
  std::string changed = smi_log(400, 2, [](size_t, size_t, std::string&) {});
  changed += "timestamp, index, power.draw [W], temperature.gpu\n";
  for (size_t r = 0; r < 200; ++r)
    changed += fmt::format("2026/12/03 11:{:02}:{:02}.000, {}, {}.5 W, {}\n", r / 60, r % 60, r % 2,
                           150 + r % 50, 40 + r % 30);
  expect_same(changed, "new header");
  // A quoted name late in the file.
  expect_same(smi_log(400, 2,
                      [](size_t r, size_t, std::string& line) {
                        if (r == 350) line.replace(line.find("NVIDIA"), 6, "\"NVIDIA, Inc\"");
                      }),
              "quote");
  // Quoted names that hold line ends, where a cut may fall inside them: one holds what reads as
  // a row of its own when a chunk starts there.
  expect_same(smi_log(400, 2,
                      [](size_t r, size_t, std::string& line) {
                        if (r >= 300 && r % 3 == 0) {
                          const std::string row = line.substr(0, line.size() - 1);
                          line.replace(line.find("NVIDIA"), 6, "\"NVIDIA\n" + row + "\n\"");
                        }
                      }),
              "quoted line ends");
  // A GPU first seen (and first named) far into the file.
  expect_same(smi_log(400, 3,
                      [](size_t r, size_t g, std::string& line) {
                        if (g == 2 && r < 300) line.clear();
                        if (g == 1 && r < 200) line.replace(line.find("NVIDIA"), 21, "[N/A]");
                      }),
              "late GPU");
  // The file ends inside its last line.
  std::string cut = smi_log(400, 2, [](size_t, size_t, std::string&) {});
  cut.resize(cut.size() - 9);
  expect_same(cut, "cut");
}

// The rules that tell units apart by the values see every chunk's: memory in bytes and
// utilisation as a ratio show only past the head.
TEST(CsvChunks, UnitsToldByValuesFromEveryChunk) {
  std::string s = "timestamp,gpu,memory_used,utilization,power\n";
  for (size_t r = 0; r < 3000; ++r)
    for (size_t g = 0; g < 2; ++g)
      s += fmt::format("{},{},{},{},{}\n", 1764756000 + r, g, r < 2000 ? 500 : 2000000000 + r,
                       r < 2000 ? (r % 2 == 0 ? "0" : "1") : "0.5", r < 2000 ? 200 : 250000);
  EXPECT_GT(expect_same(s, "units by values"), 10U);
  const auto rec = read(s, 3, 997, nullptr);
  ASSERT_TRUE(rec.ok());
  std::string notes;
  for (const auto& n : rec.value().notes) notes += n + "\n";
  EXPECT_NE(notes.find("bytes"), std::string::npos) << notes;
  EXPECT_NE(notes.find("ratio"), std::string::npos) << notes;
}

// A log without a GPU column (GPU-Z, HWiNFO, a script's own CSV): one GPU's rows, read in chunks
// as a log with one; where its rows come in rounds of several GPUs (the same time on each round's
// rows), the second reading that tells them apart by their place in the round is in order. The
// same recording as one pass either way, times going back across a cut included.
TEST(CsvChunks, LogsWithoutAGpuColumn) {
  auto gpuz = [](size_t rows, auto&& edit) {
    std::string s = "Date , GPU Clock [MHz] , GPU Load [%] , Board Power Draw [W] ,\n";
    for (size_t r = 0; r < rows; ++r) {
      std::string line =
          fmt::format("2026-12-03 {:02}:{:02}:{:02} , {:7.1f} , {:3} , {:6.1f} ,\n", 10 + r / 3600,
                      r / 60 % 60, r % 60, 1980.0 - r % 50, r % 101, 100.0 + (r % 40) * 0.1);
      edit(r, line);
      s += line;
    }
    return s;
  };
  const std::string plain = gpuz(3000, [](size_t, std::string&) {});
  EXPECT_GT(expect_same(plain, "GPU-Z"), 10U);
  const auto rec = read(plain, 3, 997, nullptr);
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  ASSERT_EQ(rec->gpus.size(), 1U);
  EXPECT_EQ(rec->gpus[0].size(), 3000U);

  expect_same(gpuz(3000,
                   [](size_t r, std::string& line) {
                     if (r % 97 == 5) line.replace(line.find("10:"), 8, "09:00:00");
                   }),
              "GPU-Z, time back");

  // Two GPUs' rows in rounds, with no column to tell them apart.
  std::string rounds = "time,power_w,util\n";
  for (size_t r = 0; r < 2000; ++r)
    for (size_t g = 0; g < 2; ++g)
      rounds += fmt::format("{},{},{}\n", 1764756000 + r, 100 + g * 200 + r % 50, (r + g) % 101);
  expect_same(rounds, "rounds");
  const auto two = read(rounds, 3, 997, nullptr);
  ASSERT_TRUE(two.ok()) << two.error().message;
  ASSERT_EQ(two->gpus.size(), 2U);
  EXPECT_EQ(two->gpus[1].size(), 2000U);
}

// Windows-1252 bytes in the places a CSV holds text: the header ("°C"), a comment line above it,
// the GPU's name in the rows, a quoted cell over two lines, a quote never closed, a number that
// cannot be read, the footer of group names (HWiNFO) and a last line cut short. Decoded as read,
// the recording of the decoded text, notes (which quote cells) included.
TEST(CsvChunks, Windows1252DecodedAsItIsRead) {
  const std::string head =
      "Date, GPU Temperature [\xB0"
      "C], Board Power Draw [W], GPU Load [%], Name, Remark\n";
  std::string rows;
  for (size_t r = 0; r < 1500; ++r) {
    std::string remark = r % 3 == 0 ? "na\xEFve" : "plain";
    if (r == 900) remark = "\"unclosed \xE9";
    // A quoted temperature over two lines that cannot be read: the note quotes it (the first
    // such cell; in bad_temp, that of the first row).
    const std::string temp = r == 700 ? "\"4\xB0\n0\"" : fmt::format("{}", 40 + r % 30);
    rows += fmt::format("2026-12-03 {:02}:{:02}:{:02}, {}, {}.5, {}, GeForce RTX\x99 4090, {}\n",
                        10 + r / 3600, r / 60 % 60, r % 60, temp, 100 + r % 300, r % 101, remark);
  }
  const std::string s = head + rows;
  std::string bad_temp = s;
  bad_temp.replace(bad_temp.find(", 40, "), 6,
                   ", 4\xB0"
                   "0, ");
  const std::string commented = "# " + head + head + rows;
  // HWiNFO's last line: each column's sensor group, the GPU named there.
  std::string footer = s;
  for (int k = 0; k < 5; ++k) footer += ", GPU [#0]: NVIDIA GeForce RTX\x99 4090";
  footer += "\n";
  const std::string cut = s + "2026-12-03 11:00:00, 41, 1\xB0";
  // Excel's separator hint is one ASCII byte: "sep=§" is no hint, decoded or not.
  expect_decoded_as_read("sep=\xA7\n" + s, "a hint past ASCII");
  GenericCsvOptions o;
  o.read_as = text::ReadAs::kWindows1252;
  const auto plain = read_generic_csv(s, "in.csv", o);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  for (const std::string* t :
       std::vector<const std::string*>{&s, &bad_temp, &commented, &footer, &cut}) {
    expect_decoded_as_read(*t, "made");
    const auto rec = read_generic_csv(*t, "in.csv", o);
    ASSERT_TRUE(rec.ok()) << rec.error().message;
    ASSERT_EQ(rec->gpus.size(), 1U);
    EXPECT_EQ(rec->gpus[0].info.name,
              t == &footer ? "NVIDIA GeForce RTX\u2122 4090" : "GeForce RTX\u2122 4090");
    EXPECT_TRUE(rec->gpus[0].columns[index_of(Field::kTemp)]);  // the header's, decoded
    bool quoted = false;
    for (const auto& n : rec->notes) {
      EXPECT_TRUE(text::valid_utf8(n)) << n;
      quoted = quoted || n.find("cannot read \"4\u00B0") != std::string::npos;
    }
    EXPECT_TRUE(quoted);
  }
  // The footer is read as one (the GPU's name above, from it): no row more.
  const auto with_footer = read_generic_csv(footer, "in.csv", o);
  ASSERT_TRUE(with_footer.ok());
  EXPECT_EQ(with_footer->gpus[0].size(), plain->gpus[0].size());
}

// A time of day alone needs the rows before it (past midnight it goes back): read in one pass,
// the same as ever.
TEST(CsvChunks, TimeOfDayAcrossMidnight) {
  std::string s = "time,gpu,power_w\n";
  for (size_t r = 0; r < 2000; ++r)
    s += fmt::format("{:02}:{:02}:{:02},{},{}\n", (23 + r / 3600) % 24, (50 + r / 60) % 60, r % 60,
                     r % 2, 100 + r % 200);
  size_t merged = 0;
  const auto one = read(s, 1, 0, nullptr);
  const auto many = read(s, 3, 200, &merged);
  EXPECT_EQ(differs(one, many), "");
  EXPECT_EQ(merged, 0U);
}

// A GPU's times and columns are reserved for the rows the text holds, guessed from the bytes read
// so far (generic_csv_rows.cpp, rows_ahead): they grow once, not by doublings that leave up to
// half their room unused (5,000 rows: doublings would end at 8,192), in one pass and merged.
TEST(CsvChunks, ColumnsGrowToTheRowsTheTextHolds) {
  constexpr size_t kRows = 5000;
  std::string s = "time,gpu,power_w,util\n";
  for (size_t r = 0; r < kRows; ++r)
    for (size_t g = 0; g < 4; ++g) s += fmt::format("{},{},{},{}\n", r, g, 100 + r % 97, r % 3);
  for (const unsigned threads : {1U, 3U}) {
    size_t merged = 0;
    auto r = read(s, threads, threads == 1 ? 0 : 16384, &merged);
    ASSERT_TRUE(r.ok()) << r.error().message;
    if (threads > 1) {
      EXPECT_GT(merged, 10U);
    }
    Recording rec = std::move(r).value();
    ASSERT_EQ(rec.gpus.size(), 4U);
    for (GpuSeries& g : rec.gpus) {
      ASSERT_EQ(g.size(), kRows);
      // (The guess and a tenth: about 5,700-5,900 here. Doublings: 8,192.)
      EXPECT_LE(g.time_s.capacity(), kRows * 5 / 4) << threads << " thread(s)";
      for (const Field f : {Field::kPower, Field::kUtilGpu}) {
        ASSERT_TRUE(g.has(f));
        const std::vector<double>& v = g.columns[index_of(f)].values();
        EXPECT_EQ(v.size(), kRows);
        EXPECT_LE(v.capacity(), kRows * 5 / 4) << threads << " thread(s), " << info(f).id;
      }
    }
  }
}

// What a chunk's reader reads its chunk with: records that stop at the first line with a quote (a
// comment's too, as a quoted cell may hold a '#' line), say so again when asked again, and consume
// nothing of that line; without being asked, the quoted record is read.
TEST(CsvChunks, RecordsStopAtAQuoteWhenAsked) {
  const std::string t = "a,b\n1,2\n# a \"note\"\n3,\"4\"\n";
  for (const bool stop : {false, true}) {
    csv::Records r(t, ',', 0);
    if (stop) r.stop_at_quotes();
    std::vector<std::string_view> cells;
    size_t line = 0;
    std::string_view raw;
    ASSERT_EQ(r.next(cells, line, raw), csv::Records::Next::kRecord);
    ASSERT_EQ(r.next(cells, line, raw), csv::Records::Next::kRecord);
    EXPECT_EQ(raw, "1,2");
    if (stop) {
      EXPECT_EQ(r.next(cells, line, raw), csv::Records::Next::kQuote);
      EXPECT_EQ(r.position(), t.find('#'));
      EXPECT_EQ(r.next(cells, line, raw), csv::Records::Next::kQuote);
      EXPECT_EQ(r.position(), t.find('#'));
      EXPECT_EQ(r.line(), 2U);
    } else {
      ASSERT_EQ(r.next(cells, line, raw), csv::Records::Next::kRecord);
      EXPECT_EQ(cells, (std::vector<std::string_view>{"3", "4"}));
      EXPECT_EQ(line, 4U);
      EXPECT_EQ(r.next(cells, line, raw), csv::Records::Next::kEnd);
    }
  }
}

}  // namespace
}  // namespace gpudoctor
