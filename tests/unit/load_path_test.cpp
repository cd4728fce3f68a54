// load_telemetry on paths that are not log files: a folder of logs says so (not "the file is
// empty") and how diagnose reads one.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/load.hpp"

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

}  // namespace
}  // namespace gpudoctor
