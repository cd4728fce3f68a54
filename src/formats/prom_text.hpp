// Prometheus text-format (and OpenMetrics) snapshots saved from an exporter's /metrics, e.g.
// `curl -s node7:9400/metrics > gpu.prom` or the same in a loop appending to one file, from
// dcgm-exporter or `gpudoctor serve`. Each sample line `NAME{LABELS} VALUE [TIMESTAMP]` becomes a
// point of a series; the series go through the Prometheus reader's own grouping into GPUs (gpu
// and UUID labels, DCGM units converted back), as `diagnose --prometheus` does.
//
// Times: a sample's own timestamp (ms in the text format, seconds in OpenMetrics) when it has
// one; else a line between snapshots that holds a time (`date` output, ISO 8601, epoch seconds,
// also after '#'); else snapshots (a series seen again starts the next one) are placed 1 s apart
// and a note says so.
#pragma once

#include <string>
#include <string_view>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "formats/load.hpp"

namespace gpudoctor {

// True when the first lines are Prometheus exposition: # HELP / # TYPE lines, or sample lines
// with a label set.
bool looks_like_prom_text(std::string_view head);

Result<Recording> read_prom_text(std::string_view text, const std::string& origin,
                                 const LoadOptions& options);

// "Tue Dec  1 10:00:00 UTC 2026" (date(1)), ISO 8601 / nvidia-smi times, or epoch seconds or ms:
// ms since the Unix epoch, as UTC. For lines that stamp the snapshots of a loop.
std::optional<int64_t> parse_stamp_line_ms(std::string_view line);

}  // namespace gpudoctor
