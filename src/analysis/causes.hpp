// The cause table (DOMAIN.md §2): the stable codes a diagnosis names, with the title, the one-line
// explanation and the first fixes for each. One table shared by the diagnosis, its reports and the
// metrics exporter. Table order is also the detectors' priority: when two causes fit the same GPU
// and time, the earlier one wins (a hardware limit explains low power before a work pattern does).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace gpudoctor {

enum class Cause : uint8_t {
  kIdle,
  kContention,
  kThermalThrottle,
  kPowerCapped,
  kClocksLimited,
  kHealthy,
  kCommunicationWait,
  kDataStarvation,
  kMemoryBound,
  kLaunchOverhead,
};
inline constexpr size_t kCauseCount = 10;

struct CauseInfo {
  Cause cause;
  std::string_view code;                // "data_starvation": JSON, metrics labels, docs
  std::string_view title;               // "Data starvation"
  std::string_view what;                // what is happening, one sentence
  std::vector<std::string_view> fixes;  // for a training job (or any batch job)
  // For an inference server (vLLM, TGI, Triton, SGLang...); empty: the same as fixes.
  std::vector<std::string_view> serving_fixes;
};

std::span<const CauseInfo> causes();  // in priority order
const CauseInfo& cause_info(Cause c);
inline std::string_view cause_code(Cause c) {
  return cause_info(c).code;
}
std::optional<Cause> cause_from_code(std::string_view code);

}  // namespace gpudoctor
