// gpudoctor: why are my NVIDIA GPUs not doing the work I paid for?
#include <clocale>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "build_from.hpp"  // generated at build time: GPUDOCTOR_BUILD_FROM
#include "cli/commands.hpp"
#include "core/parallel.hpp"

int main(int argc, char** argv) {
  std::setlocale(LC_ALL, "C");  // numbers in output never depend on the user's locale
  if (const std::string e = gpudoctor::threads_env_error(); !e.empty()) {
    std::fprintf(stderr, "gpudoctor: %s\n", e.c_str());
    return 2;
  }
  using namespace gpudoctor::cli;
  CLI::App app{
      "gpudoctor: tells you whether your NVIDIA GPUs really work, and why not.\n"
      "GPU-Util only says some kernel was running; power, SM activity and clocks say whether the\n"
      "chip is busy. Exit codes: 0 ok, 1 failure, 2 bad usage or input.",
      "gpudoctor"};
  app.set_version_flag("--version", std::string("gpudoctor ") + GPUDOCTOR_VERSION + " (" +
                                        GPUDOCTOR_BUILD_FROM + ")");
  app.require_subcommand(0, 1);
  app.fallthrough(false);
  std::string dump;
  app.add_option(
         "--dump-cli", dump,
         "Print what is generated from the CLI definitions: bash, markdown, commands or flags")
      ->group("");  // hidden: for the build (completion) and the tests
  const std::vector<Command> commands = build_cli(app);
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
  if (!dump.empty()) {
    const std::string out = dump_cli(app, dump);
    if (out.empty()) {
      fmt::print(stderr, "gpudoctor: --dump-cli takes bash, markdown, commands or flags\n");
      return kExitUsage;
    }
    fmt::print("{}", out);
    return kExitOk;
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
  fmt::print(stderr, "{}", first_steps_text());
  return kExitUsage;
}
