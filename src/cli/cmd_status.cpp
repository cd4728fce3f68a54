// gpudoctor status: one look at every GPU, over two samples so that averages and GPM are real.
#include <thread>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "cli/help_format.hpp"
#include "report/status_report.hpp"
#include "sources/source.hpp"

namespace gpudoctor::cli {

Command add_status_command(CLI::App& root) {
  struct Opts {
    SourceFlags source;
    bool json = false;
    std::string interval = "250ms";
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "status",
      "Show every GPU once: util, SM activity, power against the default limit, efficiency, "
      "clocks, temperature, memory, clock event reasons, PCIe link and processes, then a verdict "
      "per GPU (WORKING, BUSY BUT IDLE, IDLE, POWER CAPPED, ...).");
  add_source_flags(*cmd, opts->source);
  cmd->add_flag("--json", opts->json, "Print JSON (every reading is a value or says why not)");
  cmd->add_option("--interval", opts->interval,
                  "Time between the two samples (>= 100ms, so GPM metrics and mean power are real)")
      ->capture_default_str();

  return {cmd, [opts]() -> int {
            // GPM needs two samples at least 100 ms apart.
            auto interval =
                parse_duration_flag("--interval", opts->interval, std::chrono::milliseconds(100));
            if (!interval) return report(interval.error());
            auto src = open_source_from(opts->source);
            if (!src) return report(src.error());
            Source& s = *src.value();
            if (s.devices().empty()) {
              fmt::print("No NVIDIA GPU found ({}).\n", s.description());
              return kExitOk;
            }
            const Frame first = s.sample();
            std::this_thread::sleep_for(interval.value());
            const Frame second = s.sample();
            print_source_notes(s);
            const StatusView view = make_status_view(s.system(), s.devices(), first, second);
            if (opts->json)
              fmt::print("{}\n", render_status_json(view).dump(
                                     2, ' ', false, nlohmann::json::error_handler_t::replace));
            else
              fmt::print("{}", render_status_text(view, help_width()));
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
