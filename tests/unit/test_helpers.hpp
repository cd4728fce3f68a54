// Helpers the unit tests share (one copy, not one per test file): reading a fixture file, asking
// a Recording about its notes and columns, and writing gzip, xz and zstd archives with the
// libraries themselves (the compressed-input tests).
#pragma once

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include "core/recording.hpp"
#include "formats/input_bytes.hpp"

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
  const auto c = g.column(f);
  return c ? c.to_vector() : std::vector<double>{};
}

// Archives of `in`, written by zlib, liblzma and libzstd.
inline std::string gzip(const std::string& in) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, in.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline std::string xz(const std::string& in) {
  std::string out(lzma_stream_buffer_bound(in.size()), '\0');
  size_t pos = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr,
                                    reinterpret_cast<const uint8_t*>(in.data()), in.size(),
                                    reinterpret_cast<uint8_t*>(out.data()), &pos, out.size()),
            LZMA_OK);
  out.resize(pos);
  return out;
}

inline std::string zstd(const std::string& in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

struct Archive {
  Compression kind;
  std::string (*make)(const std::string&);
  const char* ext;
  size_t header_byte;  // a header byte whose every bit set is refused by the format
};
inline const Archive kArchives[] = {{Compression::kGzip, gzip, ".gz", 3},
                                    {Compression::kXz, xz, ".xz", 7},
                                    {Compression::kZstd, zstd, ".zst", 4}};

}  // namespace gpudoctor::test_util
