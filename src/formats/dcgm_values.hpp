// DCGM's blank sentinels (dcgm_structs.h), for the readers of DCGM logs: DCGM writes "no value"
// as a number (DCGM_INT32_BLANK 0x7ffffff0, DCGM_INT64_BLANK 0x7ffffffffffffff0, DCGM_FP64_BLANK
// 2^47, and base + 1 not found, + 2 not supported, + 3 no permission ... up to + 15), which only
// means "no value" in a DCGM log: in any other log 2^47 is a number. The framing of a DCGM log
// blanks such cells, so that the one no-value rule (formats/no_value) reads them.
#pragma once

#include <optional>
#include <string_view>

namespace gpudoctor::dcgm {

// For a cell that is a DCGM blank, the marker the no-value rule reads as the same kind of
// missing ("<<<NOT_SUPPORTED>>>", "<<<NO_PERMISSION>>>", "N/A"); nullopt for any other cell.
std::optional<std::string_view> blank(std::string_view cell);

}  // namespace gpudoctor::dcgm
