#include <gtest/gtest.h>

#include "core/clock_reasons.hpp"
#include "core/duration.hpp"
#include "core/reading.hpp"
#include "sources/source.hpp"

namespace gpudoctor {
namespace {

TEST(Reading, StatesAreDistinctAndNeverZero) {
  EXPECT_TRUE(Reading::of(0).has_value());
  EXPECT_FALSE(Reading::unsupported().has_value());
  EXPECT_FALSE(Reading::error(nvml_code::kGpuIsLost).has_value());
  EXPECT_FALSE(Reading::no_data().has_value());
  EXPECT_EQ(Reading::unsupported(nvml_code::kNoPermission).code(), nvml_code::kNoPermission);
  EXPECT_EQ(Reading::error(15).state(), Reading::State::kError);
  EXPECT_EQ(Reading::unsupported().value_or(-1), -1);
  EXPECT_NE(Reading::of(0), Reading::unsupported());
}

TEST(Reading, CodeNamesRoundTrip) {
  EXPECT_EQ(nvml_code_name(3), "NOT_SUPPORTED");
  EXPECT_EQ(nvml_code_name(15), "GPU_IS_LOST");
  EXPECT_EQ(nvml_code_name(12345), "ERROR_12345");
  EXPECT_EQ(nvml_code_from_name("NO_PERMISSION"), 4);
  EXPECT_EQ(nvml_code_from_name("BOGUS"), nvml_code::kUnknown);
}

TEST(Duration, ParsesWhatUsersType) {
  EXPECT_EQ(parse_duration("500ms").value().count(), 500);
  EXPECT_EQ(parse_duration("2s").value().count(), 2000);
  EXPECT_EQ(parse_duration("30").value().count(), 30000);
  EXPECT_EQ(parse_duration("1.5m").value().count(), 90000);
  EXPECT_EQ(parse_duration("2h").value().count(), 7200000);
  EXPECT_FALSE(parse_duration("").ok());
  EXPECT_FALSE(parse_duration("fast").ok());
  EXPECT_FALSE(parse_duration("5 parsecs").ok());
  EXPECT_EQ(parse_duration("2x").error().kind, Error::Kind::kUsage);
  EXPECT_EQ(format_duration(std::chrono::milliseconds(1500)), "1500ms");
  EXPECT_EQ(format_duration(std::chrono::milliseconds(120000)), "2m");
}

TEST(ClockReasons, DecodesEveryBitAndUnknownOnes) {
  EXPECT_EQ(clock_reasons_summary(0), "none");
  EXPECT_EQ(clock_reasons_summary(0x4), "sw_power_cap");
  EXPECT_EQ(clock_reasons_summary(0x20 | 0x40), "sw_thermal,hw_thermal");
  const auto words = decode_clock_reasons(0x1 | 0x1000);
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0], "idle");
  EXPECT_EQ(words[1], "0x1000");
  EXPECT_EQ(clock_reasons().size(), 9u);
}

TEST(ClockReasons, MaskFromReadingRejectsWhatNoBitmaskCanBe) {
  EXPECT_EQ(reasons_mask(Reading::of(0x44)), 0x44u);
  EXPECT_EQ(reasons_mask(Reading::of(-1)), std::nullopt);
  EXPECT_EQ(reasons_mask(Reading::of(1.5)), std::nullopt);
  EXPECT_EQ(reasons_mask(Reading::of(1e300)), std::nullopt);
  EXPECT_EQ(reasons_mask(Reading::unsupported()), std::nullopt);
}

TEST(GpuList, ParsesAndRejects) {
  EXPECT_TRUE(parse_gpu_list("").value().empty());
  EXPECT_TRUE(parse_gpu_list("all").value().empty());
  EXPECT_EQ(parse_gpu_list("0,2,2,5").value(), (std::vector<unsigned>{0, 2, 5}));
  EXPECT_FALSE(parse_gpu_list("0,,1").ok());
  EXPECT_FALSE(parse_gpu_list("a").ok());
  EXPECT_FALSE(parse_gpu_list("-1").ok());
}

}  // namespace
}  // namespace gpudoctor
