// load_telemetry on paths that are not log files: a directory says so (not "the file is empty").
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/load.hpp"

namespace gpudoctor {
namespace {

TEST(LoadPath, ADirectoryIsNamedAsOne) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto rec = load_telemetry(dir, LoadOptions{});
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().kind, Error::Kind::kUsage);
  EXPECT_EQ(rec.error().message, dir + " is a directory: name a log file in it");
  auto missing = load_telemetry(dir + "/no-such-gpudoctor-log.csv", LoadOptions{});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos);
}

}  // namespace
}  // namespace gpudoctor
