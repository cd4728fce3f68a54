// gpudoctor diagnose: why each GPU is underused, from a recording, any log the readers accept
// (a file, `-` for standard input, a compressed log, a W&B or MLflow run folder, a folder of logs
// each diagnosed in turn or --merge'd as one run), or a live window of GPUs (--live).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "analysis/baseline.hpp"
#include "analysis/diagnosis.hpp"
#include "cli/common.hpp"
#include "core/duration.hpp"
#include "formats/kineto_trace.hpp"
#include "formats/run_folders.hpp"
#include "formats/trace_attach.hpp"
#include "prometheus/prometheus.hpp"
#include "prometheus/prometheus_runs.hpp"
#include "report/diagnosis_report.hpp"
#include "text/text.hpp"

namespace gpudoctor::cli {
namespace {

inline constexpr int kExitFindings = 3;  // --fail-on matched

// "10m" (from the start of the input) or an absolute UTC time ("2026-01-01T10:00:00Z").
Result<double> parse_time_flag(const std::string& flag, const std::string& text,
                               const Recording& rec) {
  if (auto d = parse_duration(text)) return static_cast<double>(d.value().count()) / 1000.0;
  if (auto ms = text::parse_timestamp_ms(text)) {
    if (rec.start_unix_ms <= 0)
      return usage_error(fmt::format(
          "{} {}: this input has no absolute start time; give a time from its start (e.g. 10m)",
          flag, text));
    return static_cast<double>(*ms - rec.start_unix_ms) / 1000.0;
  }
  return usage_error(
      fmt::format("{} {}: expected a time from the start of the input (10m, 1h30m) or a UTC time "
                  "(2026-01-01T10:00:00Z)",
                  flag, text));
}

Result<Recording> sample_live(const SourceFlags& flags, std::chrono::milliseconds interval,
                              std::chrono::milliseconds duration) {
  auto src = open_source_from(flags, std::clamp(interval * 3 / 4, std::chrono::milliseconds(50),
                                                std::chrono::milliseconds(1000)));
  if (!src) return src.error();
  Source& s = *src.value();
  install_stop_handlers();
  Recording rec;
  rec.system = s.system();
  rec.source = flags.source == "nvml" ? "live: nvml" : "live: " + flags.source;
  for (const auto& d : s.devices()) {
    GpuSeries g;
    g.info = d;
    g.power_limit_source = "log";
    rec.gpus.push_back(std::move(g));
  }
  Frame first = s.sample();
  rec.start_unix_ms = first.time_unix_ms;
  append_frame(rec, first);
  const bool progress = isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  auto next = start + interval;
  size_t frames = 1;
  while (next <= start + duration) {
    if (!sleep_until(next)) break;
    append_frame(rec, s.sample());
    ++frames;
    next += interval;
    if (const auto now = std::chrono::steady_clock::now(); now > next) next = now;
    if (progress) {
      const auto left = std::chrono::duration_cast<std::chrono::seconds>(start + duration - next);
      fmt::print(stderr, "\rsampling {} GPU{} for the diagnosis: {} samples, {} s left ",
                 rec.gpus.size(), rec.gpus.size() == 1 ? "" : "s", frames,
                 std::max<long long>(0, left.count()));
    }
  }
  if (progress) fmt::print(stderr, "\n");
  return rec;
}

struct Opts {
  std::string input;
  InputFlags in;
  SourceFlags source;
  std::string format = "text";
  std::string since, until;
  std::string fail_on;
  std::string config;
  bool print_config = false;
  std::string baseline;
  bool live = false;
  std::string duration = "60s";
  std::string interval = "500ms";
  std::string prometheus, selector;
  std::string group_by = "host";
  bool merge = false;
  std::string trace;  // --trace: profiler traces of the same run
  bool verbose = false;
};

Result<std::optional<BaselineComparison>> compare_baseline(const Opts& opts, const Recording& rec,
                                                           const Diagnosis& d) {
  if (opts.baseline.empty()) return std::optional<BaselineComparison>();
  auto b = load_baseline(opts.baseline);
  if (!b) return b.error();
  return std::optional<BaselineComparison>(compare_to_baseline(b.value(), baseline_of(rec, d)));
}

void print_diagnosis(const Opts& opts, const Diagnosis& d,
                     const std::optional<BaselineComparison>& cmp) {
  fmt::print("{}",
             opts.format == "markdown"
                 ? diagnosis_markdown(d)
                 : diagnosis_text(d, opts.verbose ? TextDetail::kVerbose : TextDetail::kNormal));
  if (!cmp) return;
  fmt::print("\nAgainst baseline \"{}\": ", cmp->baseline.name);
  if (cmp->regressions.empty()) fmt::print("no figure more than 20 % lower\n");
  for (size_t i = 0; i < cmp->regressions.size(); ++i) {
    const auto& r = cmp->regressions[i];
    fmt::print("{}{} {:.0f} % lower ({:.3g} -> {:.3g})", i ? "; " : "", r.metric, r.drop * 100,
               r.baseline, r.now);
  }
  if (!cmp->regressions.empty()) fmt::print("\n");
}

// --fail-on: a finding at least that severe (or, for warnings, a baseline regression).
bool fails(const Opts& opts, const Diagnosis& d, const std::optional<BaselineComparison>& cmp) {
  if (opts.fail_on.empty()) return false;
  const Severity min = opts.fail_on == "critical" ? Severity::kCritical : Severity::kWarning;
  for (const auto& f : d.findings)
    if (f.severity >= min) return true;
  return cmp && !cmp->regressions.empty() && min == Severity::kWarning;
}

// diagnose --prometheus: each run diagnosed on its own; text and Markdown give each a heading
// with the selector that picks it again, JSON wraps the diagnoses (docs/diagnosis.md).
int diagnose_runs(std::vector<PromRun> runs, PromGroupBy by, const Opts& opts,
                  const DiagnosisConfig& config) {
  const std::string summary = runs_summary(runs, by);
  nlohmann::json j_runs = nlohmann::json::array();
  bool failed = false;
  if (opts.format != "json")
    fmt::print("{}{}\n", opts.format == "markdown" ? "" : "Prometheus " + opts.prometheus + ": ",
               opts.format == "markdown" ? "_Prometheus " + opts.prometheus + ": " + summary + "_"
                                         : summary);
  for (size_t i = 0; i < runs.size(); ++i) {
    PromRun& run = runs[i];
    const Diagnosis d = diagnose(run.rec, config);
    auto cmp = compare_baseline(opts, run.rec, d);
    if (!cmp) return report(cmp.error());
    failed = failed || fails(opts, d, cmp.value());
    const std::string title =
        fmt::format("{} {}: {} GPU{}", run.kind == "owner" ? "owner" : run.kind, run.name,
                    run.rec.gpus.size(), run.rec.gpus.size() == 1 ? "" : "s");
    if (opts.format == "json") {
      nlohmann::json r = {{"kind", run.kind},
                          {"name", run.name},
                          {"hosts", run.hosts},
                          {"selector", run.selector},
                          {"diagnosis", diagnosis_json(d)}};
      if (run.owner) r["owner"] = owner_to_json(*run.owner);
      if (cmp.value()) r["diagnosis"]["baseline"] = comparison_json(*cmp.value());
      j_runs.push_back(std::move(r));
      continue;
    }
    if (opts.format == "markdown")
      fmt::print("\n## Run {} of {}: {}\n\nSelector: `{}`\n\n", i + 1, runs.size(), title,
                 run.selector);
    else
      fmt::print("\n== Run {} of {}: {} (--selector '{}')\n", i + 1, runs.size(), title,
                 run.selector);
    print_diagnosis(opts, d, cmp.value());
  }
  if (opts.format == "json") {
    const nlohmann::json j = {
        {"schema_version", 1},       {"source", "prometheus " + opts.prometheus},
        {"selector", opts.selector}, {"grouped_by", prom_group_by_code(by)},
        {"summary", summary},        {"runs", std::move(j_runs)}};
    print_json(j);
  }
  std::fflush(stdout);
  return failed ? kExitFindings : kExitOk;
}

// The input flags' load options; reading standard input stops at Ctrl-C (what arrived is read).
LoadOptions input_options(const Opts& opts) {
  return load_options(opts.in, opts.input);
}

// --gpus (for inputs, not --live) and --since/--until on a loaded input.
std::optional<Error> narrow(const Opts& opts, Recording& rec, const std::string& origin) {
  if (!opts.live && !opts.source.gpus.empty() && opts.source.gpus != "all") {
    auto sel = parse_gpu_list(opts.source.gpus);
    if (!sel) return sel.error();
    std::vector<GpuSeries> kept;
    for (auto& g : rec.gpus)
      if (std::find(sel->begin(), sel->end(), g.info.index) != sel->end())
        kept.push_back(std::move(g));
    if (kept.empty())
      return usage_error(
          fmt::format("--gpus {}: none of these GPUs is in {}", opts.source.gpus, origin));
    rec.gpus = std::move(kept);
  }
  if (opts.prometheus.empty() && (!opts.since.empty() || !opts.until.empty())) {
    double since = 0, until = 1e300;
    if (!opts.since.empty()) {
      auto t = parse_time_flag("--since", opts.since, rec);
      if (!t) return t.error();
      since = t.value();
    }
    if (!opts.until.empty()) {
      auto t = parse_time_flag("--until", opts.until, rec);
      if (!t) return t.error();
      until = t.value();
    }
    if (until <= since) return usage_error("--until must be later than --since");
    trim_recording(rec, since, until);
  }
  if (rec.gpus.empty() && rec.traces.empty())
    return failure(fmt::format("{}: no GPU data to diagnose", origin));
  return std::nullopt;
}

bool is_folder(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool all_profiler_traces(const std::vector<std::string>& files) {
  return !files.empty() && std::all_of(files.begin(), files.end(), file_is_kineto_trace);
}

std::optional<double> lost_gpu_hours(const Diagnosis& d) {
  std::optional<double> sum;
  for (const auto& g : d.gpus)
    if (g.lost_gpu_hours) sum = sum.value_or(0) + *g.lost_gpu_hours;
  return sum;
}

// A folder of logs: each diagnosed on its own (a heading per file), then a summary table of
// file, verdict and lost GPU-hours; JSON wraps the diagnoses as diagnose --prometheus does
// (docs/diagnosis-runs.schema.json, grouped_by "file").
int diagnose_folder(const Opts& opts, const DiagnosisConfig& config,
                    const std::vector<std::string>& files) {
  struct Row {
    std::string file, verdict, error;
    std::optional<double> lost;
  };
  std::vector<Row> rows;
  nlohmann::json j_runs = nlohmann::json::array();
  bool failed = false;
  const bool progress = isatty(STDERR_FILENO) && files.size() > 1;
  const bool md = opts.format == "markdown";
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& file = files[i];
    if (progress) fmt::print(stderr, "\rdiagnosing {} of {}: {}\x1b[K", i + 1, files.size(), file);
    Row row{file, "", "", std::nullopt};
    auto r = load_telemetry(file, input_options(opts));
    std::optional<Error> err = r ? narrow(opts, r.value(), file) : std::optional(r.error());
    if (err) {
      row.error = err->message;
      if (opts.format != "json") {
        if (progress) fmt::print(stderr, "\r\x1b[K");
        fmt::print(fmt::runtime(md ? "{}## Log {} of {}: {}\n\nNot read: {}\n"
                                   : "{}== Log {} of {}: {}\nnot read: {}\n"),
                   i ? "\n" : "", i + 1, files.size(), file, error_gist(err->message, file));
      }
      if (opts.format == "json")
        j_runs.push_back({{"kind", "file"},
                          {"name", file},
                          {"hosts", nlohmann::json::array()},
                          {"selector", ""},
                          {"error", err->message}});
      rows.push_back(std::move(row));
      continue;
    }
    const Recording& rec = r.value();
    const Diagnosis d = diagnose(rec, config);
    auto cmp = compare_baseline(opts, rec, d);
    if (!cmp) return report(cmp.error());
    failed = failed || fails(opts, d, cmp.value());
    row.verdict = d.verdict ? std::string(cause_code(*d.verdict)) : "cannot judge";
    row.lost = lost_gpu_hours(d);
    rows.push_back(row);
    if (opts.format == "json") {
      nlohmann::json hosts = nlohmann::json::array();
      if (!rec.system.hostname.empty()) hosts.push_back(rec.system.hostname);
      nlohmann::json run = {{"kind", "file"},
                            {"name", file},
                            {"hosts", hosts},
                            {"selector", ""},
                            {"diagnosis", diagnosis_json(d)}};
      if (cmp.value()) run["diagnosis"]["baseline"] = comparison_json(*cmp.value());
      j_runs.push_back(std::move(run));
      continue;
    }
    if (progress) fmt::print(stderr, "\r\x1b[K");
    if (md)
      fmt::print("{}## Log {} of {}: {}\n\n", i ? "\n" : "", i + 1, files.size(), file);
    else
      fmt::print("{}== Log {} of {}: {}\n", i ? "\n" : "", i + 1, files.size(), file);
    print_diagnosis(opts, d, cmp.value());
    std::fflush(stdout);
  }
  if (progress) fmt::print(stderr, "\r\x1b[K");
  const size_t read = static_cast<size_t>(
      std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.error.empty(); }));
  const std::string summary =
      fmt::format("{} logs in {}, each diagnosed on its own{}", files.size(), opts.input,
                  read == files.size() ? "" : fmt::format(" ({} not read)", files.size() - read));
  if (opts.format == "json") {
    const nlohmann::json j = {{"schema_version", 1}, {"source", "folder " + opts.input},
                              {"selector", ""},      {"grouped_by", "file"},
                              {"summary", summary},  {"runs", std::move(j_runs)}};
    print_json(j);
  } else {
    size_t w = 4;
    for (const auto& r : rows) w = std::max(w, r.file.size());
    auto lost = [](const Row& r) {
      return r.lost ? fmt::format("{:.2f}", *r.lost) : std::string(r.error.empty() ? "-" : "");
    };
    if (md) {
      fmt::print("\n## Summary: {}\n\n| file | verdict | lost GPU-h |\n|---|---|---:|\n", summary);
      for (const auto& r : rows)
        fmt::print("| {} | {} | {} |\n", r.file,
                   r.error.empty() ? r.verdict : "not read: " + r.error, lost(r));
    } else {
      fmt::print("\n== Summary: {}\n{:<{}}  {:<20}  {:>10}\n", summary, "file", w, "verdict",
                 "lost GPU-h");
      for (const auto& r : rows) {
        if (r.error.empty())
          fmt::print("{:<{}}  {:<20}  {:>10}\n", r.file, w, r.verdict, lost(r));
        else
          fmt::print("{:<{}}  not read: {}\n", r.file, w, error_gist(r.error, r.file));
      }
    }
  }
  std::fflush(stdout);
  for (const auto& r : rows)
    if (!r.error.empty()) fmt::print(stderr, "gpudoctor: not read: {}\n", r.error);
  if (read == 0) return kExitUsage;
  return failed ? kExitFindings : kExitOk;
}

}  // namespace

Command add_diagnose_command(CLI::App& root) {
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "diagnose",
      "Say whether each GPU really worked and, if not, why: the cause, its evidence, the GPU time "
      "it cost and what to change. INPUT is a recording or any log gpudoctor reads "
      "(docs/formats.md); --live samples GPUs now. Exit status 3 when --fail-on matches.");
  cmd->add_option("input", opts->input,
                  "Recording or log to diagnose: a file, - (standard input, read to its end or to "
                  "Ctrl-C), a .gz/.xz/.zst log, a W&B run folder, an MLflow run (or its "
                  "metrics/system folder), or a folder of logs (each diagnosed, with a summary)")
      ->type_name("FILE");
  add_input_flags(*cmd, opts->in);
  add_source_flags(*cmd, opts->source);
  cmd->add_option("--format", opts->format, "text, json (docs/diagnosis.md) or markdown")
      ->check(CLI::IsMember({"text", "json", "markdown"}))
      ->capture_default_str();
  cmd->add_option("--since", opts->since,
                  "Diagnose from this time on: from the input's start (10m) or UTC "
                  "(2026-01-01T10:00:00Z)");
  cmd->add_option("--until", opts->until, "Diagnose up to this time (same forms as --since)");
  cmd->add_option("--fail-on", opts->fail_on,
                  "Exit with status 3 when a finding is at least this severe: warning or critical")
      ->check(CLI::IsMember({"warning", "critical"}));
  cmd->add_option("--config", opts->config,
                  "JSON file of thresholds to override (see --print-config)")
      ->type_name("FILE");
  cmd->add_option("--baseline", opts->baseline,
                  "Compare with a saved baseline (gpudoctor baseline save): power, efficiency or "
                  "throughput more than 20 % below it is flagged (a warning for --fail-on)");
  cmd->add_flag("--print-config", opts->print_config,
                "Print the thresholds in force as JSON and exit");
  cmd->add_flag("-v,--verbose", opts->verbose,
                "Text: every note on how the input was read (the first few otherwise)");
  cmd->add_flag("--live", opts->live, "Sample the GPUs of --source now instead of reading INPUT");
  cmd->add_option("--duration", opts->duration, "With --live: how long to sample")
      ->capture_default_str();
  cmd->add_option("-i,--interval", opts->interval, "With --live: sampling interval")
      ->capture_default_str();
  cmd->add_option("--prometheus", opts->prometheus,
                  "Read the GPUs' series from this Prometheus server (dcgm-exporter's or "
                  "gpudoctor serve's metrics) instead of INPUT; --since/--until count back from "
                  "now (default --since 1h)");
  cmd->add_option("--selector", opts->selector,
                  "With --prometheus: label matchers that pick the GPUs, e.g. "
                  "'{Hostname=\"node7\"}'");
  cmd->add_option("--group-by", opts->group_by,
                  "With --prometheus: diagnose one run per host, per job (any owner the series "
                  "name: Slurm job, pod, container; the rest of each host's time per host), per "
                  "pod, or all GPUs as one run (none)")
      ->check(CLI::IsMember({"host", "job", "pod", "none"}))
      ->capture_default_str();
  cmd->add_flag("--merge", opts->merge,
                "INPUT a folder of logs of one job (one log per GPU or per node): read them as "
                "one run, GPUs renumbered in order, hosts kept, times aligned by absolute time");
  cmd->add_option("--trace", opts->trace,
                  "PyTorch profiler traces of the same run (a trace file, or a folder of per-rank "
                  "files): their kernel-level findings beside the telemetry's, aligned by wall "
                  "clock");
  return {cmd, [opts]() -> int {
            DiagnosisConfig config;
            if (!opts->config.empty()) {
              auto c = load_diagnosis_config(opts->config);
              if (!c) return report(c.error());
              config = c.value();
            }
            if (opts->print_config) {
              print_json(config_to_json(config));
              return kExitOk;
            }
            Recording rec;
            if (opts->live) {
              if (!opts->input.empty())
                return report(usage_error("give either INPUT or --live, not both"));
              auto interval =
                  parse_duration_flag("--interval", opts->interval, std::chrono::milliseconds(10));
              if (!interval) return report(interval.error());
              auto duration =
                  parse_duration_flag("--duration", opts->duration, std::chrono::milliseconds(1));
              if (!duration) return report(duration.error());
              auto r = sample_live(opts->source, interval.value(), duration.value());
              if (!r) return report(r.error());
              rec = std::move(r.value());
            } else if (!opts->prometheus.empty()) {
              if (!opts->input.empty())
                return report(usage_error("give either INPUT or --prometheus, not both"));
              auto q = prometheus_query(opts->prometheus, opts->selector, opts->since, opts->until,
                                        current_unix_ms());
              if (!q) return report(q.error());
              const PromGroupBy by = *prom_group_by_from_code(opts->group_by);
              auto runs = load_prometheus_runs(q.value(), by, load_options(opts->in));
              if (!runs) return report(runs.error());
              return diagnose_runs(std::move(runs.value()), by, *opts, config);
            } else {
              if (opts->input.empty())
                return report(
                    usage_error("diagnose needs INPUT (a recording or log) or --live; see --help"));
              const bool folder =
                  is_folder(opts->input) && classify_folder(opts->input).kind == FolderKind::kLogs;
              if (opts->merge && !folder)
                return report(
                    usage_error("--merge reads a folder of logs as one run: INPUT must "
                                "be such a folder"));
              Result<Recording> r = failure("");
              if (folder) {
                auto files = folder_logs(opts->input);
                if (!files) return report(files.error());
                // A folder of profiler traces only is one run's ranks (as HTA reads a trace
                // folder): merged, so the ranks are measured side by side and the straggler
                // named. Any other folder is read log by log unless --merge says otherwise.
                const bool ranks = !opts->merge && all_profiler_traces(files.value());
                if (!opts->merge && !ranks) return diagnose_folder(*opts, config, files.value());
                r = load_merged_folder(opts->input, files.value(), input_options(*opts));
                if (r && ranks)
                  r->notes.insert(
                      r->notes.begin(),
                      fmt::format("{}: a folder of {} profiler traces and nothing else: "
                                  "read as one run's ranks (as --merge reads a folder)",
                                  opts->input, files->size()));
              } else {
                r = load_telemetry(opts->input, input_options(*opts));
              }
              if (!r) return report(r.error());
              rec = std::move(r.value());
            }
            if (!opts->trace.empty())
              if (auto e = attach_traces(rec, opts->trace, input_options(*opts))) return report(*e);
            if (auto e = narrow(*opts, rec, opts->live ? opts->source.source : opts->input))
              return report(*e);
            const Diagnosis d = diagnose(rec, config);
            auto cmp = compare_baseline(*opts, rec, d);
            if (!cmp) return report(cmp.error());
            if (opts->format == "json") {
              auto j = diagnosis_json(d, FindingsJson::kPlace);
              if (cmp.value()) j["baseline"] = comparison_json(*cmp.value());
              print_json(d, std::move(j));
            } else {
              print_diagnosis(*opts, d, cmp.value());
            }
            std::fflush(stdout);
            if (!d.verdict && opts->format == "text")
              fmt::print(stderr, "gpudoctor: nothing in this input to judge the GPUs by\n");
            return fails(*opts, d, cmp.value()) ? kExitFindings : kExitOk;
          }};
}

}  // namespace gpudoctor::cli
