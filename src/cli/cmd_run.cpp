// gpudoctor run -- CMD: start the job with the terminal attached, sample its GPUs and its process
// tree until it exits, then say what held it back (diagnosis on stderr, a recording, an HTML
// report). The job comes first: gpudoctor's own failures are warnings, signals reach the job, and
// gpudoctor exits with the job's status.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "analysis/baseline.hpp"
#include "analysis/diagnosis.hpp"
#include "cli/common.hpp"
#include "host/audit.hpp"
#include "host/markers.hpp"
#include "host/proc.hpp"
#include "report/diagnosis_report.hpp"
#include "report/html_report.hpp"
#include "store/sqlite_store.hpp"

namespace gpudoctor::cli {
namespace {

volatile sig_atomic_t g_child = 0;

// Signals for the job: those the terminal sent to the whole foreground group (Ctrl-C, Ctrl-\)
// reached the job already; any other (kill, a scheduler's SIGTERM) is passed on.
extern "C" void forward_signal(int sig, siginfo_t* info, void*) {
  const pid_t child = static_cast<pid_t>(g_child);
  if (child <= 0) return;
  const bool from_terminal =
      (sig == SIGINT || sig == SIGQUIT) && info && info->si_code == SI_KERNEL;
  if (!from_terminal) kill(child, sig);
}

void install_forwarding() {
  struct sigaction sa {};
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);
}

std::string stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// GPUs the job used: those where NVML listed one of its processes; else those
// CUDA_VISIBLE_DEVICES names (indexes or UUIDs); else all.
std::vector<unsigned> job_gpus(const Recording& rec, const std::vector<pid_t>& pids,
                               const std::map<std::string, std::string>& env, std::string& how) {
  std::vector<unsigned> out;
  const std::set<pid_t> mine(pids.begin(), pids.end());
  for (const auto& g : rec.gpus)
    for (const auto& p : g.processes)
      if (mine.count(static_cast<pid_t>(p.pid))) {
        out.push_back(g.info.index);
        break;
      }
  if (!out.empty()) {
    how = "the GPUs where NVML listed the job's processes";
    return out;
  }
  if (const auto it = env.find("CUDA_VISIBLE_DEVICES"); it != env.end() && !it->second.empty()) {
    size_t pos = 0;
    const std::string& v = it->second;
    while (pos <= v.size()) {
      const size_t comma = std::min(v.find(',', pos), v.size());
      const std::string item = v.substr(pos, comma - pos);
      pos = comma + 1;
      for (const auto& g : rec.gpus)
        if ((!item.empty() && g.info.uuid == item) ||
            (!item.empty() && item.find_first_not_of("0123456789") == std::string::npos &&
             std::to_string(g.info.index) == item))
          out.push_back(g.info.index);
    }
    if (!out.empty()) {
      how = "CUDA_VISIBLE_DEVICES=" + it->second;
      return out;
    }
  }
  how = "all GPUs (no process of the job was seen on one, and CUDA_VISIBLE_DEVICES names none)";
  for (const auto& g : rec.gpus) out.push_back(g.info.index);
  return out;
}

}  // namespace

Command add_run_command(CLI::App& root) {
  struct Opts {
    SourceFlags source;
    std::string interval = "200ms";
    std::string output, report, baseline;
    bool quiet = false;
    std::vector<std::string> command;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "run",
      "Run a job (after --) with the terminal attached, sample its GPUs and its processes until "
      "it exits, then print the diagnosis on stderr and write a recording and an HTML report. "
      "Signals reach the job; gpudoctor exits with the job's status. Example: gpudoctor run -- "
      "python train.py");
  add_source_flags(*cmd, opts->source);
  cmd->add_option("-i,--interval", opts->interval, "Sampling interval")->capture_default_str();
  cmd->add_option("-o,--output", opts->output,
                  "Recording to write (default: gpudoctor-run-DATE-TIME.db)");
  cmd->add_option("--report", opts->report,
                  "HTML report to write (default: the recording's name "
                  "with .html)");
  cmd->add_option("--baseline", opts->baseline,
                  "Compare with a saved baseline (gpudoctor baseline save): a drop of more than "
                  "20 % in power, efficiency or throughput is flagged");
  cmd->add_flag("-q,--quiet", opts->quiet, "Only the diagnosis at the end; no audit at the start");
  cmd->add_option("command", opts->command, "The job and its arguments, after --")->required();
  return {
      cmd, [opts]() -> int {
        auto interval =
            parse_duration_flag("--interval", opts->interval, std::chrono::milliseconds(20));
        if (!interval) return report(interval.error());
        std::optional<Baseline> base;
        if (!opts->baseline.empty()) {
          auto b = load_baseline(opts->baseline);
          if (!b) return report(b.error());
          base = b.value();
        }
        const std::string stem = "gpudoctor-run-" + stamp();
        const std::string db_path = opts->output.empty() ? stem + ".db" : opts->output;
        std::string html_path = opts->report;
        if (html_path.empty()) {
          const auto dot = db_path.rfind('.');
          html_path =
              (dot == std::string::npos || dot == 0 ? db_path : db_path.substr(0, dot)) + ".html";
        }
        // GPUs: a failure to sample them is a warning, never a reason not to run the job.
        std::unique_ptr<Source> source;
        if (auto s = open_source_from(
                opts->source, std::clamp(interval.value() * 3 / 4, std::chrono::milliseconds(50),
                                         std::chrono::milliseconds(1000))))
          source = std::move(s.value());
        else
          fmt::print(stderr, "gpudoctor: {}; the job runs without GPU telemetry\n",
                     s.error().message);

        const auto env = host::current_environment();
        host::AuditInput audit_in;
        audit_in.env = env;
        audit_in.cores = host::usable_cores();
        audit_in.cpus = host::affinity_cpus();
        if (source) {
          audit_in.gpus = static_cast<int>(source->devices().size());
          for (const auto& d : source->devices()) audit_in.gpu_pci_bus_ids.push_back(d.pci_bus_id);
        }
        const auto audit = host::audit_environment(audit_in);
        if (!opts->quiet)
          for (const auto& a : audit)
            if (a.level != "pass")
              fmt::print(stderr, "gpudoctor: [{}] {}{}\n", a.level, a.message,
                         a.fix.empty() ? "" : " (fix: " + a.fix + ")");

        // The marker file the job may append step boundaries to.
        const char* tmp = std::getenv("TMPDIR");
        const std::string markers_path = fmt::format(
            "{}/gpudoctor-markers-{}.txt", tmp && *tmp ? tmp : "/tmp", static_cast<long>(getpid()));
        { std::ofstream(markers_path, std::ios::trunc).flush(); }

        Recording rec;
        rec.source = source ? "run: " + opts->source.source : "run";
        rec.command = opts->command;
        rec.audit = audit;
        rec.host.emplace();
        rec.host->cores = audit_in.cores;
        rec.start_unix_ms = now_unix_ms();
        if (source) {
          rec.system = source->system();
          for (const auto& d : source->devices()) {
            GpuSeries g;
            g.info = d;
            rec.gpus.push_back(std::move(g));
          }
        }
        std::unique_ptr<RecordingWriter> writer;
        {
          std::vector<DeviceInfo> devices;
          for (const auto& g : rec.gpus) devices.push_back(g.info);
          auto w =
              RecordingWriter::create(db_path, rec.system, devices, rec.source, rec.start_unix_ms);
          if (w) {
            writer = std::move(w.value());
            if (auto r = writer->set_run_info(rec.command, rec.host->cores, rec.audit); !r)
              writer.reset();
          } else {
            fmt::print(stderr, "gpudoctor: {}; no recording is written\n", w.error().message);
          }
        }

        // Start the job: same terminal, same process group (so Ctrl-C reaches it directly).
        std::vector<char*> argv;
        for (auto& a : opts->command) argv.push_back(a.data());
        argv.push_back(nullptr);
        const pid_t child = fork();
        if (child < 0)
          return report(failure(fmt::format("cannot start the job: {}", std::strerror(errno))));
        if (child == 0) {
          setenv("GPUDOCTOR_MARKERS", markers_path.c_str(), 1);
          execvp(argv[0], argv.data());
          fmt::print(stderr, "gpudoctor: cannot run {}: {}\n", argv[0], std::strerror(errno));
          _exit(errno == ENOENT ? 127 : 126);
        }
        g_child = child;
        install_forwarding();

        host::JobSampler sampler(child);
        host::MarkerReader markers(markers_path);
        int status = 0;
        bool exited = false;
        bool warned = false;
        auto warn_once = [&](const std::string& what) {
          if (!warned) fmt::print(stderr, "gpudoctor: {} (the job goes on)\n", what);
          warned = true;
        };
        const auto start = std::chrono::steady_clock::now();
        auto next = start;
        while (!exited) {
          const double t = static_cast<double>(now_unix_ms() - rec.start_unix_ms) / 1000.0;
          if (source) {
            Frame f = source->sample();
            // One timeline for the GPUs, the host and the markers: the wall clock (a
            // simulated source may run faster than real time).
            f.time_unix_ms = now_unix_ms();
            append_frame(rec, f);
            if (writer)
              if (auto r = writer->add(f); !r) warn_once(r.error().message), writer.reset();
          }
          HostSample h = sampler.sample(t);
          rec.host->samples.push_back(h);
          if (writer)
            if (auto r = writer->add_host(h); !r) warn_once(r.error().message), writer.reset();
          const size_t before = rec.markers.size();
          markers.poll(rec.start_unix_ms, rec.markers);
          if (writer)
            for (size_t i = before; i < rec.markers.size(); ++i)
              if (auto r = writer->add_marker(rec.markers[i]); !r)
                warn_once(r.error().message), writer.reset();
          next += interval.value();
          // Sleep until the next sample, waking as soon as the job ends.
          while (true) {
            const pid_t w = waitpid(child, &status, WNOHANG);
            if (w == child || (w < 0 && errno != EINTR)) {
              exited = true;
              break;
            }
            const auto now = std::chrono::steady_clock::now();
            if (now >= next) break;
            std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
                next - now, std::chrono::milliseconds(20)));
          }
          if (const auto now = std::chrono::steady_clock::now(); now > next + interval.value())
            next = now;
        }
        g_child = 0;
        markers.poll(rec.start_unix_ms, rec.markers);
        std::remove(markers_path.c_str());
        if (markers.bad_lines() > 0)
          rec.notes.push_back(
              fmt::format("{} line(s) in GPUDOCTOR_MARKERS were not markers "
                          "and were ignored",
                          markers.bad_lines()));
        if (writer)
          if (auto r = writer->close(); !r) warn_once(r.error().message), writer.reset();
        const int code = WIFEXITED(status)     ? WEXITSTATUS(status)
                         : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                               : 1;

        // The diagnosis of the job's GPUs.
        std::string how;
        const auto mine = job_gpus(rec, sampler.pids_seen(), env, how);
        Recording view;
        view.system = rec.system;
        view.start_unix_ms = rec.start_unix_ms;
        view.source = rec.source;
        view.notes = rec.notes;
        view.command = rec.command;
        view.host = rec.host;
        view.markers = rec.markers;
        view.audit = rec.audit;
        for (auto& g : rec.gpus)
          if (std::find(mine.begin(), mine.end(), g.info.index) != mine.end())
            view.gpus.push_back(std::move(g));
        if (!view.gpus.empty() && view.gpus.size() < rec.gpus.size())
          view.notes.push_back("diagnosed " + how);
        const Diagnosis d = diagnose(view);
        fmt::print(stderr, "\n{}", diagnosis_text(d));
        const auto steps = host::step_stats(view.markers);
        if (steps.steps > 0) {
          fmt::print(stderr, "\nSteps: {} steps, {:.1f} ms each", steps.steps,
                     steps.mean_step_s * 1000);
          if (!std::isnan(steps.mean_wait_s))
            fmt::print(stderr, " ({:.0f} % waiting for data, {:.0f} % computing)",
                       100 * steps.mean_wait_s / steps.mean_step_s,
                       100 * steps.mean_compute_s / steps.mean_step_s);
          if (!std::isnan(steps.throughput))
            fmt::print(stderr, ", {:.1f} samples/s", steps.throughput);
          fmt::print(stderr, "\n");
        }
        HtmlReportOptions ho;
        ho.title = "gpudoctor run";
        if (base) {
          auto c = compare_to_baseline(*base, baseline_of(view, d));
          for (const auto& r : c.regressions)
            fmt::print(stderr,
                       "gpudoctor: regression against baseline \"{}\": {} {:.0f} % lower ({:.3g} "
                       "-> {:.3g})\n",
                       base->name, r.metric, r.drop * 100, r.baseline, r.now);
          if (c.regressions.empty())
            fmt::print(stderr, "gpudoctor: within 20 % of baseline \"{}\"\n", base->name);
          if (c.scaling_efficiency)
            fmt::print(stderr,
                       "gpudoctor: scaling efficiency against the 1-GPU baseline: {:.0f} %\n",
                       *c.scaling_efficiency * 100);
          ho.baseline = std::move(c);
        }
        {
          std::ofstream out(html_path, std::ios::trunc);
          out << render_html_report(view, d, ho);
          if (!out)
            fmt::print(stderr, "gpudoctor: cannot write {}\n", html_path);
          else
            fmt::print(stderr, "gpudoctor: report {}\n", html_path);
        }
        if (writer) fmt::print(stderr, "gpudoctor: recording {}\n", db_path);
        fmt::print(stderr, "gpudoctor: the job exited with status {}\n", code);
        return code;
      }};
}

}  // namespace gpudoctor::cli
