// The reader of the GPU model table (core/gpu_models.tsv, embedded by the build): rows of text to
// GpuModel values, the columns a row leaves empty filled from documented family defaults
// (docs/gpu-models.md). gpu_models.hpp is the interface; this is for it and for tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_models.hpp"

namespace gpudoctor::detail {

struct GpuModelTable {
  std::vector<GpuModel> models;       // views into the text read
  std::vector<std::string> problems;  // "line N (key): what is wrong"; such rows are left out
};

// Reads a table in the format of core/gpu_models.tsv. The models view `tsv`, which must outlive
// them.
GpuModelTable read_gpu_model_table(std::string_view tsv);

// The embedded table, read on first use (thread-safe).
const GpuModelTable& gpu_model_table();

// The slowdown temperature used where a row gives none, by kind and architecture.
double family_slowdown_temp_c(GpuKind kind, Architecture arch);

}  // namespace gpudoctor::detail
