// The command table: every subcommand once, with its group in `--help`, its one-line summary and
// the usages the README's command table shows. `--help`, the first words of a bare `gpudoctor`,
// bash completion, the man pages (help2man reads `--help`) and the README's table all come from
// this table and from the commands' own CLI11 definitions (`gpudoctor --dump-cli`).
#pragma once

#include <string>
#include <vector>

#include "cli/common.hpp"

namespace gpudoctor::cli {

struct CommandInfo {
  const char* name;
  const char* group;    // the heading it is listed under in `--help`
  const char* summary;  // one line in the command list (the command's own --help says more)
  std::vector<std::string> usages;  // as the README's table shows them, without "gpudoctor "
  Command (*add)(CLI::App&);
};

// In the order `--help` lists them: the first commands a new user needs first.
const std::vector<CommandInfo>& command_table();
const CommandInfo* find_command(const std::string& name);

// Builds the whole CLI on `app` (the help layout, every command, the hidden --dump-cli); returns
// the commands in table order.
std::vector<Command> build_cli(CLI::App& app);

// What a bare `gpudoctor` prints: the first commands to try.
std::string first_steps_text();

// Generated from the CLI definitions (`gpudoctor --dump-cli KIND`):
//   bash      the bash completion script
//   markdown  the README's command table
//   commands  one line per command: "NAME<TAB>SUMMARY" (the man pages' names)
//   flags     one line per command and option: "COMMAND<TAB>OPTION<TAB>VALUE" where VALUE is
//             "-" for a flag, else what completion offers (a {choice,list}, FILE, DIR, SCENARIO,
//             or TEXT)
std::string dump_cli(const CLI::App& app, const std::string& kind);

}  // namespace gpudoctor::cli
