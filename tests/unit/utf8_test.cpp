// core/utf8: the strict decoder behind the TUI's cells and the exporter's label values.
#include "core/utf8.hpp"

#include <gtest/gtest.h>

namespace gpudoctor {
namespace {

TEST(Utf8, DecodesValidTextAndRoundTrips) {
  const std::string s = "a\xc3\xa9\xe2\x96\x88\xf0\x9f\x98\x80";  // a é █ 😀
  EXPECT_EQ(decode_utf8(s), (std::u32string{U'a', 0xE9, 0x2588, 0x1F600}));
  std::string back;
  for (char32_t c : decode_utf8(s)) append_utf8(back, c);
  EXPECT_EQ(back, s);
  EXPECT_EQ(valid_utf8(s), s);
}

TEST(Utf8, EveryInvalidByteBecomesOneReplacement) {
  const std::u32string r1{0xFFFD};
  EXPECT_EQ(decode_utf8("\xff"), r1);
  EXPECT_EQ(decode_utf8("\xc3"), r1);  // cut at the end
  EXPECT_EQ(decode_utf8("\xc3x"), (std::u32string{0xFFFD, U'x'}));
  EXPECT_EQ(decode_utf8("\xc0\xaf"), (std::u32string{0xFFFD, 0xFFFD}));  // overlong '/'
  EXPECT_EQ(decode_utf8("\xed\xa0\x80").size(), 3u);                     // a UTF-16 surrogate
  EXPECT_EQ(decode_utf8("\xf4\x90\x80\x80").size(), 4u);                 // past U+10FFFF
  EXPECT_EQ(valid_utf8("ok\xe6\x97"), "ok\xef\xbf\xbd\xef\xbf\xbd");
}

}  // namespace
}  // namespace gpudoctor
