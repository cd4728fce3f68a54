// PyTorch profiler traces: Kineto's Chrome-trace JSON (`torch.profiler` and
// `export_chrome_trace`), one rank per file. Read as a stream, in one pass, with a scanner of its
// own (no tree: each event is framed whole in a window over the input, its members looked at, and
// only kernels, memory copies and sets, CUDA runtime calls, ProfilerStep#N and DataLoader spans
// kept, a few words each; core/trace.hpp), every other event counted by category. Memory holds
// the kept events and a window of a chunk or two (the largest single event at least), never the
// file, whether it is plain or compressed (formats/input_bytes' ByteStream). Times as the file
// writes them: microseconds, with three decimals in nanosecond-resolution traces, relative to
// baseTimeNanoseconds where the file has one.
#pragma once

#include <string>
#include <string_view>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "core/trace.hpp"
#include "formats/input_bytes.hpp"
#include "formats/load.hpp"

namespace gpudoctor {

// A JSON object whose first bytes name a Kineto trace's members (traceEvents, deviceProperties,
// distributedInfo, schemaVersion with displayTimeUnit ...).
bool looks_like_kineto_trace(std::string_view head);

// True when the file (plain, or decompressed where it is gzip, xz or zstd) starts as a Kineto
// trace does: `diagnose DIR` reads a folder of nothing else as one run's ranks.
bool file_is_kineto_trace(const std::string& path);

// The trace's rank, devices and kept events. Refused: text that is not a trace's JSON (with the
// byte where it stops), a trace with no traceEvents.
Result<TraceRank> parse_kineto_trace(ByteStream& in, const std::string& origin);
Result<TraceRank> parse_kineto_trace(std::string_view text, const std::string& origin);

// A Recording holding the one trace (no GPU series) and what was read, in its notes. Refused
// also: a trace with no GPU event (a CPU-only rank), said as such.
Result<Recording> read_kineto_trace(ByteStream& in, const std::string& origin,
                                    const LoadOptions& options);
Result<Recording> read_kineto_trace(std::string_view text, const std::string& origin,
                                    const LoadOptions& options);

}  // namespace gpudoctor
