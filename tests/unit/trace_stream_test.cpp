// Profiler traces read as a stream (formats/input_bytes' ByteStream, formats/kineto_trace): every
// chunk size reads the same trace, events and names cut at any byte; gzip, xz and zstd files are
// decompressed as read, corrupt or cut short refused as the whole-text path refuses them; a value
// larger than a chunk is read; and `diagnose` reads a compressed trace with the same note.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "formats/input_bytes.hpp"
#include "formats/kineto_trace.hpp"
#include "formats/load.hpp"
#include "test_helpers.hpp"

namespace gpudoctor {
namespace {

using namespace test_util;

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir()
      : path_(fs::temp_directory_path() / fmt::format("gpudoctor-trace-stream-{}", ::getpid())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& bytes) const {
    const fs::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }

 private:
  fs::path path_;
};

// A trace with what makes framing hard: escapes (a quote, a backslash, \u), brackets inside
// strings, nested args, a number at a member's end, blanks between tokens, an event that is not
// an object, and a name longer than some chunks.
std::string tricky_trace(size_t events) {
  std::string ev;
  for (size_t i = 0; i < events; ++i) {
    ev += fmt::format(
        R"({}{{"ph": "X", "cat": "kernel", "name": "k{}<\"a\\b\u00e9 }} ] [ {{>", "ts": {}.5 ,)"
        R"( "dur":3, "args": {{"device": 0, "stream": {}, "correlation": {}, "grid": [[1], [2, {{"x": "]"}}]]}}}},)"
        R"( {{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":{},"dur":2,"args":{{"correlation":{}}}}},)"
        R"( 7, {{"ph": "i", "cat": "cpu_instant_event", "name": "{}"}})",
        i ? ",\n  " : "", i % 3, 1000 + 10 * i, 7 + i % 2, i, 995 + 10 * i, i,
        std::string(i % 5 == 0 ? 300 : 1, 'n'));
  }
  return R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],)"
         R"( "distributedInfo": {"backend": "nccl", "rank": 2, "world_size": 4}, "traceEvents": [)" +
         ev + R"(], "traceName": "t.json", "baseTimeNanoseconds": 1000})";
}

void expect_same(const TraceRank& a, const TraceRank& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.device_names, b.device_names);
  EXPECT_EQ(a.names, b.names);
  EXPECT_EQ(a.events_read, b.events_read);
  EXPECT_EQ(a.skipped, b.skipped);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].start_ns, b.events[i].start_ns) << i;
    EXPECT_EQ(a.events[i].dur_ns, b.events[i].dur_ns) << i;
    EXPECT_EQ(a.events[i].correlation, b.events[i].correlation) << i;
    EXPECT_EQ(a.events[i].stream, b.events[i].stream) << i;
    EXPECT_EQ(a.events[i].name, b.events[i].name) << i;
    EXPECT_EQ(a.events[i].kind, b.events[i].kind) << i;
  }
}

TEST(TraceStream, EveryChunkSizeReadsTheSameTrace) {
  const std::string text = tricky_trace(40);
  auto whole = parse_kineto_trace(text, "t.json");
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_EQ(whole->rank, 2);
  ASSERT_EQ(whole->events.size(), 80u);
  EXPECT_EQ(whole->events_read, 160u);  // the bare 7s are events read, not kept
  EXPECT_EQ(whole->names[whole->events[0].name], "k0<\"a\\b\xc3\xa9 } ] [ {>");
  EXPECT_EQ(whole->events[0].start_ns, 1'000'500 + 1000);  // 1000.5 us, plus the base
  for (const size_t chunk : {1, 2, 3, 7, 64, 301, 4096}) {
    SCOPED_TRACE(chunk);
    const auto in = ByteStream::of_text(text, chunk);
    auto t = parse_kineto_trace(*in, "t.json");
    ASSERT_TRUE(t.ok()) << t.error().message;
    expect_same(t.value(), whole.value());
  }
}

TEST(TraceStream, BrokenJsonNamesTheSameByteWhateverTheChunks) {
  for (const std::string& text : {std::string(R"({"traceEvents": [{"ph": "X", "ts": 1,)"),
                                  std::string(R"({"traceEvents": [{"ph": "X" "ts": 1}]})"),
                                  std::string(R"({"traceEvents": [{"ph": "X"}] "x": 1})"),
                                  std::string(R"({"traceEvents": [tru]})")}) {
    SCOPED_TRACE(text);
    auto whole = parse_kineto_trace(text, "b.json");
    ASSERT_FALSE(whole.ok());
    EXPECT_NE(whole.error().message.find("b.json: byte "), std::string::npos)
        << whole.error().message;
    for (const size_t chunk : {1, 5}) {
      const auto in = ByteStream::of_text(text, chunk);
      auto t = parse_kineto_trace(*in, "b.json");
      ASSERT_FALSE(t.ok());
      EXPECT_EQ(t.error().message, whole.error().message);
    }
  }
}

TEST(TraceStream, AValueLargerThanAChunkIsRead) {
  const std::string name(3 << 20, 'x');  // 3 MiB: three chunks
  const std::string text = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": ")" + name +
                           R"(", "ts": 1, "dur": 2}]})";
  auto t = parse_kineto_trace(text, "big.json");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_EQ(t->names[t->events[0].name].size(), name.size());
}

TEST(TraceStream, CompressedFilesAreDecompressedAsReadAndReadAsThePlainFile) {
  TempDir dir;
  const std::string text = tricky_trace(2000);  // a few hundred KiB: several input buffers
  const std::string plain_path = dir.write("rank2.json", text);
  auto plain = load_telemetry(plain_path, LoadOptions{});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  ASSERT_EQ(plain->traces.size(), 1u);
  for (const auto& a : kArchives) {
    SCOPED_TRACE(a.ext);
    const std::string bytes = a.make(text);
    // The stream itself, read in odd sizes, gives the text back.
    const std::string path = dir.write(std::string("rank2.json") + a.ext, bytes);
    auto in = ByteStream::open_file(path);
    ASSERT_TRUE(in.ok()) << in.error().message;
    EXPECT_EQ(in.value()->compression(), a.kind);
    std::string back;
    char buf[997];
    for (;;) {
      auto r = in.value()->read(buf, sizeof buf);
      ASSERT_TRUE(r.ok()) << r.error().message;
      if (r.value() == 0) break;
      back.append(buf, r.value());
    }
    EXPECT_EQ(back, text);
    EXPECT_EQ(in.value()->bytes_read(), text.size());
    // diagnose's path: chosen by the decompressed content, read as a stream, the usual note.
    auto rec = load_telemetry(path, LoadOptions{});
    ASSERT_TRUE(rec.ok()) << rec.error().message;
    ASSERT_EQ(rec->traces.size(), 1u);
    expect_same(rec->traces[0], plain->traces[0]);
    EXPECT_EQ(rec->notes.back(),
              fmt::format("{} archive decompressed ({} KiB of text)", compression_name(a.kind),
                          (text.size() + 1023) / 1024));
    // Forced, as --trace forces it.
    LoadOptions forced;
    forced.input_format = "trace";
    EXPECT_TRUE(load_telemetry(path, forced).ok());
  }
}

// Standard input (`-`): a descriptor read once, front to back, its first bytes already read to
// tell what it holds. Through a pipe fed by another thread (more than a pipe's buffer), the head
// handed back first, plain and compressed, it reads as the text does.
TEST(TraceStream, ADescriptorWithItsHeadAlreadyReadIsReadAsAStream) {
  const std::string text = tricky_trace(2000);
  const auto whole = parse_kineto_trace(text, "t.json");
  ASSERT_TRUE(whole.ok());
  for (const std::string& bytes : {text, gzip(text), xz(text), zstd(text)}) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const size_t head = 100;  // what the caller read to tell what the input is
    std::thread writer([&] {
      size_t at = head;
      while (at < bytes.size()) {
        const ssize_t n = ::write(fds[1], bytes.data() + at, bytes.size() - at);
        if (n <= 0) break;
        at += static_cast<size_t>(n);
      }
      ::close(fds[1]);
    });
    const auto in = ByteStream::of_descriptor(fds[0], "standard input", bytes.substr(0, head), {});
    auto t = parse_kineto_trace(*in, "t.json");
    writer.join();
    ::close(fds[0]);
    ASSERT_TRUE(t.ok()) << t.error().message;
    expect_same(t.value(), whole.value());
    EXPECT_EQ(in->bytes_read(), text.size());
    EXPECT_FALSE(in->interrupted());
  }
  // No descriptor: the head alone (how a compressed head is peeked at).
  const auto peek = ByteStream::of_descriptor(-1, "standard input", gzip("{\"traceEvents\""), {});
  char buf[64];
  auto r = peek->read(buf, sizeof buf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::string(buf, r.value()), "{\"traceEvents\"");
}

// load_telemetry("-") with standard input a compressed trace: read as a stream, as the file is.
TEST(TraceStream, StandardInputTraceIsReadAsTheFile) {
  TempDir dir;
  const std::string text = tricky_trace(500);
  const std::string path = dir.write("rank2.json.zst", zstd(text));
  auto file = load_telemetry(path, LoadOptions{});
  ASSERT_TRUE(file.ok()) << file.error().message;
  const int saved = ::dup(STDIN_FILENO);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::dup2(fd, STDIN_FILENO), STDIN_FILENO);
  ::close(fd);
  auto rec = load_telemetry("-", LoadOptions{});
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  ASSERT_EQ(rec->traces.size(), 1u);
  EXPECT_EQ(rec->traces[0].origin, "standard input");
  expect_same(rec->traces[0], file->traces[0]);
  EXPECT_EQ(rec->notes.back(), file->notes.back());  // "zstd archive decompressed (... of text)"
}

TEST(TraceStream, ConcatenatedGzipMembersAreOneTrace) {
  TempDir dir;
  const std::string text = tricky_trace(50);
  const size_t cut = text.size() / 2;
  const std::string path =
      dir.write("two.json.gz", gzip(text.substr(0, cut)) + gzip(text.substr(cut)) + '\0' + '\0');
  auto rec = load_telemetry(path, LoadOptions{});
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  auto whole = parse_kineto_trace(text, "t.json");
  ASSERT_TRUE(whole.ok());
  expect_same(rec->traces[0], whole.value());
}

TEST(TraceStream, CorruptAndCutArchivesAreRefusedAsBefore) {
  TempDir dir;
  const std::string text = tricky_trace(2000);
  for (const auto& a : kArchives) {
    SCOPED_TRACE(a.ext);
    const std::string bytes = a.make(text);
    const std::string cut =
        dir.write(std::string("cut.json") + a.ext, bytes.substr(0, bytes.size() / 2));
    auto t = load_telemetry(cut, LoadOptions{});
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().kind, Error::Kind::kUsage);
    EXPECT_EQ(t.error().message,
              cut + ": the " + std::string(compression_name(a.kind)) +
                  " archive is cut short (truncated: its end is missing); what it holds up to "
                  "the cut is not read");
    std::string bad = bytes;
    bad[a.header_byte] = '\xff';
    const std::string corrupt = dir.write(std::string("corrupt.json") + a.ext, bad);
    auto c = load_telemetry(corrupt, LoadOptions{});
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message.find(corrupt + ": a corrupt " +
                                     std::string(compression_name(a.kind)) + " archive ("),
              std::string::npos)
        << c.error().message;
  }
}

TEST(TraceStream, AFileIsToldATraceByItsDecompressedHead) {
  TempDir dir;
  const std::string text = tricky_trace(3);
  EXPECT_TRUE(file_is_kineto_trace(dir.write("a.json", text)));
  EXPECT_TRUE(file_is_kineto_trace(dir.write("a.json.gz", gzip(text))));
  EXPECT_TRUE(file_is_kineto_trace(dir.write("bom.json", "\xEF\xBB\xBF" + text)));
  EXPECT_FALSE(file_is_kineto_trace(dir.write("log.csv", "timestamp, power.draw [W]\n")));
  EXPECT_FALSE(file_is_kineto_trace(dir.write("log.csv.gz", gzip("timestamp, name\n"))));
  EXPECT_FALSE(
      file_is_kineto_trace((fs::temp_directory_path() / "no-such-gpudoctor-file").string()));
  // A byte order mark before the object is allowed when read too.
  auto rec = load_telemetry(dir.write("bom2.json", "\xEF\xBB\xBF" + text), LoadOptions{});
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  EXPECT_EQ(rec->traces[0].events.size(), 6u);
}

}  // namespace
}  // namespace gpudoctor
