// Renders a Diagnosis: JSON (the stable contract of docs/diagnosis.md, checked against
// docs/diagnosis.schema.json), text for a terminal (one line per GPU, then the findings with
// their fixes), and Markdown for tickets and pull requests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.hpp"

namespace gpudoctor {

inline constexpr int kDiagnosisSchemaVersion = 1;

nlohmann::ordered_json diagnosis_json(const Diagnosis& d);
std::string diagnosis_text(const Diagnosis& d);
std::string diagnosis_markdown(const Diagnosis& d);

}  // namespace gpudoctor
