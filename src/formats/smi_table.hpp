// Plain `nvidia-smi` / `nvidia-smi -l N` / `-lms N` table snapshots appended to one file: reader.
//
// Each snapshot is the date line nvidia-smi prints first ("Tue Nov 26 10:21:07 2024"), the
// "| NVIDIA-SMI ... Driver Version ... |" banner, the GPU table (per GPU two or three rows: index,
// name, persistence mode, bus id; fan, temperature, P-state, power usage / cap, memory used /
// total, GPU-Util; MIG mode) and the process table. The layouts of every driver generation are
// read by structure, not by column position: R3xx-R440 (79 columns, processes without GI/CI),
// R450-R525 (79 columns, MIG M. row, GI/CI), R530-R545 and R550+ (89 columns).
// The reading pipeline of every text log: this file is the framing (the snapshots, their date
// lines, a GPU's two or three rows, the process table); each snapshot's GPUs become rows of a
// table of cells (formats/flat_table) under the column catalogue's names (the nvidia-smi query
// names: smi_table_rows.hpp), which the catalogue's reader (read_generic_csv) reads: units, markers
// of no value ("N/A", "Not Supported" and "ERR!" are never read as 0), times, GPUs and their
// notes. The processes, the driver, and the snapshots that are cut short, garbled or show a
// different set of GPUs (skipped and counted in Recording::notes) are the table's own.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct SmiTableOptions {
  // --power-limit: the limit in W for GPUs whose table shows no power cap ("N/A").
  std::optional<double> power_limit_w;
  // --map COLUMN=FIELD, as the CSV reader takes it (GenericCsvOptions::map): COLUMN a column of
  // the tool's layout as the notes name it.
  std::vector<std::pair<std::string, std::string>> map;
};

// True when the text holds an nvidia-smi table: a "| NVIDIA-SMI ... Driver Version" banner or the
// GPU table's "Pwr:Usage/Cap" header.
bool looks_like_smi_table(std::string_view head);

// Parses a whole log. origin names the input in messages and notes ("smi.log").
Result<Recording> read_smi_table(std::string_view text, const std::string& origin,
                                 const SmiTableOptions& opt);

}  // namespace gpudoctor
