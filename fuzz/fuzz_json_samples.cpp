// libFuzzer target: JSON samples (formats/json_samples): whole documents, concatenated objects,
// columnar objects, saved Prometheus answers, and the flattened table read by the catalogue.
#include "formats/json_samples.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  (void)looks_like_json_samples(text);
  fuzz::check(read_json_samples(text, "fuzz.json", {}));
  LoadOptions mapped;
  mapped.map = {{"*", "power_w"}};
  fuzz::check(read_json_samples(text, "fuzz.json", mapped));
  return 0;
}
