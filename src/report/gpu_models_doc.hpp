// The GPU model table rendered for people: `gpudoctor models` (a terminal table, JSON or
// Markdown) and docs/gpu-models.md (tests/unit/gpu_models_test.cpp fails when the file and the
// table differ).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_models.hpp"

namespace gpudoctor {

// The models whose name, key, aliases, kind or architecture contain `text` (case-insensitively);
// where none does, the one gpu_model_by_name finds for it. All of them for an empty text.
std::vector<GpuModel> select_gpu_models(std::string_view text);

std::string render_gpu_models_text(std::span<const GpuModel> models);
std::string render_gpu_models_json(std::span<const GpuModel> models);
std::string render_gpu_models_markdown(std::span<const GpuModel> models);  // the table alone
std::string render_gpu_models_doc();                                       // docs/gpu-models.md

}  // namespace gpudoctor
