// gpudoctor import / export: logs into recordings, recordings (or any log) out to other tools.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "formats/export.hpp"
#include "formats/load.hpp"
#include "formats/smi_csv.hpp"
#include "store/sqlite_store.hpp"

namespace gpudoctor::cli {
namespace {

size_t samples_of(const Recording& rec) {
  size_t n = 0;
  for (const auto& g : rec.gpus) n += g.size();
  return n;
}

}  // namespace

Command add_import_command(CLI::App& root) {
  struct Opts {
    std::string input, output;
    InputFlags in;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "import",
      "Convert a log gpudoctor can read (nvidia-smi CSV, a capture, a recording) into a "
      "recording.");
  cmd->add_option("log", opts->input, "The log to read")->required()->type_name("FILE");
  cmd->add_option("-o,--output", opts->output, "Recording to write (e.g. run.db)")
      ->required()
      ->type_name("FILE");
  add_input_flags(*cmd, opts->in);
  return {cmd, [opts]() -> int {
            auto rec = load_telemetry(opts->input, load_options(opts->in, opts->input));
            if (!rec) return report(rec.error());
            std::vector<DeviceInfo> devices;
            for (const auto& g : rec->gpus) devices.push_back(g.info);
            auto w = RecordingWriter::create(opts->output, rec->system, devices, rec->source,
                                             rec->start_unix_ms);
            if (!w) return report(w.error());
            if (auto r = w.value()->add_recording(rec.value()); !r) return report(r.error());
            if (auto r = w.value()->close(); !r) return report(r.error());
            for (const auto& note : rec->notes) fmt::print(stderr, "note: {}\n", note);
            fmt::print(stderr, "imported {} samples of {} GPU{} from {} into {}\n",
                       samples_of(*rec), rec->gpus.size(), rec->gpus.size() == 1 ? "" : "s",
                       opts->input, opts->output);
            return kExitOk;
          }};
}

Command add_export_command(CLI::App& root) {
  struct Opts {
    std::string input, output, format = "csv";
    InputFlags in;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "export",
      "Write a recording (or any log gpudoctor reads) as CSV, JSON lines, or in "
      "nvidia-smi's own CSV layout (smi-csv) so other tools read it.");
  cmd->add_option("input", opts->input, "Recording or log")->required()->type_name("FILE");
  cmd->add_option("--format", opts->format, "csv, jsonl or smi-csv")->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "File to write (default: standard output)")
      ->type_name("FILE");
  add_input_flags(*cmd, opts->in);
  return {cmd, [opts]() -> int {
            if (opts->format != "csv" && opts->format != "jsonl" && opts->format != "smi-csv")
              return report(usage_error("--format must be csv, jsonl or smi-csv"));
            auto rec = load_telemetry(opts->input, load_options(opts->in, opts->input));
            if (!rec) return report(rec.error());
            const std::string text = opts->format == "csv"     ? write_csv(*rec)
                                     : opts->format == "jsonl" ? write_jsonl(*rec)
                                                               : write_smi_csv(*rec, true);
            if (opts->output.empty()) {
              std::fwrite(text.data(), 1, text.size(), stdout);
              return kExitOk;
            }
            std::ofstream out(opts->output, std::ios::binary | std::ios::trunc);
            out << text;
            out.flush();
            if (!out)
              return report(
                  failure(fmt::format("cannot write {}: {}", opts->output, std::strerror(errno))));
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
