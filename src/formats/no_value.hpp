// The one rule for cells that hold no value, whichever tool wrote them: nvidia-smi's "[N/A]",
// "[Not Supported]", "[Insufficient Permissions]", "ERR!", dmon's "-", DCGM's "<<<NOT_SUPPORTED>>>"
// and "N/A", pandas' "nan", loggers' "null", "none", "--" ... Every reader asks it, so a marker one
// tool writes is read the same in any log (never as 0, never as text that failed to read).
#pragma once

#include <cstdint>
#include <string_view>

namespace gpudoctor::csv {

enum class NoValue : uint8_t {
  kNone,          // not a marker: a value, or text to read as one
  kMissing,       // no value, no reason given ("", "N/A", "-", "nan", "[Unknown]" ...)
  kNotSupported,  // "[Not Supported]", "NotSupported", "<<<NOT_SUPPORTED>>>"
  kNoPermission,  // "[Insufficient Permissions]", "<<<NO_PERMISSION>>>"
  kError,         // "ERR!", "[Unknown Error]", "[GPU is lost]", "error"
};

// What the cell (trimmed) says, kNone when it is no marker. Cheap for numbers: a cell starting
// with a digit and shorter than any spelled-out marker is none.
NoValue no_value(std::string_view cell);

}  // namespace gpudoctor::csv
