// load_telemetry on paths that are not log files: a folder of logs says so (not "the file is
// empty") and how diagnose reads one. The registry of inputs: --input-format, the choice by content
// and `gpudoctor formats` all come from it.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "formats/inputs.hpp"
#include "formats/load.hpp"
#include "report/formats_doc.hpp"

namespace gpudoctor {
namespace {

TEST(LoadPath, ADirectoryIsNamedAsOne) {
  const auto tmp = std::filesystem::temp_directory_path() / "gpudoctor-load-path-test";
  std::filesystem::create_directories(tmp);
  const std::string dir = tmp.string();
  auto rec = load_telemetry(dir, LoadOptions{});
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().kind, Error::Kind::kUsage);
  EXPECT_EQ(rec.error().message,
            dir +
                " is a folder of logs, not a W&B or MLflow run: name a log file in it "
                "(gpudoctor diagnose reads a whole folder, each log in turn or --merge as one "
                "run)");
  auto missing = load_telemetry(dir + "/no-such-gpudoctor-log.csv", LoadOptions{});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos);
  std::filesystem::remove_all(tmp);
}

TEST(InputRegistry, OneRowPerReaderNamesEverything) {
  std::set<std::string> names;
  const std::string listing = render_catalogue_text();
  std::vector<std::string> expected{"auto"};
  for (const auto& r : input_readers()) {
    EXPECT_TRUE(names.insert(std::string(r.name)).second) << r.name << " twice";
    EXPECT_EQ(find_input_reader(r.name), &r);
    EXPECT_NE(r.read, nullptr) << r.name;
    EXPECT_NE(listing.find("  " + std::string(r.name) + " "), std::string::npos) << r.name;
    expected.emplace_back(r.name);
  }
  EXPECT_EQ(input_formats(), expected);
  EXPECT_EQ(find_input_reader("auto"), nullptr);
  EXPECT_EQ(find_input_reader("nope"), nullptr);
  LoadOptions o;
  o.input_format = "nope";
  auto bad = load_text("x,y\n1,2\n", "in.csv", o);
  ASSERT_FALSE(bad.ok());
  for (const auto& n : expected) EXPECT_NE(bad.error().message.find(n), std::string::npos) << n;
}

// Forcing a reader reaches that reader (its own words in the error), whatever the content.
TEST(InputRegistry, ForcedReaderReadsTheText) {
  const std::string dmon = "# gpu    pwr  gtemp\n# Idx      W      C\n    0     61     33\n";
  LoadOptions o;
  EXPECT_TRUE(load_text(dmon, "in.log", o).ok());
  o.input_format = "dmon";
  auto rec = load_text(dmon, "in.log", o);
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  EXPECT_EQ(rec.value().gpus.size(), 1u);
  o.input_format = "recording";
  auto sqlite = load_text(dmon, "in.log", o);
  ASSERT_FALSE(sqlite.ok());
  EXPECT_EQ(sqlite.error().message, "in.log: a gpudoctor recording (SQLite) is read from a file");
  o.input_format = "smi-csv";
  EXPECT_FALSE(load_text(dmon, "in.log", o).ok());
}

}  // namespace
}  // namespace gpudoctor
