// libFuzzer target: PyTorch profiler traces (formats/kineto_trace), and what analysis makes of
// them (analysis/trace_measures through diagnose(): the trace block and its findings). The reader
// works through a stream in chunks: the same input read in chunks of 1-16 bytes (every event
// and name cut somewhere) must give the same trace, or the same error, as read whole.
#include "analysis/diagnosis.hpp"
#include "formats/input_bytes.hpp"
#include "formats/kineto_trace.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  (void)looks_like_kineto_trace(text);
  const auto rec = read_kineto_trace(text, "fuzz.json", {});
  fuzz::check(rec);
  {
    const auto in = ByteStream::of_text(text, size ? 1 + data[size - 1] % 16 : 1);
    const auto small = parse_kineto_trace(*in, "fuzz.json");
    const auto whole = parse_kineto_trace(text, "fuzz.json");
    if (small.ok() != whole.ok()) __builtin_trap();
    if (whole.ok() && (small->events.size() != whole->events.size() ||
                       small->names != whole->names || small->events_read != whole->events_read))
      __builtin_trap();
    if (!whole.ok() && small.error().message != whole.error().message) __builtin_trap();
  }
  if (rec.ok()) {
    const Diagnosis d = diagnose(rec.value());
    if (!d.trace.is_object() || d.trace["ranks"].size() != rec->traces.size()) __builtin_trap();
    (void)d.trace.dump();
  }
  return 0;
}
