// dcgm-exporter scrapes saved as a long CSV: one metric of one GPU per row, with the exporter's
// labels as columns (`timestamp,metric_name,gpu_id,device,uuid,modelName,Hostname,...,value`),
// as a script that asks Prometheus for every DCGM_FI_* series and writes the answer out. Often
// one scrape of a whole fleet: hundreds of GPUs at one instant.
//
// The rows of one GPU (its host and GPU index, else its UUID) are merged into samples: a value
// joins the GPU's current sample unless its metric is in it already. The samples go through the
// column catalogue's reader (read_generic_csv) under DCGM's names, so units, GPUs on several
// hosts and the finishing step are the generic reader's. A file in which every GPU has one
// sample is one instant: a note says that no verdict over time can be made from it.
#pragma once

#include <string>
#include <string_view>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/generic_csv.hpp"

namespace gpudoctor {

// True when the first lines are such a CSV: a header with a metric name column and a value
// column, and a first row whose metric is a DCGM_FI_ name.
bool looks_like_dcgm_scrape(std::string_view head);

Result<Recording> read_dcgm_scrape(std::string_view text, const std::string& origin,
                                   const GenericCsvOptions& opt);

}  // namespace gpudoctor
