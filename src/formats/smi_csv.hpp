// nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] logs: recognised, read and written.
//
// Read by the one reader of CSV logs (generic_csv: the framing layer, the column catalogue, one
// finish), which takes any column set and order, one or many GPUs interleaved by row (by position
// within each sampling round when no identity column says which), values with or without unit
// suffixes, nvidia-smi's "[N/A]" / "[Not Supported]" markers (never read as 0) and a header that
// changes mid-file. What it had to assume goes into Recording::notes, naming nvidia-smi.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/encoding.hpp"

namespace gpudoctor {

struct SmiCsvOptions {
  // --columns: the --query-gpu list of a file written with noheader, in order. Entries may hold
  // several comma-separated names and header-style unit annotations ("power.draw [W]").
  std::vector<std::string> columns;
  // --power-limit: the limit in W to use for GPUs whose log has no power limit column.
  std::optional<double> power_limit_w;
  // --map COLUMN=FIELD (GenericCsvOptions::map).
  std::vector<std::pair<std::string, std::string>> map;
  // GenericCsvOptions::read_as.
  text::ReadAs read_as = text::ReadAs::kUtf8;
};

// True when a header's cells hold a name only nvidia-smi --query-gpu writes (a dotted query name
// such as "power.draw [W]" or "clocks_event_reasons.active").
bool is_smi_csv_header(const std::vector<std::string_view>& cells);

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
