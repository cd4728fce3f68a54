// gpudoctor: why are my NVIDIA GPUs not doing the work I paid for?
#include <clocale>
#include <vector>

#include <fmt/format.h>

#include "build_from.hpp"  // generated at build time: GPUDOCTOR_BUILD_FROM
#include "cli/common.hpp"

int main(int argc, char** argv) {
  std::setlocale(LC_ALL, "C");  // numbers in output never depend on the user's locale
  using namespace gpudoctor::cli;
  CLI::App app{
      "gpudoctor: tells you whether your NVIDIA GPUs really work, and why not.\n"
      "GPU-Util only says some kernel was running; power, SM activity and clocks say whether the\n"
      "chip is busy. Exit codes: 0 ok, 1 failure, 2 bad usage or input.",
      "gpudoctor"};
  app.set_version_flag("--version", std::string("gpudoctor ") + GPUDOCTOR_VERSION + " (" +
                                        GPUDOCTOR_BUILD_FROM + ")");
  app.require_subcommand(1);
  app.fallthrough(false);

  // In the order `--help` lists them: the everyday commands first.
  std::vector<Command> commands = {
      add_status_command(app),  add_watch_command(app),    add_check_command(app),
      add_top_command(app),     add_record_command(app),   add_import_command(app),
      add_export_command(app),  add_diagnose_command(app), add_fleet_command(app),
      add_run_command(app),     add_report_command(app),   add_baseline_command(app),
      add_serve_command(app),   add_demo_command(app),     add_sim_command(app),
      add_capture_command(app), add_fields_command(app),   add_formats_command(app),
      add_models_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  for (const auto& c : commands) {
    if (!c.app->parsed()) continue;
    try {
      return c.run();
    } catch (const std::exception& e) {  // a bug, not a user error: say so instead of aborting
      fmt::print(stderr, "gpudoctor: internal error: {}\n", e.what());
      return kExitFailure;
    }
  }
  return kExitUsage;
}
