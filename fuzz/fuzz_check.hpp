// What every fuzz target checks after a reader returns: an error has a message; a recording keeps
// the invariants analysis relies on (per GPU, times finite and strictly increasing, every column
// as long as the times); and the writers (CSV, JSON lines, nvidia-smi CSV) take it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/export.hpp"
#include "formats/smi_csv.hpp"

namespace gpudoctor::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

inline void check(const Result<Recording>& r) {
  if (!r.ok()) {
    if (r.error().message.empty()) __builtin_trap();
    return;
  }
  const Recording& rec = r.value();
  for (const GpuSeries& g : rec.gpus) {
    for (size_t i = 0; i < g.time_s.size(); ++i) {
      if (!std::isfinite(g.time_s[i])) __builtin_trap();
      if (i > 0 && !(g.time_s[i] > g.time_s[i - 1])) __builtin_trap();
    }
    for (const auto& c : g.columns)
      if (c && c.size() != g.time_s.size()) __builtin_trap();
  }
  (void)write_csv(rec);
  (void)write_jsonl(rec);
  (void)write_smi_csv(rec, true);
}

}  // namespace gpudoctor::fuzz
