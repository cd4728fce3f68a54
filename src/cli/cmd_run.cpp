// gpudoctor run -- CMD: the flags, then the library's run_job (run/job_runner: the job with the
// terminal attached, its GPUs and process tree sampled until it exits), then the diagnosis on
// stderr, the recording and the HTML report where asked (else in the run directory), and the
// job's exit status.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "analysis/baseline.hpp"
#include "analysis/diagnosis.hpp"
#include "cli/common.hpp"
#include "formats/run_folders.hpp"
#include "formats/trace_attach.hpp"
#include "host/markers.hpp"
#include "report/diagnosis_report.hpp"
#include "report/html_report.hpp"
#include "run/job_runner.hpp"

namespace gpudoctor::cli {
namespace {

void say(std::string_view line) {
  fmt::print(stderr, "gpudoctor: {}\n", line);
}

void print_steps(const Recording& rec) {
  const auto steps = host::step_stats(rec.markers);
  if (steps.steps == 0) return;
  fmt::print(stderr, "\nSteps: {} steps, {:.1f} ms each", steps.steps, steps.mean_step_s * 1000);
  if (!std::isnan(steps.mean_wait_s))
    fmt::print(stderr, " ({:.0f} % waiting for data, {:.0f} % computing)",
               100 * steps.mean_wait_s / steps.mean_step_s,
               100 * steps.mean_compute_s / steps.mean_step_s);
  if (!std::isnan(steps.throughput)) fmt::print(stderr, ", {:.1f} samples/s", steps.throughput);
  fmt::print(stderr, "\n");
}

// The traces the job wrote into `dir` while it ran (files modified since `since`), added to its
// recording; one that cannot be read is said and left out (the job has run: nothing is lost).
void attach_new_traces(Recording& rec, const std::string& dir,
                       std::filesystem::file_time_type since) {
  auto files = folder_logs(dir);
  if (!files) {
    say(files.error().message + ": no profiler traces read");
    return;
  }
  size_t read = 0;
  for (const auto& f : files.value()) {
    std::error_code ec;
    const auto t = std::filesystem::last_write_time(f, ec);
    if (ec || t < since) continue;
    if (auto e = attach_traces(rec, f, LoadOptions{}))
      say(e->message + ": left out");
    else
      ++read;
  }
  say(fmt::format("{} profiler trace{} read from {}", read, read == 1 ? "" : "s", dir));
}

}  // namespace

Command add_run_command(CLI::App& root) {
  struct Opts {
    SourceFlags source;
    std::string interval = "200ms";
    std::string output, report, baseline, trace_dir;
    bool quiet = false;
    bool no_save = false;
    std::vector<std::string> command;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "run",
      "Run a job (after --) with the terminal attached, sample its GPUs and its processes until "
      "it exits, then print the diagnosis on stderr and write a recording and an HTML report "
      "(where -o and --report say, else in $GPUDOCTOR_RUN_DIR, $XDG_STATE_HOME/gpudoctor/runs "
      "or ~/.local/state/gpudoctor/runs; --no-save writes nothing). Signals reach the job; "
      "gpudoctor exits with the job's status. Example: gpudoctor run -- python train.py");
  add_source_flags(*cmd, opts->source);
  cmd->add_option("-i,--interval", opts->interval, "Sampling interval")->capture_default_str();
  cmd->add_option("-o,--output", opts->output,
                  "Recording to write (default: run-DATE-TIME.db in the run directory)")
      ->type_name("FILE");
  cmd->add_option("--report", opts->report,
                  "HTML report to write (default: the recording's name with .html)")
      ->type_name("FILE");
  cmd->add_flag("--no-save", opts->no_save, "Write no recording and no report")
      ->excludes(cmd->get_option("--output"))
      ->excludes(cmd->get_option("--report"));
  cmd->add_option("--baseline", opts->baseline,
                  "Compare with a saved baseline (gpudoctor baseline save): a drop of more than "
                  "20 % in power, efficiency or throughput is flagged");
  cmd->add_option("--trace-dir", opts->trace_dir,
                  "A folder the job writes PyTorch profiler traces into (also given to the job as "
                  "$GPUDOCTOR_TRACE_DIR): the traces written while it ran are diagnosed with its "
                  "telemetry and shown in the report")
      ->type_name("DIR");
  cmd->add_flag("-q,--quiet", opts->quiet, "Only the diagnosis at the end; no audit at the start");
  cmd->add_option("command", opts->command, "The job and its arguments, after --")
      ->required()
      ->type_name("COMMAND");
  return {
      cmd, [opts]() -> int {
        auto interval =
            parse_duration_flag("--interval", opts->interval, std::chrono::milliseconds(20));
        if (!interval) return report(interval.error());
        std::optional<Baseline> base;
        if (!opts->baseline.empty()) {
          auto b = load_baseline(opts->baseline);
          if (!b) return report(b.error());
          base = b.value();
        }
        // GPUs: a failure to sample them is a warning, never a reason not to run the job.
        std::unique_ptr<Source> source;
        if (auto s = open_source_from(
                opts->source, std::clamp(interval.value() * 3 / 4, std::chrono::milliseconds(50),
                                         std::chrono::milliseconds(1000))))
          source = std::move(s.value());
        else
          say(s.error().message + "\n  the job runs without GPU telemetry");
        if (source && source->devices().empty()) {
          say(fmt::format("no GPU found ({}): the job runs without GPU telemetry",
                          source->description()));
          source.reset();
        }

        // Where the files go: where asked, else the run directory; nothing without GPUs.
        std::string db_path = opts->output, html_path = opts->report;
        if (source && !opts->no_save && db_path.empty()) {
          const std::string dir = default_run_dir();
          if (auto made = make_directories(dir); made) {
            db_path = run_file_stem(dir) + ".db";
          } else {
            say(made.error().message + "; no recording or report is written (-o, --report)");
          }
        }
        if (html_path.empty() && !db_path.empty()) {
          const auto dot = db_path.rfind('.');
          const auto slash = db_path.rfind('/');
          html_path =
              (dot == std::string::npos || dot == 0 || (slash != std::string::npos && dot < slash)
                   ? db_path
                   : db_path.substr(0, dot)) +
              ".html";
        }

        JobRunOptions run_opts;
        run_opts.command = opts->command;
        run_opts.interval = interval.value();
        run_opts.source_name = opts->source.source;
        run_opts.recording_path = source ? db_path : std::string();
        run_opts.audit = !opts->quiet;
        if (!opts->trace_dir.empty()) ::setenv("GPUDOCTOR_TRACE_DIR", opts->trace_dir.c_str(), 1);
        const auto started = std::filesystem::file_time_type::clock::now();
        auto ran = run_job(run_opts, source.get(), say);
        if (!ran) return report(ran.error());
        const int code = ran->exit_code;
        const bool recorded = ran->recorded;
        Recording rec = job_recording(std::move(ran.value()));
        if (!opts->trace_dir.empty()) attach_new_traces(rec, opts->trace_dir, started);
        if (!source && rec.traces.empty()) {
          print_steps(rec);
          say("no GPU telemetry, so no diagnosis, recording or report (a machine without "
              "the NVIDIA driver: try --source sim:SCENARIO to see what run does)");
          say(fmt::format("the job exited with status {}", code));
          return code;
        }
        const Diagnosis d = diagnose(rec);
        fmt::print(stderr, "\n{}", diagnosis_text(d));
        print_steps(rec);
        HtmlReportOptions ho;
        ho.title = "gpudoctor run";
        if (base) {
          auto c = compare_to_baseline(*base, baseline_of(rec, d));
          for (const auto& r : c.regressions)
            say(fmt::format(
                "regression against baseline \"{}\": {} {:.0f} % lower ({:.3g} -> {:.3g})",
                base->name, r.metric, r.drop * 100, r.baseline, r.now));
          if (c.regressions.empty()) say(fmt::format("within 20 % of baseline \"{}\"", base->name));
          if (c.scaling_efficiency)
            say(fmt::format("scaling efficiency against the 1-GPU baseline: {:.0f} %",
                            *c.scaling_efficiency * 100));
          ho.baseline = std::move(c);
        }
        if (!html_path.empty()) {
          std::ofstream out(html_path, std::ios::trunc);
          out << render_html_report(rec, d, ho);
          say(out ? "report " + html_path : "cannot write " + html_path);
        }
        if (recorded) say("recording " + db_path);
        say(fmt::format("the job exited with status {}", code));
        return code;
      }};
}

}  // namespace gpudoctor::cli
