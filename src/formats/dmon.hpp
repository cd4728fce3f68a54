// nvidia-smi dmon logs: reader.
//
// dmon prints a pair of '#' header lines (column names, then units) and whitespace-separated rows,
// one per GPU per sampling round, repeating the header pair every screenful. Any -s selection
// (p u c v m e t), GPM metrics (--gpm-metrics), -o D / T / DT date and time columns, and the older
// drivers' layouts are read by header; '-' (no value) is never read as 0. What the reader had to
// assume (time zone, spacing of rows without times, ignored columns, skipped lines) goes into
// Recording::notes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct DmonOptions {
  // --power-limit: the limit in W (dmon logs neither a power limit nor the GPU's name).
  std::optional<double> power_limit_w;
  // --map COLUMN=FIELD, as the CSV reader takes it (GenericCsvOptions::map): COLUMN a column of
  // the tool's layout as the notes name it.
  std::vector<std::pair<std::string, std::string>> map;
};

// True when the text looks like nvidia-smi dmon output: a '#' header line naming the gpu column
// and dmon's metric columns (not pmon's per-process header).
bool looks_like_dmon(std::string_view head);

// Parses a whole log. origin names the input in messages and notes ("dmon.log").
Result<Recording> read_dmon(std::string_view text, const std::string& origin,
                            const DmonOptions& opt);

// Writes a Recording as `nvidia-smi dmon -s pucmt -o DT` would have printed it (header pair
// repeated every 20 rows, '-' where there is no value), for the corpus and for tools that read
// dmon.
std::string write_dmon(const Recording& rec);

}  // namespace gpudoctor
