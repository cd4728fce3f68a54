// Profiler traces cut short (formats/kineto_trace): a profiler stopped mid-write, `head -c`, or a
// Ctrl-C on a pipe leave a trace whose input ends inside traceEvents. The whole events read up to
// the end are kept, the one cut short dropped, and a note says where it ended; what follows the
// event list (deviceProperties, baseTimeNanoseconds) may be missing. An end is not a syntax
// error: a trace broken mid-file is still refused, naming the byte where it breaks. HTA's traces
// are read in place from ../shared/data/traces/hta.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "analysis/diagnosis.hpp"
#include "analysis/trace_measures.hpp"
#include "formats/input_bytes.hpp"
#include "formats/kineto_trace.hpp"
#include "formats/load.hpp"

namespace gpudoctor {
namespace {

namespace fs = std::filesystem;

// HTA's trace with baseTimeNanoseconds after its events (and deviceProperties before them).
const std::string kHta = std::string(GPUDOCTOR_SOURCE_DIR) +
                         "/../shared/data/traces/hta/nccl_parser_config_nccl_data.json.gz";
// Kineto writes the CPU's events first: this trace's first kernel is 3.7 MB in, of 9.8 MB.
constexpr size_t kCut = 5'000'000;

// The decompressed text of a file, or "" where it cannot be read.
std::string text_of(const std::string& path) {
  auto in = ByteStream::open_file(path);
  if (!in) return "";
  std::string out;
  char buf[1 << 16];
  for (;;) {
    auto r = in.value()->read(buf, sizeof buf);
    if (!r || r.value() == 0) break;
    out.append(buf, r.value());
  }
  return out;
}

class TempFile {
 public:
  TempFile(const std::string& name, const std::string& bytes)
      : path_(fs::temp_directory_path() / fmt::format("gpudoctor-cut-{}-{}", ::getpid(), name)) {
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~TempFile() { fs::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

bool has_note(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

size_t kernels_of(const TraceRank& t) {
  return static_cast<size_t>(std::count_if(t.events.begin(), t.events.end(), [](const auto& e) {
    return e.kind == TraceKind::kKernel;
  }));
}

// What a cut HTA trace must give, read from a file or from standard input.
void expect_cut_read(const Result<Recording>& rec, const TraceRank& whole) {
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  ASSERT_EQ(rec->traces.size(), 1u);
  const TraceRank& t = rec->traces[0];
  EXPECT_EQ(t.cut_at_byte, kCut);
  EXPECT_TRUE(t.cut_in_events);
  EXPECT_TRUE(t.cut_event_dropped);
  EXPECT_GT(t.events_read, 0u);
  EXPECT_LT(t.events_read, whole.events_read);
  EXPECT_GT(kernels_of(t), 0u);
  EXPECT_LE(kernels_of(t), kernels_of(whole));
  EXPECT_TRUE(has_note(rec->notes, fmt::format("profiler trace cut short: the input ends inside "
                                               "its event list (traceEvents) at byte {}",
                                               kCut)))
      << fmt::format("{}", fmt::join(rec->notes, "\n"));
  EXPECT_TRUE(has_note(rec->notes, fmt::format("the {} whole events before it are read, the one "
                                               "cut short dropped",
                                               t.events_read)));
  // Its baseTimeNanoseconds came after the events: its times are the profiler's clock.
  EXPECT_EQ(rec->start_unix_ms, 0);
  EXPECT_TRUE(has_note(rec->notes, "not the wall clock"));
  // deviceProperties came before the events: the GPU is named.
  EXPECT_EQ(t.device_names, whole.device_names);
  // And it is diagnosed, the note among the diagnosis' input notes.
  const Diagnosis d = diagnose(rec.value());
  ASSERT_TRUE(d.trace.is_object());
  EXPECT_EQ(d.trace["ranks"].size(), 1u);
  EXPECT_TRUE(has_note(d.input_notes, "profiler trace cut short"));
  // Its findings count from the trace's first event, not from the profiler clock's zero (hours
  // before the trace).
  ASSERT_FALSE(d.findings.empty());
  const double span_s =
      static_cast<double>(t.events.back().start_ns - t.events.front().start_ns) / 1e9;
  for (const auto& f : d.findings) {
    EXPECT_GE(f.start_s, 0.0);
    EXPECT_LE(f.end_s, span_s + 60) << f.start_s;
  }
}

TEST(TraceCut, AnHtaTraceCutInsideItsEventsIsReadUpToTheCutFromAFile) {
  const std::string text = text_of(kHta);
  if (text.empty()) GTEST_SKIP() << "shared traces not present";
  ASSERT_GT(text.size(), kCut + 1000);
  auto whole = load_telemetry(kHta, LoadOptions{});
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  const TempFile cut("cut.json", text.substr(0, kCut));
  const auto rec = load_telemetry(cut.path(), LoadOptions{});
  expect_cut_read(rec, whole->traces[0]);
  // The events kept are the whole trace's first ones, as they were (the base aside).
  const TraceRank& t = rec->traces[0];
  const TraceRank& w = whole->traces[0];
  ASSERT_LE(t.events.size(), w.events.size());
  const int64_t base = w.events[0].start_ns - t.events[0].start_ns;
  for (size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_EQ(t.events[i].start_ns + base, w.events[i].start_ns) << i;
    EXPECT_EQ(t.events[i].dur_ns, w.events[i].dur_ns) << i;
    EXPECT_EQ(t.names[t.events[i].name], w.names[w.events[i].name]) << i;
  }
  EXPECT_EQ(base, 1711964646000000000);  // the trace's baseTimeNanoseconds, cut off
  EXPECT_GT(measure_trace(t).kernels, 0u);
  // Cut before the GPU's events (Kineto writes the CPU's first): no GPU event, said so.
  const TempFile early("early.json", text.substr(0, 300000));
  const auto none = load_telemetry(early.path(), LoadOptions{});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Error::Code::kNoData);
  EXPECT_NE(none.error().message.find("a profiler trace cut short before its first GPU kernel or "
                                      "memory copy (1224 events read, rank 0; the input ends "
                                      "inside its event list at byte 300000"),
            std::string::npos)
      << none.error().message;
}

// `... | gpudoctor diagnose -` with the writer stopped: standard input ends inside the events.
TEST(TraceCut, AnHtaTraceCutInsideItsEventsIsReadUpToTheCutFromStandardInput) {
  const std::string text = text_of(kHta);
  if (text.empty()) GTEST_SKIP() << "shared traces not present";
  auto whole = load_telemetry(kHta, LoadOptions{});
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  const std::string cut = text.substr(0, kCut);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    size_t at = 0;
    while (at < cut.size()) {
      const ssize_t n = ::write(fds[1], cut.data() + at, cut.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    ::close(fds[1]);
  });
  const int saved = ::dup(STDIN_FILENO);
  ASSERT_EQ(::dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
  ::close(fds[0]);
  const auto rec = load_telemetry("-", LoadOptions{});
  writer.join();
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  expect_cut_read(rec, whole->traces[0]);
  EXPECT_EQ(rec->traces[0].origin, "standard input");
}

// A trace of three kernels with deviceProperties and baseTimeNanoseconds after its events, cut at
// every byte: before the first event is whole it is refused as before; from there on it is read,
// its events the whole trace's first ones, whatever the chunks; whole, nothing is said.
TEST(TraceCut, EveryCutAfterTheFirstWholeEventIsRead) {
  std::string events;
  for (int i = 0; i < 3; ++i)
    events += fmt::format(
        R"({}{{"ph": "X", "cat": "kernel", "name": "k{} \"q\" [x]", "ts": {}.5, "dur": 2,)"
        R"( "args": {{"device": 0, "stream": 7, "ok": true, "n": null}}}})",
        i ? ",\n  " : "", i, 100 + 10 * i);
  const std::string head = R"({"schemaVersion": 1, "traceEvents": [)";
  const std::string text = head + events +
                           R"(], "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],)"
                           R"( "baseTimeNanoseconds": 1700000000000000000})";
  const auto whole = parse_kineto_trace(text, "t.json");
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  ASSERT_EQ(whole->events.size(), 3u);
  EXPECT_EQ(whole->cut_at_byte, 0u);
  const size_t first_whole = text.find("}},") + 2;  // the first event's closing brace read
  const size_t list_end = text.find("], \"deviceProperties\"");
  for (size_t n = 0; n < text.size(); ++n) {
    SCOPED_TRACE(n);
    const std::string cut = text.substr(0, n);
    const auto t = parse_kineto_trace(cut, "t.json");
    if (n < first_whole) {
      ASSERT_FALSE(t.ok());
      EXPECT_NE(t.error().message.find("t.json: byte "), std::string::npos);
      continue;
    }
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->cut_at_byte, n);
    EXPECT_EQ(t->cut_in_events, n <= list_end);
    ASSERT_GE(t->events.size(), 1u);
    ASSERT_LE(t->events.size(), 3u);
    EXPECT_EQ(t->events_read, t->events.size());
    for (size_t i = 0; i < t->events.size(); ++i)
      EXPECT_EQ(t->names[t->events[i].name], whole->names[whole->events[i].name]);
    // The base came last: never applied to a cut (a number at the end may be cut too).
    EXPECT_EQ(t->events[0].start_ns, 100'500);
    if (n > list_end) {
      EXPECT_EQ(t->events.size(), 3u);
    }
    for (const size_t chunk : {1, 3, 64}) {
      const auto in = ByteStream::of_text(cut, chunk);
      const auto c = parse_kineto_trace(*in, "t.json");
      ASSERT_TRUE(c.ok()) << chunk;
      EXPECT_EQ(c->events.size(), t->events.size()) << chunk;
      EXPECT_EQ(c->cut_at_byte, t->cut_at_byte) << chunk;
      EXPECT_EQ(c->cut_event_dropped, t->cut_event_dropped) << chunk;
    }
  }
  // Cut inside the second event: the first kept, the second dropped and said to be.
  const auto mid = parse_kineto_trace(text.substr(0, first_whole + 20), "t.json");
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(mid->events.size(), 1u);
  EXPECT_TRUE(mid->cut_event_dropped);
  // Cut just after a ',' between events: nothing of the next one to drop.
  const auto comma = parse_kineto_trace(text.substr(0, first_whole + 1), "t.json");
  ASSERT_TRUE(comma.ok());
  EXPECT_FALSE(comma->cut_event_dropped);
  // Cut after the list, inside deviceProperties: every event read, the GPU not named.
  const auto after = parse_kineto_trace(text.substr(0, list_end + 30), "t.json");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->events.size(), 3u);
  EXPECT_FALSE(after->cut_in_events);
  EXPECT_TRUE(after->device_names.empty());
  // The reader's notes: where it ended, how many events were read.
  const auto rec = read_kineto_trace(text.substr(0, first_whole + 20), "t.json", {});
  ASSERT_TRUE(rec.ok());
  EXPECT_TRUE(has_note(rec->notes,
                       fmt::format("the input ends inside its event list (traceEvents) at byte "
                                   "{} (a profiler stopped mid-write, or a pipe cut): the 1 whole "
                                   "events before it are read, the one cut short dropped",
                                   first_whole + 20)))
      << fmt::format("{}", fmt::join(rec->notes, "\n"));
  const auto rec_after = read_kineto_trace(text.substr(0, list_end + 30), "t.json", {});
  ASSERT_TRUE(rec_after.ok());
  EXPECT_TRUE(has_note(rec_after->notes, fmt::format("the input ends at byte {}, after its event "
                                                     "list (all 3 events read whole)",
                                                     list_end + 30)));
  const auto rec_whole = read_kineto_trace(text, "t.json", {});
  ASSERT_TRUE(rec_whole.ok());
  EXPECT_FALSE(has_note(rec_whole->notes, "cut short"));
}

// A trace broken mid-file is refused even where the input also ends early: a brace missing (the
// framing then runs on to the end of the input), a ':' where a ',' belongs, a bad literal. The
// error names the byte where it breaks, not the end.
TEST(TraceCut, ATraceBrokenMidFileIsStillRefused) {
  const std::string text = text_of(kHta);
  if (text.empty()) GTEST_SKIP() << "shared traces not present";
  const std::string cut = text.substr(0, kCut);
  // An event's closing brace, about 4 MB in, among the GPU's events (Kineto writes
  // "\n  },\n  {").
  const size_t at_brace = cut.find("\n  },\n", 4'000'000);
  ASSERT_NE(at_brace, std::string::npos);
  const size_t brace = at_brace + 3;
  std::string no_brace = cut;
  no_brace.erase(brace, 1);
  std::string colon = cut;
  colon[brace + 1] = ':';
  std::string literal = cut;
  literal.replace(brace + 1, 1, ", tru,");
  for (const auto& [what, broken] :
       {std::pair{"brace", no_brace}, std::pair{"colon", colon}, std::pair{"literal", literal}}) {
    SCOPED_TRACE(what);
    const TempFile f("broken.json", broken);
    const auto rec = load_telemetry(f.path(), LoadOptions{});
    ASSERT_FALSE(rec.ok());
    EXPECT_EQ(rec.error().kind, Error::Kind::kUsage);
    const std::string& m = rec.error().message;
    EXPECT_NE(m.find(f.path() + ": byte "), std::string::npos) << m;
    const size_t at = std::stoul(m.substr(m.find(": byte ") + 7));
    EXPECT_GT(at, brace - 2000) << m;
    EXPECT_LT(at, brace + 2000) << m;  // where it breaks, not where the input ends
    // The same whole, uncut.
    std::string whole = text;
    whole.replace(0, kCut, broken);
    EXPECT_FALSE(parse_kineto_trace(whole, "w.json").ok());
  }
}

}  // namespace
}  // namespace gpudoctor
