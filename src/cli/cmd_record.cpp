// gpudoctor record: sample live GPUs (or the simulator) into a recording until Ctrl-C or
// --duration.
#include <unistd.h>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "store/sqlite_store.hpp"

namespace gpudoctor::cli {

Command add_record_command(CLI::App& root) {
  struct Opts {
    SourceFlags source;
    std::string output;
    std::string interval = "1s";
    std::string duration;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "record",
      "Sample every GPU into a recording (SQLite, docs/recording-format.md) until Ctrl-C, SIGTERM "
      "or --duration. Committed every second: a killed recorder loses at most the last second.");
  add_source_flags(*cmd, opts->source);
  cmd->add_option("-o,--output", opts->output, "Recording file to write (e.g. run.db)")
      ->required()
      ->type_name("FILE");
  cmd->add_option("-i,--interval", opts->interval, "Sampling interval")->capture_default_str();
  cmd->add_option("--duration", opts->duration, "Stop after this long (default: until Ctrl-C)");

  return {cmd, [opts]() -> int {
            auto interval =
                parse_duration_flag("--interval", opts->interval, std::chrono::milliseconds(10));
            if (!interval) return report(interval.error());
            std::optional<std::chrono::milliseconds> duration;
            if (!opts->duration.empty()) {
              auto d =
                  parse_duration_flag("--duration", opts->duration, std::chrono::milliseconds(0));
              if (!d) return report(d.error());
              duration = d.value();
            }
            auto src = open_source_from(
                opts->source, std::clamp(interval.value() * 3 / 4, std::chrono::milliseconds(50),
                                         std::chrono::milliseconds(1000)));
            if (!src) return report(src.error());
            Source& s = *src.value();
            install_stop_handlers();

            Frame first = s.sample();
            print_source_notes(s);
            auto writer = RecordingWriter::create(opts->output, s.system(), s.devices(),
                                                  opts->source.source, first.time_unix_ms);
            if (!writer) return report(writer.error());
            RecordingWriter& w = *writer.value();
            if (auto r = w.add(first); !r) return report(r.error());

            const bool progress = isatty(STDERR_FILENO);
            const auto start = std::chrono::steady_clock::now();
            auto next = start + interval.value();
            while (!duration || next <= start + *duration) {
              if (!sleep_until(next)) break;
              if (auto r = w.add(s.sample()); !r) {
                (void)w.close();
                return report(r.error());
              }
              next += interval.value();
              if (const auto now = std::chrono::steady_clock::now(); now > next) next = now;
              if (progress)
                fmt::print(stderr, "\rrecording {} GPU{} to {}: {} samples ", s.devices().size(),
                           s.devices().size() == 1 ? "" : "s", opts->output, w.frames());
            }
            if (progress) fmt::print(stderr, "\n");
            const size_t frames = w.frames();
            if (auto r = w.close(); !r) return report(r.error());
            fmt::print(stderr, "recorded {} samples of {} GPU{} to {}{}\n", frames,
                       s.devices().size(), s.devices().size() == 1 ? "" : "s", opts->output,
                       stop_requested() ? " (stopped)" : "");
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
