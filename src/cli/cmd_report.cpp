// gpudoctor report INPUT -o run.html: the HTML report of a recording or any log; and
// gpudoctor baseline save|list|show: the runs later ones are compared with.
#include <fstream>

#include <fmt/format.h>

#include "analysis/baseline.hpp"
#include "analysis/diagnosis.hpp"
#include "cli/common.hpp"
#include "formats/run_folders.hpp"
#include "report/html_report.hpp"

namespace gpudoctor::cli {

Command add_report_command(CLI::App& root) {
  struct Opts {
    std::string input, output, baseline, config;
    InputFlags in;
    bool merge = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "report",
      "Write the HTML report of a recording or any log: verdicts, findings with evidence and "
      "fixes, charts over time per GPU. One self-contained file (no network).");
  cmd->add_option("input", opts->input,
                  "Recording or log: a file, - (standard input), a .gz/.xz/.zst log, a W&B or "
                  "MLflow run folder, or with --merge a folder of one job's logs")
      ->required()
      ->type_name("FILE");
  cmd->add_option("-o,--output", opts->output, "HTML file to write")->required()->type_name("FILE");
  cmd->add_option("--baseline", opts->baseline, "Compare with a saved baseline");
  cmd->add_option("--config", opts->config, "Diagnosis thresholds to override (JSON)")
      ->type_name("FILE");
  cmd->add_flag("--merge", opts->merge,
                "INPUT a folder of logs of one job (one log per GPU or per node): report them as "
                "one run, as diagnose --merge does");
  add_input_flags(*cmd, opts->in);
  return {cmd, [opts]() -> int {
            DiagnosisConfig config;
            if (!opts->config.empty()) {
              auto c = load_diagnosis_config(opts->config);
              if (!c) return report(c.error());
              config = c.value();
            }
            Result<Recording> rec = failure("");
            if (opts->merge) {
              auto files = folder_logs(opts->input);
              if (!files) return report(files.error());
              rec = load_merged_folder(opts->input, files.value(), load_options(opts->in));
            } else {
              rec = load_telemetry(opts->input, load_options(opts->in, opts->input));
            }
            if (!rec) return report(rec.error());
            const Diagnosis d = diagnose(rec.value(), config);
            HtmlReportOptions ho;
            ho.title = "gpudoctor report: " + opts->input;
            if (!opts->baseline.empty()) {
              auto b = load_baseline(opts->baseline);
              if (!b) return report(b.error());
              ho.baseline = compare_to_baseline(b.value(), baseline_of(rec.value(), d));
            }
            std::ofstream out(opts->output, std::ios::trunc);
            out << render_html_report(rec.value(), d, ho);
            if (!out) return report(failure("cannot write " + opts->output));
            fmt::print(stderr, "gpudoctor: report {} ({} GPU{}, verdict {})\n", opts->output,
                       d.gpus.size(), d.gpus.size() == 1 ? "" : "s",
                       d.verdict ? std::string(cause_code(*d.verdict)) : "none");
            return kExitOk;
          }};
}

Command add_baseline_command(CLI::App& root) {
  struct Opts {
    std::string input, name;
    InputFlags in;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "baseline",
      "Save the figures of a good run (mean power, efficiency, throughput from step markers) "
      "under a name; `diagnose --baseline`, `report --baseline` and `run --baseline` flag drops "
      "of more than 20 %. Stored in $GPUDOCTOR_BASELINE_DIR, else ~/.local/share/gpudoctor.");
  cmd->require_subcommand(1);
  CLI::App* save = cmd->add_subcommand("save", "Save a baseline from a recording or log");
  save->add_option("input", opts->input, "Recording or log")->required()->type_name("FILE");
  save->add_option("--name", opts->name, "Name to save it under")->required();
  add_input_flags(*save, opts->in);
  CLI::App* list = cmd->add_subcommand("list", "List the saved baselines");
  CLI::App* show = cmd->add_subcommand("show", "Print a saved baseline as JSON");
  show->add_option("name", opts->name, "Baseline name")->required();
  return {cmd, [opts, save, list, show]() -> int {
            if (save->parsed()) {
              auto rec = load_telemetry(opts->input, load_options(opts->in, opts->input));
              if (!rec) return report(rec.error());
              const Diagnosis d = diagnose(rec.value());
              Baseline b = baseline_of(rec.value(), d);
              b.name = opts->name;
              if (b.gpus == 0)
                return report(failure(opts->input + ": no GPU did steady work: nothing to save"));
              auto path = save_baseline(b);
              if (!path) return report(path.error());
              print_json(baseline_json(b));
              fmt::print(stderr, "gpudoctor: baseline \"{}\" saved to {}\n", b.name, path.value());
              return kExitOk;
            }
            if (list->parsed()) {
              for (const auto& n : list_baselines()) fmt::print("{}\n", n);
              return kExitOk;
            }
            if (show->parsed()) {
              auto b = load_baseline(opts->name);
              if (!b) return report(b.error());
              print_json(baseline_json(b.value()));
              return kExitOk;
            }
            return kExitUsage;
          }};
}

}  // namespace gpudoctor::cli
