#include "cli/common.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "core/duration.hpp"
#include "formats/load.hpp"
#include "report/diagnosis_report.hpp"
#include "report/json_stream.hpp"

namespace gpudoctor::cli {
namespace {
std::atomic<int> g_signals{0};

extern "C" void on_signal(int sig) {
  if (g_signals.fetch_add(1) >= 1) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);  // second Ctrl-C: stop now
  }
}
}  // namespace

int report(const Error& e) {
  fmt::print(stderr, "gpudoctor: {}\n", e.message);
  return static_cast<int>(e.kind);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking writes return so the loop can notice
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() {
  return g_signals.load() > 0;
}

bool sleep_until(std::chrono::steady_clock::time_point until) {
  using namespace std::chrono;
  while (!stop_requested()) {
    const auto now = steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(std::min<steady_clock::duration>(until - now, milliseconds(20)));
  }
  return false;
}

void add_source_flags(CLI::App& cmd, SourceFlags& flags) {
  cmd.add_option("--source", flags.source,
                 "Where readings come from: nvml (the NVIDIA driver; set GPUDOCTOR_NVML_LIB to use "
                 "another libnvidia-ml.so.1), or sim:SCENARIO[,gpus=N,model=M,seed=S,speed=X] "
                 "(the simulator; `gpudoctor sim --list` names the scenarios)")
      ->capture_default_str()
      ->type_name("SOURCE");
  cmd.add_option("--gpus", flags.gpus, "GPU indices to read, e.g. 0,2 (default: all)");
  cmd.add_option("--job-mapping-dir", flags.job_mapping_dir,
                 "Directory of allocation files naming the job that holds each GPU "
                 "(dcgm-exporter's HPC job mapping, or jobstats' /run/gpustat); docs/owners.md")
      ->type_name("DIR");
  cmd.add_option("--kubelet-socket", flags.kubelet_socket,
                 "The kubelet's pod-resources socket, asked for the pods holding each GPU when it "
                 "exists (default for nvml: /var/lib/kubelet/pod-resources/kubelet.sock; none: "
                 "never asked); docs/owners.md")
      ->type_name("FILE");
}

Result<std::unique_ptr<Source>> open_source_from(const SourceFlags& flags,
                                                 std::chrono::milliseconds call_budget) {
  auto gpus = parse_gpu_list(flags.gpus);
  if (!gpus) return gpus.error();
  SourceOptions options;
  options.gpus = gpus.value();
  options.call_budget = call_budget;
  options.job_mapping_dir = flags.job_mapping_dir;
  options.kubelet_socket = flags.kubelet_socket;
  auto src = open_source(flags.source, options);
  if (!src && flags.source == "nvml") {
    // Where no driver answers, say what works without one.
    Error e = src.error();
    e.message +=
        "\n  no NVIDIA driver here? try the simulator, --source sim:straggler (`gpudoctor sim "
        "--list`\n  names the scenarios), `gpudoctor demo`, or `gpudoctor diagnose LOG` on a log "
        "from elsewhere";
    return e;
  }
  return src;
}

void print_source_notes(Source& s) {
  for (const auto& n : s.take_notes()) fmt::print(stderr, "gpudoctor: note: {}\n", n);
}

Result<std::chrono::milliseconds> parse_duration_flag(const std::string& flag,
                                                      const std::string& text,
                                                      std::chrono::milliseconds min) {
  auto d = parse_duration(text);
  if (!d) return usage_error(flag + ": " + d.error().message);
  if (d.value() < min)
    return usage_error(fmt::format("{} must be at least {}", flag, format_duration(min)));
  return d;
}

void add_input_flags(CLI::App& cmd, InputFlags& f) {
  cmd.add_option("--input-format", f.format,
                 fmt::format("How to read the input (auto detects it by content): "
                             "{} (docs/formats.md)",
                             fmt::join(input_formats(), ", ")))
      ->capture_default_str();
  cmd.add_option("--columns", f.columns,
                 "For a headerless nvidia-smi CSV (noheader): the --query-gpu list that made it");
  cmd.add_option(
      "--map", f.map,
      "Read the log's COLUMN (as its header or the notes name it) as FIELD (a field id of "
      "`gpudoctor fields`, or time, gpu, ignore); COLUMN may use * and ?. Any CSV or tool log. "
      "Repeatable.");
  cmd.add_option("--power-limit", f.power_limit_w,
                 "Power limit in W when the log has none (else taken from the GPU model table)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--gpu-name", f.gpu_name,
                 "For logs that do not name their GPUs (nvidia-smi dmon): the GPU model, e.g. "
                 "\"A100-SXM4-80GB\"; its power limit, clocks and temperatures come from the "
                 "model table");
}

LoadOptions load_options(const InputFlags& f) {
  LoadOptions o;
  o.input_format = f.format;
  o.power_limit_w = f.power_limit_w;
  o.gpu_name = f.gpu_name;
  for (const auto& m : f.map) {
    const auto eq = m.find('=');
    o.map.emplace_back(m.substr(0, eq), eq == std::string::npos ? "" : m.substr(eq + 1));
  }
  for (size_t pos = 0; pos < f.columns.size();) {
    const size_t comma = std::min(f.columns.find(',', pos), f.columns.size());
    std::string col = f.columns.substr(pos, comma - pos);
    while (!col.empty() && col.front() == ' ') col.erase(col.begin());
    while (!col.empty() && col.back() == ' ') col.pop_back();
    if (!col.empty()) o.columns.push_back(col);
    pos = comma + 1;
  }
  return o;
}

LoadOptions load_options(const InputFlags& f, const std::string& input) {
  LoadOptions o = load_options(f);
  if (input == "-") {
    install_stop_handlers();
    o.stop_reading = stop_requested;
    if (isatty(STDIN_FILENO))
      fmt::print(stderr,
                 "gpudoctor: reading a log from standard input, the terminal: paste it, "
                 "then Ctrl-D\n");
  }
  return o;
}

void print_json(const nlohmann::json& j) {
  write_json(stdout, j);
}

void print_json(const nlohmann::ordered_json& j) {
  write_json(stdout, j);
}

void print_json(const Diagnosis& d, nlohmann::ordered_json j) {
  write_json(stdout, j, "findings", d.findings.size(),
             [&](size_t i) { return finding_json(d.findings[i]); });
}

}  // namespace gpudoctor::cli
