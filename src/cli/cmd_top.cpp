// gpudoctor top: the live terminal view. A sampling thread reads the source every interval, feeds
// a TopCollector (assessment, history, processes, live diagnosis every few seconds) and hands a
// copy of its TopState to the UI thread, which redraws (only the cells that changed) on each new
// state, key or resize. --once prints one frame as plain text for scripts.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "analysis/config.hpp"
#include "cli/common.hpp"
#include "tui/terminal.hpp"
#include "tui/top_collector.hpp"
#include "tui/top_view.hpp"

namespace gpudoctor::cli {
namespace {

using namespace std::chrono;

bool env_says_utf8() {
  for (const char* var : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    std::string s(v);
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s.find("utf-8") != std::string::npos || s.find("utf8") != std::string::npos;
  }
  return false;
}

bool colour_wanted(bool no_color_flag) {
  if (no_color_flag) return false;
  if (const char* nc = std::getenv("NO_COLOR"); nc && *nc) return false;  // no-color.org
  if (const char* term = std::getenv("TERM"); term && std::string(term) == "dumb") return false;
  return true;
}

struct Settings {
  milliseconds interval{500};
  std::optional<milliseconds> warmup;  // none: until the live diagnosis has run (at most 30 s)
  bool unicode = true;
  bool color = true;
};

int run_once(Source& src, tui::TopCollector& collector, const Settings& cfg) {
  install_stop_handlers();
  collector.add(src.sample());
  const auto start = steady_clock::now();
  const auto until = start + (cfg.warmup ? std::max(*cfg.warmup, cfg.interval) : seconds(30));
  if (!cfg.warmup && isatty(STDERR_FILENO))
    fmt::print(stderr,
               "gpudoctor top: sampling until the live diagnosis has run (10 samples over 10 s; "
               "--warmup 0s for the readings alone)\n");
  for (auto next = start + cfg.interval; next <= until; next += cfg.interval) {
    if (!cfg.warmup && collector.state().diagnosed) break;
    if (!sleep_until(next)) break;
    collector.add(src.sample());
  }
  collector.diagnose_now();
  int rows = 40, cols = 120;
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
      ws.ws_col > 0)
    rows = ws.ws_row, cols = ws.ws_col;
  tui::ViewState view;
  view.unicode = cfg.unicode;
  view.key_line = false;
  const std::string text = tui::render_top(collector.state(), view, rows, cols).text(true);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
}

// The sampling thread's side: the latest state, and a pipe that wakes the UI when it changes.
struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::shared_ptr<const tui::TopState> latest;
  int wake_write = -1;
};

void sample_loop(Source& src, tui::TopCollector& collector, Shared& shared, milliseconds interval) {
  auto next = steady_clock::now();
  for (;;) {
    collector.add(src.sample());
    auto snapshot = std::make_shared<const tui::TopState>(collector.state());
    {
      std::lock_guard lock(shared.mu);
      shared.latest = std::move(snapshot);
    }
    const char byte = 1;
    [[maybe_unused]] const auto n = ::write(shared.wake_write, &byte, 1);  // full pipe: UI is awake
    next += interval;
    const auto now = steady_clock::now();
    if (now > next + interval) next = now;  // fell behind (slow source, suspended): start again
    std::unique_lock lock(shared.mu);
    if (shared.cv.wait_until(lock, next, [&] { return shared.stop; })) return;
  }
}

// Selects the GPU whose index the digits typed so far name (two digits typed within a second
// make 10-15).
struct DigitSelect {
  int pending = -1;
  steady_clock::time_point at;
  void key(int d, const tui::TopState& st, tui::ViewState& v) {
    auto select = [&](int index) {
      for (size_t i = 0; i < st.gpus.size(); ++i)
        if (static_cast<int>(st.gpus[i].info.index) == index) {
          v.selected = i;
          return true;
        }
      return false;
    };
    const auto now = steady_clock::now();
    if (pending >= 0 && now - at < seconds(1) && select(pending * 10 + d)) {
      pending = -1;
      return;
    }
    select(d);
    pending = d;
    at = now;
  }
};

int run_interactive(Source& src, tui::TopCollector& collector, const Settings& cfg) {
  // Handlers first: a signal between raw mode and their installation would leave the terminal
  // raw (they restore it only once the terminal has armed them, so early ones are harmless).
  tui::install_signal_handlers();
  std::signal(SIGPIPE, SIG_IGN);
  auto opened = tui::Terminal::open(STDIN_FILENO, STDOUT_FILENO);
  if (!opened) return report(opened.error());
  tui::Terminal& term = *opened.value();

  int wake[2];
  if (pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    term.restore();
    return report(failure("cannot create a pipe"));
  }
  Shared shared;
  shared.wake_write = wake[1];
  std::shared_ptr<const tui::TopState> shown =
      std::make_shared<const tui::TopState>(collector.state());

  std::thread sampler;
  {
    const tui::SignalBlock block;  // the sampling thread leaves these to the UI thread
    sampler = std::thread(sample_loop, std::ref(src), std::ref(collector), std::ref(shared),
                          cfg.interval);
  }

  tui::ViewState view;
  view.unicode = cfg.unicode;
  tui::AnsiWriter writer(cfg.color);
  DigitSelect digits;
  bool dirty = true, quit = false;
  tui::KeyDecoder keys_in;
  while (!quit && !tui::quit_requested() && !term.gone()) {
    if (tui::take_continued()) {
      term.resume();
      writer.invalidate();
      dirty = true;
    }
    if (tui::take_resized()) {
      writer.invalidate();
      dirty = true;
    }
    if (dirty) {
      const auto [rows, cols] = term.size();
      const auto screen = tui::render_top(*shown, view, rows, cols);
      if (!term.write(writer.update(screen))) break;
      dirty = false;
    }
    bool woken = false;
    // A key sequence cut between reads waits for the rest, at most 50 ms.
    const std::string input = term.read_input(keys_in.pending() ? 50 : 1000, wake[0], &woken);
    std::vector<tui::Key> keys = keys_in.feed(input);
    if (input.empty() && !woken && keys_in.pending()) keys = keys_in.flush();
    if (woken && !view.paused) {
      std::lock_guard lock(shared.mu);
      if (shared.latest && shared.latest != shown) shown = shared.latest, dirty = true;
    }
    const size_t n = shown->gpus.size();
    for (const auto& key : keys) {
      using tui::KeyCode;
      dirty = true;
      if (key.code == KeyCode::kCtrlC || (key.code == KeyCode::kChar && key.ch == 'q')) {
        quit = true;
        break;
      }
      if (view.help) {  // any other key closes the help
        view.help = false;
        continue;
      }
      switch (key.code) {
        case KeyCode::kCtrlZ:
          term.suspend();
          writer.invalidate();
          break;
        case KeyCode::kCtrlL:
          writer.invalidate();
          break;
        case KeyCode::kUp:
          if (view.selected > 0) --view.selected;
          break;
        case KeyCode::kDown:
          if (view.selected + 1 < n) ++view.selected;
          break;
        case KeyCode::kHome:
          view.selected = 0;
          break;
        case KeyCode::kEnd:
          view.selected = n ? n - 1 : 0;
          break;
        case KeyCode::kEnter:
          view.detail = !view.detail;
          break;
        case KeyCode::kEscape:
        case KeyCode::kBackspace:
        case KeyCode::kLeft:
          view.detail = false;
          break;
        case KeyCode::kChar:
          switch (key.ch) {
            case 'k':
              if (view.selected > 0) --view.selected;
              break;
            case 'j':
              if (view.selected + 1 < n) ++view.selected;
              break;
            case 'p':
              view.paused = !view.paused;
              if (!view.paused) {
                std::lock_guard lock(shared.mu);
                if (shared.latest) shown = shared.latest;
              }
              break;
            case 'h':
            case '?':
              view.help = true;
              break;
            case 's':
              view.sort = tui::next_sort(view.sort);
              break;
            default:
              if (key.ch >= '0' && key.ch <= '9') digits.key(key.ch - '0', *shown, view);
              break;
          }
          break;
        default:
          break;
      }
    }
  }
  {
    std::lock_guard lock(shared.mu);
    shared.stop = true;
  }
  shared.cv.notify_all();
  term.restore();  // the shell prompt comes back now, even while a GPU call finishes
  sampler.join();
  ::close(wake[0]);
  ::close(wake[1]);
  return kExitOk;
}

}  // namespace

Command add_top_command(CLI::App& root) {
  struct Opts {
    SourceFlags source;
    std::string interval = "500ms";
    std::string history = "3m";
    std::string window = "5m";
    std::string warmup;
    std::string config;
    bool once = false;
    bool no_color = false;
    bool ascii = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = root.add_subcommand(
      "top",
      "Live full-screen view: per GPU bars for util, SM activity, power against the default "
      "limit, efficiency, memory, temperature and SM clock, clock event reasons, the instant "
      "verdict and the live diagnosis; findings, history sparklines and processes. Keys: q quit, "
      "arrows or 0-9 select, Enter detail, p pause, s sort processes, h help.");
  add_source_flags(*cmd, opts->source);
  cmd->add_option("-i,--interval", opts->interval,
                  "Sampling and redraw interval (100ms-10s; 500ms redraws at 2 Hz)")
      ->capture_default_str();
  cmd->add_option("--history", opts->history, "How much history the sparklines show")
      ->capture_default_str();
  cmd->add_option("--window", opts->window,
                  "How much of the recent past the live diagnosis judges (it runs every 5 s)")
      ->capture_default_str();
  cmd->add_option("--config", opts->config,
                  "JSON file of diagnosis thresholds to override (gpudoctor diagnose "
                  "--print-config)")
      ->type_name("FILE");
  cmd->add_flag("--once", opts->once,
                "Print one frame as plain text (the terminal's size, or 120x40 when not a "
                "terminal) and exit");
  cmd->add_option("--warmup", opts->warmup,
                  "With --once: sample this long before printing (default: until the live "
                  "diagnosis has run, about 10 s; 0s for the readings alone)");
  cmd->add_flag("--no-color", opts->no_color, "No colours (also when NO_COLOR is set)");
  cmd->add_flag("--ascii", opts->ascii,
                "ASCII bars and sparklines (default when the locale is not UTF-8)");

  return {cmd, [opts]() -> int {
            Settings cfg;
            auto interval = parse_duration_flag("--interval", opts->interval, milliseconds(100));
            if (!interval) return report(interval.error());
            if (interval.value() > seconds(10))
              return report(usage_error("--interval must be at most 10s"));
            cfg.interval = interval.value();
            auto history = parse_duration_flag("--history", opts->history, seconds(5));
            if (!history) return report(history.error());
            auto window = parse_duration_flag("--window", opts->window, seconds(10));
            if (!window) return report(window.error());
            if (!opts->warmup.empty()) {
              if (!opts->once) return report(usage_error("--warmup needs --once"));
              auto w = parse_duration_flag("--warmup", opts->warmup, milliseconds(0));
              if (!w) return report(w.error());
              cfg.warmup = w.value();
            }
            tui::CollectorOptions co;
            if (!opts->config.empty()) {
              auto c = load_diagnosis_config(opts->config);
              if (!c) return report(c.error());
              co.config = c.value();
            }
            co.history_s = duration<double>(history.value()).count();
            co.window_s = duration<double>(window.value()).count();
            co.interval_s = duration<double>(cfg.interval).count();
            cfg.unicode = !opts->ascii && env_says_utf8();
            cfg.color = colour_wanted(opts->no_color);

            // A GPU that does not answer within most of an interval must not delay the others.
            std::optional<tui::SignalBlock> block;  // the source's worker threads too
            if (!opts->once) block.emplace();
            auto src = open_source_from(
                opts->source,
                std::clamp(cfg.interval * 3 / 4, milliseconds(50), milliseconds(1000)));
            block.reset();
            if (!src) return report(src.error());
            Source& s = *src.value();
            if (s.devices().empty()) {
              fmt::print(stderr, "gpudoctor: no NVIDIA GPU found ({})\n", s.description());
              return kExitFailure;
            }
            tui::TopCollector collector(opts->source.source, s.system(), s.devices(), co);
            // Simulated processes are not on this host: their pids mean nothing here.
            if (opts->source.source.rfind("sim", 0) != 0)
              collector.set_process_lookup(tui::host_process);
            return opts->once ? run_once(s, collector, cfg) : run_interactive(s, collector, cfg);
          }};
}

}  // namespace gpudoctor::cli
