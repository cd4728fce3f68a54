// libFuzzer target: W&B run files (formats/wandb): the record log framing (blocks, checksums,
// record chains), the protobuf messages inside, and the table they become.
#include "formats/wandb.hpp"

#include <string>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  // The fuzzer's bytes after a valid header, so the framing is reached on every input; the
  // checksums are mostly wrong, which the damaged-record path takes.
  std::string bytes(":W&B\xE1\xBE\x00", 7);
  bytes.append(reinterpret_cast<const char*>(data), size);
  fuzz::check(read_wandb_run(bytes, "fuzz.wandb", {}));
  fuzz::check(read_wandb_run(fuzz::as_text(data, size), "fuzz.wandb", {}));
  return 0;
}
