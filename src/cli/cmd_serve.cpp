// gpudoctor serve: a Prometheus exporter. One sampling thread (this one) feeds the LiveExporter;
// the HTTP server's thread only hands out its latest snapshot, so a scrape never calls NVML.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include <fmt/format.h>

#include "analysis/config.hpp"
#include "cli/common.hpp"
#include "exporter/http_server.hpp"
#include "exporter/live_exporter.hpp"
#include "exporter/web_config.hpp"

namespace gpudoctor::cli {
namespace {

std::string default_hostname() {
  if (const char* node = std::getenv("NODE_NAME"); node && *node) return node;  // Kubernetes
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) return host;
  return "";
}

bool has_readings(const Frame& f) {
  for (const auto& d : f.devices) {
    if (d.lost) continue;
    for (const auto& r : d.readings)
      if (r.has_value()) return true;
  }
  return false;
}

const char* kIndexPage = R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>gpudoctor</title></head>
<body><h1>gpudoctor</h1>
<p>Why your NVIDIA GPUs are underused: metrics for Prometheus and a live diagnosis.</p>
<ul>
<li><a href="metrics">/metrics</a>: Prometheus metrics (dcgm-exporter's names where it has them)</li>
<li><a href="diagnosis">/diagnosis</a>: the live diagnosis over the window, as JSON</li>
<li><a href="healthz">/healthz</a>: ok while sampling works</li>
</ul></body></html>
)";

// Raises the soft open-file limit to the hard one (as Go programs do) and returns how many
// connections fit under it: each takes a descriptor, and a quarter more may be closing, beside
// room for the rest of serve (NVML's device files, /proc, the kubelet's socket, the event loop).
// When --max-connections does not fit, it is lowered and serve says so: connections over the
// limit are then turned away by the limit's rules (oldest idle gives way, else 503) instead of
// accept() failing, and sampling keeps the descriptors it needs.
size_t connections_within_open_file_limit(size_t max_connections) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return max_connections;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  constexpr rlim_t kRoom = 32;
  const rlim_t need = max_connections + max_connections / 4 + kRoom;
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) return max_connections;
  const size_t fit = std::max<size_t>(
      1, static_cast<size_t>(rl.rlim_cur > kRoom ? rl.rlim_cur - kRoom : 0) * 4 / 5);
  fmt::print(stderr,
             "gpudoctor serve: the open-file limit ({}) leaves room for {} connections: "
             "--max-connections lowered from {} (raise the limit, e.g. LimitNOFILE= in systemd)\n",
             rl.rlim_cur, fit, max_connections);
  return fit;
}

}  // namespace

Command add_serve_command(CLI::App& root) {
  struct Opts {
    SourceFlags source;
    std::string listen = "127.0.0.1:9835";
    std::string interval = "1s";
    std::string window = "5m";
    std::string web_config;
    std::string read_header_timeout = "10s";
    std::string idle_timeout = "2m";
    size_t max_connections = 512;
    size_t max_connections_per_address = 32;
    std::string config;
    std::string hostname;
    bool no_dcgm_names = false;
    bool expose_process_names = false;
    std::string owner_labels = "job,step,pod,namespace,container,user";
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "serve",
      "Export metrics for Prometheus on /metrics (dcgm-exporter's names and labels where it has "
      "the field, plus efficiency, busy-but-idle, clock event reasons and the findings of a live "
      "diagnosis), the live diagnosis as JSON on /diagnosis, and /healthz. Loopback only unless "
      "--listen says otherwise; SIGTERM or Ctrl-C stops.");
  add_source_flags(*cmd, opts->source);
  cmd->add_option("--listen", opts->listen,
                  "Address to listen on: host:port, [v6]:port, or :port for every interface, "
                  "IPv6 and IPv4")
      ->capture_default_str();
  cmd->add_option("-i,--interval", opts->interval, "Sampling interval")->capture_default_str();
  cmd->add_option("--window", opts->window, "How far back the live diagnosis looks")
      ->capture_default_str();
  cmd->add_option("--web-config", opts->web_config,
                  "TLS and basic authentication: a web configuration file as Prometheus' "
                  "exporters read it (tls_server_config, basic_auth_users with bcrypt hashes)")
      ->type_name("FILE");
  cmd->add_option("--read-header-timeout", opts->read_header_timeout,
                  "How long a client has to send a request's whole head (the TLS handshake "
                  "included); slower clients are cut off")
      ->capture_default_str();
  cmd->add_option("--idle-timeout", opts->idle_timeout,
                  "How long a keep-alive connection may wait between requests (above the scrape "
                  "interval, so a scraper keeps its connection)")
      ->capture_default_str();
  cmd->add_option("--max-connections", opts->max_connections,
                  "Connections held at once; at the limit the oldest idle one gives way, and a "
                  "client is answered 503 only when none can")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1000000}));
  cmd->add_option("--max-connections-per-address", opts->max_connections_per_address,
                  "Connections one client IP address may hold (its oldest idle one gives way "
                  "to its next)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1000000}));
  cmd->add_flag("--no-dcgm-names", opts->no_dcgm_names,
                "Export every field under gpudoctor's own names (gpudoctor_*) instead of "
                "dcgm-exporter's");
  cmd->add_flag("--expose-process-names", opts->expose_process_names,
                "Export the names of the compute processes on each GPU (gpudoctor_process_info)");
  cmd->add_option("--owner-labels", opts->owner_labels,
                  "Owner fields that become labels of gpudoctor_gpu_owner_info: any of job, step, "
                  "pod, namespace, container, user, or none (docs/owners.md)")
      ->capture_default_str();
  cmd->add_option("--hostname", opts->hostname,
                  "The Hostname label (default: $NODE_NAME, else the host name)");
  cmd->add_option("--config", opts->config,
                  "JSON file of diagnosis thresholds to override (gpudoctor diagnose "
                  "--print-config)")
      ->type_name("FILE");

  return {
      cmd, [opts]() -> int {
        auto interval =
            parse_duration_flag("--interval", opts->interval, std::chrono::milliseconds(10));
        if (!interval) return report(interval.error());
        auto window =
            parse_duration_flag("--window", opts->window, std::chrono::milliseconds(1000));
        if (!window) return report(window.error());
        LiveOptions live;
        live.source = opts->source.source;
        live.window_s = static_cast<double>(window->count()) / 1000.0;
        live.diagnosis_interval_s = std::max(10.0, static_cast<double>(interval->count()) / 1000.0);
        if (!opts->config.empty()) {
          auto c = load_diagnosis_config(opts->config);
          if (!c) return report(c.error());
          live.config = c.value();
        }
        HttpServerOptions server_options;
        server_options.listen = opts->listen;
        auto read_header = parse_duration_flag("--read-header-timeout", opts->read_header_timeout,
                                               std::chrono::milliseconds(100));
        if (!read_header) return report(read_header.error());
        auto idle = parse_duration_flag("--idle-timeout", opts->idle_timeout,
                                        std::chrono::milliseconds(1000));
        if (!idle) return report(idle.error());
        server_options.read_header_timeout = read_header.value();
        server_options.idle_timeout = idle.value();
        server_options.max_connections = connections_within_open_file_limit(opts->max_connections);
        server_options.max_connections_per_address =
            std::min(opts->max_connections_per_address, server_options.max_connections);
        if (auto l = parse_listen_address(opts->listen); !l) return report(l.error());
        if (!opts->web_config.empty()) {
          auto w = load_web_config(opts->web_config);
          if (!w) return report(w.error());
          server_options.web = std::move(w.value());
        }
        auto src = open_source_from(
            opts->source, std::clamp(interval.value() * 3 / 4, std::chrono::milliseconds(50),
                                     std::chrono::milliseconds(1000)));
        if (!src) return report(src.error());
        Source& s = *src.value();
        if (s.devices().empty()) {
          fmt::print(stderr, "gpudoctor: no NVIDIA GPU found ({})\n", s.description());
          return kExitFailure;
        }
        ExportOptions export_options;
        export_options.dcgm_names = !opts->no_dcgm_names;
        export_options.expose_process_names = opts->expose_process_names;
        auto owner_labels = parse_owner_labels(opts->owner_labels);
        if (!owner_labels) return report(owner_labels.error());
        export_options.owner_labels = owner_labels.value();
        export_options.hostname = opts->hostname.empty() ? default_hostname() : opts->hostname;
        export_options.source_name = opts->source.source.substr(0, opts->source.source.find(':'));
        LiveExporter exporter(s.system(), s.devices(), export_options, live);

        install_stop_handlers();
        std::signal(SIGPIPE, SIG_IGN);
        auto take_sample = [&] {
          const auto t0 = std::chrono::steady_clock::now();
          Frame f = s.sample();
          print_source_notes(s);
          const double took =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          const bool ok = has_readings(f);
          exporter.add_frame(std::move(f), took, ok);
        };
        take_sample();  // the first scrape already has data

        const auto stale_after = std::max(std::chrono::milliseconds(5000), interval.value() * 3);
        auto index = std::make_shared<const std::string>(kIndexPage);
        auto handler = [&exporter, index, stale_after](const HttpRequest& req) {
          const auto pub = exporter.latest();
          if (req.path == "/metrics") {
            const ExpositionFormat f = negotiate_format(req.header("accept"));
            HttpResponse r;
            r.content_type = std::string(content_type(f));
            r.body =
                f == ExpositionFormat::kOpenMetrics ? pub->metrics_openmetrics : pub->metrics_text;
            return r;
          }
          if (req.path == "/diagnosis") {
            if (!pub->diagnosis_json || pub->diagnosis_json->empty())
              return HttpResponse::text(503, "no diagnosis yet: the first window is not judged\n");
            HttpResponse r;
            r.content_type = "application/json";
            r.body = pub->diagnosis_json;
            return r;
          }
          if (req.path == "/healthz") {
            const auto age = std::chrono::steady_clock::now() - pub->made_at;
            if (age > stale_after)
              return HttpResponse::text(503,
                                        fmt::format("stale: the last sample is {:.0f} s old\n",
                                                    std::chrono::duration<double>(age).count()));
            return HttpResponse::text(200, "ok\n");
          }
          if (req.path == "/") {
            HttpResponse r;
            r.content_type = "text/html; charset=utf-8";
            r.body = index;
            return r;
          }
          return HttpResponse::text(404, "not found: see / for what is served\n");
        };
        auto server = HttpServer::start(server_options, handler);
        if (!server) return report(server.error());
        fmt::print(stderr, "gpudoctor serve: {} GPU{} from {}, on {}://{}/metrics\n",
                   s.devices().size(), s.devices().size() == 1 ? "" : "s", s.description(),
                   server.value()->tls() ? "https" : "http", server.value()->address());

        auto next = std::chrono::steady_clock::now() + interval.value();
        while (sleep_until(next)) {
          take_sample();
          next += interval.value();
          if (const auto now = std::chrono::steady_clock::now(); now > next) next = now;
        }
        server.value()->stop();
        fmt::print(stderr, "gpudoctor serve: stopped\n");
        return kExitOk;
      }};
}

}  // namespace gpudoctor::cli
