// A window's evidence (diag::Evidence), the sampling rounds of a log without a GPU column and the
// levels a power cap held a GPU at: the small pieces that a long log's memory depends on, checked
// against what they replaced.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/detectors/evidence.hpp"
#include "analysis/power_limit.hpp"
#include "formats/sampling_rounds.hpp"

namespace gpudoctor {
namespace {

// Every kind a detector writes, set the way the detectors set it, reads back as the JSON object
// the same assignments made: same order, same value types, a name set twice keeping its place.
TEST(Evidence, ReadsBackAsTheJsonObjectOfTheSameAssignments) {
  diag::Evidence e;
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  const std::string source = "model-table";
  const unsigned gpu = 3;
  auto both = [&](const char* key, const auto& v) {
    e[key] = v;
    j[key] = v;
  };
  both("enforced_limit_w", nullptr);
  both("util_pct", 97.5);
  both("processes", 2);
  both("straggler_gpu", gpu);
  both("pattern", "seesaw");
  both("limit_source", source);
  both("power_ratio", std::numeric_limits<double>::quiet_NaN());
  both("enforced_limit_w", 250.0);  // set again: its place kept
  both("pattern", "straggler");
  EXPECT_EQ(e.size(), 7u);
  EXPECT_EQ(e.json().dump(), j.dump());
  // Each entry on its own, as the merge reads them.
  ASSERT_EQ(e.entries().size(), j.size());
  size_t k = 0;
  for (const auto& [key, value] : j.items()) {
    const auto& entry = e.entries()[k++];
    EXPECT_EQ(std::string(entry.key), key);
    EXPECT_EQ(e.json(entry).type(), value.type()) << key;
    EXPECT_EQ(e.json(entry).dump(), value.dump()) << key;
  }
  // Names compare by their text, not the literal's address.
  const std::string again = "util_pct";
  e[again.c_str()] = 12.5;
  EXPECT_EQ(e.size(), 7u);
  EXPECT_EQ(e.json()["util_pct"], 12.5);
}

// Rows of four GPUs a round, one round a second: each row's place in its round. A log of one GPU
// (every gap alike) or of uneven rounds has none.
TEST(SamplingRounds, FindEachRowsPlaceOrNone) {
  std::vector<double> t;
  for (int r = 0; r < 50; ++r)
    for (int g = 0; g < 4; ++g) t.push_back(r + 0.001 * g);
  uint32_t gpus = 0;
  const auto pos = log_reader::positions_in_rounds(t, gpus);
  EXPECT_EQ(gpus, 4u);
  ASSERT_EQ(pos.size(), t.size());
  for (size_t i = 0; i < pos.size(); ++i) EXPECT_EQ(pos[i], i % 4) << i;

  std::vector<double> one;
  for (int r = 0; r < 200; ++r) one.push_back(r * 0.5);
  gpus = 0;
  EXPECT_TRUE(log_reader::positions_in_rounds(one, gpus).empty());
  EXPECT_EQ(gpus, 1u);

  // Rounds of 1, 2, 3, 4, ... rows: no size most agree on.
  std::vector<double> uneven;
  for (int r = 0; r < 30; ++r)
    for (int g = 0; g <= r % 5; ++g) uneven.push_back(r + 0.001 * g);
  gpus = 0;
  EXPECT_TRUE(log_reader::positions_in_rounds(uneven, gpus).empty());
  EXPECT_EQ(gpus, 1u);
  EXPECT_TRUE(log_reader::positions_in_rounds(std::vector<double>{0.0, 1.0}, gpus).empty());
}

// Two levels a cap held a GPU at, with sensor noise: each level is the median of the samples
// within 1.5 bins (1 % of the top) of its histogram peak, as collecting and sorting them says.
TEST(PowerLevels, EachLevelIsTheMedianOfTheSamplesNearItsPeak) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 1.5);
  std::vector<double> w;
  for (int i = 0; i < 3000; ++i) w.push_back((i % 3 ? 250 : 175) + noise(rng));
  for (int i = 0; i < 40; ++i) w.push_back(100 + i);  // a ramp: no level
  const auto levels = power_levels_w(w, 0.1);
  ASSERT_EQ(levels.size(), 2u);
  std::vector<double> sorted = w;
  std::sort(sorted.begin(), sorted.end());
  const double top = sorted[(sorted.size() - 1) * 95 / 100];
  const double width = std::max(1.0, 0.01 * top);
  for (const double level : levels) {
    EXPECT_NEAR(level, level < 200 ? 175 : 250, 2);
    // The samples near the level's bin: its median is one of them, the upper middle one.
    const double lo = sorted.front();
    const double bin = std::floor((level - lo) / width);
    bool found = false;
    for (double p = bin - 1; p <= bin + 1 && !found; ++p) {
      const double c = lo + (p + 0.5) * width;
      std::vector<double> at;
      for (double x : sorted)
        if (std::abs(x - c) <= 1.5 * width) at.push_back(x);
      if (!at.empty() && at[at.size() / 2] == level) found = true;
    }
    EXPECT_TRUE(found) << level;
  }
}

}  // namespace
}  // namespace gpudoctor
