#include "formats/inputs.hpp"

#include <array>

#include <fmt/format.h>

#include "formats/capture_reader.hpp"
#include "formats/dcgm.hpp"
#include "formats/dmon.hpp"
#include "formats/generic_csv.hpp"
#include "formats/json_samples.hpp"
#include "formats/kineto_trace.hpp"
#include "formats/prom_text.hpp"
#include "formats/smi_csv.hpp"
#include "formats/smi_table.hpp"
#include "formats/text_layouts.hpp"
#include "formats/wandb.hpp"
#include "store/sqlite_store.hpp"

namespace gpudoctor {

namespace {

using Head = std::string_view;
using Opts = const LoadOptions&;
using Origin = const std::string&;

// A recogniser that needs only the head.
template <bool (*F)(std::string_view)>
bool by_head(Head head, Opts) {
  return F(head);
}

GenericCsvOptions generic_options(Opts o) {
  GenericCsvOptions g;
  g.map = o.map;
  g.power_limit_w = o.power_limit_w;
  g.read_as = o.read_as;
  return g;
}

template <Result<Recording> (*F)(std::string_view, const std::string&, const GenericCsvOptions&)>
Result<Recording> generic_layout(std::string_view text, Origin origin, Opts o) {
  return F(text, origin, generic_options(o));
}

Result<Recording> read_smi_csv_input(std::string_view text, Origin origin, Opts o) {
  SmiCsvOptions s;
  s.columns = o.columns;
  s.power_limit_w = o.power_limit_w;
  s.map = o.map;
  s.read_as = o.read_as;
  return read_smi_csv(text, origin, s);
}

// One reader for both tools' tables: the banner tells which.
Result<Recording> read_smi_table_input(std::string_view text, Origin origin, Opts o) {
  SmiTableOptions s;
  s.power_limit_w = o.power_limit_w;
  s.map = o.map;
  return read_smi_table(text, origin, s);
}

Result<Recording> read_dmon_input(std::string_view text, Origin origin, Opts o) {
  DmonOptions d;
  d.power_limit_w = o.power_limit_w;
  d.map = o.map;
  return read_dmon(text, origin, d);
}

template <Result<Recording> (*F)(std::string_view, const std::string&, const DcgmOptions&)>
Result<Recording> read_dcgm_input(std::string_view text, Origin origin, Opts o) {
  DcgmOptions d;
  d.power_limit_w = o.power_limit_w;
  d.map = o.map;
  return F(text, origin, d);
}

Result<Recording> read_capture_input(std::string_view text, Origin origin, Opts) {
  return read_capture(text, origin);
}

Result<Recording> recording_from_text(std::string_view, Origin origin, Opts) {
  return usage_error(fmt::format("{}: a gpudoctor recording (SQLite) is read from a file", origin));
}

// Home-made headers can share a name or two with nvidia-smi's (gpu_name, pstate): the generic
// reader claims those, nvidia-smi's own dotted names stay with its reader. --columns names a
// headerless nvidia-smi CSV.
bool recognise_smi_csv(Head head, Opts o) {
  return (looks_like_smi_csv(head) && !looks_like_generic_csv(head)) || !o.columns.empty();
}

// --map names columns for the generic reader: it reads a file nothing else recognised.
bool mapped(Head, Opts o) {
  return !o.map.empty();
}

// The order content is tried: binary and self-describing inputs first, the tools' own layouts,
// then nvidia-smi CSV before any CSV, whitespace tables last.
constexpr std::array kReaders{
    InputReader{"recording", "recordings", by_head<looks_like_recording>, nullptr,
                recording_from_text},
    InputReader{"capture", "captures", by_head<looks_like_capture>, nullptr, read_capture_input},
    InputReader{"wandb", "W&B run files", by_head<looks_like_wandb_run>, nullptr, read_wandb_run},
    InputReader{"trace", "PyTorch profiler traces", by_head<looks_like_kineto_trace>, nullptr,
                read_kineto_trace},
    InputReader{"json", "JSON samples", by_head<looks_like_json_samples>, nullptr,
                read_json_samples},
    InputReader{"smi-table", "nvidia-smi table snapshots", by_head<looks_like_smi_table>, nullptr,
                read_smi_table_input},
    InputReader{"nvitop", "", nullptr, nullptr, read_smi_table_input},
    InputReader{"dmon", "nvidia-smi dmon", by_head<looks_like_dmon>, nullptr, read_dmon_input},
    InputReader{"dcgmi-dmon", "dcgmi dmon", by_head<looks_like_dcgmi_dmon>, nullptr,
                read_dcgm_input<read_dcgmi_dmon>},
    InputReader{"dcgm-dump", "DCGM field dumps", by_head<looks_like_dcgm_long>, nullptr,
                read_dcgm_input<read_dcgm_long>},
    InputReader{"prom-text", "Prometheus text snapshots", by_head<looks_like_prom_text>, nullptr,
                read_prom_text},
    InputReader{"afterburner", "Afterburner .hml", by_head<looks_like_afterburner>, nullptr,
                generic_layout<read_afterburner>, true},
    InputReader{"kv-blocks", "key: value blocks", by_head<looks_like_key_value_blocks>, nullptr,
                generic_layout<read_key_value_blocks>},
    InputReader{"gpustat", "gpustat snapshots", by_head<looks_like_gpustat>, nullptr,
                generic_layout<read_gpustat>},
    InputReader{"smi-csv", "nvidia-smi --query-gpu CSV", recognise_smi_csv, nullptr,
                read_smi_csv_input, true},
    InputReader{"generic-csv", "CSV with recognised column names", by_head<looks_like_generic_csv>,
                mapped, generic_layout<read_generic_csv>, true},
    InputReader{"ws-table", "whitespace-aligned tables", by_head<looks_like_ws_table>, nullptr,
                generic_layout<read_ws_table>},
};

}  // namespace

std::span<const InputReader> input_readers() {
  return kReaders;
}

const InputReader* find_input_reader(std::string_view name) {
  for (const auto& r : kReaders)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace gpudoctor
