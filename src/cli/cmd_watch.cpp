// gpudoctor watch: a line per GPU per interval until Ctrl-C or --count.
#include <sys/ioctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include <fmt/format.h>

#include "analysis/live_window.hpp"
#include "cli/common.hpp"
#include "cli/help_format.hpp"
#include "report/watch_report.hpp"
#include "sources/source.hpp"

namespace gpudoctor::cli {
namespace {

// Lines between repeated headers: a screen on a terminal, never when piped.
int header_period() {
  if (!isatty(STDOUT_FILENO)) return 0;
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 4) return ws.ws_row - 2;
  return 22;
}

bool emit(const std::string& text) {
  if (text.empty()) return true;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) return false;
  return std::fflush(stdout) == 0;
}

}  // namespace

Command add_watch_command(CLI::App& root) {
  struct Opts {
    SourceFlags source;
    std::string interval = "1s";
    long count = 0;
    std::string format = "table";
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "watch",
      "Print a line per GPU every interval (like nvidia-smi dmon, with power as a share of the "
      "default limit, SM activity, efficiency, clock event reasons, the instant verdict and the "
      "live cause: the diagnosis of the last five minutes, once ten samples and ten seconds are "
      "in). The table fits the terminal (100 columns when not one). Ctrl-C stops.");
  add_source_flags(*cmd, opts->source);
  cmd->add_option("-i,--interval", opts->interval, "Sampling interval, e.g. 100ms, 1s, 5s")
      ->capture_default_str();
  cmd->add_option("-c,--count", opts->count,
                  "Stop after this many intervals (default: until Ctrl-C)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--format", opts->format,
                  "table, csv (ISO 8601 UTC times, empty cells where n/a; loads into pandas) or "
                  "jsonl")
      ->capture_default_str();

  return {
      cmd, [opts]() -> int {
        auto interval =
            parse_duration_flag("--interval", opts->interval, std::chrono::milliseconds(10));
        if (!interval) return report(interval.error());
        auto format = parse_watch_format(opts->format);
        if (!format) return report(format.error());
        // A GPU that does not answer within most of an interval must not delay the others.
        auto src = open_source_from(
            opts->source, std::clamp(interval.value() * 3 / 4, std::chrono::milliseconds(50),
                                     std::chrono::milliseconds(1000)));
        if (!src) return report(src.error());
        Source& s = *src.value();
        if (s.devices().empty()) {
          fmt::print(stderr, "gpudoctor: no NVIDIA GPU found ({})\n", s.description());
          return kExitFailure;
        }
        install_stop_handlers();
        std::signal(SIGPIPE, SIG_IGN);  // a closed pipe (| head) ends the loop quietly

        const WatchRenderer renderer(format.value(), help_width());
        // The live cause: the diagnosis of the last five minutes, every five seconds.
        LiveWindow live(opts->source.source, s.system(), s.devices());
        const int period = format.value() == WatchFormat::kTable ? header_period() : 0;
        int lines_since_header = 0;
        if (!emit(renderer.header())) return kExitOk;

        Frame prev = s.sample();
        auto next = std::chrono::steady_clock::now();
        for (long n = 0; opts->count == 0 || n < opts->count; ++n) {
          next += interval.value();
          if (!sleep_until(next)) break;
          Frame cur = s.sample();
          print_source_notes(s);
          std::vector<GpuAssessment> assessments;
          const double dt = cur.time_s - prev.time_s;
          for (size_t i = 0; i < cur.devices.size(); ++i)
            assessments.push_back(assess(&prev.devices[i], cur.devices[i], dt));
          if (period > 0 && lines_since_header + static_cast<int>(cur.devices.size()) > period) {
            if (!emit(renderer.header())) break;
            lines_since_header = 0;
          }
          live.add(cur);
          std::vector<std::optional<Cause>> causes;
          for (const auto& d : s.devices()) causes.push_back(live.cause(d.index));
          if (!emit(renderer.rows(s.devices(), cur, assessments, causes))) break;
          lines_since_header += static_cast<int>(cur.devices.size());
          prev = std::move(cur);
          // Fell behind (slow source, suspended process): restart the schedule from now.
          if (std::chrono::steady_clock::now() > next + interval.value())
            next = std::chrono::steady_clock::now();
        }
        return kExitOk;
      }};
}

}  // namespace gpudoctor::cli
