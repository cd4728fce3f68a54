#include "formats/input_bytes.hpp"

#include <fcntl.h>
#include <lzma.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

namespace gpudoctor {

Compression detect_compression(std::string_view head) {
  if (head.starts_with("\x1f\x8b")) return Compression::kGzip;
  if (head.starts_with(std::string_view("\xfd"
                                        "7zXZ\0",
                                        6)))
    return Compression::kXz;
  if (head.starts_with("\x28\xb5\x2f\xfd")) return Compression::kZstd;
  return Compression::kNone;
}

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::kGzip:
      return "gzip";
    case Compression::kXz:
      return "xz";
    case Compression::kZstd:
      return "zstd";
    case Compression::kNone:
      break;
  }
  return "";
}

size_t max_decompressed_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  constexpr size_t kFloor = size_t{256} << 20;
  if (pages <= 0 || page <= 0) return size_t{4} << 30;
  return std::max(kFloor, static_cast<size_t>(pages) * static_cast<size_t>(page) / 2);
}

namespace {

constexpr size_t kChunk = size_t{1} << 20;

Error corrupt(const std::string& origin, Compression c, std::string_view why) {
  return usage_error(
      fmt::format("{}: a corrupt {} archive ({})", origin, compression_name(c), why));
}

Error truncated(const std::string& origin, Compression c) {
  return usage_error(fmt::format(
      "{}: the {} archive is cut short (truncated: its end is missing); what it holds up to the "
      "cut is not read",
      origin, compression_name(c)));
}

Error too_large(const std::string& origin, Compression c, size_t max_bytes) {
  return usage_error(fmt::format(
      "{}: decompressed, the {} archive exceeds {} MiB (half this machine's memory, where "
      "decompressed logs are held); decompress it to a file and read that (files are mapped, "
      "not copied)",
      origin, compression_name(c), max_bytes >> 20));
}

// Grows `out` by up to one chunk (not past max_bytes); false when it is full.
bool grow(std::string& out, size_t& used, size_t max_bytes) {
  if (used < out.size()) return true;
  if (out.size() >= max_bytes) return false;
  out.resize(std::min(max_bytes, out.size() + std::max(kChunk, out.size() / 2)));
  return true;
}

Result<std::string> gunzip(std::string_view in, const std::string& origin, size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return failure("zlib: cannot initialise");
  std::string out;
  size_t used = 0;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  size_t left = in.size();
  int rc = Z_OK;
  auto feed = [&] {
    const auto n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    z.avail_in = n;
    left -= n;
  };
  feed();
  for (;;) {
    if (!grow(out, used, max_bytes)) {
      inflateEnd(&z);
      return too_large(origin, Compression::kGzip, max_bytes);
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    z.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - used, 1u << 30));
    const uInt before = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    used += before - z.avail_out;
    if (z.avail_in == 0 && left > 0) feed();
    if (rc == Z_STREAM_END) {
      // Another member (gzip files may be concatenated), or the end; trailing zeros are padding.
      const std::string_view rest(reinterpret_cast<const char*>(z.next_in), z.avail_in);
      if (rest.find_first_not_of('\0') == std::string_view::npos && left == 0) break;
      if (inflateReset(&z) != Z_OK) break;
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && left == 0) {
      inflateEnd(&z);
      return truncated(origin, Compression::kGzip);
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string why = z.msg ? z.msg : fmt::format("zlib error {}", rc);
      inflateEnd(&z);
      return corrupt(origin, Compression::kGzip, why);
    }
  }
  inflateEnd(&z);
  out.resize(used);
  return out;
}

Result<std::string> unxz(std::string_view in, const std::string& origin, size_t max_bytes) {
  lzma_stream s = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
    return failure("liblzma: cannot initialise");
  s.next_in = reinterpret_cast<const uint8_t*>(in.data());
  s.avail_in = in.size();
  std::string out;
  size_t used = 0;
  for (;;) {
    if (!grow(out, used, max_bytes)) {
      lzma_end(&s);
      return too_large(origin, Compression::kXz, max_bytes);
    }
    s.next_out = reinterpret_cast<uint8_t*>(out.data() + used);
    s.avail_out = out.size() - used;
    const size_t before = s.avail_out;
    const lzma_ret rc = lzma_code(&s, s.avail_in == 0 ? LZMA_FINISH : LZMA_RUN);
    used += before - s.avail_out;
    if (rc == LZMA_STREAM_END) break;
    if (rc == LZMA_OK) continue;
    lzma_end(&s);
    if (rc == LZMA_BUF_ERROR) return truncated(origin, Compression::kXz);
    return corrupt(origin, Compression::kXz,
                   rc == LZMA_FORMAT_ERROR    ? "not an xz stream"
                   : rc == LZMA_DATA_ERROR    ? "its data do not decode"
                   : rc == LZMA_OPTIONS_ERROR ? "unsupported options"
                   : rc == LZMA_MEM_ERROR     ? "out of memory"
                                              : "liblzma error");
  }
  lzma_end(&s);
  out.resize(used);
  return out;
}

Result<std::string> unzstd(std::string_view in, const std::string& origin, size_t max_bytes) {
  ZSTD_DStream* d = ZSTD_createDStream();
  if (!d) return failure("libzstd: cannot initialise");
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  std::string out;
  size_t used = 0;
  size_t hint = 1;  // 0 once a frame is complete
  while (ib.pos < ib.size || used == out.size()) {
    if (!grow(out, used, max_bytes)) {
      ZSTD_freeDStream(d);
      return too_large(origin, Compression::kZstd, max_bytes);
    }
    ZSTD_outBuffer ob{out.data() + used, out.size() - used, 0};
    hint = ZSTD_decompressStream(d, &ob, &ib);
    used += ob.pos;
    if (ZSTD_isError(hint)) {
      const std::string why = ZSTD_getErrorName(hint);
      ZSTD_freeDStream(d);
      return corrupt(origin, Compression::kZstd, why);
    }
    if (ib.pos == ib.size && ob.pos < ob.size) break;  // all input taken, output not full
  }
  ZSTD_freeDStream(d);
  if (hint != 0) return truncated(origin, Compression::kZstd);
  out.resize(used);
  return out;
}

}  // namespace

Result<std::string> decompress(std::string_view bytes, Compression c, const std::string& origin,
                               size_t max_bytes) {
  switch (c) {
    case Compression::kGzip:
      return gunzip(bytes, origin, max_bytes);
    case Compression::kXz:
      return unxz(bytes, origin, max_bytes);
    case Compression::kZstd:
      return unzstd(bytes, origin, max_bytes);
    case Compression::kNone:
      break;
  }
  return std::string(bytes);
}

Result<StreamBytes> read_to_end(int fd, const std::string& origin,
                                const std::function<bool()>& stop, size_t max_bytes) {
  StreamBytes r;
  std::string& out = r.bytes;
  size_t used = 0;
  int flags = -1;  // the descriptor's flags before O_NONBLOCK, once interrupted
  struct Restore {
    int fd;
    const int& flags;
    ~Restore() {
      if (flags >= 0) ::fcntl(fd, F_SETFL, flags);
    }
  } restore{fd, flags};
  for (;;) {
    if (!r.interrupted && stop && stop()) {
      // What already arrived (in the pipe's buffer) is read too, without waiting for more.
      r.interrupted = true;
      flags = ::fcntl(fd, F_GETFL);
      if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) break;
    }
    if (used == out.size()) {
      if (out.size() >= max_bytes)
        return usage_error(fmt::format(
            "{}: more than {} MiB arrived (half this machine's memory, where standard input is "
            "held); write it to a file and read that",
            origin, max_bytes >> 20));
      out.resize(std::min(max_bytes, out.size() + std::max(kChunk / 16, out.size() / 2)));
    }
    const ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n > 0) {
      used += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;  // `stop` decides at the top of the loop
    if (r.interrupted && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return usage_error(fmt::format("cannot read {}: {}", origin, std::strerror(errno)));
  }
  out.resize(used);
  if (r.interrupted && !out.empty() && out.back() != '\n' &&
      detect_compression(out) == Compression::kNone) {
    const size_t nl = out.rfind('\n');
    out.resize(nl == std::string::npos ? 0 : nl + 1);
  }
  return r;
}

namespace {

class TextStream final : public ByteStream {
 public:
  TextStream(std::string_view text, size_t chunk)
      : text_(text), chunk_(std::max<size_t>(1, chunk)) {}
  Result<size_t> read(char* buf, size_t n) override {
    const size_t k = std::min({n, chunk_, text_.size() - at_});
    std::memcpy(buf, text_.data() + at_, k);
    at_ += k;
    bytes_ += k;
    return k;
  }

 private:
  std::string_view text_;
  size_t chunk_, at_ = 0;
};

// Where a stream's bytes come from: `head` (bytes already read from the descriptor), then the
// descriptor to its end (none when fd is -1). A read interrupted by a signal asks `stop`: true
// ends the stream with what already arrived (read without waiting for more).
struct Source {
  int fd = -1;
  std::string origin;
  std::string head;
  bool owns = true;  // closed with the stream (a file opened for it; not standard input)
  std::function<bool()> stop;
};

// The file's own bytes, and the decoders' input buffer.
class FileStream : public ByteStream {
 public:
  explicit FileStream(Source s)
      : fd_(s.fd),
        origin_(std::move(s.origin)),
        head_(std::move(s.head)),
        owns_(s.owns),
        stop_(std::move(s.stop)) {}
  ~FileStream() override {
    if (flags_ >= 0) ::fcntl(fd_, F_SETFL, flags_);
    if (owns_ && fd_ >= 0) ::close(fd_);
  }
  FileStream(const FileStream&) = delete;
  FileStream& operator=(const FileStream&) = delete;

  Result<size_t> read(char* buf, size_t n) override {
    auto r = raw(buf, n);
    if (r) bytes_ += r.value();
    return r;
  }

 protected:
  // Up to n of the source's bytes; 0 at its end.
  Result<size_t> raw(char* buf, size_t n) {
    if (head_at_ < head_.size()) {
      const size_t k = std::min(n, head_.size() - head_at_);
      std::memcpy(buf, head_.data() + head_at_, k);
      head_at_ += k;
      return k;
    }
    if (fd_ < 0) return size_t{0};
    for (;;) {
      if (!interrupted_ && stop_ && stop_()) {
        // What already arrived (in the pipe's buffer) is read too, without waiting for more.
        interrupted_ = true;
        flags_ = ::fcntl(fd_, F_GETFL);
        if (flags_ < 0 || ::fcntl(fd_, F_SETFL, flags_ | O_NONBLOCK) != 0) return size_t{0};
      }
      const ssize_t k = ::read(fd_, buf, n);
      if (k >= 0) return static_cast<size_t>(k);
      if (errno == EINTR) continue;  // `stop` decides at the top of the loop
      if (interrupted_ && (errno == EAGAIN || errno == EWOULDBLOCK)) return size_t{0};
      return usage_error(fmt::format("cannot read {}: {}", origin_, std::strerror(errno)));
    }
  }
  // Refills in_ when it is used up; sets eof_ at the file's end.
  std::optional<Error> fill() {
    if (in_at_ < in_len_ || eof_) return std::nullopt;
    if (in_.empty()) in_.resize(size_t{256} << 10);
    auto r = raw(in_.data(), in_.size());
    if (!r) return r.error();
    in_at_ = 0;
    in_len_ = r.value();
    eof_ = in_len_ == 0;
    return std::nullopt;
  }

  int fd_;
  std::string origin_;
  std::string head_;
  size_t head_at_ = 0;
  bool owns_;
  std::function<bool()> stop_;
  int flags_ = -1;  // the descriptor's flags before O_NONBLOCK, once interrupted
  std::string in_;
  size_t in_at_ = 0, in_len_ = 0;
  bool eof_ = false;
};

class GzipStream final : public FileStream {
 public:
  explicit GzipStream(Source s) : FileStream(std::move(s)) {
    compression_ = Compression::kGzip;
    ok_ = inflateInit2(&z_, 15 + 16) == Z_OK;
  }
  ~GzipStream() override {
    if (ok_) inflateEnd(&z_);
  }
  Result<size_t> read(char* buf, size_t n) override {
    if (!ok_) return failure("zlib: cannot initialise");
    for (;;) {
      if (done_ || n == 0) return size_t{0};
      if (auto e = fill()) return *e;
      if (between_members_) {
        // Another member (gzip files may be concatenated), or the end; zeros are padding.
        while (in_at_ < in_len_ && in_[in_at_] == '\0') ++in_at_;
        if (in_at_ == in_len_) {
          done_ = eof_;
          continue;
        }
        if (inflateReset(&z_) != Z_OK) return corrupt(origin_, compression_, "reset");
        between_members_ = false;
      }
      z_.next_in = reinterpret_cast<Bytef*>(in_.data() + in_at_);
      z_.avail_in = static_cast<uInt>(in_len_ - in_at_);
      z_.next_out = reinterpret_cast<Bytef*>(buf);
      z_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
      const uInt before = z_.avail_out;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      in_at_ = in_len_ - z_.avail_in;
      const size_t got = before - z_.avail_out;
      if (rc == Z_STREAM_END) {
        between_members_ = true;
      } else if (rc == Z_BUF_ERROR || (rc == Z_OK && got == 0)) {
        if (in_at_ == in_len_ && eof_) return truncated(origin_, compression_);
      } else if (rc != Z_OK) {
        return corrupt(origin_, compression_, z_.msg ? z_.msg : fmt::format("zlib error {}", rc));
      }
      if (got > 0) {
        bytes_ += got;
        return got;
      }
    }
  }

 private:
  z_stream z_{};
  bool ok_ = false, done_ = false, between_members_ = false;
};

class XzStream final : public FileStream {
 public:
  explicit XzStream(Source s) : FileStream(std::move(s)) {
    compression_ = Compression::kXz;
    ok_ = lzma_stream_decoder(&s_, UINT64_MAX, LZMA_CONCATENATED) == LZMA_OK;
  }
  ~XzStream() override { lzma_end(&s_); }
  Result<size_t> read(char* buf, size_t n) override {
    if (!ok_) return failure("liblzma: cannot initialise");
    for (;;) {
      if (done_ || n == 0) return size_t{0};
      if (auto e = fill()) return *e;
      s_.next_in = reinterpret_cast<const uint8_t*>(in_.data() + in_at_);
      s_.avail_in = in_len_ - in_at_;
      s_.next_out = reinterpret_cast<uint8_t*>(buf);
      s_.avail_out = n;
      const lzma_ret rc = lzma_code(&s_, eof_ ? LZMA_FINISH : LZMA_RUN);
      in_at_ = in_len_ - s_.avail_in;
      const size_t got = n - s_.avail_out;
      if (rc == LZMA_STREAM_END) {
        done_ = true;
      } else if (rc == LZMA_BUF_ERROR) {
        return truncated(origin_, compression_);
      } else if (rc != LZMA_OK) {
        return corrupt(origin_, compression_,
                       rc == LZMA_FORMAT_ERROR    ? "not an xz stream"
                       : rc == LZMA_DATA_ERROR    ? "its data do not decode"
                       : rc == LZMA_OPTIONS_ERROR ? "unsupported options"
                       : rc == LZMA_MEM_ERROR     ? "out of memory"
                                                  : "liblzma error");
      }
      if (got > 0) {
        bytes_ += got;
        return got;
      }
    }
  }

 private:
  lzma_stream s_ = LZMA_STREAM_INIT;
  bool ok_ = false, done_ = false;
};

class ZstdStream final : public FileStream {
 public:
  explicit ZstdStream(Source s) : FileStream(std::move(s)), d_(ZSTD_createDStream()) {
    compression_ = Compression::kZstd;
  }
  ~ZstdStream() override { ZSTD_freeDStream(d_); }
  Result<size_t> read(char* buf, size_t n) override {
    if (!d_) return failure("libzstd: cannot initialise");
    for (;;) {
      if (done_ || n == 0) return size_t{0};
      if (auto e = fill()) return *e;
      if (in_at_ == in_len_ && eof_ && hint_ == 0) {
        done_ = true;  // the last frame decoded and flushed; no input left for another
        continue;
      }
      ZSTD_inBuffer ib{in_.data() + in_at_, in_len_ - in_at_, 0};
      ZSTD_outBuffer ob{buf, n, 0};
      hint_ = ZSTD_decompressStream(d_, &ob, &ib);
      in_at_ += ib.pos;
      if (ZSTD_isError(hint_)) return corrupt(origin_, compression_, ZSTD_getErrorName(hint_));
      if (ob.pos > 0) {
        bytes_ += ob.pos;
        return ob.pos;
      }
      if (in_at_ == in_len_ && eof_) {
        if (hint_ != 0) return truncated(origin_, compression_);
        done_ = true;
      }
    }
  }

 private:
  ZSTD_DStream* d_;
  size_t hint_ = 1;  // 0 once a frame is complete
  bool done_ = false;
};

std::unique_ptr<ByteStream> stream_of(Compression c, Source s) {
  switch (c) {
    case Compression::kGzip:
      return std::make_unique<GzipStream>(std::move(s));
    case Compression::kXz:
      return std::make_unique<XzStream>(std::move(s));
    case Compression::kZstd:
      return std::make_unique<ZstdStream>(std::move(s));
    case Compression::kNone:
      break;
  }
  return std::make_unique<FileStream>(std::move(s));
}

}  // namespace

Result<std::unique_ptr<ByteStream>> ByteStream::open_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return usage_error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  char magic[6];
  size_t got = 0;
  while (got < sizeof magic) {
    const ssize_t k = ::read(fd, magic + got, sizeof magic - got);
    if (k > 0) {
      got += static_cast<size_t>(k);
    } else if (k == 0 || errno != EINTR) {
      break;
    }
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    const int err = errno;
    ::close(fd);
    return usage_error(fmt::format("cannot read {}: {}", path, std::strerror(err)));
  }
  return stream_of(detect_compression(std::string_view(magic, got)),
                   Source{.fd = fd, .origin = path, .head = {}, .owns = true, .stop = {}});
}

std::unique_ptr<ByteStream> ByteStream::of_descriptor(int fd, const std::string& origin,
                                                      std::string head, std::function<bool()> stop,
                                                      bool decompress) {
  const Compression c = decompress ? detect_compression(head) : Compression::kNone;
  return stream_of(c, Source{.fd = fd,
                             .origin = origin,
                             .head = std::move(head),
                             .owns = false,
                             .stop = std::move(stop)});
}

std::unique_ptr<ByteStream> ByteStream::of_text(std::string_view text, size_t chunk) {
  return std::make_unique<TextStream>(text, chunk);
}

}  // namespace gpudoctor
