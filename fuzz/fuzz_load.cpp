// libFuzzer target: the choice of reader by content and the reader it picks (formats/load), as
// `gpudoctor import` and `export` read a file, with the options they pass on.
#include "formats/load.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::check(load_text(text, "fuzz.log", {}));
  LoadOptions flags;
  flags.power_limit_w = 350;
  flags.gpu_name = "NVIDIA H100 80GB HBM3";
  flags.map = {{"GPU*", "power_w"}};
  fuzz::check(load_text(text, "fuzz.log", flags));
  LoadOptions columns;
  columns.columns = {"timestamp,index,utilization.gpu,power.draw"};
  fuzz::check(load_text(text, "fuzz.log", columns));
  return 0;
}
