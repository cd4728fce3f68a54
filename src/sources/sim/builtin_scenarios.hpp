// The built-in scenarios, one per cause of DOMAIN.md §2 plus variants (docs/simulator.md).
#pragma once

#include <span>
#include <string_view>

namespace gpudoctor::sim {

struct BuiltinScenario {
  std::string_view name;
  std::string_view json;
};
std::span<const BuiltinScenario> builtin_scenarios();

}  // namespace gpudoctor::sim
