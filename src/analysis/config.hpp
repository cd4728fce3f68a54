// Diagnosis thresholds (config.def is the one list): defaults from DOMAIN.md §3, overridable with
// --config FILE, printed by `gpudoctor diagnose --print-config`, documented in docs/diagnosis.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpudoctor {

struct DiagnosisConfig {
#define DIAG_PARAM(member, def, unit, meaning) double member = def;
#include "analysis/config.def"
#undef DIAG_PARAM
};

struct ConfigParam {
  std::string_view name, unit, meaning;
  double default_value;
  double DiagnosisConfig::*member;
};
const std::vector<ConfigParam>& config_params();

// Reads a JSON object of name: number (comments allowed); unknown names and non-numbers are
// errors naming the file. Values not given keep their defaults.
Result<DiagnosisConfig> load_diagnosis_config(const std::string& path);
nlohmann::ordered_json config_to_json(const DiagnosisConfig& c);

}  // namespace gpudoctor
