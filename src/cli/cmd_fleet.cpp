// gpudoctor fleet: where a cluster lost its GPU-hours over a span, to which jobs, users,
// namespaces, pods, hosts or GPU models, and why; from a Prometheus server (docs/fleet.md).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "fleet/fleet.hpp"
#include "report/fleet_report.hpp"

namespace gpudoctor::cli {

Command add_fleet_command(CLI::App& root) {
  struct Opts {
    std::string prometheus, selector, since = "7d", until;
    std::string by = "job";
    size_t top = 20;
    std::string format = "text";
    std::string output;
    std::string path = "auto";
    unsigned workers = 0;
    std::string timeout = "60s";
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "fleet",
      "Where a cluster's GPU-hours went over a span, from Prometheus (or Thanos, Mimir, "
      "VictoriaMetrics): GPU-hours working, lost by cause, idle but allocated and free; then "
      "the jobs, users, namespaces, pods, hosts or models that lost the most, each with the "
      "`gpudoctor diagnose` command that looks closer. Reads gpudoctor serve's ledger where the "
      "fleet runs serve, else diagnoses each host's dcgm-exporter series (docs/fleet.md).");
  cmd->add_option("--prometheus", opts->prometheus,
                  "Base URL of the Prometheus HTTP API: http(s)://[user:pass@]host:9090[/prefix]")
      ->required();
  cmd->add_option("--since", opts->since,
                  "Start of the span: a duration back from now (7d, 12h) or a UTC time "
                  "(2026-11-24T00:00:00Z)")
      ->capture_default_str();
  cmd->add_option("--until", opts->until, "End of the span (same forms; default now)");
  cmd->add_option("--selector", opts->selector,
                  "Label matchers that pick the GPUs, e.g. '{Hostname=~\"gpu-a.*\"}'");
  cmd->add_option("--by", opts->by,
                  "Rank by job (any owner: Slurm job, pod, container, unit, user's processes), "
                  "user, namespace, pod, host, model or cause")
      ->check(CLI::IsMember({"job", "user", "namespace", "pod", "host", "model", "cause"}))
      ->capture_default_str();
  cmd->add_option("--top", opts->top, "Rows to show (0: all)")->capture_default_str();
  cmd->add_option("--format", opts->format,
                  "text, json (docs/fleet.schema.json), csv, markdown or html")
      ->check(CLI::IsMember({"text", "json", "csv", "markdown", "html"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "Write to this file instead of standard output")
      ->type_name("FILE");
  cmd->add_option("--path", opts->path,
                  "auto (serve's ledger where it is there, else diagnosis), ledger, or diagnosis "
                  "(read and diagnose each host's series here)")
      ->check(CLI::IsMember({"auto", "ledger", "diagnosis"}))
      ->capture_default_str();
  cmd->add_option(
      "--workers", opts->workers,
      "Diagnosis path: hosts read and diagnosed at once; ledger path: queries in flight at once "
      "(default: the cores, at most 8)");
  cmd->add_option("--timeout", opts->timeout, "Per HTTP request")->capture_default_str();
  return {
      cmd, [opts]() -> int {
        auto q = prometheus_query(opts->prometheus, opts->selector, opts->since, opts->until,
                                  current_unix_ms());
        if (!q) return report(q.error());
        auto timeout =
            parse_duration_flag("--timeout", opts->timeout, std::chrono::milliseconds(100));
        if (!timeout) return report(timeout.error());
        FleetOptions o;
        o.prom = q.value();
        o.prom.timeout = timeout.value();
        o.by = *fleet_by_from_code(opts->by);
        o.top = opts->top;
        o.path = opts->path;
        o.workers =
            opts->workers ? opts->workers : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
        o.since_text = opts->since;
        o.until_text = opts->until;
        const bool progress = isatty(STDERR_FILENO);
        install_stop_handlers();
        bool shown = false;
        auto r = fleet_report(o, [&](size_t done, size_t total, std::string_view what) {
          if (!progress) return;
          fmt::print(stderr, "\rfleet: {} of {} {} ", done, total, what);
          shown = true;
        });
        if (shown) fmt::print(stderr, "\r\033[K");
        if (!r) return report(r.error());
        std::string out;
        if (opts->format == "json")
          out = fleet_json(r.value()).dump(2) + "\n";
        else if (opts->format == "csv")
          out = fleet_csv(r.value());
        else if (opts->format == "markdown")
          out = fleet_markdown(r.value());
        else if (opts->format == "html")
          out = fleet_html(r.value());
        else
          out = fleet_text(r.value());
        if (opts->output.empty()) {
          fmt::print("{}", out);
          std::fflush(stdout);
          return kExitOk;
        }
        std::ofstream f(opts->output, std::ios::binary | std::ios::trunc);
        f << out;
        f.close();
        if (!f)
          return report(failure(fmt::format("{}: cannot write the fleet report", opts->output)));
        fmt::print(stderr, "gpudoctor: wrote {} ({} rows of {})\n", opts->output, r->rows.size(),
                   r->rows_total);
        return kExitOk;
      }};
}

}  // namespace gpudoctor::cli
