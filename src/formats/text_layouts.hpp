// Framing variants: logs whose lines are not a CSV table but hold the same columns. Each is
// read into rows of cells (log_reader::CellRows: its lines kept and cut when read, or a flat
// table) whose header uses names of the column catalogue, then read by read_generic_csv
// (formats/generic_csv.hpp), so units, times, GPUs and notes are the catalogue reader's; each row
// carries the file's line it came from, so messages name the file's lines:
//   - MSI Afterburner .hml: "00, ..." "01, ..." header lines, "02, DATE, name, name, ..." the
//     column names, "03"/"80"/... lines of graph settings, then "80, dd-mm-yyyy hh:mm:ss, v, v".
//     The limit flags ("Power limit", "Temp limit", "Voltage limit", "No load limit": 0/1) are
//     read as clock-event reasons.
//   - key: value blocks (a GPUtil logger): "=== 2024-01-01 12:00:00 ===" (any rule of '=' or '-'
//     around a time), then "GPU 0: NAME" and "Key: value" lines.
//   - gpustat text snapshots (formats/gpustat.cpp): "host  Tue Dec  1 10:00:00 2026  535.104.05"
//   then one line per GPU,
//     "[0] NVIDIA A100-SXM4-80GB | 45°C,  98 %,  250 / 400 W | 40000 / 81920 MB | user(39000M)".
//   - whitespace-aligned tables (home-made monitors): title lines, rules of '=' or '-', a header
//     whose cells are apart by two or more spaces, rows apart by any whitespace (a date and a time
//     of day side by side are one cell), the header repeated.
#pragma once

#include <string>
#include <string_view>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/generic_csv.hpp"

namespace gpudoctor {

namespace log_reader {
class CellRows;
}

bool looks_like_afterburner(std::string_view head);
bool looks_like_key_value_blocks(std::string_view head);
bool looks_like_gpustat(std::string_view head);
bool looks_like_ws_table(std::string_view head);

Result<Recording> read_afterburner(std::string_view text, const std::string& origin,
                                   const GenericCsvOptions& opt);
Result<Recording> read_key_value_blocks(std::string_view text, const std::string& origin,
                                        const GenericCsvOptions& opt);
Result<Recording> read_ws_table(std::string_view text, const std::string& origin,
                                const GenericCsvOptions& opt);
Result<Recording> read_gpustat(std::string_view text, const std::string& origin,
                               const GenericCsvOptions& opt);

// A layout's rows read by the catalogue's reader, the layout named in the recording's source
// ("gpustat: FILE").
Result<Recording> read_layout_rows(const log_reader::CellRows& rows, const std::string& origin,
                                   const GenericCsvOptions& opt, std::string_view layout);

}  // namespace gpudoctor
