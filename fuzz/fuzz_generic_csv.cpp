// libFuzzer target: any other CSV through the alias table (formats/generic_csv).
#include "formats/generic_csv.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  (void)looks_like_generic_csv(text);
  fuzz::check(read_generic_csv(text, "fuzz.csv", {}));
  // --map with wildcards (one column per GPU) and --power-limit.
  GenericCsvOptions wide;
  wide.map = {{"GPU*", "power_w"}, {"*time*", "time"}};
  wide.power_limit_w = 300;
  fuzz::check(read_generic_csv(text, "fuzz.csv", wide));
  GenericCsvOptions every;
  every.map = {{"*", "power_mw"}, {"gpu", "gpu"}};
  fuzz::check(read_generic_csv(text, "fuzz.csv", every));
  return 0;
}
