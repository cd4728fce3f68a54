// Renders `gpudoctor check`: one line per check, machine-wide first and then grouped per GPU, the
// fix under every check that has one, and a summary; or the same as JSON (docs/check.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/machine_check.hpp"
#include "core/health.hpp"

namespace gpudoctor {

struct CheckView {
  SystemInfo system;
  std::string source;  // the source's description
  CheckResult result;
  // Parallel to result.gpus, for the JSON: the later sample and the health readings.
  std::vector<DeviceSample> samples;
  std::vector<DeviceHealth> health;
};

std::string render_check_text(const CheckView& view);
nlohmann::json render_check_json(const CheckView& view);

}  // namespace gpudoctor
