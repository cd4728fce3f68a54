#include "formats/no_value.hpp"

#include "text/text.hpp"

namespace gpudoctor::csv {

using text::contains_ci;
using text::iequals;

NoValue no_value(std::string_view v) {
  if (v.empty()) return NoValue::kMissing;
  // No marker starts with a digit, and "not supported" needs 12 bytes: "93%", "21234MB" are none.
  if (v.front() >= '0' && v.front() <= '9' && v.size() < 12) return NoValue::kNone;
  if (contains_ci(v, "not supported") || contains_ci(v, "notsupported") ||
      contains_ci(v, "not_supported"))
    return NoValue::kNotSupported;
  if (contains_ci(v, "insufficient permission") ||
      (text::istarts_with(v, "<<<") && contains_ci(v, "permission")))
    return NoValue::kNoPermission;
  if (text::istarts_with(v, "ERR!") || contains_ci(v, "unknown error") ||
      contains_ci(v, "gpu is lost"))
    return NoValue::kError;
  // nvidia-smi's other bracketed markers ("[N/A]", "[Unknown]"), DCGM's <<<NULL>>>,
  // <<<NOT_FOUND>>>.
  if (v.front() == '[' || text::istarts_with(v, "<<<")) return NoValue::kMissing;
  static constexpr std::string_view kMissing[] = {"nan",  "-nan", "na",   "n/a",    "none",
                                                  "null", "nil",  "-",    "--",     "?",
                                                  "inf",  "-inf", "#n/a", "unknown"};
  for (const auto m : kMissing)
    if (iequals(v, m)) return NoValue::kMissing;
  static constexpr std::string_view kErrors[] = {"error", "err"};
  for (const auto m : kErrors)
    if (iequals(v, m)) return NoValue::kError;
  return NoValue::kNone;
}

}  // namespace gpudoctor::csv
