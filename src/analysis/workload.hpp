// What a recording's GPUs ran: an inference server or a training (batch) job, from the process
// names on the GPUs and the job's command line. Decides which fixes a finding gives: serving
// fixes (batching, concurrency, CUDA graphs, a smaller GPU or MIG) for a server, training fixes
// (DataLoader, batch size, overlap) for training, both, each said for its kind, when unknown.
#pragma once

#include <string>
#include <vector>

#include "analysis/diagnosis.hpp"

namespace gpudoctor {

Workload detect_workload(const Recording& rec);

// The fixes of a cause for a workload: its serving fixes for a server (where it has its own), its
// fixes for training, and for an unknown workload both, each prefixed with its kind.
std::vector<std::string> fixes_for(Cause cause, const Workload& workload);

}  // namespace gpudoctor
