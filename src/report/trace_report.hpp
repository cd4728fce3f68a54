// A diagnosis' profiler-trace block (analysis/trace_findings: per rank, the time breakdown,
// kernel bands, launch delay, NCCL, steps and the top kernels) as text for a terminal.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpudoctor {

// "" for a null block. `top`: how many of the top kernels to list per rank.
std::string trace_text(const nlohmann::ordered_json& trace, size_t top = 5);

}  // namespace gpudoctor
