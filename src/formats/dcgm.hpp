// DCGM logs: readers for `dcgmi dmon` output and for DCGM long field dumps.
//
// dcgmi dmon (`dcgmi dmon -e 155,203,1002 [-d ms]`) prints a header pair ("#Entity  POWER  GPUTL
// SMACT ..." with DCGM's short field names, then "ID" and the units), repeated every 14 rounds, and
// one row per entity per round ("GPU 0   152.342  99  0.181 ..."), "N/A" where DCGM had no value.
// Rows carry no time: they are taken as one round per second (dcgmi's default -d 1000). Rows of
// other entities (MIG instances "GPU-I" / "GPU-CI", switches, ...) are skipped with a note.
//
// A long field dump is CSV with the header "GPUId,TimeStampUs,Field,Values" and one value per row
// (as DCGM's field-value samples print them): Field is a DCGM field name
// (DCGM_FI_DEV_POWER_USAGE), a numeric field id (155) or a DCGM field tag (power_usage);
// TimeStampUs is microseconds since the Unix epoch. Rows of one GPU sampled together (within half
// the sampling interval, each field once) merge into one sample.
//
// Values map through the field catalogue (core/fields.def): our value = DCGM value x dcgm_scale
// (profiling ratios 0-1 become %, byte rates MiB/s). "N/A", DCGM's blank sentinels
// (DCGM_INT32_BLANK 0x7ffffff0, DCGM_INT64_BLANK 0x7ffffffffffffff0, DCGM_FP64_BLANK 2^47, and
// the "not found / not supported / no permission" values just above them) and "<<<...>>>" string
// blanks are missing, never 0. What the readers had to assume goes into Recording::notes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"

namespace gpudoctor {

struct DcgmOptions {
  // --power-limit: the limit in W for GPUs whose log has none (DCGM_FI_DEV_POWER_MGMT_LIMIT /
  // DCGM_FI_DEV_ENFORCED_POWER_LIMIT / DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF).
  std::optional<double> power_limit_w;
  // --map COLUMN=FIELD, as the CSV reader takes it (GenericCsvOptions::map): COLUMN a column of
  // the tool's layout as the notes name it.
  std::vector<std::pair<std::string, std::string>> map;
};

// True when the text looks like `dcgmi dmon` output: a "#Entity" header line (nvidia-smi dmon's
// starts "# gpu").
bool looks_like_dcgmi_dmon(std::string_view head);

// Parses a whole `dcgmi dmon` log. origin names the input in messages and notes ("dcgm.log").
Result<Recording> read_dcgmi_dmon(std::string_view text, const std::string& origin,
                                  const DcgmOptions& opt);

// True when the text looks like a DCGM long field dump: a "GPUId,TimeStampUs,Field,Values" header
// (or a dcgm-exporter scrape CSV: looks_like_dcgm_scrape).
bool looks_like_dcgm_long(std::string_view head);

// Parses a whole DCGM long field dump. origin names the input in messages and notes. A
// dcgm-exporter scrape saved as long CSV (formats/dcgm_scrape) is detected and read here too.
Result<Recording> read_dcgm_long(std::string_view text, const std::string& origin,
                                 const DcgmOptions& opt);

}  // namespace gpudoctor
