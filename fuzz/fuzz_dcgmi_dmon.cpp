// libFuzzer target: dcgmi dmon (formats/dcgm).
#include "formats/dcgm.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  (void)looks_like_dcgmi_dmon(text);
  fuzz::check(read_dcgmi_dmon(text, "fuzz.log", {}));
  DcgmOptions limit;
  limit.power_limit_w = 700;
  fuzz::check(read_dcgmi_dmon(text, "fuzz.log", limit));
  return 0;
}
