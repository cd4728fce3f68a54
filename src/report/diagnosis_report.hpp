// Renders a Diagnosis: JSON (the stable contract of docs/diagnosis.md, checked against
// docs/diagnosis.schema.json), text for a terminal (one line per GPU, then the findings with
// their fixes), and Markdown for tickets and pull requests.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.hpp"

namespace gpudoctor {

inline constexpr int kDiagnosisSchemaVersion = 1;

// The diagnosis as JSON; kPlace: its findings left out, their array held empty in its place, for
// a writer that writes them one at a time (finding_json; report/json_stream).
enum class FindingsJson { kIn, kPlace };
nlohmann::ordered_json diagnosis_json(const Diagnosis& d,
                                      FindingsJson findings = FindingsJson::kIn);
nlohmann::ordered_json finding_json(const Finding& f);

enum class TextDetail {
  kBrief,    // the verdict, one line per GPU, the findings with their first fix (the demo)
  kNormal,   // and every fix once, phases, data quality, limitations, the first reader notes
  kVerbose,  // and every reader note ("read as")
};
std::string diagnosis_text(const Diagnosis& d, TextDetail detail = TextDetail::kNormal);
std::string diagnosis_markdown(const Diagnosis& d);

// A GPU's part in a finding between GPUs: "straggler" for the one the others wait for,
// "waits for GPU N" for them; "" otherwise. Every output shows it beside the verdict.
std::string gpu_role(const Diagnosis& d, unsigned gpu_index);

// Lines that start "GPU N: " and say the same after it, merged into one ("GPUs 0-3, 5: ..."), in
// the order each text first appears; other lines are kept as they are.
std::vector<std::string> group_gpu_lines(const std::vector<std::string>& lines);

}  // namespace gpudoctor
