#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "report/fields_doc.hpp"

namespace gpudoctor {
namespace {

TEST(Docs, MetricsMdMatchesTheFieldTable) {
  std::ifstream in(std::string(GPUDOCTOR_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_TRUE(in) << "docs/metrics.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), render_fields_markdown())
      << "docs/metrics.md is stale: run `gpudoctor fields --markdown > docs/metrics.md`";
}

}  // namespace
}  // namespace gpudoctor
