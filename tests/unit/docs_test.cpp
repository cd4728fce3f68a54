#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "analysis/causes.hpp"
#include "analysis/config.hpp"
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

// docs/diagnosis.md documents every cause and every threshold, with its default.
TEST(Docs, DiagnosisMdCoversEveryCauseAndThreshold) {
  std::ifstream in(std::string(GPUDOCTOR_SOURCE_DIR) + "/docs/diagnosis.md");
  ASSERT_TRUE(in) << "docs/diagnosis.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (const auto& c : causes())
    EXPECT_NE(doc.find("| `" + std::string(c.code) + "` | " + std::string(c.title) + " |"),
              std::string::npos)
        << "cause " << c.code << " missing from the causes table of docs/diagnosis.md";
  for (const auto& p : config_params()) {
    const std::string row = "| `" + std::string(p.name) + "` | ";
    const auto at = doc.find(row);
    ASSERT_NE(at, std::string::npos) << "threshold " << p.name << " missing from docs/diagnosis.md";
    const double documented = std::stod(doc.substr(at + row.size()));
    EXPECT_EQ(documented, p.default_value) << p.name << ": default differs from config.def";
  }
}

}  // namespace
}  // namespace gpudoctor
