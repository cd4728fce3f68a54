// Weights & Biases run files (`wandb/run-*/run-*.wandb`), read without the wandb package: the
// file is a LevelDB-style record log (a 7-byte header ":W&B" 0xBEE1 version 0, then 32 KiB
// blocks of records: crc32 of type and data, length, type FULL/FIRST/MIDDLE/LAST) whose records
// are protobuf `Record` messages (wandb/proto/wandb_internal.proto). The system-metrics records
// (`Record.stats`, a StatsRecord with a timestamp and items of key and JSON value such as
// "gpu.0.powerWatts" = "212.5") become rows of a table read by the column catalogue; the run's
// host name comes from its RunRecord. Records with a bad checksum are skipped and counted; a file
// cut short (a run still being written) is read up to its last whole record, with a note.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/load.hpp"

namespace gpudoctor {

// True when the bytes start with the W&B record log header.
bool looks_like_wandb_run(std::string_view head);

Result<Recording> read_wandb_run(std::string_view bytes, const std::string& origin,
                                 const LoadOptions& options);

// CRC-32 (IEEE 802.3, zlib's crc32) of `data`, continuing from `crc` (0 to start).
uint32_t crc32_ieee(std::string_view data, uint32_t crc = 0);

}  // namespace gpudoctor
