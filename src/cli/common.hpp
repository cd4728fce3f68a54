// Shared pieces of the subcommands: exit codes, the stop flag set by Ctrl-C / SIGTERM, and
// interruptible sleeping. The CLI is thin: it parses flags and calls the library.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "analysis/diagnosis.hpp"
#include "core/result.hpp"
#include "formats/load.hpp"
#include "sources/source.hpp"

namespace gpudoctor::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "gpudoctor: <message>" on stderr and returns the error's exit code.
int report(const Error& e);

// Installs SIGINT/SIGTERM handlers that set the stop flag (a second Ctrl-C exits at once).
void install_stop_handlers();
bool stop_requested();
// Sleeps until `until` or until a stop is requested; returns false when stopped.
bool sleep_until(std::chrono::steady_clock::time_point until);

// Options every command that reads a live source takes.
struct SourceFlags {
  std::string source = "nvml";
  std::string gpus;
  std::string job_mapping_dir;
  std::optional<std::string> kubelet_socket;  // nullopt: the default
};
void add_source_flags(CLI::App& cmd, SourceFlags& flags);
// Opens the source the flags name, for the GPUs they select.
Result<std::unique_ptr<Source>> open_source_from(
    const SourceFlags& flags,
    std::chrono::milliseconds call_budget = std::chrono::milliseconds(500));
// Prints what the source learnt that the user should hear once (e.g. hidepid hides owners).
void print_source_notes(Source& s);
// Parses the duration given to `flag`, which must be at least `min`.
Result<std::chrono::milliseconds> parse_duration_flag(const std::string& flag,
                                                      const std::string& text,
                                                      std::chrono::milliseconds min);

// Options every command that reads a log takes (import, export, diagnose).
struct InputFlags {
  std::vector<std::string> map;
  std::string format = "auto";
  std::string columns;
  std::optional<double> power_limit_w;
  std::string gpu_name;
};
void add_input_flags(CLI::App& cmd, InputFlags& f);
LoadOptions load_options(const InputFlags& f);
// The same for reading `input`: for `-` (standard input), Ctrl-C stops the reading and what
// arrived is read (the stop handlers are installed).
LoadOptions load_options(const InputFlags& f, const std::string& input);

// A JSON document on standard output, indented by 2, then a line end: written as it is serialised,
// not built as text first (a long run's diagnosis is megabytes of JSON). Bytes that are not UTF-8
// in its strings (a name read from a log) are written as U+FFFD, as the other JSON outputs do.
void print_json(const nlohmann::json& j);
void print_json(const nlohmann::ordered_json& j);
// A diagnosis' JSON, its findings written one at a time (report/json_stream).
void print_json(const Diagnosis& d, nlohmann::ordered_json j);

struct Command {
  CLI::App* app;
  std::function<int()> run;
};
Command add_status_command(CLI::App& root);
Command add_check_command(CLI::App& root);
Command add_watch_command(CLI::App& root);
Command add_top_command(CLI::App& root);
Command add_capture_command(CLI::App& root);
Command add_fields_command(CLI::App& root);
Command add_formats_command(CLI::App& root);
Command add_models_command(CLI::App& root);
Command add_sim_command(CLI::App& root);
Command add_demo_command(CLI::App& root);
Command add_record_command(CLI::App& root);
Command add_import_command(CLI::App& root);
Command add_export_command(CLI::App& root);
Command add_diagnose_command(CLI::App& root);
Command add_fleet_command(CLI::App& root);
Command add_serve_command(CLI::App& root);
Command add_run_command(CLI::App& root);
Command add_report_command(CLI::App& root);
Command add_baseline_command(CLI::App& root);

}  // namespace gpudoctor::cli
