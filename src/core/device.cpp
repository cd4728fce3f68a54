#include "core/device.hpp"

#include <array>
#include <utility>

namespace gpudoctor {
namespace {
constexpr std::array<std::pair<Architecture, const char*>, 10> kArchNames{{
    {Architecture::kUnknown, "unknown"},
    {Architecture::kKepler, "kepler"},
    {Architecture::kMaxwell, "maxwell"},
    {Architecture::kPascal, "pascal"},
    {Architecture::kVolta, "volta"},
    {Architecture::kTuring, "turing"},
    {Architecture::kAmpere, "ampere"},
    {Architecture::kAda, "ada"},
    {Architecture::kHopper, "hopper"},
    {Architecture::kBlackwell, "blackwell"},
}};
}  // namespace

std::string architecture_name(Architecture a) {
  for (const auto& [arch, name] : kArchNames)
    if (arch == a) return name;
  return "unknown";
}

Architecture architecture_from_name(const std::string& name) {
  for (const auto& [arch, n] : kArchNames)
    if (name == n) return arch;
  return Architecture::kUnknown;
}

}  // namespace gpudoctor
