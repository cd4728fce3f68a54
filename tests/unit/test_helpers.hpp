// Helpers the unit tests share (one copy, not one per test file): reading a fixture file, and
// asking a Recording about its notes and columns.
#pragma once

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/recording.hpp"

namespace gpudoctor::test_util {

// The file's bytes; a file that cannot be opened fails the test (and reads as "").
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A log fixture: tests/data/logs/DIR/NAME.
inline std::string read_log(const std::string& dir, const std::string& name) {
  return read_file(std::string(GPUDOCTOR_SOURCE_DIR) + "/tests/data/logs/" + dir + "/" + name);
}

// Whether a note of the recording contains `part`.
inline bool has_note(const Recording& rec, std::string_view part) {
  return std::any_of(rec.notes.begin(), rec.notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

// Every note, one a line (for a failing assertion's message).
inline std::string all_notes(const Recording& rec) {
  std::string s;
  for (const auto& n : rec.notes) s += n + "\n";
  return s;
}

// A copy of the GPU's column of `f`; empty when it has none.
inline std::vector<double> col(const GpuSeries& g, Field f) {
  const auto* c = g.column(f);
  return c ? *c : std::vector<double>{};
}

}  // namespace gpudoctor::test_util
