// A field's column: values held as decimals read back bit for bit, and every change of how a
// column holds them (constant, decimals with more places, doubles) keeps every value.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/column.hpp"

namespace gpudoctor {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// The double a log's text parses to (correctly rounded, as the readers' parser).
double parsed(const std::string& s) {
  double v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// Every value the same bits as the expected one.
void expect_same(ColumnView c, const std::vector<double>& want) {
  ASSERT_EQ(c.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_TRUE(same_bits(c[i], want[i])) << "row " << i << ": " << c[i] << " not " << want[i];
  size_t i = 0;
  for (const double x : c) ASSERT_TRUE(same_bits(x, want[i++])) << "row " << i - 1;
  std::vector<double> out(want.size());
  c.copy_to(0, want.size(), out.data());
  for (size_t k = 0; k < want.size(); ++k) ASSERT_TRUE(same_bits(out[k], want[k]));
}

TEST(Column, DecimalsAsLogsWriteThemReadBackBitForBit) {
  std::mt19937_64 rng(7);
  for (int places = 0; places <= 6; ++places) {
    FieldColumn c = FieldColumn::constant(kNaN, 0);
    std::vector<double> want;
    for (int i = 0; i < 20000; ++i) {
      // Whole parts up to what 31 bits hold at this many places, and a missing value now and then.
      const int64_t most = 2147483647 / static_cast<int64_t>(std::pow(10, places)) - 1;
      const int64_t whole = static_cast<int64_t>(rng() % static_cast<uint64_t>(most + 1));
      std::string text = std::to_string(rng() % 2 ? whole : -whole);
      if (places > 0) {
        std::string frac = std::to_string(rng() % static_cast<uint64_t>(std::pow(10, places)));
        text.push_back('.');
        text.append(static_cast<size_t>(places) - frac.size(), '0');
        text.append(frac);
      }
      const double v = i % 97 == 0 ? kNaN : parsed(text) + 0.0;  // (-0 written as 0)
      want.push_back(v);
      c.push_back(v);
    }
    EXPECT_TRUE(c.is_decimal()) << places << " places";
    expect_same(c.view(), want);
  }
}

TEST(Column, MorePlacesLaterKeepEveryValueBefore) {
  FieldColumn c = FieldColumn::constant(kNaN, 3);  // a field first seen on row 3
  std::vector<double> want{kNaN, kNaN, kNaN};
  for (const char* s : {"45", "45.5", "81.8", "338.41", "0.001", "-12.25", "1980.000001"}) {
    want.push_back(parsed(s));
    c.push_back(want.back());
    EXPECT_TRUE(c.is_decimal()) << s;
    expect_same(c.view(), want);
  }
}

// Small decimals in 2 bytes; a value 2 bytes do not hold (larger, or more places than they hold
// for the values before) makes the column one of 4 bytes, every value kept.
TEST(Column, TwoBytesWhileEveryValueFits) {
  FieldColumn c = FieldColumn::constant(kNaN, 2);
  std::vector<double> want{kNaN, kNaN};
  for (double v : {87.0, 1980.0, -5.0, 327.5}) {  // 3275 at one place: still 2 bytes
    want.push_back(v);
    c.push_back(v);
  }
  EXPECT_EQ(c.value_bytes(), 2u);
  expect_same(c.view(), want);
  want.push_back(400.25);  // two places: 1980 becomes 198000, past 2 bytes
  c.push_back(400.25);
  EXPECT_EQ(c.value_bytes(), 4u);
  expect_same(c.view(), want);

  FieldColumn big = FieldColumn::constant(kNaN, 0);
  for (double v : {1.0, 2.0, 70000.0, kNaN, 3.0}) big.push_back(v);
  EXPECT_EQ(big.value_bytes(), 4u);
  expect_same(big.view(), {1.0, 2.0, 70000.0, kNaN, 3.0});

  // Parts of 2 and of 4 bytes merged, in either order and with other places.
  const std::vector<std::vector<double>> parts{{1, 2.5}, {100000, kNaN}, {3.25, 4}, {32767, 1}};
  for (size_t first = 0; first < parts.size(); ++first) {
    FieldColumn into = FieldColumn::constant(kNaN, 0);
    std::vector<double> all;
    for (size_t k = 0; k < parts.size(); ++k) {
      const auto& p = parts[(first + k) % parts.size()];
      FieldColumn part = FieldColumn::constant(kNaN, 0);
      for (double v : p) part.push_back(v);
      into.append(part);
      all.insert(all.end(), p.begin(), p.end());
      expect_same(into.view(), all);
    }
  }
}

TEST(Column, WhatNoDecimalHoldsMakesTheColumnDoubles) {
  // Too many places, too large, -0.0, a NaN other than the missing one, a computed value.
  const double odd_nan = -std::numeric_limits<double>::quiet_NaN();
  for (const double odd :
       {0.1 + 0.2, 1e-7, 3e9, -0.0, odd_nan, 1e300, std::numeric_limits<double>::infinity()}) {
    FieldColumn c = FieldColumn::constant(kNaN, 0);
    std::vector<double> want;
    for (double v : {1.0, 2.5, kNaN, odd, 7.0, 2.25}) {
      want.push_back(v);
      c.push_back(v);
    }
    EXPECT_FALSE(c.is_decimal()) << odd;
    expect_same(c.view(), want);
  }
  // A large value that 31 bits hold only with fewer places: more places are refused, so doubles.
  FieldColumn c = FieldColumn::constant(kNaN, 0);
  std::vector<double> want{2000000000, 0.5};
  for (double v : want) c.push_back(v);
  EXPECT_FALSE(c.is_decimal());
  expect_same(c.view(), want);
}

TEST(Column, ConstantStaysOneUntilAnotherValue) {
  FieldColumn c = FieldColumn::constant(kNaN, 0);
  for (int i = 0; i < 5; ++i) c.push_back(400);
  EXPECT_TRUE(c.is_constant());
  c.push_back(350.5);
  EXPECT_TRUE(c.is_decimal());
  expect_same(c.view(), {400, 400, 400, 400, 400, 350.5});
  c.compact();
  EXPECT_TRUE(c.is_decimal());
  FieldColumn same = FieldColumn::constant(kNaN, 0);
  same.push_back(1);
  same.push_back(2);
  same.keep_rows({0});
  same.compact();
  EXPECT_TRUE(same.is_constant());
  expect_same(same.view(), {1});
}

TEST(Column, PartsMergeWhateverTheyHold) {
  // Chunks of a log read apart: decimals of other places, doubles, constants, missing parts.
  const std::vector<std::vector<double>> parts{
      {1, 2, 3}, {1.5, kNaN, 2.25}, {kNaN, kNaN}, {7, 7, 7}, {0.125, 4}, {1e-9, 5}, {6, 8.5}};
  for (size_t first = 0; first < parts.size(); ++first) {
    FieldColumn into = FieldColumn::constant(kNaN, 0);
    std::vector<double> want;
    for (size_t k = 0; k < parts.size(); ++k) {
      const auto& p = parts[(first + k) % parts.size()];
      FieldColumn part = FieldColumn::constant(kNaN, 0);
      for (double v : p) part.push_back(v);
      into.append(part, 64);
      want.insert(want.end(), p.begin(), p.end());
      expect_same(into.view(), want);
    }
    into.append(ColumnView::constant(&kNaN, 2));
    want.insert(want.end(), 2, kNaN);
    expect_same(into.view(), want);
  }
}

TEST(Column, RowsKeptAndValuesWrittenAsDoubles) {
  FieldColumn c = FieldColumn::constant(kNaN, 0);
  for (double v : {10.5, 11.0, 12.25, 13.0, 14.0}) c.push_back(v);
  ASSERT_TRUE(c.is_decimal());
  FieldColumn rows = c, range = c;
  rows.keep_rows({0, 2, 4});
  expect_same(rows.view(), {10.5, 12.25, 14.0});
  range.keep_range(1, 3);
  expect_same(range.view(), {11.0, 12.25});
  std::vector<double>& v = c.values(16);
  EXPECT_FALSE(c.is_decimal());
  EXPECT_GE(v.capacity(), 16u);
  v[0] = 0.1 + 0.2;
  expect_same(c.view(), {0.1 + 0.2, 11.0, 12.25, 13.0, 14.0});
}

}  // namespace
}  // namespace gpudoctor
