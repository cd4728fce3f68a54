#include "analysis/config.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace gpudoctor {

const std::vector<ConfigParam>& config_params() {
  static const std::vector<ConfigParam> params = {
#define DIAG_PARAM(member, def, unit, meaning) \
  {#member, unit, meaning, def, &DiagnosisConfig::member},
#include "analysis/config.def"
#undef DIAG_PARAM
  };
  return params;
}

Result<DiagnosisConfig> load_diagnosis_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return failure(fmt::format("{}: cannot open the configuration file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str(), nullptr, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    return failure(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
  if (!j.is_object())
    return failure(fmt::format("{}: expected a JSON object of threshold: value", path));
  DiagnosisConfig c;
  for (const auto& [key, value] : j.items()) {
    const ConfigParam* p = nullptr;
    for (const auto& q : config_params())
      if (q.name == key) p = &q;
    if (!p)
      return failure(
          fmt::format("{}: unknown threshold \"{}\" (gpudoctor diagnose --print-config lists them)",
                      path, key));
    if (!value.is_number()) return failure(fmt::format("{}: \"{}\" must be a number", path, key));
    c.*(p->member) = value.get<double>();
  }
  return c;
}

nlohmann::ordered_json config_to_json(const DiagnosisConfig& c) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& p : config_params()) j[std::string(p.name)] = c.*(p.member);
  return j;
}

}  // namespace gpudoctor
