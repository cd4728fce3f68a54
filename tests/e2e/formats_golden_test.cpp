// What gpudoctor reads from every log fixture (tests/data/logs/<family>/): `export --format csv`,
// the identity columns of `export --format smi-csv` and the notes `import` prints, compared with
// golden/formats/<family>/<fixture>.golden (GPUDOCTOR_UPDATE_GOLDEN=1 rewrites them; review every
// change against the fixture). And the round trip import -> export smi-csv -> import gives the
// same values for every field nvidia-smi's CSV can carry.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "e2e_util.hpp"

namespace e2e {
namespace {

const std::string kLogs = kSrc + "/tests/data/logs";

// The flags a fixture needs (a headerless nvidia-smi CSV needs its --columns, one column per GPU
// without the quantity in the name needs --map).
std::string flags_for(const std::string& fixture) {
  if (fixture == "smi-csv/l4_noheader_nounits.csv")
    return " --columns timestamp,index,utilization.gpu,memory.used,power.draw,power.limit,"
           "clocks.sm";
  if (fixture == "generic-csv/wide_power_iso.csv") return " --map 'GPU*=power_w'";
  if (fixture == "json/columnar.json") return " --map 'per_gpu.*=power_w'";
  if (fixture == "tools/smi_epoch_noheader.csv")
    return " --columns timestamp,utilization.gpu,utilization.memory,memory.used,memory.total,"
           "temperature.gpu,power.draw";
  return "";
}

// Every fixture, as "family/file", in a fixed order.
std::vector<std::string> fixtures() {
  std::vector<std::string> out;
  for (const auto& family : fs::directory_iterator(kLogs)) {
    if (!family.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(family.path()))
      if (f.is_regular_file() && !f.path().filename().string().starts_with("."))
        out.push_back(family.path().filename().string() + "/" + f.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs gpudoctor in tests/data/logs, so that messages name the fixture as "family/file".
Result gpudoctor(const std::string& args) {
  return run_shell(fmt::format("cd {} && {} {}", quote(kLogs), GPUDOCTOR_BIN, args));
}

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / fmt::format("gpudoctor-formats-{}-{}", getpid(), name);
}

void expect_formats_golden(const std::string& fixture, const std::string& actual) {
  const fs::path path = fs::path(kSrc) / "tests/e2e/golden/formats" / (fixture + ".golden");
  if (std::getenv(GPUDOCTOR_UPDATE_GOLDEN_ENV)) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << " (run with GPUDOCTOR_UPDATE_GOLDEN=1)";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(actual, ss.str()) << "output differs from " << path;
}

TEST(FormatsGolden, EveryFixtureReadsAsRecorded) {
  const auto all = fixtures();
  ASSERT_GE(all.size(), 25u);
  const fs::path db = temp_path("golden.db");
  for (const auto& fixture : all) {
    SCOPED_TRACE(fixture);
    const std::string args = quote(fixture) + flags_for(fixture);
    std::string golden;
    const Result csv = gpudoctor("export " + args + " --format csv");
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    golden += fmt::format("$ gpudoctor export {} --format csv\n{}", args, csv.out);
    // nvidia-smi's layout shows what the log said of each GPU: name, bus id, UUID.
    const Result smi = gpudoctor("export " + args + " --format smi-csv");
    ASSERT_EQ(smi.exit_code, 0) << smi.err;
    golden +=
        fmt::format("$ gpudoctor export {} --format smi-csv | cut -d, -f1-5 | head -4\n", args);
    const auto lines = lines_of(smi.out);
    for (size_t i = 0; i < lines.size() && i < 4; ++i) {
      const auto cells = split(lines[i], ',');
      std::string row;
      for (size_t c = 0; c < cells.size() && c < 5; ++c) row += (c ? "," : "") + cells[c];
      golden += row + "\n";
    }
    fs::remove(db);
    const Result imp = gpudoctor("import " + args + " -o " + quote(db.string()));
    ASSERT_EQ(imp.exit_code, 0) << imp.err;
    std::string notes = imp.err;
    for (size_t at = notes.find(db.string()); at != std::string::npos; at = notes.find(db.string()))
      notes.replace(at, db.string().size(), "run.db");
    golden += fmt::format("$ gpudoctor import {} -o run.db\n{}", args, notes);
    expect_formats_golden(fixture, golden);
  }
  fs::remove(db);
}

// The columns of `export --format csv` nvidia-smi's CSV has no query name for.
const std::set<std::string> kNotInSmiCsv = {"energy_mj",           "power_pct",
                                            "temp_slowdown_c",     "pcie_tx_mibs",
                                            "pcie_rx_mibs",        "gpm_graphics_util_pct",
                                            "gpm_sm_util_pct",     "gpm_sm_occupancy_pct",
                                            "gpm_tensor_util_pct", "gpm_dram_bw_util_pct",
                                            "gpm_fp64_util_pct",   "gpm_fp32_util_pct",
                                            "gpm_fp16_util_pct",   "gpm_pcie_tx_mibs",
                                            "gpm_pcie_rx_mibs",    "gpm_nvlink_rx_mibs",
                                            "gpm_nvlink_tx_mibs"};

// CSV text as columns by name.
std::map<std::string, std::vector<std::string>> columns_of(const std::string& csv) {
  std::map<std::string, std::vector<std::string>> out;
  const auto lines = lines_of(csv);
  if (lines.empty()) return out;
  const auto names = split(lines[0], ',');
  for (size_t r = 1; r < lines.size(); ++r) {
    const auto cells = split(lines[r], ',');
    for (size_t c = 0; c < names.size(); ++c)
      out[names[c]].push_back(c < cells.size() ? cells[c] : "");
  }
  return out;
}

TEST(FormatsGolden, EveryFixtureRoundTripsThroughNvidiaSmiCsv) {
  const fs::path smi = temp_path("round.csv");
  for (const auto& fixture : fixtures()) {
    SCOPED_TRACE(fixture);
    const std::string args = quote(fixture) + flags_for(fixture);
    const Result first = gpudoctor("export " + args + " --format csv");
    ASSERT_EQ(first.exit_code, 0) << first.err;
    ASSERT_EQ(gpudoctor("export " + args + " --format smi-csv -o " + quote(smi.string())).exit_code,
              0);
    const Result back =
        gpudoctor("export " + quote(smi.string()) + " --input-format smi-csv --format csv");
    ASSERT_EQ(back.exit_code, 0) << back.err;
    const auto a = columns_of(first.out);
    const auto b = columns_of(back.out);
    ASSERT_EQ(a.at("time"), b.at("time"));
    ASSERT_EQ(a.at("gpu"), b.at("gpu"));
    for (const auto& [name, values] : a) {
      if (kNotInSmiCsv.count(name)) {
        EXPECT_EQ(b.count(name), 0u) << name;
        continue;
      }
      ASSERT_EQ(b.count(name), 1u) << name << " lost on the way";
      const auto& again = b.at(name);
      ASSERT_EQ(again.size(), values.size()) << name;
      // nvidia-smi's CSV has watts to 2 decimals and the rest as whole numbers.
      const double tolerance = name.ends_with("_w") ? 0.005 : 0.5;
      for (size_t r = 0; r < values.size(); ++r) {
        if (values[r].empty() || again[r].empty()) {
          EXPECT_EQ(values[r], again[r]) << name << " row " << r;
          continue;
        }
        EXPECT_NEAR(std::stod(values[r]), std::stod(again[r]), tolerance) << name << " row " << r;
      }
    }
    for (const auto& [name, values] : b) EXPECT_EQ(a.count(name), 1u) << name << " appeared";
  }
  fs::remove(smi);
}

}  // namespace
}  // namespace e2e
