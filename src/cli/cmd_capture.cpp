// gpudoctor capture: record what NVML says into a capture file the stand-in NVML replays.
#include <unistd.h>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "sources/health.hpp"
#include "sources/nvml/capture_writer.hpp"
#include "sources/source.hpp"

namespace gpudoctor::cli {

Command add_capture_command(CLI::App& root) {
  struct Opts {
    SourceFlags source;
    std::string output;
    std::string duration = "30s";
    std::string interval = "1s";
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "capture",
      "Record every GPU's NVML readings into a capture file (JSON, docs/capture-format.md) that "
      "the stand-in NVML library replays: test fixtures from real machines. Ctrl-C stops early "
      "and still writes the file.");
  add_source_flags(*cmd, opts->source);
  cmd->add_option("-o,--output", opts->output, "Capture file to write")
      ->required()
      ->type_name("FILE");
  cmd->add_option("--duration", opts->duration, "How long to record")->capture_default_str();
  cmd->add_option("-i,--interval", opts->interval, "Sampling interval (>= 100ms)")
      ->capture_default_str();

  return {cmd, [opts]() -> int {
            auto duration =
                parse_duration_flag("--duration", opts->duration, std::chrono::milliseconds(0));
            if (!duration) return report(duration.error());
            auto interval =
                parse_duration_flag("--interval", opts->interval, std::chrono::milliseconds(100));
            if (!interval) return report(interval.error());
            auto src = open_source_from(opts->source);
            if (!src) return report(src.error());
            Source& s = *src.value();
            install_stop_handlers();

            // Fail on an unwritable path now, not after the whole duration.
            CaptureWriter writer(s.system(), s.devices());
            writer.set_health(read_device_health(s));  // `check` replays them
            if (auto w = writer.write(opts->output); !w) return report(w.error());

            const bool progress = isatty(STDERR_FILENO);
            const auto start = std::chrono::steady_clock::now();
            auto next = start;
            const auto end = start + duration.value();
            while (next <= end) {
              if (!sleep_until(next)) break;
              writer.add(s.sample());
              next += interval.value();
              // Fell behind (a GPU slower than the interval): keep the schedule, skip the backlog.
              if (const auto now = std::chrono::steady_clock::now(); now > next) next = now;
              if (progress) {
                const double elapsed =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                fmt::print(stderr, "\rcapturing {} GPU{}: {:.0f}/{:.0f} s, {} samples ",
                           s.devices().size(), s.devices().size() == 1 ? "" : "s", elapsed,
                           std::chrono::duration<double>(duration.value()).count(),
                           writer.frames());
              }
            }
            if (progress) fmt::print(stderr, "\n");
            if (auto w = writer.write(opts->output); !w) return report(w.error());
            fmt::print(stderr, "wrote {} samples of {} GPU{} to {}{}\n", writer.frames(),
                       s.devices().size(), s.devices().size() == 1 ? "" : "s", opts->output,
                       stop_requested() ? " (stopped early)" : "");
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
