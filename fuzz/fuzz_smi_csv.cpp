// libFuzzer target: nvidia-smi --query-gpu CSV (formats/smi_csv).
#include "formats/smi_csv.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  (void)looks_like_smi_csv(text);
  fuzz::check(read_smi_csv(text, "fuzz.csv", {}));
  // A headerless log read with --columns (a list with annotations and reason columns) and
  // --power-limit.
  SmiCsvOptions columns;
  columns.columns = {"timestamp, index, power.draw [W]", "utilization.gpu", "name",
                     "clocks_throttle_reasons.hw_slowdown", "clocks_event_reasons.sw_power_cap"};
  columns.power_limit_w = 300;
  fuzz::check(read_smi_csv(text, "fuzz.csv", columns));
  SmiCsvOptions short_columns;
  short_columns.columns = {"power.draw"};
  fuzz::check(read_smi_csv(text, "fuzz.csv", short_columns));
  return 0;
}
