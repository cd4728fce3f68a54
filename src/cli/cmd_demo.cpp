// gpudoctor demo: what gpudoctor finds on GPUs with known problems, simulated in a second.
#include <fmt/format.h>

#include "analysis/diagnosis.hpp"
#include "cli/common.hpp"
#include "core/gpu_models.hpp"
#include "report/diagnosis_report.hpp"
#include "sources/sim/sim_source.hpp"

namespace gpudoctor::cli {

Command add_demo_command(CLI::App& root) {
  struct Opts {
    std::string scenarios =
        "healthy,data_starvation,launch_overhead,straggler,power_capped,thermal_throttle,mixed";
    double seconds = 300;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "demo",
      "Simulate training jobs with known problems (no GPU needed) and show what `gpudoctor "
      "diagnose` finds in each: the quickest way to see what the tool does.");
  std::string defaults = opts->scenarios;
  for (size_t at = defaults.find(','); at != std::string::npos; at = defaults.find(',', at + 2))
    defaults.replace(at, 1, ", ");
  cmd->add_option(
         "--scenarios", opts->scenarios,
         "Comma-separated built-in scenarios (gpudoctor sim --list; default: " + defaults + ")")
      ->type_name("LIST");
  cmd->add_option("--seconds", opts->seconds, "Simulated seconds of work in each job")
      ->check(CLI::Range(30.0, 86400.0))
      ->capture_default_str();

  return {cmd, [opts]() -> int {
            std::vector<std::string> names;
            for (size_t pos = 0; pos <= opts->scenarios.size();) {
              const size_t comma = std::min(opts->scenarios.find(',', pos), opts->scenarios.size());
              if (comma > pos) names.push_back(opts->scenarios.substr(pos, comma - pos));
              pos = comma + 1;
            }
            fmt::print(
                "gpudoctor demo: simulated GPUs (no GPU needed), each job sampled every second "
                "for {:.0f} s of work, then diagnosed as `gpudoctor diagnose` would.\n",
                opts->seconds);
            int right = 0;
            for (const auto& name : names) {
              auto spec = sim::parse_sim_spec(name);
              if (!spec) return report(spec.error());
              const auto model = gpu_model_by_key(spec->scenario.model);
              if (!model) return report(usage_error("unknown GPU model " + spec->scenario.model));
              const std::string description = spec->scenario.description;
              const std::string cause = spec->scenario.cause;
              spec->scenario.duration_s = spec->scenario.startup_s + opts->seconds;
              const Recording rec = sim::simulate_recording(std::move(spec.value()), *model);
              const Diagnosis d = diagnose(rec);
              const std::string got = d.verdict ? std::string(cause_code(*d.verdict)) : "none";
              right += got == cause;
              fmt::print("\n=== {}: {} (expected: {})\n", name, description, cause);
              fmt::print("{}", diagnosis_text(d, TextDetail::kBrief));
            }
            fmt::print(
                "\n{} of {} jobs diagnosed as expected. One in full: gpudoctor sim "
                "straggler -o run.db && gpudoctor diagnose run.db\n"
                "Watch one live: gpudoctor watch --source sim:straggler,speed=10   (all "
                "scenarios: gpudoctor sim --list)\n",
                right, names.size());
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
