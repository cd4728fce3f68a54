// Every reader's rows cover the log's time: a GPU's observed time (what lost GPU-hours and the
// shares are weighed against) is most of its span between first and last sample, unless the
// data-quality section says which rows were left out (gaps, frozen rows, ...). A reader that makes
// a row per record of another kind (W&B's history records) would make the observed time a sliver of
// the run and the cost figures wrong by orders of magnitude.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/diagnosis.hpp"
#include "formats/load.hpp"

namespace gpudoctor {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> logs_under(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "README.md" && e.path().extension() != ".tsv")
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void expect_rows_cover_the_span(const fs::path& log, size_t& checked) {
  auto rec = load_telemetry(log.string(), LoadOptions{});
  if (!rec) return;  // fixtures of what must be refused are tested elsewhere
  const Diagnosis d = diagnose(rec.value());
  for (const auto& s : rec->gpus) {
    if (s.size() < 3) continue;
    const double span = s.time_s.back() - s.time_s.front();
    if (span <= 0) continue;
    const GpuDiagnosis* g = nullptr;
    for (const auto& x : d.gpus)
      if (x.index == s.info.index) g = &x;
    ASSERT_NE(g, nullptr) << log;
    const auto it = g->metrics.find("observed_s");
    ASSERT_NE(it, g->metrics.end()) << log;
    const double observed = it->get<double>();
    // Rows left out (frozen, a gap, time going back, interleaved GPUs) are said.
    bool why_said = false;
    for (const auto& q : d.data_quality) why_said = why_said || q.gpu == s.info.index;
    EXPECT_TRUE(observed >= 0.8 * span || why_said)
        << log.filename() << " GPU " << s.info.index << ": observed " << observed << " s of a "
        << span << " s span, " << s.size() << " rows, and no data-quality note says why";
    EXPECT_LE(observed, span * 1.01 + 2 * std::max(1.0, span / static_cast<double>(s.size())))
        << log.filename() << " GPU " << s.info.index;
    ++checked;
  }
}

TEST(ObservedTime, EveryFixtureOfEveryReaderCoversItsSpan) {
  size_t checked = 0;
  for (const auto& log : logs_under(fs::path(GPUDOCTOR_SOURCE_DIR) / "tests/data/logs"))
    expect_rows_cover_the_span(log, checked);
  EXPECT_GT(checked, 50u);
}

TEST(ObservedTime, EveryRealLogCoversItsSpan) {
  const fs::path dir = fs::path(GPUDOCTOR_SOURCE_DIR) / "../shared/data/real-logs";
  if (!fs::exists(dir)) GTEST_SKIP() << "no shared real logs beside the checkout";
  size_t checked = 0;
  for (const auto& log : logs_under(dir)) expect_rows_cover_the_span(log, checked);
  EXPECT_GT(checked, 80u);
}

}  // namespace
}  // namespace gpudoctor
