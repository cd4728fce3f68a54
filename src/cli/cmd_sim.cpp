// gpudoctor sim: run a scenario faster than real time and write what NVML would have shown.
#include <fmt/format.h>

#include "cli/common.hpp"
#include "core/gpu_models.hpp"
#include "sources/nvml/capture_writer.hpp"
#include "sources/sim/builtin_scenarios.hpp"
#include "sources/sim/sim_source.hpp"
#include "store/sqlite_store.hpp"

namespace gpudoctor::cli {

Command add_sim_command(CLI::App& root) {
  struct Opts {
    std::string scenario;
    std::string output;
    bool list = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "sim",
      "Simulate a scenario (a training loop on simulated GPUs) faster than real time and write a "
      "recording (-o run.db) or a capture file the stand-in NVML replays (-o capture.json). "
      "SCENARIO is a built-in name or a JSON file, with "
      "options: straggler,gpus=8,model=a100-sxm4-80gb,seed=3,duration=10m,interval=100ms. For a "
      "live view use --source sim:SCENARIO with status or watch.");
  cmd->add_option("scenario", opts->scenario, "Scenario name or file, with ,key=value options")
      ->type_name("SCENARIO");
  cmd->add_option("-o,--output", opts->output,
                  "Where to write: a recording (.db, for diagnose and report) or a capture (.json, "
                  "for the stand-in NVML)")
      ->type_name("FILE");
  cmd->add_flag("--list", opts->list, "List the built-in scenarios and GPU models");

  return {cmd, [opts]() -> int {
            if (opts->list || opts->scenario.empty()) {
              fmt::print("Built-in scenarios:\n");
              for (const auto& b : sim::builtin_scenarios()) {
                auto sc = sim::parse_scenario(std::string(b.json), std::string(b.name));
                if (!sc) return report(sc.error());
                fmt::print("  {:<24} {:<20} {} x {}: {}\n", b.name, sc->cause, sc->gpus, sc->model,
                           sc->description);
              }
              fmt::print("\nGPU models (model=KEY):\n");
              for (const auto& m : gpu_models())
                fmt::print("  {:<18} {} ({:.0f} W)\n", m.key, m.nvml_name, m.tdp_w);
              return opts->list ? kExitOk : report(usage_error("sim: name a scenario (or --list)"));
            }
            if (opts->output.empty()) return report(usage_error("sim: -o FILE is required"));
            auto spec = sim::parse_sim_spec(opts->scenario);
            if (!spec) return report(spec.error());
            const auto model = gpu_model_by_key(spec->scenario.model);
            if (!model) return report(usage_error("unknown GPU model " + spec->scenario.model));
            const auto ends_with = [&](std::string_view suffix) {
              return opts->output.size() >= suffix.size() &&
                     opts->output.compare(opts->output.size() - suffix.size(), suffix.size(),
                                          suffix) == 0;
            };
            const double duration = spec->scenario.duration_s, interval = spec->scenario.interval_s;
            if (ends_with(".db")) {  // a recording
              const Recording rec = sim::simulate_recording(std::move(spec.value()), *model);
              std::vector<DeviceInfo> devices;
              for (const auto& g : rec.gpus) devices.push_back(g.info);
              auto w = RecordingWriter::create(opts->output, rec.system, devices, rec.source,
                                               rec.start_unix_ms);
              if (!w) return report(w.error());
              if (auto r = w.value()->add_recording(rec); !r) return report(r.error());
              if (auto r = w.value()->close(); !r) return report(r.error());
              fmt::print(stderr, "wrote {} samples of {} simulated GPU{} ({}) to {}\n",
                         rec.gpus.empty() ? 0 : rec.gpus[0].size(), rec.gpus.size(),
                         rec.gpus.size() == 1 ? "" : "s", rec.source, opts->output);
              return kExitOk;
            }
            if (!ends_with(".json"))
              return report(usage_error("sim: -o takes a recording (.db) or a capture (.json)"));
            sim::SimSource src(std::move(spec.value()), *model, {});
            src.set_start_unix_ms(sim::kSimEpochUnixMs);
            CaptureWriter writer(src.system(), src.devices());
            const auto count = static_cast<size_t>(duration / interval + 1e-9);
            size_t frames = 0;
            for (; frames <= count; ++frames)
              writer.add(src.sample_at(static_cast<double>(frames) * interval));
            if (auto w = writer.write(opts->output); !w) return report(w.error());
            fmt::print(stderr, "wrote {} samples of {} simulated GPU{} ({}) to {}\n", frames,
                       src.devices().size(), src.devices().size() == 1 ? "" : "s",
                       src.description(), opts->output);
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
