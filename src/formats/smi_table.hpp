// Plain `nvidia-smi` / `nvidia-smi -l N` / `-lms N` table snapshots appended to one file: reader.
//
// Each snapshot is the date line nvidia-smi prints first ("Tue Nov 26 10:21:07 2024"), the
// "| NVIDIA-SMI ... Driver Version ... |" banner, the GPU table (per GPU two or three rows: index,
// name, persistence mode, bus id; fan, temperature, P-state, power usage / cap, memory used /
// total, GPU-Util; MIG mode) and the process table. The layouts of every driver generation are
// read by structure, not by column position: R3xx-R440 (79 columns, processes without GI/CI),
// R450-R525 (79 columns, MIG M. row, GI/CI), R530-R545 and R550+ (89 columns). One pass, memory
// proportional to the samples kept; "N/A", "Not Supported" and "ERR!" are never read as 0.
// Snapshots that are cut short, garbled or show a different set of GPUs are skipped and counted
// in Recording::notes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/recording.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct SmiTableOptions {
  // --power-limit: the limit in W for GPUs whose table shows no power cap ("N/A").
  std::optional<double> power_limit_w;
};

// True when the text holds an nvidia-smi table: a "| NVIDIA-SMI ... Driver Version" banner or the
// GPU table's "Pwr:Usage/Cap" header.
bool looks_like_smi_table(std::string_view head);

// Parses a whole log. origin names the input in messages and notes ("smi.log").
Result<Recording> read_smi_table(std::string_view text, const std::string& origin,
                                 const SmiTableOptions& opt);

}  // namespace gpudoctor
