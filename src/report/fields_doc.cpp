#include "report/fields_doc.hpp"

#include <fmt/format.h>

#include "core/clock_reasons.hpp"
#include "core/fields.hpp"

namespace gpudoctor {
namespace {

std::string md_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}

std::string smi_list(std::string_view names) {
  if (names.empty()) return "-";
  std::string out;
  while (!names.empty()) {
    const size_t bar = names.find('|');
    if (!out.empty()) out += ", ";
    out += fmt::format("`{}`", names.substr(0, bar));
    names = bar == std::string_view::npos ? std::string_view{} : names.substr(bar + 1);
  }
  return out;
}

}  // namespace

std::string render_fields_markdown() {
  std::string out = fmt::format(
      "# Metrics: the field catalogue\n\n"
      "<!-- Generated from src/core/fields.def by `gpudoctor fields --markdown`; a test fails "
      "when\n"
      "     this file and the table differ. Edit the table, then regenerate. -->\n\n"
      "Every quantity gpudoctor reads, once. The id is what captures, JSON and CSV use; units are "
      "in\n"
      "the id. A reading is a value, or *not supported* (with the NVML code that said so: "
      "`NOT_SUPPORTED`,\n`NO_PERMISSION`, `FUNCTION_NOT_FOUND` for an entry point the driver "
      "lacks), or an error with its code:\nnever a silent zero. *static* fields are read once per "
      "GPU; *sample* fields at every sample; *slow* fields\n(counters and states that change "
      "rarely) at most every {:g} s, held in the samples between.\n\n"
      "| id | unit | read | meaning | NVML source | nvidia-smi `--query-gpu` | DCGM (id, scale) | "
      "Prometheus |\n"
      "|---|---|---|---|---|---|---|---|\n",
      kSlowCadenceSeconds);
  for (const auto& f : all_fields()) {
    const std::string dcgm =
        f.dcgm_name.empty() ? "-"
                            : fmt::format("`{}` ({}, x{:g})", f.dcgm_name, f.dcgm_id, f.dcgm_scale);
    out +=
        fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | `{}`: {} |\n", f.id, unit_name(f.unit),
                    cadence_name(f.cadence), md_escape(f.meaning), md_escape(f.nvml_source),
                    smi_list(f.smi_names), dcgm, f.prom_name, md_escape(f.prom_help));
  }
  out +=
      "\nDCGM scale: gpudoctor's value = DCGM's value x scale (DCGM profiling ratios are 0-1, "
      "gpudoctor's are percent;\nDCGM byte rates are bytes/s, gpudoctor's MiB/s; DCGM's NVLink "
      "total "
      "is KiB/s / 1000). Units *count* (counted\nevents: a Prometheus counter) and *code* (an XID, "
      "a 0/1 state: a gauge) have no symbol.\n\n"
      "## Clock event reasons\n\n"
      "`clock_event_reasons` is NVML's bitmask; gpudoctor decodes it with this table.\n\n"
      "| bit | code | shown as | holds the GPU below what it could do |\n|---|---|---|---|\n";
  for (const auto& r : clock_reasons())
    out += fmt::format("| `0x{:x}` | `{}` | {} | {} |\n", r.bit, r.code, r.words,
                       r.limits_work ? "yes" : "no");
  out +=
      "\n## Static device information\n\n"
      "Per GPU, read once: index, name, UUID, PCI bus id, serial, architecture (NVML's numbering: "
      "volta, turing,\nampere, ada, hopper, blackwell), persistence mode, MIG mode, whether GPM is "
      "supported; per machine: driver\nversion, CUDA driver version, NVML version, host name. "
      "`status --json` shows them all.\n";
  return out;
}

std::string render_fields_text() {
  std::string out = fmt::format("{:<26} {:<20} {:<7} {}\n", "ID", "UNIT", "READ", "MEANING");
  for (const auto& f : all_fields())
    out += fmt::format("{:<26} {:<20} {:<7} {}\n", f.id, unit_name(f.unit), cadence_name(f.cadence),
                       f.meaning);
  return out;
}

}  // namespace gpudoctor
