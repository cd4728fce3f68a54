// libFuzzer target: the logs of other tools (GPU-Z, HWiNFO, dcgmi short tags, W&B, MLflow,
// Lightning, pynvml monitors, and the framing variants Afterburner, key: value blocks, gpustat and
// whitespace tables: tests/data/logs/tools) through the edge where encodings are decoded
// (formats/encoding), the choice of layout by content and the column catalogue: the decoded text
// and every note must be valid UTF-8, whatever the bytes were (UTF-16, latin-1, broken sequences).
#include "formats/encoding.hpp"
#include "formats/load.hpp"

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpudoctor;
  const std::string_view bytes = fuzz::as_text(data, size);
  const auto enc = text::detect_encoding(bytes);
  std::string storage;
  const std::string_view utf8 = text::decode_to_utf8(bytes, enc, storage);
  if (enc != text::Encoding::kUtf8 && enc != text::Encoding::kUtf8Bom && !text::valid_utf8(utf8))
    __builtin_trap();
  if (!text::valid_utf8(text::sanitize_utf8(bytes))) __builtin_trap();
  const auto r = load_text(bytes, "fuzz.log", {});
  fuzz::check(r);
  if (r.ok())
    for (const auto& n : r->notes)
      if (enc != text::Encoding::kUtf8 && !text::valid_utf8(n)) __builtin_trap();
  return 0;
}
