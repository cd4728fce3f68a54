// gpudoctor fields: the field catalogue (what every reading means and where it comes from).
#include <fmt/format.h>

#include "cli/common.hpp"
#include "report/fields_doc.hpp"

namespace gpudoctor::cli {

Command add_fields_command(CLI::App& root) {
  auto markdown = std::make_shared<bool>(false);
  CLI::App* cmd = root.add_subcommand(
      "fields",
      "List every field gpudoctor reads: id, unit, meaning (--markdown: the full table "
      "with NVML, nvidia-smi, DCGM and Prometheus names, as in docs/metrics.md).");
  cmd->add_flag("--markdown", *markdown, "Print docs/metrics.md");
  return {cmd, [markdown]() -> int {
            fmt::print("{}", *markdown ? render_fields_markdown() : render_fields_text());
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
