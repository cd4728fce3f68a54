#include "cli/commands.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cli/help_format.hpp"
#include "sources/sim/builtin_scenarios.hpp"

namespace gpudoctor::cli {
namespace {

constexpr const char* kStart = "Start here";
constexpr const char* kMachine = "This machine's GPUs";
constexpr const char* kLogs = "Logs, recordings and reports";
constexpr const char* kFleet = "Clusters and monitoring";
constexpr const char* kReference = "Reference and test data";

// What completion offers for an option's value, from its CLI11 definition: "-" for a flag, a
// {choice,list} (IsMember), else the type name the option declares (FILE, DIR, SCENARIO,
// SOURCE, COMMAND, TEXT, ...).
std::string value_kind(const CLI::Option* o) {
  if (o->get_expected_max() == 0 || o->get_type_size() == 0) return "-";  // a flag
  const std::string t = o->get_type_name();
  const size_t open = t.find('{');
  if (open != std::string::npos) {
    const size_t close = t.find('}', open);
    if (close != std::string::npos) return t.substr(open, close - open + 1);
  }
  const std::string base = t.substr(0, t.find(':'));
  return base.empty() ? "TEXT" : base;
}

std::vector<std::string> option_names(const CLI::Option* o) {
  std::vector<std::string> out;
  for (const auto& s : o->get_snames()) out.push_back("-" + s);
  for (const auto& l : o->get_lnames()) out.push_back("--" + l);
  return out;
}

std::vector<std::string> choices(const std::string& kind) {
  std::vector<std::string> out;
  if (kind.size() < 2 || kind.front() != '{') return out;
  size_t pos = 1;
  while (pos < kind.size() - 1) {
    const size_t comma = std::min(kind.find(',', pos), kind.size() - 1);
    out.push_back(kind.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

std::vector<std::string> scenario_names() {
  std::vector<std::string> out;
  for (const auto& b : sim::builtin_scenarios()) out.emplace_back(b.name);
  return out;
}

// The bash words completing a value of this kind (a compgen call).
std::string compgen_for(const std::string& kind) {
  if (kind == "FILE") return "compgen -f -- \"$cur\"";
  if (kind == "DIR") return "compgen -d -- \"$cur\"";
  if (kind == "COMMAND") return "compgen -c -- \"$cur\"";
  std::vector<std::string> words;
  if (kind == "SCENARIO") words = scenario_names();
  if (kind == "SOURCE") {
    words.push_back("nvml");
    for (const auto& n : scenario_names()) words.push_back("sim:" + n);
  }
  if (kind.front() == '{') words = choices(kind);
  if (words.empty()) return "";  // a value to type: nothing to offer
  return fmt::format("compgen -W '{}' -- \"$cur\"", fmt::join(words, " "));
}

// `s` as a bash double-quoted word.
std::string bash_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string escape_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// One command's (or sub-command's) case in the completion function.
void bash_case(std::string& out, const std::string& key, const CLI::App* app) {
  std::map<std::string, std::vector<std::string>> by_kind;  // value kind -> option names
  std::vector<std::string> words;
  for (const auto* o : app->get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    if (o->get_positional() && o->nonpositional() == false) continue;
    for (const auto& n : option_names(o)) {
      words.push_back(n);
      by_kind[value_kind(o)].push_back(n);
    }
  }
  std::string positional = "FILE";
  bool has_positional = false;
  for (const auto* o : app->get_options())
    if (o->get_positional() && !o->nonpositional()) {
      positional = value_kind(o);
      has_positional = true;
      break;
    }
  for (const auto* s : app->get_subcommands({})) words.push_back(s->get_name());
  out += fmt::format("    '{}')\n", key);
  bool any_value = false;
  for (const auto& [kind, names] : by_kind) {
    if (kind == "-") continue;
    if (!any_value) out += "      case $prev in\n";
    any_value = true;
    const std::string gen = compgen_for(kind);
    out += fmt::format("        {}) {}return ;;\n", fmt::join(names, "|"),
                       gen.empty() ? std::string() : "mapfile -t COMPREPLY < <(" + gen + "); ");
  }
  if (any_value) out += "      esac\n";
  std::sort(words.begin(), words.end());
  out += fmt::format("      words='{}'\n", fmt::join(words, " "));
  std::string pgen;
  if (!app->get_subcommands({}).empty())
    pgen = fmt::format("compgen -W '{}' -- \"$cur\"", [&] {
      std::vector<std::string> n;
      for (const auto* s : app->get_subcommands({})) n.push_back(s->get_name());
      return fmt::format("{}", fmt::join(n, " "));
    }());
  else if (has_positional)
    pgen = compgen_for(positional);
  out += fmt::format("      positional={}\n", bash_quoted(pgen));
  out += "      ;;\n";
}

std::string bash_completion(const CLI::App& app) {
  std::string out =
      "# bash completion for gpudoctor, generated from its CLI definitions "
      "(`gpudoctor --dump-cli bash`).\n"
      "_gpudoctor() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
      "  local key='' words='' positional='' i w dashdash=0 n=0\n"
      "  # The command (and a sub-command such as `baseline save`): the first words that are not\n"
      "  # options; after `run ... --` the job's own command line.\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=${COMP_WORDS[i]}\n"
      "    if [[ $w == -- ]]; then dashdash=$((COMP_CWORD - i)); break; fi\n"
      "    [[ $w == -* ]] && continue\n"
      "    if [[ -z $key ]]; then key=$w; n=1\n"
      "    elif [[ $n == 1 && $key == baseline && $w =~ ^(save|list|show)$ ]]; then key=\"$key "
      "$w\"; n=2\n"
      "    fi\n"
      "  done\n"
      "  if ((dashdash > 0)); then\n"
      "    if ((dashdash == 1)); then mapfile -t COMPREPLY < <(compgen -c -- \"$cur\");\n"
      "    else mapfile -t COMPREPLY < <(compgen -f -- \"$cur\"); fi\n"
      "    return\n"
      "  fi\n"
      "  case $key in\n";
  {
    std::vector<std::string> names;
    for (const auto* s : app.get_subcommands({})) names.push_back(s->get_name());
    out += fmt::format(
        "    '') words='{} --help --version'; positional={} ;;\n", fmt::join(names, " "),
        bash_quoted(fmt::format("compgen -W '{}' -- \"$cur\"", fmt::join(names, " "))));
  }
  for (const auto* s : app.get_subcommands({})) {
    bash_case(out, s->get_name(), s);
    for (const auto* sub : s->get_subcommands({}))
      bash_case(out, s->get_name() + " " + sub->get_name(), sub);
  }
  out +=
      "    *) return ;;\n"
      "  esac\n"
      "  if [[ $cur == -* || -z $positional ]]; then\n"
      "    [[ $cur == -* || -z $cur ]] && mapfile -t COMPREPLY < <(compgen -W \"$words\" -- "
      "\"$cur\")\n"
      "  else\n"
      "    mapfile -t COMPREPLY < <(eval \"$positional\")\n"
      "  fi\n"
      "}\n"
      "complete -o filenames -F _gpudoctor gpudoctor\n";
  return out;
}

void flags_lines(std::string& out, const std::string& key, const CLI::App* app) {
  for (const auto* o : app->get_options()) {
    if (o->get_group().empty()) continue;
    if (o->get_positional() && !o->nonpositional()) {
      out += fmt::format("{}\t{}\t{}\n", key, o->get_name(true, false), value_kind(o));
      continue;
    }
    for (const auto& n : option_names(o)) out += fmt::format("{}\t{}\t{}\n", key, n, value_kind(o));
  }
  for (const auto* sub : app->get_subcommands({}))
    flags_lines(out, key + " " + sub->get_name(), sub);
}

}  // namespace

const std::vector<CommandInfo>& command_table() {
  static const std::vector<CommandInfo> table = {
      {"demo",
       kStart,
       "simulated jobs with known problems, each diagnosed (no GPU needed)",
       {"demo [--scenarios a,b] [--seconds 300]"},
       add_demo_command},
      {"diagnose",
       kStart,
       "why a log's or a recording's GPUs did not do the work, and what to change",
       {"diagnose INPUT [--format text|json|markdown] [--gpus 0,2] [--since 10m] [--until 2h] "
        "[--fail-on warning|critical]",
        "diagnose --live --duration 60s",
        "diagnose --prometheus URL --since 2h [--selector '{Hostname=\"node7\"}'] "
        "[--group-by host|job|pod|none]"},
       add_diagnose_command},
      {"top",
       kStart,
       "live full-screen view of this machine's GPUs, with the live diagnosis",
       {"top [-i 500ms] [--gpus 0,2] [--once] [--no-color] [--ascii]"},
       add_top_command},
      {"status",
       kMachine,
       "every GPU once, with a verdict per GPU (WORKING, BUSY BUT IDLE, IDLE, ...)",
       {"status [--json] [--gpus 0,2] [--interval 250ms]"},
       add_status_command},
      {"watch",
       kMachine,
       "a line per GPU every interval, like nvidia-smi dmon, with the live cause",
       {"watch [-i 1s] [-c N] [--gpus 0,2] [--format table|csv|jsonl]"},
       add_watch_command},
      {"check",
       kMachine,
       "audit the machine once: pass, warn or fail for each setting, with the fix",
       {"check [--json] [--gpus 0,2] [--fail-on fail|warn|never]"},
       add_check_command},
      {"run",
       kMachine,
       "run a job, sample its GPUs and processes, diagnose it when it exits",
       {"run [-i 200ms] [-o run.db] [--report run.html] [--baseline NAME] -- CMD [ARGS...]"},
       add_run_command},
      {"record",
       kMachine,
       "sample every GPU into a recording (SQLite) until Ctrl-C or --duration",
       {"record -o run.db [-i 1s] [--duration 2h] [--gpus 0,2]"},
       add_record_command},
      {"report",
       kLogs,
       "the self-contained HTML report of a recording or a log, with charts",
       {"report INPUT -o run.html [--baseline NAME]"},
       add_report_command},
      {"baseline",
       kLogs,
       "keep a good run's figures; flag later runs that fall more than 20 % below",
       {"baseline save run.db --name NAME", "baseline list", "baseline show NAME"},
       add_baseline_command},
      {"import",
       kLogs,
       "convert a log gpudoctor reads into a recording",
       {"import LOG -o run.db [--columns LIST] [--power-limit W]"},
       add_import_command},
      {"export",
       kLogs,
       "write a recording or a log as CSV, JSON lines or nvidia-smi's own CSV",
       {"export INPUT --format csv|jsonl|smi-csv [-o FILE]"},
       add_export_command},
      {"serve",
       kFleet,
       "Prometheus exporter: /metrics (dcgm-exporter's names and more), /diagnosis, /healthz",
       {"serve [--listen 127.0.0.1:9835] [-i 1s] [--window 5m] [--web-config FILE] "
        "[--owner-labels LIST] [--max-connections 512]"},
       add_serve_command},
      {"fleet",
       kFleet,
       "where a cluster's GPU-hours went, and who lost the most, from Prometheus",
       {"fleet --prometheus URL [--since 7d] [--by job|user|namespace|pod|host|model|cause] "
        "[--top 20] [--format text|json|csv|markdown|html]"},
       add_fleet_command},
      {"capture",
       kReference,
       "record NVML readings into a capture file the stand-in NVML replays",
       {"capture -o FILE [--duration 30s] [-i 1s]"},
       add_capture_command},
      {"sim",
       kReference,
       "simulate a scenario faster than real time into a recording or a capture",
       {"sim SCENARIO[,gpus=N,model=M,seed=S,duration=D,interval=I] -o run.db|capture.json",
        "sim --list"},
       add_sim_command},
      {"fields",
       kReference,
       "every field gpudoctor reads: id, unit, meaning",
       {"fields [--markdown]"},
       add_fields_command},
      {"formats",
       kReference,
       "the log column names gpudoctor reads, by the tool that writes them",
       {"formats [--markdown]"},
       add_formats_command},
      {"models",
       kReference,
       "the GPU models gpudoctor knows: power limit, clocks, temperature, memory",
       {"models [TEXT] [--format text|json|markdown]"},
       add_models_command},
  };
  return table;
}

const CommandInfo* find_command(const std::string& name) {
  for (const auto& c : command_table())
    if (name == c.name) return &c;
  return nullptr;
}

std::vector<Command> build_cli(CLI::App& app) {
  app.formatter(std::make_shared<HelpFormatter>(help_width(), [](const CLI::App* sub) {
    const CommandInfo* c = find_command(sub->get_name());
    return c && sub->get_parent() && !sub->get_parent()->get_parent() ? std::string(c->summary)
                                                                      : std::string();
  }));
  app.footer(
      "New here? `gpudoctor demo` (no GPU needed), then `gpudoctor diagnose LOG` on a log you "
      "have, or `gpudoctor top` on a machine with NVIDIA GPUs. `gpudoctor COMMAND --help` for "
      "a command's options.");
  std::vector<Command> out;
  for (const auto& c : command_table()) {
    Command cmd = c.add(app);
    cmd.app->group(c.group);
    out.push_back(std::move(cmd));
  }
  return out;
}

std::string first_steps_text() {
  return "gpudoctor: tells you whether your NVIDIA GPUs really work, and why not.\n"
         "\n"
         "Start here:\n"
         "  gpudoctor demo             simulated jobs with known problems, diagnosed (no GPU "
         "needed)\n"
         "  gpudoctor diagnose LOG     why a log's GPUs did not work: nvidia-smi, DCGM, W&B, "
         "GPU-Z, ...\n"
         "  gpudoctor top              live view of this machine's GPUs (needs the NVIDIA "
         "driver)\n"
         "\n"
         "Every command: gpudoctor --help\n";
}

std::string dump_cli(const CLI::App& app, const std::string& kind) {
  if (kind == "bash") return bash_completion(app);
  if (kind == "commands") {
    std::string out;
    for (const auto& c : command_table()) out += fmt::format("{}\t{}\n", c.name, c.summary);
    return out;
  }
  if (kind == "flags") {
    std::string out;
    for (const auto* s : app.get_subcommands({})) flags_lines(out, s->get_name(), s);
    return out;
  }
  if (kind == "markdown") {
    std::string out = "| command | what it does |\n|---|---|\n";
    for (const auto& c : command_table()) {
      const CLI::App* sub = nullptr;
      for (const auto* s : app.get_subcommands({}))
        if (s->get_name() == c.name) sub = s;
      std::vector<std::string> cells;
      for (const auto& u : c.usages) cells.push_back("`gpudoctor " + escape_cell(u) + "`");
      out += fmt::format("| {} | {} |\n", fmt::join(cells, "<br>"),
                         escape_cell(sub ? sub->get_description() : c.summary));
    }
    return out;
  }
  return "";
}

}  // namespace gpudoctor::cli
