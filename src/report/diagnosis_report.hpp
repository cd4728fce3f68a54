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
// brief: the verdict, one line per GPU and the findings with their first fix; no phases,
// limitations or reader notes (the demo).
std::string diagnosis_text(const Diagnosis& d, bool brief = false);
std::string diagnosis_markdown(const Diagnosis& d);

}  // namespace gpudoctor
