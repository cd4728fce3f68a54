// libFuzzer target: stand-in NVML captures (formats/capture_reader).
#include "formats/capture_reader.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  (void)looks_like_capture(text);
  fuzz::check(read_capture(text, "fuzz.json"));
  return 0;
}
