// Profiler traces read beside telemetry (`diagnose run.db --trace DIR`): each trace file (one,
// or a folder of per-rank files) read as a trace and added to the recording's traces, with a note
// per rank on where it lies on the recording's clock (both are wall-clock times).
#pragma once

#include <optional>
#include <string>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/load.hpp"

namespace gpudoctor {

// Adds the traces at `path` to `rec`; an error names the file that is not a readable trace.
std::optional<Error> attach_traces(Recording& rec, const std::string& path,
                                   const LoadOptions& options);

}  // namespace gpudoctor
