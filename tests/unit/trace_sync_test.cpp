// The trace's own synchronisation records (Kineto's cat "cuda_sync"): read by formats/
// kineto_trace, used by analysis/trace_measures to class idle gaps as waits on another stream or
// an event from the record rather than only from launch timing; the per-stream view (each
// stream's idle split) and the GPU events launched per step; the trace fixtures of tests/data.
// Small hand-written traces, times in microseconds.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "analysis/diagnosis.hpp"
#include "analysis/trace_findings.hpp"
#include "analysis/trace_measures.hpp"
#include "formats/kineto_trace.hpp"
#include "formats/load.hpp"
#include "report/trace_report.hpp"

namespace gpudoctor {
namespace {

std::string trace_json(const std::string& events) {
  return R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
  "traceEvents": [)" +
         events + "]}";
}

std::string kernel(double ts, double dur, int corr, int stream) {
  return fmt::format(
      R"({{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": {}, "ts": {}, "dur": {},
      "args": {{"device": 0, "stream": {}, "correlation": {}}}}}, )",
      stream, ts, dur, stream, corr);
}

std::string runtime(const std::string& name, double ts, double dur, int corr) {
  return fmt::format(
      R"({{"ph": "X", "cat": "cuda_runtime", "name": "{}", "pid": 9, "tid": 9, "ts": {},
      "dur": {}, "args": {{"correlation": {}}}}}, )",
      name, ts, dur, corr);
}

// A cuda_sync record as Kineto writes it; `stream` -1 for the device (written unsigned when
// `unsigned_device`), `wait_on` -1 for none.
std::string sync(const std::string& name, double ts, double dur, int corr, int64_t stream,
                 int wait_on = -1) {
  const std::string wait =
      wait_on >= 0 ? fmt::format(R"("wait_on_stream": {}, "wait_on_cuda_event_record_corr_id": 1,
      )",
                                 wait_on)
                   : "";
  return fmt::format(
      R"({{"ph": "X", "cat": "cuda_sync", "name": "{}", "pid": 0, "tid": {}, "ts": {}, "dur": {},
      "args": {{"cuda_sync_kind": "{}", {}"stream": {}, "correlation": {}, "device": 0}}}}, )",
      name, stream, ts, dur, name, wait, stream, corr);
}

std::string step(int n, double ts, double dur) {
  return fmt::format(R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}",
      "pid": 9, "tid": 9, "ts": {}, "dur": {}}}, )",
                     n, ts, dur);
}

TraceRank parsed(std::string events) {
  events.resize(events.size() - 2);  // the last ", "
  auto t = parse_kineto_trace(trace_json(events), "t.json");
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? t.value() : TraceRank{};
}

TEST(TraceSync, SyncRecordsAreKeptWithTheirStreamsAndTheStreamWaitedOn) {
  const TraceRank t = parsed(sync("Stream Wait Event", 10, 1, 5, 20, 7) +
                             sync("Context Sync", 20, 3, 6, 4294967295) +
                             sync("Event Sync", 30, 2, 7, -1, 7) + kernel(40, 5, 8, 7));
  ASSERT_EQ(t.events.size(), 4u);
  EXPECT_EQ(t.events[0].kind, TraceKind::kSync);
  EXPECT_EQ(t.events[0].stream, 20);
  EXPECT_EQ(t.events[0].wait_stream, 7);
  EXPECT_EQ(t.events[0].device, 0);
  EXPECT_EQ(t.names[t.events[0].name], "Stream Wait Event");
  EXPECT_EQ(t.events[1].stream, -1);  // 4294967295: -1 written unsigned
  EXPECT_EQ(t.events[1].wait_stream, -1);
  EXPECT_EQ(t.events[2].stream, -1);
  EXPECT_EQ(t.events[3].wait_stream, -1);
  EXPECT_TRUE(t.skipped.empty());
  const TraceMeasures m = measure_trace(t);
  EXPECT_EQ(m.sync_records, 3u);
  EXPECT_EQ(m.device_syncs, 2u);
  EXPECT_EQ(m.stream_waits, 1u);
  EXPECT_EQ(m.kernels, 1u);  // a sync record is no GPU work
  EXPECT_EQ(m.split.span_ns, 5'000);
}

// Kernel A on stream 20 [0,50); the CPU records an event on 20 and tells stream 7 to wait on it
// (a "Stream Wait Event" on 7 at 12), then launches kernel B on 7 at 14 (returned by 16). B
// starts at 60, after the GPU ran dry at 50: the launch had returned long before, and the trace
// says why B waited. Without the record the same gap is still a stream-or-event wait, inferred
// from the timing, but none of it is "recorded".
TEST(TraceSync, AGapEndingAtAKernelThatWaitedOnAnotherStreamIsClassedFromTheRecord) {
  const std::string common = runtime("cudaLaunchKernel", 0, 2, 1) + kernel(5, 45, 1, 20) +
                             runtime("cudaEventRecord", 10, 1, 2) +
                             runtime("cudaLaunchKernel", 14, 2, 4) + kernel(60, 10, 4, 7);
  const TraceMeasures with =
      measure_trace(parsed(common + runtime("cudaStreamWaitEvent", 12, 1, 3) +
                           sync("Stream Wait Event", 12, 1, 3, 7, 20)));
  EXPECT_EQ(with.split.idle_ns, 10'000);
  EXPECT_EQ(with.idle.sync_ns, 10'000);
  EXPECT_EQ(with.idle.sync_recorded_ns, 10'000);
  EXPECT_EQ(with.idle.host_ns, 0);
  const TraceMeasures without = measure_trace(parsed(common));
  EXPECT_EQ(without.idle.sync_ns, 10'000);
  EXPECT_EQ(without.idle.sync_recorded_ns, 0);
  // A wait recorded on stream 7 before its previous event was launched says nothing of the
  // next one: kernel C on 7 launched at 80 after the GPU ran dry at 70 is the host's.
  const TraceMeasures late =
      measure_trace(parsed(common + sync("Stream Wait Event", 12, 1, 3, 7, 20) +
                           runtime("cudaLaunchKernel", 80, 2, 5) + kernel(90, 5, 5, 7)));
  EXPECT_EQ(late.idle.host_ns, 20'000);  // [70,90)
  EXPECT_EQ(late.idle.sync_recorded_ns, 10'000);
}

// The launch call still in flight when the GPU ran dry is "other" by timing alone; a recorded
// wait on the kernel's stream makes it a stream wait.
TEST(TraceSync, ARecordedWaitTurnsAnInFlightLaunchIntoAStreamWait) {
  const std::string base = runtime("cudaLaunchKernel", 0, 2, 1) + kernel(5, 10, 1, 20) +
                           runtime("cudaLaunchKernel", 12, 10, 4) + kernel(30, 5, 4, 7);
  EXPECT_EQ(measure_trace(parsed(base)).idle.other_ns, 15'000);  // [15,30)
  const TraceMeasures m = measure_trace(parsed(base + sync("Stream Wait Event", 11, 1, 3, 7, 20)));
  EXPECT_EQ(m.idle.other_ns, 0);
  EXPECT_EQ(m.idle.sync_ns, 15'000);
  EXPECT_EQ(m.idle.sync_recorded_ns, 15'000);
  // A wait of a stream on itself is no cross-stream wait.
  const TraceMeasures self =
      measure_trace(parsed(base + sync("Stream Wait Event", 11, 1, 3, 7, 7)));
  EXPECT_EQ(self.idle.other_ns, 15'000);
  EXPECT_EQ(self.stream_waits, 0u);
}

// The CPU blocked in cudaEventSynchronize as the GPU ran dry: known from the runtime call's
// name before, now also from the trace's own "Event Sync" record, which is counted as recorded.
// A record alone (a trace without runtime calls) is enough.
TEST(TraceSync, ACpuBlockedInARecordedSyncAsTheGpuRanDryIsAnEventWait) {
  const std::string base = runtime("cudaLaunchKernel", 0, 2, 1) + kernel(5, 10, 1, 7) +
                           runtime("cudaLaunchKernel", 30, 2, 3) + kernel(40, 5, 3, 7);
  const TraceMeasures host = measure_trace(parsed(base));
  EXPECT_EQ(host.idle.host_ns, 25'000);  // [15,40): the launch began at 30
  const TraceMeasures by_record =
      measure_trace(parsed(base + sync("Event Sync", 10, 15, 2, -1, 7)));
  EXPECT_EQ(by_record.idle.host_ns, 0);
  EXPECT_EQ(by_record.idle.sync_ns, 25'000);
  EXPECT_EQ(by_record.idle.sync_recorded_ns, 25'000);
  const TraceMeasures by_call =
      measure_trace(parsed(base + runtime("cudaEventSynchronize", 10, 15, 2)));
  EXPECT_EQ(by_call.idle.sync_ns, 25'000);
  EXPECT_EQ(by_call.idle.sync_recorded_ns, 0);
}

TEST(TraceSync, EachStreamGetsItsBusyTimeAndSpan) {
  const TraceMeasures m = measure_trace(parsed(kernel(0, 10, 1, 7) + kernel(5, 10, 2, 7) +
                                               kernel(40, 10, 3, 7) + kernel(20, 5, 4, 20)));
  ASSERT_EQ(m.streams.size(), 2u);
  EXPECT_EQ(m.streams[0].stream, 7);
  EXPECT_EQ(m.streams[0].device, 0);
  EXPECT_EQ(m.streams[0].events, 3u);
  EXPECT_EQ(m.streams[0].busy_ns, 25'000);  // [0,15) and [40,50)
  EXPECT_EQ(m.streams[0].span_ns, 50'000);
  EXPECT_EQ(m.streams[1].stream, 20);
  EXPECT_EQ(m.streams[1].busy_ns, 5'000);
  EXPECT_EQ(m.streams[1].span_ns, 5'000);
  // The rank: busy [0,15), [20,25), [40,50).
  EXPECT_EQ(m.split.idle_ns, 20'000);
  const auto j = trace_measures_json(m);
  ASSERT_EQ(j["streams"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["streams"][0]["busy"].get<double>(), 0.5);
  EXPECT_EQ(j["sync_records"].get<int>(), 0);
}

// Each stream's idle time split by the rank's rule over that stream's events alone. Stream 20:
// kernel A [5,50), then D [80,90) launched at 70: the stream ran dry at 50 with nothing queued
// (host, 30 of its 85 us span). Stream 7: B [10,20); the CPU records an event on 20 and tells 7
// to wait on it (a "Stream Wait Event" on 7 at 12), launches C (at 14, returned by 16), which
// runs [60,70) once A is done: 7 waited [20,60) on 20's event (kernel wait, 40); E's launch call
// began at 65 and was still in flight (to 125) when 7 ran dry at 70, E running [130,135) (other,
// 60 of its 125 us span). The rank sees only the time nothing ran: [50,60) waiting on the
// event, [70,80) for the host, [90,130) other.
TEST(TraceSync, EachStreamsIdleTimeIsSplitByTheRanksRule) {
  const std::string base = runtime("cudaLaunchKernel", 0, 2, 1) + kernel(5, 45, 1, 20) +
                           runtime("cudaLaunchKernel", 3, 2, 2) + kernel(10, 10, 2, 7) +
                           runtime("cudaEventRecord", 10, 1, 3) +
                           runtime("cudaLaunchKernel", 14, 2, 4) + kernel(60, 10, 4, 7) +
                           runtime("cudaLaunchKernel", 70, 2, 5) + kernel(80, 10, 5, 20) +
                           runtime("cudaLaunchKernel", 65, 60, 7) + kernel(130, 5, 7, 7);
  const TraceMeasures m = measure_trace(parsed(base + runtime("cudaStreamWaitEvent", 12, 1, 6) +
                                               sync("Stream Wait Event", 12, 1, 6, 7, 20)));
  ASSERT_EQ(m.streams.size(), 2u);
  const StreamMeasure& s7 = m.streams[0];
  const StreamMeasure& s20 = m.streams[1];
  ASSERT_EQ(s7.stream, 7);
  EXPECT_EQ(s7.span_ns, 125'000);
  EXPECT_EQ(s7.busy_ns, 25'000);
  EXPECT_EQ(s7.idle.host_ns, 0);
  EXPECT_EQ(s7.idle.sync_ns, 40'000);
  EXPECT_EQ(s7.idle.sync_recorded_ns, 40'000);
  EXPECT_EQ(s7.idle.other_ns, 60'000);
  ASSERT_EQ(s20.stream, 20);
  EXPECT_EQ(s20.span_ns, 85'000);
  EXPECT_EQ(s20.busy_ns, 55'000);
  EXPECT_EQ(s20.idle.host_ns, 30'000);
  EXPECT_EQ(s20.idle.sync_ns, 0);
  EXPECT_EQ(s20.idle.other_ns, 0);
  for (const auto& s : m.streams)
    EXPECT_EQ(s.idle.host_ns + s.idle.sync_ns + s.idle.other_ns, s.span_ns - s.busy_ns);
  // The rank: the same rule over all its events at once.
  EXPECT_EQ(m.idle.sync_ns, 10'000);
  EXPECT_EQ(m.idle.sync_recorded_ns, 10'000);
  EXPECT_EQ(m.idle.host_ns, 10'000);
  EXPECT_EQ(m.idle.other_ns, 40'000);
  // In the JSON, fractions of each stream's span that sum with `busy` to 1.
  const auto j = trace_measures_json(m);
  const auto& j7 = j["streams"][0];
  EXPECT_DOUBLE_EQ(j7["idle_host_wait"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j7["idle_kernel_wait"].get<double>(), 0.32);
  EXPECT_DOUBLE_EQ(j7["idle_other"].get<double>(), 0.48);
  EXPECT_DOUBLE_EQ(j7["busy"].get<double>(), 0.2);
  const auto& j20 = j["streams"][1];
  EXPECT_DOUBLE_EQ(j20["idle_host_wait"].get<double>(), 0.3529);  // 30/85
  EXPECT_DOUBLE_EQ(j20["idle_kernel_wait"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j20["busy"].get<double>(), 0.6471);
  // Without the record, 7's wait is still one on another stream or event (C's launch had
  // returned before 7 ran dry: queued, held), but none of it recorded.
  const TraceMeasures inferred = measure_trace(parsed(base));
  EXPECT_EQ(inferred.streams[0].idle.sync_ns, 40'000);
  EXPECT_EQ(inferred.streams[0].idle.sync_recorded_ns, 0);
}

// A GPU event belongs to the step its launch call began in (as HTA gives a GPU event its
// launch's iteration), wherever it runs.
TEST(TraceSync, GpuEventsCountTowardTheStepTheirLaunchBeganIn) {
  const TraceMeasures m = measure_trace(parsed(
      step(1, 0, 100) + step(2, 100, 100) + runtime("cudaLaunchKernel", 10, 2, 1) +
      kernel(20, 10, 1, 7) + runtime("cudaLaunchKernel", 95, 2, 2) + kernel(150, 10, 2, 7) +
      runtime("cudaLaunchKernel", 120, 2, 3) + kernel(170, 10, 3, 7) + kernel(175, 1, 9, 7)));
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].launched, 2u);  // the second runs in step 2's span
  EXPECT_EQ(m.steps[1].launched, 1u);  // the unmatched kernel counts nowhere
  const auto j = trace_measures_json(m);
  EXPECT_EQ(j["steps"][0]["launched"].get<int>(), 2);
}

TEST(TraceSync, TheTextReportSaysWhatTheRecordsExplain) {
  const TraceMeasures m = measure_trace(
      parsed(runtime("cudaLaunchKernel", 0, 2, 1) + kernel(5, 45, 1, 20) +
             runtime("cudaLaunchKernel", 14, 2, 4) + kernel(60, 10, 4, 7) +
             sync("Stream Wait Event", 12, 1, 3, 7, 20) + sync("Context Sync", 80, 1, 5, -1)));
  nlohmann::ordered_json trace = {{"ranks", nlohmann::ordered_json::array()}};
  trace["ranks"].push_back(trace_measures_json(m));
  const std::string text = trace_text(trace, 5);
  EXPECT_NE(text.find("synchronisation records in the trace: 2 (1 of the whole device, 1 waits "
                      "of a stream on another's event); the idle time they explain: 15 % of "
                      "the span"),
            std::string::npos)
      << text;
}

// The trace fixtures in tests/data/traces (also the fuzz target's seeds, scripts/fuzz.sh): each
// is read and diagnosed. sync_streams.json, written for this test (not taken from a real run):
// five kernels and a copy on streams 7 and 20, a "Stream Wait Event" (20 waits on 7's event), an
// "Event Sync" and a "Context Sync" (its stream written 4294967295) of the whole device, one
// ProfilerStep; the CPU blocked in the syncs as the GPU ran dry at 70, 80 and 143 us, and waited
// for the host from 122 to 140.
TEST(TraceSync, EveryTraceFixtureIsReadAndTheSyncSeedIsMeasured) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(GPUDOCTOR_SOURCE_DIR) / "tests/data/traces";
  size_t read = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    SCOPED_TRACE(f.path().string());
    auto rec = load_telemetry(f.path().string(), LoadOptions{});
    ASSERT_TRUE(rec.ok()) << rec.error().message;
    ASSERT_EQ(rec->traces.size(), 1u);
    EXPECT_EQ(rec->traces[0].cut_at_byte, 0u);
    const Diagnosis d = diagnose(rec.value());
    ASSERT_TRUE(d.trace.is_object());
    EXPECT_EQ(d.trace["ranks"].size(), 1u);
    ++read;
  }
  EXPECT_GE(read, 2u);
  auto rec = load_telemetry((dir / "sync_streams.json").string(), LoadOptions{});
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  const TraceRank& t = rec->traces[0];
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.events_read, 23u);
  const TraceMeasures m = measure_trace(t);
  EXPECT_EQ(m.device, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(m.kernels, 5u);
  EXPECT_EQ(m.nccl_kernels, 1u);
  EXPECT_EQ(m.memory_ops, 1u);
  EXPECT_EQ(m.sync_records, 3u);
  EXPECT_EQ(m.device_syncs, 2u);
  EXPECT_EQ(m.stream_waits, 1u);
  ASSERT_EQ(m.steps.size(), 1u);
  EXPECT_EQ(m.steps[0].launched, 6u);
  EXPECT_EQ(m.split.span_ns, 144'000);
  EXPECT_EQ(m.split.idle_ns, 39'000);
  EXPECT_EQ(m.idle.host_ns, 18'000);
  EXPECT_EQ(m.idle.sync_ns, 21'000);
  EXPECT_EQ(m.idle.sync_recorded_ns, 21'000);
  ASSERT_EQ(m.streams.size(), 2u);
  EXPECT_EQ(m.streams[0].stream, 7);
  EXPECT_EQ(m.streams[0].idle.sync_recorded_ns, 82'000);  // [70,75), [80,140), [143,160)
  EXPECT_EQ(m.streams[1].stream, 20);
  EXPECT_EQ(m.streams[1].idle.sync_recorded_ns, 2'000);  // [80,82)
  for (const auto& s : m.streams)
    EXPECT_EQ(s.idle.host_ns + s.idle.sync_ns + s.idle.other_ns, s.span_ns - s.busy_ns);
}

}  // namespace
}  // namespace gpudoctor
