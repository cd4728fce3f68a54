// The field catalogue rendered for people: `gpudoctor fields` (a terminal table) and
// docs/metrics.md (Markdown; tests/unit/docs_test.cpp fails when the file and the table differ).
#pragma once

#include <string>

namespace gpudoctor {

std::string render_fields_markdown();
std::string render_fields_text();

}  // namespace gpudoctor
