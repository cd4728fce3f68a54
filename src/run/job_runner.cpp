#include "run/job_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "host/audit.hpp"
#include "host/markers.hpp"
#include "host/proc.hpp"
#include "store/sqlite_store.hpp"

namespace gpudoctor {
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

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The recording writer, or none (said once) when it cannot be made.
std::unique_ptr<RecordingWriter> open_writer(const JobRunOptions& o, const Recording& rec,
                                             const std::function<void(std::string_view)>& say) {
  if (o.recording_path.empty()) return nullptr;
  std::vector<DeviceInfo> devices;
  for (const auto& g : rec.gpus) devices.push_back(g.info);
  auto w =
      RecordingWriter::create(o.recording_path, rec.system, devices, rec.source, rec.start_unix_ms);
  if (!w) {
    say(fmt::format("{}; no recording is written", w.error().message));
    return nullptr;
  }
  if (auto r = w.value()->set_run_info(rec.command, rec.host->cores, rec.audit); !r) {
    say(fmt::format("{}; no recording is written", r.error().message));
    return nullptr;
  }
  return std::move(w.value());
}

}  // namespace

Result<JobRunResult> run_job(const JobRunOptions& o, Source* source,
                             const std::function<void(std::string_view)>& say) {
  JobRunResult out;
  out.env = host::current_environment();
  host::AuditInput audit_in;
  audit_in.env = out.env;
  audit_in.cores = host::usable_cores();
  audit_in.cpus = host::affinity_cpus();
  if (source) {
    audit_in.gpus = static_cast<int>(source->devices().size());
    for (const auto& d : source->devices()) audit_in.gpu_pci_bus_ids.push_back(d.pci_bus_id);
  }
  const auto audit = host::audit_environment(audit_in);
  if (o.audit)
    for (const auto& a : audit)
      if (a.level != "pass")
        say(fmt::format("[{}] {}{}", a.level, a.message,
                        a.fix.empty() ? "" : " (fix: " + a.fix + ")"));

  // The marker file the job may append step boundaries to.
  const char* tmp = std::getenv("TMPDIR");
  const std::string markers_path = fmt::format(
      "{}/gpudoctor-markers-{}.txt", tmp && *tmp ? tmp : "/tmp", static_cast<long>(getpid()));
  { std::ofstream(markers_path, std::ios::trunc).flush(); }

  Recording& rec = out.recording;
  rec.source = source ? "run: " + o.source_name : "run";
  rec.command = o.command;
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
  std::unique_ptr<RecordingWriter> writer = open_writer(o, rec, say);

  // Start the job: same terminal, same process group (so Ctrl-C reaches it directly).
  std::vector<std::string> args = o.command;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    std::remove(markers_path.c_str());
    return failure(fmt::format("cannot start the job: {}", std::strerror(errno)));
  }
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
  auto lose_writer = [&](const Error& e) {
    if (!warned) say(fmt::format("{} (the job goes on)", e.message));
    warned = true;
    writer.reset();
  };
  auto next = std::chrono::steady_clock::now();
  while (!exited) {
    const double t = static_cast<double>(now_unix_ms() - rec.start_unix_ms) / 1000.0;
    if (source) {
      Frame f = source->sample();
      // One timeline for the GPUs, the host and the markers: the wall clock (a simulated source
      // may run faster than real time).
      f.time_unix_ms = now_unix_ms();
      append_frame(rec, f);
      if (writer)
        if (auto r = writer->add(f); !r) lose_writer(r.error());
    }
    HostSample h = sampler.sample(t);
    rec.host->samples.push_back(h);
    if (writer)
      if (auto r = writer->add_host(h); !r) lose_writer(r.error());
    const size_t before = rec.markers.size();
    markers.poll(rec.start_unix_ms, rec.markers);
    if (writer)
      for (size_t i = before; i < rec.markers.size() && writer; ++i)
        if (auto r = writer->add_marker(rec.markers[i]); !r) lose_writer(r.error());
    next += o.interval;
    // Sleep until the next sample, waking as soon as the job ends.
    while (true) {
      const pid_t w = waitpid(child, &status, WNOHANG);
      if (w == child || (w < 0 && errno != EINTR)) {
        exited = true;
        break;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= next) break;
      std::this_thread::sleep_for(
          std::min<std::chrono::steady_clock::duration>(next - now, std::chrono::milliseconds(20)));
    }
    if (const auto now = std::chrono::steady_clock::now(); now > next + o.interval) next = now;
  }
  g_child = 0;
  markers.poll(rec.start_unix_ms, rec.markers);
  std::remove(markers_path.c_str());
  if (markers.bad_lines() > 0)
    rec.notes.push_back(fmt::format(
        "{} line(s) in GPUDOCTOR_MARKERS were not markers and were ignored", markers.bad_lines()));
  if (writer)
    if (auto r = writer->close(); !r) lose_writer(r.error());
  out.recorded = writer != nullptr;
  out.exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                  : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                        : 1;
  out.pids = sampler.pids_seen();
  return out;
}

Recording job_recording(JobRunResult&& run) {
  Recording rec = std::move(run.recording);
  std::vector<unsigned> mine;
  std::string how;
  const std::set<pid_t> pids(run.pids.begin(), run.pids.end());
  for (const auto& g : rec.gpus)
    for (const auto& p : g.processes)
      if (pids.count(static_cast<pid_t>(p.pid))) {
        mine.push_back(g.info.index);
        break;
      }
  if (!mine.empty()) how = "the GPUs where NVML listed the job's processes";
  if (const auto it = run.env.find("CUDA_VISIBLE_DEVICES");
      mine.empty() && it != run.env.end() && !it->second.empty()) {
    const std::string& v = it->second;
    for (size_t pos = 0; pos <= v.size();) {
      const size_t comma = std::min(v.find(',', pos), v.size());
      const std::string item = v.substr(pos, comma - pos);
      pos = comma + 1;
      for (const auto& g : rec.gpus)
        if ((!item.empty() && g.info.uuid == item) ||
            (!item.empty() && item.find_first_not_of("0123456789") == std::string::npos &&
             std::to_string(g.info.index) == item))
          mine.push_back(g.info.index);
    }
    if (!mine.empty()) how = "CUDA_VISIBLE_DEVICES=" + it->second;
  }
  if (mine.empty()) return rec;  // all GPUs: no process of the job seen on one, none named
  const size_t all = rec.gpus.size();
  std::erase_if(rec.gpus, [&](const GpuSeries& g) {
    return std::find(mine.begin(), mine.end(), g.info.index) == mine.end();
  });
  if (rec.gpus.size() < all) rec.notes.push_back("diagnosed " + how);
  return rec;
}

std::string default_run_dir() {
  if (const char* d = std::getenv("GPUDOCTOR_RUN_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x)
    return std::string(x) + "/gpudoctor/runs";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.local/state/gpudoctor/runs";
}

std::string run_file_stem(const std::string& dir) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return dir + "/run-" + buf;
}

Result<Nothing> make_directories(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
      return failure(fmt::format("cannot create {}: {}", part, std::strerror(errno)));
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return failure(fmt::format("{} is not a directory", dir));
  return kOk;
}

}  // namespace gpudoctor
