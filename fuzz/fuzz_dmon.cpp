// libFuzzer target: nvidia-smi dmon (formats/dmon).
#include "formats/dmon.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  (void)looks_like_dmon(text);
  fuzz::check(read_dmon(text, "fuzz.log", {}));
  DmonOptions limit;
  limit.power_limit_w = 400;
  fuzz::check(read_dmon(text, "fuzz.log", limit));
  return 0;
}
