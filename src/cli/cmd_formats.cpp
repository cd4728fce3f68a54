// gpudoctor formats: the column catalogue (which tools' log columns gpudoctor reads, and as what).
#include <fmt/format.h>

#include "cli/common.hpp"
#include "report/formats_doc.hpp"

namespace gpudoctor::cli {

Command add_formats_command(CLI::App& root) {
  auto markdown = std::make_shared<bool>(false);
  CLI::App* cmd = root.add_subcommand(
      "formats",
      "List the column names gpudoctor reads in logs, by the tool that writes them, with the "
      "field each is read as and how its unit is found (--markdown: the table in "
      "docs/formats.md).");
  cmd->add_flag("--markdown", *markdown, "Print the table of docs/formats.md");
  return {cmd, [markdown]() -> int {
            fmt::print("{}", *markdown ? render_catalogue_markdown() : render_catalogue_text());
            return kExitOk;
          }};
}

}  // namespace gpudoctor::cli
