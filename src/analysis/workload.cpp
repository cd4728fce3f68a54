#include "analysis/workload.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace gpudoctor {
namespace {

// Process or command names of inference servers, and of training launchers and scripts. One
// table each; matched as lower-case substrings of a process name or a command-line word.
constexpr std::array<std::string_view, 12> kServing = {"vllm",
                                                       "text-generation-launcher",
                                                       "text-generation-server",
                                                       "tritonserver",
                                                       "sglang",
                                                       "lmdeploy",
                                                       "trtllm-serve",
                                                       "llama-server",
                                                       "ollama",
                                                       "torchserve",
                                                       "tgi-server",
                                                       "triton_python_backend"};
constexpr std::array<std::string_view, 9> kTraining = {"train",      "torchrun", "deepspeed",
                                                       "accelerate", "megatron", "finetune",
                                                       "fine_tune",  "pretrain", "lightning"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Workload detect_workload(const Recording& rec) {
  std::vector<std::string> names;
  for (const auto& g : rec.gpus)
    for (const auto& p : g.processes)
      if (!p.name.empty()) names.push_back(p.name);
  for (const auto& w : rec.command) names.push_back(w);
  Workload w;
  for (const auto& n : names) {
    const std::string l = lower(n);
    for (auto key : kServing)
      if (l.find(key) != std::string::npos) return {"serving", n};
  }
  for (const auto& n : names) {
    const std::string l = lower(n);
    for (auto key : kTraining)
      if (l.find(key) != std::string::npos) return {"training", n};
  }
  // Step markers are written by training loops.
  if (!rec.markers.empty()) return {"training", "step markers"};
  return w;
}

std::vector<std::string> fixes_for(Cause cause, const Workload& workload) {
  const auto& info = cause_info(cause);
  std::vector<std::string> out;
  if (info.serving_fixes.empty() || workload.kind == "training") {
    for (auto f : info.fixes) out.emplace_back(f);
  } else if (workload.kind == "serving") {
    for (auto f : info.serving_fixes) out.emplace_back(f);
  } else {
    for (auto f : info.fixes) out.push_back("Training: " + std::string(f));
    for (auto f : info.serving_fixes) out.push_back("Serving: " + std::string(f));
  }
  return out;
}

}  // namespace gpudoctor
