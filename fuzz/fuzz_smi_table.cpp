// libFuzzer target: plain nvidia-smi table snapshots (formats/smi_table).
#include "formats/smi_table.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  (void)looks_like_smi_table(text);
  fuzz::check(read_smi_table(text, "fuzz.log", {}));
  SmiTableOptions limit;
  limit.power_limit_w = 250;
  fuzz::check(read_smi_table(text, "fuzz.log", limit));
  return 0;
}
