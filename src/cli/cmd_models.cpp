// gpudoctor models: the GPU model table (the boards whose power limit, clocks, slowdown
// temperature and memory gpudoctor knows by name).
#include <fmt/format.h>

#include "cli/common.hpp"
#include "report/gpu_models_doc.hpp"

namespace gpudoctor::cli {

Command add_models_command(CLI::App& root) {
  struct Opts {
    std::string filter;
    std::string format = "text";
    bool markdown = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "models",
      "List the GPU models gpudoctor knows by name (default power limit or a laptop's range, max "
      "SM clock, slowdown temperature, memory, source); TEXT keeps those whose name, key or kind "
      "contains it.");
  cmd->add_option("TEXT", opts->filter,
                  "Part of a name, key, kind or architecture (\"3070\", \"laptop\", \"hopper\"), "
                  "or a GPU's full name as a log writes it");
  cmd->add_option("--format", opts->format, "text, json or markdown")
      ->check(CLI::IsMember({"text", "json", "markdown"}))
      ->capture_default_str();
  cmd->add_flag("--markdown", opts->markdown, "Print docs/gpu-models.md (the whole table)");
  return {cmd, [opts]() -> int {
            if (opts->markdown) {
              fmt::print("{}", render_gpu_models_doc());
              return kExitOk;
            }
            const auto models = select_gpu_models(opts->filter);
            if (models.empty()) {
              const std::string hint = gpu_name_suggestion(opts->filter);
              fmt::print(stderr, "gpudoctor: no GPU model matches \"{}\"{}{}\n", opts->filter,
                         hint.empty() ? "" : "; ", hint);
              return kExitFailure;
            }
            if (opts->format == "json")
              fmt::print("{}", render_gpu_models_json(models));
            else if (opts->format == "markdown")
              fmt::print("{}", render_gpu_models_markdown(models));
            else
              fmt::print("{}", render_gpu_models_text(models));
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
