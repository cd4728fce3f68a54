// Logs without a GPU column that still hold several GPUs: nvidia-smi --query-gpu without index,
// uuid or pci.bus_id writes one row per GPU each round, in the same order, close in time.
#pragma once

#include <cstdint>
#include <vector>

#include "core/column.hpp"

namespace gpudoctor::log_reader {

// The rows' times in file order (any unit): the sampling rounds are found from the gaps between
// successive times (short within a round, about the sampling interval between rounds), and the
// rounds must mostly agree on their size (the last may be cut short). Returns each row's position
// within its round and sets `gpus` to the round size; none and gpus = 1 when no consistent round
// structure shows (then every row is one GPU's).
std::vector<uint32_t> positions_in_rounds(ColumnView t, uint32_t& gpus);

}  // namespace gpudoctor::log_reader
