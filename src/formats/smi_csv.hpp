// nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] logs: reader and writer.
//
// The reader takes any column set and order, one or many GPUs interleaved by row, values with or
// without unit suffixes, and nvidia-smi's "[N/A]" / "[Not Supported]" markers (never read as 0).
// What it had to assume (time zone, where a power limit came from, skipped rows, ignored columns)
// goes into Recording::notes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct SmiCsvOptions {
  // --columns: the --query-gpu list of a file written with noheader, in order. Entries may hold
  // several comma-separated names and header-style unit annotations ("power.draw [W]").
  std::vector<std::string> columns;
  // --power-limit: the limit in W to use for GPUs whose log has no power limit column.
  std::optional<double> power_limit_w;
};

// True when the text looks like nvidia-smi --query-gpu CSV output: a header line naming known
// query fields, or headerless rows that start with nvidia-smi's timestamp
// ("2024/03/14 10:15:02.123, ..."; such a file needs SmiCsvOptions::columns to be read).
bool looks_like_smi_csv(std::string_view head);

// Parses a whole log. origin names the input in messages and notes ("run.csv").
Result<Recording> read_smi_csv(std::string_view text, const std::string& origin,
                               const SmiCsvOptions& opt);

// The recording in nvidia-smi's CSV layout: "timestamp, index, name, pci.bus_id, uuid" and then
// the canonical --query-gpu name of every field any GPU has (catalogue order), with nvidia-smi's
// header unit annotations ("power.draw [W]"). units=false writes values the way
// --format=csv,nounits does (no suffixes; the header keeps its annotations). Timestamps are
// written as UTC.
std::string write_smi_csv(const Recording& rec, bool units = true);

}  // namespace gpudoctor
