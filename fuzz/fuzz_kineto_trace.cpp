// libFuzzer target: PyTorch profiler traces (formats/kineto_trace), and what analysis makes of
// them (analysis/trace_measures through diagnose(): the trace block and its findings).
#include "analysis/diagnosis.hpp"
#include "formats/kineto_trace.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  (void)looks_like_kineto_trace(text);
  const auto rec = read_kineto_trace(text, "fuzz.json", {});
  fuzz::check(rec);
  if (rec.ok()) {
    const Diagnosis d = diagnose(rec.value());
    if (!d.trace.is_object() || d.trace["ranks"].size() != rec->traces.size()) __builtin_trap();
    (void)d.trace.dump();
  }
  return 0;
}
