// The HTML report's profiler-trace section (the diagnosis' `trace` block, analysis/trace_findings):
// per rank, a bar of where the GPU's time went (compute, exposed NCCL, memory, idle) and the top
// kernels by time.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpudoctor::html {

// "" for a null block.
std::string trace_section(const nlohmann::ordered_json& trace);

}  // namespace gpudoctor::html
