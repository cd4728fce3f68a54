// gpudoctor demo: what gpudoctor sees on GPUs with known problems, simulated in a second.
#include <fmt/format.h>

#include "cli/common.hpp"
#include "core/gpu_models.hpp"
#include "report/status_report.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor::cli {

Command add_demo_command(CLI::App& root) {
  struct Opts {
    std::string scenarios =
        "healthy,data_starvation,launch_overhead,straggler,power_capped,thermal_throttle,mixed";
    double seconds = 120;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "demo",
      "Simulate training jobs with known problems (no GPU needed) and show what `gpudoctor "
      "status` says about each: the quickest way to see what the tool finds.");
  cmd->add_option("--scenarios", opts->scenarios,
                  "Comma-separated built-in scenarios (gpudoctor sim --list)")
      ->capture_default_str();
  cmd->add_option("--seconds", opts->seconds, "Simulated seconds of each job before the look")
      ->check(CLI::Range(2.0, 86400.0))
      ->capture_default_str();

  return {cmd, [opts]() -> int {
            std::vector<std::string> names;
            for (size_t pos = 0; pos <= opts->scenarios.size();) {
              const size_t comma = std::min(opts->scenarios.find(',', pos), opts->scenarios.size());
              if (comma > pos) names.push_back(opts->scenarios.substr(pos, comma - pos));
              pos = comma + 1;
            }
            fmt::print(
                "gpudoctor demo: simulated GPUs (no GPU needed), each job run for {:.0f} s, then "
                "looked at as `gpudoctor status` would.\n",
                opts->seconds);
            for (const auto& name : names) {
              auto spec = sim::parse_sim_spec(name);
              if (!spec) return report(spec.error());
              const auto model = gpu_model_by_key(spec->scenario.model);
              if (!model) return report(usage_error("unknown GPU model " + spec->scenario.model));
              const std::string description = spec->scenario.description;
              const std::string cause = spec->scenario.cause;
              const double end = spec->scenario.startup_s + opts->seconds;
              sim::SimSource src(std::move(spec.value()), *model, {});
              (void)src.sample_at(end - 1);
              const Frame first = src.sample_at(end - 1);  // the look: the last second
              const Frame second = src.sample_at(end);
              fmt::print("\n=== {}: {} (expected: {})\n", name, description, cause);
              fmt::print("{}", render_status_text(
                                   make_status_view(src.system(), src.devices(), first, second)));
            }
            fmt::print(
                "\nWatch one live: gpudoctor watch --source sim:straggler,speed=10   "
                "(all scenarios: gpudoctor sim --list)\n");
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
