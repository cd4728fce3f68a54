// Writers of a Recording for other tools: CSV (gpudoctor's field ids as columns; loads into pandas
// as is), JSON lines (one object per GPU per sample). nvidia-smi's own CSV layout is in smi_csv.
#pragma once

#include <string>

#include "core/recording.hpp"

namespace gpudoctor {

std::string write_csv(const Recording& rec);
std::string write_jsonl(const Recording& rec);

}  // namespace gpudoctor
