// Reading: one measured quantity as a source saw it. A reading is a value, or "not supported"
// (with the NVML code that said so), or an error (with its code), or "no data yet" (e.g. the first
// GPM sample, which needs a pair). Analysis must never read a missing value as zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpudoctor {

// NVML return codes the project names. Kept here (not in the NVML source) because readings from
// any source carry them: a capture file or a log reader reports "not supported" the same way.
namespace nvml_code {
inline constexpr int32_t kSuccess = 0;
inline constexpr int32_t kNotSupported = 3;
inline constexpr int32_t kNoPermission = 4;
inline constexpr int32_t kTimeout = 10;
inline constexpr int32_t kFunctionNotFound = 13;
inline constexpr int32_t kGpuIsLost = 15;
inline constexpr int32_t kNoData = 21;
inline constexpr int32_t kUnknown = 999;
}  // namespace nvml_code

// Short stable name of an NVML return code ("NOT_SUPPORTED", "GPU_IS_LOST", ...).
std::string nvml_code_name(int32_t code);
// Inverse of nvml_code_name; returns kUnknown for names it does not know.
int32_t nvml_code_from_name(const std::string& name);

class Reading {
 public:
  enum class State : uint8_t { kNoData, kValue, kUnsupported, kError };

  Reading() = default;
  static Reading of(double v) { return Reading(State::kValue, nvml_code::kSuccess, v); }
  static Reading unsupported(int32_t code = nvml_code::kNotSupported) {
    return Reading(State::kUnsupported, code, 0);
  }
  static Reading error(int32_t code) { return Reading(State::kError, code, 0); }
  static Reading no_data() { return {}; }

  State state() const { return state_; }
  bool has_value() const { return state_ == State::kValue; }
  // Only meaningful when has_value(); callers check first.
  double value() const { return value_; }
  double value_or(double fallback) const { return has_value() ? value_ : fallback; }
  int32_t code() const { return code_; }

  friend bool operator==(const Reading&, const Reading&) = default;

 private:
  Reading(State s, int32_t code, double v) : value_(v), code_(code), state_(s) {}
  double value_ = 0;
  int32_t code_ = nvml_code::kNoData;
  State state_ = State::kNoData;
};

// The value when there is one.
inline std::optional<double> opt_value(const Reading& r) {
  return r.has_value() ? std::optional<double>(r.value()) : std::nullopt;
}

}  // namespace gpudoctor
