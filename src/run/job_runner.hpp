// `gpudoctor run -- CMD`'s work as a library: start the job with the terminal attached, sample
// its GPUs, its process tree and its step markers until it exits, write the recording as it goes,
// and pick the GPUs that were the job's. The job comes first: gpudoctor's own failures are
// warnings, signals reach the job, and its exit status comes back. The CLI (cli/cmd_run.cpp)
// parses flags, then diagnoses and reports what this returns.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/recording.hpp"
#include "core/result.hpp"
#include "sources/source.hpp"

namespace gpudoctor {

struct JobRunOptions {
  std::vector<std::string> command;  // the job and its arguments
  std::chrono::milliseconds interval{200};
  std::string source_name;     // as given to --source, for the recording's source
  std::string recording_path;  // "" = no recording is written
  bool audit = true;           // say the environment audit's warnings before the job starts
};

struct JobRunResult {
  Recording recording;      // every GPU sampled, the host, the markers, the audit
  int exit_code = 0;        // the job's status (128 + signal when a signal ended it)
  bool recorded = false;    // the recording was written whole to recording_path
  std::vector<pid_t> pids;  // every process of the job seen
  std::map<std::string, std::string> env;
};

// Runs the job (fork and exec; a job that cannot start exits 127 or 126 like a shell's) with
// `source` sampling its GPUs (null: no GPU telemetry). `say` receives the lines to show the user
// (warnings, the audit) as they happen. Fails only when the job cannot be started at all.
Result<JobRunResult> run_job(const JobRunOptions& options, Source* source,
                             const std::function<void(std::string_view)>& say);

// The job's GPUs out of `run`: those where NVML listed one of its processes; else those
// CUDA_VISIBLE_DEVICES names (indexes or UUIDs); else all. The recording keeps everything else;
// a note says how the GPUs were chosen when they are not all of them.
Recording job_recording(JobRunResult&& run);

// Where `run` writes its recording and report when not told: $GPUDOCTOR_RUN_DIR, else
// $XDG_STATE_HOME/gpudoctor/runs, else ~/.local/state/gpudoctor/runs.
std::string default_run_dir();
// "<dir>/run-YYYYmmdd-HHMMSS" (local time): the stem of a run's files.
std::string run_file_stem(const std::string& dir);
// Creates `dir` and its parents (mkdir -p).
Result<Nothing> make_directories(const std::string& dir);

}  // namespace gpudoctor
