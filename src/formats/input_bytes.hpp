// The bytes of an input before any reader sees them: standard input read to its end (or to a
// Ctrl-C, keeping what arrived), and gzip, xz and zstd archives decompressed, recognised by their
// magic bytes rather than their names. Most readers take the whole text at once, so a
// decompressed log is held in memory: at most max_decompressed_bytes() (half the machine's
// memory), beyond which the user is told to decompress it to a file (files are mapped, not
// copied). A reader that works through its input in chunks (profiler traces) reads a ByteStream
// instead: a file or standard input, decompressed as it goes, a chunk at a time, so memory holds
// a chunk, not the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
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

// An input read front to back in chunks. Not thread-safe; one reader at a time.
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Up to n bytes (n <= 1 GiB) into buf: 0 only at the end. A read that fails, or an archive
  // that is corrupt or cut short (said as decompress() says it), is an error naming the origin.
  virtual Result<size_t> read(char* buf, size_t n) = 0;
  Compression compression() const { return compression_; }
  uint64_t bytes_read() const { return bytes_; }  // handed out so far (decompressed)
  // Ended early by `stop` (of_descriptor): what had arrived was read, not the whole input.
  bool interrupted() const { return interrupted_; }

  // A file, decompressed as read where its first bytes say gzip, xz or zstd.
  static Result<std::unique_ptr<ByteStream>> open_file(const std::string& path);
  // Text already in memory, handed out `chunk` bytes at a time (tests use small chunks to put
  // every boundary somewhere else).
  static std::unique_ptr<ByteStream> of_text(std::string_view text, size_t chunk = size_t{1} << 20);
  // A descriptor read once, front to back (standard input): `head`, bytes already read from it,
  // first, then the rest as it arrives, decompressed where `decompress` and head's first bytes
  // say gzip, xz or zstd; fd -1 for `head` alone. The descriptor is not closed. A read
  // interrupted by a signal asks `stop` (may be empty): true ends the stream with what already
  // arrived (read without waiting for more), and interrupted() says so.
  static std::unique_ptr<ByteStream> of_descriptor(int fd, const std::string& origin,
                                                   std::string head, std::function<bool()> stop,
                                                   bool decompress = true);

 protected:
  Compression compression_ = Compression::kNone;
  uint64_t bytes_ = 0;
  bool interrupted_ = false;
};

}  // namespace gpudoctor
