// The reading rules every reader shares: one unit table (log_units), one no-value rule (no_value),
// one date/time reader (log_time), contains_ci once (text). Each NVIDIA reader takes the union of
// what any reader took: kW and MB in nvidia-smi CSV, kW and °C in dmon, kW in the table ...
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "formats/dcgm.hpp"
#include "formats/dmon.hpp"
#include "formats/log_time.hpp"
#include "formats/log_units.hpp"
#include "formats/no_value.hpp"
#include "formats/smi_csv.hpp"
#include "formats/smi_table.hpp"
#include "formats/smi_table_rows.hpp"
#include "text/text.hpp"

namespace gpudoctor {
namespace {

double first(const Recording& rec, Field f, size_t gpu = 0) {
  const auto c = rec.gpus.at(gpu).column(f);
  return c == nullptr || c->empty() ? std::nan("") : c->front();
}

TEST(UnitTable, EverySpellingAnyReaderTook) {
  struct Case {
    Unit u;
    const char* written;
    double factor;
  };
  const Case cases[] = {
      {Unit::kWatt, "W", 1},
      {Unit::kWatt, "mW", 1e-3},
      {Unit::kWatt, "kW", 1e3},
      {Unit::kPercent, "%", 1},
      {Unit::kCelsius, "C", 1},
      {Unit::kCelsius, "°C", 1},
      {Unit::kMegahertz, "MHz", 1},
      {Unit::kMegahertz, "GHz", 1e3},
      {Unit::kMegahertz, "kHz", 1e-3},
      {Unit::kMebibyte, "MiB", 1},
      {Unit::kMebibyte, "MB", 1},
      {Unit::kMebibyte, "GiB", 1024},
      {Unit::kMebibyte, "GB", 1024},
      {Unit::kMebibyte, "KiB", 1.0 / 1024},
      {Unit::kMebibyte, "TiB", 1048576},
      {Unit::kMebibyte, "B", 1.0 / 1048576},
      {Unit::kMebibytePerSecond, "MiB/s", 1},
      {Unit::kMebibytePerSecond, "MB/s", 1},
      {Unit::kMebibytePerSecond, "KB/s", 1.0 / 1024},
      {Unit::kMebibytePerSecond, "GiB/s", 1024},
      {Unit::kMillijoule, "mJ", 1},
      {Unit::kMillijoule, "J", 1e3},
      {Unit::kLanes, "x", 1},
      {Unit::kPercent, "", 1},
  };
  for (const auto& c : cases) {
    const auto k = csv::unit_factor(c.u, c.written);
    ASSERT_TRUE(k.has_value()) << c.written;
    EXPECT_DOUBLE_EQ(*k, c.factor) << c.written;
  }
  EXPECT_FALSE(csv::unit_factor(Unit::kWatt, "MiB"));
  EXPECT_FALSE(csv::unit_factor(Unit::kCelsius, "%"));
  EXPECT_FALSE(csv::unit_factor(Unit::kWatt, "furlongs"));
}

TEST(NoValueRule, OneRuleForEveryMarker) {
  using csv::NoValue;
  for (const char* m : {"", "N/A", "[N/A]", "-", "--", "nan", "null", "None", "[Unknown]",
                        "<<<NULL>>>", "?", "#N/A"})
    EXPECT_EQ(csv::no_value(m), NoValue::kMissing) << m;
  for (const char* m : {"[Not Supported]", "Not Supported", "NotSupported", "<<<NOT_SUPPORTED>>>"})
    EXPECT_EQ(csv::no_value(m), NoValue::kNotSupported) << m;
  for (const char* m : {"[Insufficient Permissions]", "<<<NO_PERMISSION>>>"})
    EXPECT_EQ(csv::no_value(m), NoValue::kNoPermission) << m;
  for (const char* m : {"ERR!", "[Unknown Error]", "[GPU is lost]", "error"})
    EXPECT_EQ(csv::no_value(m), NoValue::kError) << m;
  for (const char* m : {"0", "93%", "152.34 W", "-3", "P0", "MAX", "NVIDIA H100"})
    EXPECT_EQ(csv::no_value(m), NoValue::kNone) << m;
}

TEST(DateTimeReader, DmonAndTableForms) {
  EXPECT_EQ(csv::parse_compact_date("20240314"), text::days_from_civil(2024, 3, 14) * 86400000);
  EXPECT_EQ(csv::parse_compact_date("2024/03/14"), csv::parse_compact_date("20240314"));
  EXPECT_FALSE(csv::parse_compact_date("20230229"));
  EXPECT_FALSE(csv::parse_compact_date("12345678"));
  // Eight characters of a dotted date are not a compact one.
  EXPECT_EQ(csv::parse_compact_date("9.1.2026"), csv::parse_date("9.1.2026"));
  EXPECT_TRUE(csv::parse_compact_date("9.1.2026"));
  EXPECT_EQ(csv::parse_time_of_day("23:59:57"), ((23 * 60 + 59) * 60 + 57) * 1000);
  EXPECT_EQ(csv::parse_ctime("Tue Nov 26 10:21:07 2024"),
            text::days_from_civil(2024, 11, 26) * 86400000 + ((10 * 60 + 21) * 60 + 7) * 1000);
  EXPECT_FALSE(csv::parse_ctime("Tue Nov 26 10:21 2024"));
}

TEST(ContainsCi, Once) {
  EXPECT_TRUE(text::contains_ci("[Not Supported]", "not supported"));
  EXPECT_TRUE(text::contains_ci("abc", ""));
  EXPECT_FALSE(text::contains_ci("ab", "abc"));
}

// nvidia-smi CSV takes MB and kW (the table's and dmon's spellings) and any marker of no value.
TEST(ReadersTakeTheUnion, SmiCsv) {
  const std::string text =
      "timestamp, index, power.draw [W], memory.used [MiB], temperature.gpu\n"
      "2024/05/14 10:31:07.412, 0, 0.152 kW, 2 GB, 40 °C\n"
      "2024/05/14 10:31:08.412, 0, -, nan, [N/A]\n";
  auto r = read_smi_csv(text, "in.csv", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(first(r.value(), Field::kPower), 152);
  EXPECT_DOUBLE_EQ(first(r.value(), Field::kMemUsed), 2048);
  EXPECT_DOUBLE_EQ(first(r.value(), Field::kTemp), 40);
  for (const auto& n : r.value().notes) EXPECT_EQ(n.find("cannot read"), std::string::npos) << n;
}

// dmon takes kW, °C and MB, and "N/A" as its own "-".
TEST(ReadersTakeTheUnion, Dmon) {
  const std::string text =
      "# gpu    pwr  gtemp     fb\n"
      "# Idx     kW     °C     MB\n"
      "    0   0.25     33   1024\n"
      "    0    N/A      -   1024\n";
  auto r = read_dmon(text, "dmon.log", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(first(r.value(), Field::kPower), 250);
  EXPECT_DOUBLE_EQ(first(r.value(), Field::kTemp), 33);
  for (const auto& n : r.value().notes) {
    EXPECT_EQ(n.find("not recognised"), std::string::npos) << n;
    EXPECT_EQ(n.find("cannot read"), std::string::npos) << n;
  }
}

// The table's cells, read by the catalogue's reader as any CSV cell: kW, MB and "°C" as any reader
// takes them, every marker of no value (ERR!, "-", "[N/A]": missing, never 0).
TEST(ReadersTakeTheUnion, SmiTableCells) {
  const std::string snapshot =
      "+-----------------------------------------------------------------------------+\n"
      "| NVIDIA-SMI 390.116                Driver Version: 390.116                   |\n"
      "|-------------------------------+----------------------+----------------------+\n"
      "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
      "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
      "|===============================+======================+======================|\n"
      "|   0  GeForce GTX 560 Ti  Off  | 00000000:01:00.0 N/A |                  N/A |\n"
      "| FAN   44°C    P8  0.3kW / [N/A] |  2048MB /  1217MiB |     UTIL     Default |\n"
      "+-------------------------------+----------------------+----------------------+\n"
      "+-----------------------------------------------------------------------------+\n"
      "| Processes:                                                       GPU Memory |\n"
      "|  GPU       PID   Type   Process name                             Usage      |\n"
      "|=============================================================================|\n"
      "|  No running processes found                                                 |\n"
      "+-----------------------------------------------------------------------------+\n";
  auto table = [&](std::string_view fan, std::string_view util) {
    std::string t;
    for (const char* date : {"Fri Jan 25 14:20:27 2019\n", "Fri Jan 25 14:20:28 2019\n"}) {
      std::string s = snapshot;
      s.replace(s.find("FAN"), 3, fan);
      s.replace(s.find("UTIL"), 4, util);
      t += date + s;
    }
    return t;
  };
  auto r = read_smi_table(table("ERR!", "-"), "smi.log", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const GpuSeries& g = r.value().gpus.at(0);
  EXPECT_DOUBLE_EQ(first(r.value(), Field::kPower), 300);
  EXPECT_DOUBLE_EQ(first(r.value(), Field::kMemUsed), 2048);
  EXPECT_DOUBLE_EQ(first(r.value(), Field::kTemp), 44);
  EXPECT_FALSE(g.has(Field::kPowerLimitEnforced));
  EXPECT_FALSE(g.has(Field::kFan));  // ERR!: no value, never 0
  EXPECT_FALSE(g.has(Field::kUtilGpu));
  EXPECT_EQ(g.unsupported.count(Field::kFan), 0u);
  for (const auto& n : r.value().notes) EXPECT_EQ(n.find("cannot read"), std::string::npos) << n;
  r = read_smi_table(table("[N/A]", "ERR!"), "smi.log", {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r.value().gpus.at(0).has(Field::kFan));
  EXPECT_FALSE(r.value().gpus.at(0).has(Field::kUtilGpu));
  EXPECT_EQ(smi_table::memory_mib("1GiB"), 1024);
}

}  // namespace
}  // namespace gpudoctor
