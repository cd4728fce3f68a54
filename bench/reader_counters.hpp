// The counters of a reader benchmark: bytes a second (the file's size), samples a second (a GPU at
// a time) and values a second (the known values the reader gave back: every field of every GPU at
// every time that holds one).
// Layouts carry a value in very different numbers of bytes (nvidia-smi's CSV repeats each GPU's
// name, UUID and bus id and a unit after every number; a DCGM dump spends a line on each value),
// so bytes a second compares the files as much as the readers: values a second compares the work.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>

#include "core/recording.hpp"

namespace gpudoctor::bench {

inline size_t known_values(const Recording& rec) {
  size_t n = 0;
  for (const auto& g : rec.gpus)
    for (size_t f = 0; f < kFieldCount; ++f) {
      if (!g.columns[f]) continue;
      for (const double v : g.columns[f].view()) n += !is_missing(v);
    }
  return n;
}

inline void set_reader_counters(benchmark::State& state, size_t bytes, const Recording& rec) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
  size_t samples = 0;
  for (const auto& g : rec.gpus) samples += g.size();
  state.counters["samples_per_second"] =
      benchmark::Counter(static_cast<double>(samples) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["values_per_second"] = benchmark::Counter(
      static_cast<double>(known_values(rec)) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

}  // namespace gpudoctor::bench
