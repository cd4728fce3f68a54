// Reads a stand-in NVML capture file (docs/capture-format.md) into a Recording, with the replay's
// sample-and-hold semantics: a value holds until the next sample that has it.
#pragma once

#include <string>
#include <string_view>

#include "core/recording.hpp"
#include "core/result.hpp"

namespace gpudoctor {

bool looks_like_capture(std::string_view head);
Result<Recording> read_capture(std::string_view text, const std::string& origin);

}  // namespace gpudoctor
