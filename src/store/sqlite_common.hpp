// What the recording's writer (sqlite_store.cpp) and reader (recording_reader.cpp) share: the
// block encoding and small SQLite helpers. Internal to the store.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace gpudoctor::sqlite_common {

// Blocks are float64 arrays in the machine's byte order, which the format fixes as little-endian.
static_assert(std::endian::native == std::endian::little,
              "recordings store little-endian float64 blocks");

constexpr std::string_view kTimeColumn = "t_ms";  // the `field` of a block of sample times

// A statement that finalizes itself.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

inline std::string text_col(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

inline std::optional<bool> bool_col(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int(s, i) != 0;
}

// Decodes a block of n rows into out: n float64 values, or one when all n are the same.
inline bool decode_block(const void* data, int bytes, int64_t n, double* out) {
  if (static_cast<int64_t>(bytes) == n * static_cast<int64_t>(sizeof(double))) {
    if (n > 0) std::memcpy(out, data, static_cast<size_t>(n) * sizeof(double));
    return true;
  }
  if (bytes != sizeof(double)) return false;
  double v;
  std::memcpy(&v, data, sizeof v);
  std::fill(out, out + n, v);
  return true;
}

}  // namespace gpudoctor::sqlite_common
