// The bytes of an input before any reader sees them: standard input read to its end (or to a
// Ctrl-C, keeping what arrived), and gzip, xz and zstd archives decompressed, recognised by their
// magic bytes rather than their names. The readers take the whole text at once, so a decompressed
// log is held in memory: at most max_decompressed_bytes() (half the machine's memory), beyond
// which the user is told to decompress it to a file (files are mapped, not copied).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpudoctor {

enum class Compression { kNone, kGzip, kXz, kZstd };

// By the first bytes: 1f 8b (gzip), fd '7zXZ' 00 (xz), 28 b5 2f fd (zstd).
Compression detect_compression(std::string_view head);
std::string_view compression_name(Compression c);  // "gzip", "xz", "zstd", ""

// Half the physical memory (at least 256 MiB): what a decompressed input may take.
size_t max_decompressed_bytes();

// The whole content of an archive (concatenated members or frames too). A corrupt or truncated
// archive, or one larger than max_bytes decompressed, is an error naming `origin`.
Result<std::string> decompress(std::string_view bytes, Compression c, const std::string& origin,
                               size_t max_bytes);

struct StreamBytes {
  std::string bytes;
  bool interrupted = false;  // stopped by `stop` before the end of the stream
};
// Reads fd to its end. A read interrupted by a signal asks `stop` (may be empty): true ends the
// reading there, with what arrived (a last line cut short is dropped). At most max_bytes.
Result<StreamBytes> read_to_end(int fd, const std::string& origin,
                                const std::function<bool()>& stop, size_t max_bytes);

}  // namespace gpudoctor
