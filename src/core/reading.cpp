#include "core/reading.hpp"

#include <array>
#include <utility>

namespace gpudoctor {
namespace {
constexpr std::array<std::pair<int32_t, const char*>, 31> kCodes{{
    {0, "SUCCESS"},
    {1, "UNINITIALIZED"},
    {2, "INVALID_ARGUMENT"},
    {3, "NOT_SUPPORTED"},
    {4, "NO_PERMISSION"},
    {5, "ALREADY_INITIALIZED"},
    {6, "NOT_FOUND"},
    {7, "INSUFFICIENT_SIZE"},
    {8, "INSUFFICIENT_POWER"},
    {9, "DRIVER_NOT_LOADED"},
    {10, "TIMEOUT"},
    {11, "IRQ_ISSUE"},
    {12, "LIBRARY_NOT_FOUND"},
    {13, "FUNCTION_NOT_FOUND"},
    {14, "CORRUPTED_INFOROM"},
    {15, "GPU_IS_LOST"},
    {16, "RESET_REQUIRED"},
    {17, "OPERATING_SYSTEM"},
    {18, "LIB_RM_VERSION_MISMATCH"},
    {19, "IN_USE"},
    {20, "MEMORY"},
    {21, "NO_DATA"},
    {22, "VGPU_ECC_NOT_ENABLED"},
    {23, "INSUFFICIENT_RESOURCES"},
    {24, "FREQ_NOT_SUPPORTED"},
    {25, "ARGUMENT_VERSION_MISMATCH"},
    {26, "DEPRECATED"},
    {27, "NOT_READY"},
    {28, "GPU_NOT_FOUND"},
    {29, "INVALID_STATE"},
    {999, "UNKNOWN"},
}};
}  // namespace

std::string nvml_code_name(int32_t code) {
  for (const auto& [c, name] : kCodes)
    if (c == code) return name;
  return "ERROR_" + std::to_string(code);
}

int32_t nvml_code_from_name(const std::string& name) {
  for (const auto& [c, n] : kCodes)
    if (name == n) return c;
  return nvml_code::kUnknown;
}

}  // namespace gpudoctor
