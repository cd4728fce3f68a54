// libFuzzer target: Prometheus exposition snapshots (formats/prom_text): sample lines, label
// escapes, stamp lines between snapshots, and the grouping into GPUs.
#include "formats/prom_text.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  (void)looks_like_prom_text(text);
  (void)parse_stamp_line_ms(text.substr(0, 64));
  fuzz::check(read_prom_text(text, "fuzz.prom", {}));
  return 0;
}
