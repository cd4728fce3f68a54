// libFuzzer target: Prometheus HTTP API answers (formats/prom_series), what `diagnose --prometheus`
// reads from a server it does not control: the JSON, the grouping into GPUs and the finishing step.
#include "formats/finish.hpp"
#include "formats/prom_series.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  auto series = parse_prometheus_answer(fuzz::as_text(data, size));
  if (!series.ok()) {
    if (series.error().message.empty()) __builtin_trap();
    return 0;
  }
  Recording rec = recording_from_series(series.value(), "fuzz");
  std::vector<log_reader::GpuToFinish> gpus;
  for (auto& g : rec.gpus) gpus.push_back({&g, nullptr});
  log_reader::finish_gpus(rec, gpus, {});
  fuzz::check(Result<Recording>(std::move(rec)));
  return 0;
}
