// End-to-end: `gpudoctor top` driven in a real terminal (tmux: send-keys, capture-pane, resize)
// with the simulator, and `--once` as scripts use it. Skipped where tmux is missing
// (scripts/install-deps.sh installs it).
#include <chrono>
#include <csignal>
#include <thread>

#include "e2e_util.hpp"

namespace {

using namespace e2e;
using namespace std::chrono_literals;

// A shell word for any text (quote() of e2e_util does not escape quotes inside).
std::string sq(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool have_tmux() {
  return run_shell("command -v tmux >/dev/null").exit_code == 0;
}

// A private tmux server running one window with the given command line.
class Tmux {
 public:
  Tmux() {
    static int n = 0;
    sock_ = (fs::temp_directory_path() / fmt::format("gd-top-{}-{}.sock", getpid(), ++n)).string();
    pid_file_ = sock_ + ".pid";
  }
  ~Tmux() {
    const int started = pid();
    tmux("kill-server");
    // Not left running should it outlive its terminal: in a sanitizer build, the leak check at
    // exit once waited forever on its stopped threads, spinning a core after the tests ended.
    if (started > 0) kill(started, SIGKILL);
    fs::remove(sock_);
    fs::remove(pid_file_);
  }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  // Starts `gpudoctor top ARGS` (with extra environment `env`) in a cols x rows terminal; when it
  // ends the pane prints "EXITED <status>" and stays open.
  void start(const std::string& env, const std::string& args, int cols, int rows) {
    const std::string inner =
        fmt::format("ulimit -c 0; echo $$ > {}; exec env {} LANG=C.UTF-8 {} top {}",
                    quote(pid_file_), env, GPUDOCTOR_BIN, args);
    const std::string pane = fmt::format("sh -c {}; echo EXITED $?; sleep 60", sq(inner));
    const auto r = run_shell(fmt::format("tmux -u -f /dev/null -S {} new-session -d -x {} -y {} {}",
                                         quote(sock_), cols, rows, sq(pane)));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // An interactive bash with job control (no rc files), where `gpudoctor top ARGS` is typed: a
  // stop signal stops it (in start()'s pane it would belong to an orphaned process group, where
  // the kernel discards stops).
  void start_in_shell(const std::string& args, int cols, int rows) {
    const auto r = run_shell(fmt::format(
        "tmux -u -f /dev/null -S {} new-session -d -x {} -y {} {}", quote(sock_), cols, rows,
        sq("env -i PATH=/usr/bin:/bin TERM=xterm LANG=C.UTF-8 bash --norc --noprofile -i")));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string line = fmt::format("sh -c 'echo $$ > {}; exec {} top {}'; echo EXITED $?",
                                         pid_file_, GPUDOCTOR_BIN, args);
    keys(sq(line) + " Enter");
  }
  Result tmux(const std::string& args) {
    return run_shell(fmt::format("tmux -S {} {}", quote(sock_), args));
  }
  std::string screen(bool escapes = false) {
    return tmux(escapes ? "capture-pane -p -e" : "capture-pane -p").out;
  }
  void keys(const std::string& keys) { tmux("send-keys " + keys); }
  std::string display(const std::string& format) {
    auto out = tmux("display -p " + sq(format)).out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  // Waits until the screen shows `text` (10 s at most); returns whether it did.
  bool wait_for(const std::string& text, std::chrono::milliseconds limit = 10s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (screen().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  bool wait_gone(const std::string& text, std::chrono::milliseconds limit = 10s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (screen().find(text) == std::string::npos) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  int pid() {
    std::ifstream in(pid_file_);
    int p = 0;
    in >> p;
    return p;
  }
  // The terminal is back as it was: normal screen, cursor visible, autowrap on.
  void expect_restored() {
    EXPECT_EQ(display("#{alternate_on} #{cursor_flag} #{wrap_flag}"), "0 1 1");
  }

 private:
  std::string sock_, pid_file_;
};

// The line of the screen that starts with `prefix`, or "".
std::string line_starting(const std::string& screen, const std::string& prefix) {
  for (const auto& l : lines_of(screen))
    if (l.rfind(prefix, 0) == 0) return l;
  return "";
}

TEST(Top, ShowsSelectsDetailsResizesAndQuitsInATerminal) {
  if (!have_tmux()) GTEST_SKIP() << "tmux not installed";
  Tmux t;
  t.start("", "--source sim:straggler,gpus=4,speed=5 -i 250ms", 120, 40);
  ASSERT_TRUE(t.wait_for("BUSY BUT IDLE")) << t.screen();
  std::string s = t.screen();
  EXPECT_EQ(lines_of(s)[0].rfind(" gpudoctor top", 0), 0u) << s;
  EXPECT_NE(line_starting(s, "GPU UTIL").find("DIAGNOSIS"), std::string::npos) << s;
  EXPECT_NE(line_starting(s, "> 0").find("BUSY BUT IDLE"), std::string::npos) << s;
  EXPECT_NE(line_starting(s, "  2").find("WORKING"), std::string::npos) << s;
  EXPECT_NE(s.find("Findings"), std::string::npos);
  EXPECT_NE(s.find("History"), std::string::npos);
  EXPECT_NE(s.find("Processes"), std::string::npos);
  // The live diagnosis names the straggler within seconds (10 simulated seconds of data).
  ASSERT_TRUE(t.wait_for("GPU 2 is the straggler")) << t.screen();
  EXPECT_NE(line_starting(t.screen(), "> 0").find("communication wait"), std::string::npos);

  // Arrows select, Enter shows the selected GPU in detail, Esc goes back.
  t.keys("Down Down");
  ASSERT_TRUE(t.wait_for("> 2")) << t.screen();
  t.keys("Enter");
  ASSERT_TRUE(t.wait_for("GPU 2 · NVIDIA H100 80GB HBM3")) << t.screen();
  s = t.screen();
  EXPECT_NE(s.find("now: WORKING"), std::string::npos) << s;
  EXPECT_NE(line_starting(s, "SM activity").find("%"), std::string::npos) << s;
  EXPECT_NE(line_starting(s, "GPU  2 clock"), "") << s;
  t.keys("Escape");
  ASSERT_TRUE(t.wait_for("GPU UTIL")) << t.screen();
  t.keys("1");
  ASSERT_TRUE(t.wait_for("> 1")) << t.screen();

  // A small terminal drops the processes panel, never the GPUs; nothing is garbled.
  t.tmux("resize-window -x 60 -y 12");
  ASSERT_TRUE(t.wait_gone("Processes")) << t.screen();
  s = t.screen();
  const auto lines = lines_of(s);
  ASSERT_GE(lines.size(), 7u) << s;
  EXPECT_EQ(lines[0].rfind(" gpudoctor top", 0), 0u) << s;
  EXPECT_EQ(lines[1].rfind("GPU UTIL", 0), 0u) << s;
  for (const char* row : {"  0 100%", "> 1 100%", "  2 100%", "  3 100%"})
    EXPECT_NE(line_starting(s, row), "") << row << "\n" << s;
  EXPECT_NE(s.find("Findings"), std::string::npos) << s;
  t.tmux("resize-window -x 120 -y 40");
  ASSERT_TRUE(t.wait_for("Processes")) << t.screen();
  EXPECT_NE(line_starting(t.screen(), "> 1").find("BUSY BUT IDLE"), std::string::npos);

  // Help, pause, process sort.
  t.keys("h");
  ASSERT_TRUE(t.wait_for("gpudoctor top: keys")) << t.screen();
  t.keys("x");
  ASSERT_TRUE(t.wait_gone("gpudoctor top: keys")) << t.screen();
  t.keys("p");
  ASSERT_TRUE(t.wait_for("PAUSED")) << t.screen();
  t.keys("p s");
  ASSERT_TRUE(t.wait_for("sorted by SM share")) << t.screen();
  EXPECT_EQ(t.screen().find("PAUSED"), std::string::npos);

  t.keys("q");
  ASSERT_TRUE(t.wait_for("EXITED 0")) << t.screen();
  t.expect_restored();
}

TEST(Top, CtrlCSigtermAndACrashGiveTheTerminalBack) {
  if (!have_tmux()) GTEST_SKIP() << "tmux not installed";
  {
    Tmux t;
    t.start("", "--source sim:healthy,gpus=2", 100, 30);
    ASSERT_TRUE(t.wait_for("GPU UTIL")) << t.screen();
    t.keys("C-c");
    ASSERT_TRUE(t.wait_for("EXITED 0")) << t.screen();
    t.expect_restored();
  }
  {
    Tmux t;
    t.start("", "--source sim:healthy,gpus=2", 100, 30);
    ASSERT_TRUE(t.wait_for("GPU UTIL")) << t.screen();
    ASSERT_GT(t.pid(), 0);
    ASSERT_EQ(kill(t.pid(), SIGTERM), 0);
    ASSERT_TRUE(t.wait_for("EXITED 0")) << t.screen();
    t.expect_restored();
  }
  {
    Tmux t;
    t.start("", "--source sim:healthy,gpus=2", 100, 30);
    ASSERT_TRUE(t.wait_for("GPU UTIL")) << t.screen();
    ASSERT_GT(t.pid(), 0);
    ASSERT_EQ(kill(t.pid(), SIGSEGV), 0);  // what a crash delivers
    ASSERT_TRUE(t.wait_for("EXITED 139")) << t.screen();
    t.expect_restored();
  }
}

// `kill -TSTP` from outside (Ctrl-Z itself is a key in raw mode): the terminal comes back before
// the stop, and full screen again after `fg`, with the view redrawn.
TEST(Top, StopAndContinueUnderJobControl) {
  if (!have_tmux()) GTEST_SKIP() << "tmux not installed";
  Tmux t;
  t.start_in_shell("--source sim:healthy,gpus=2", 100, 30);
  ASSERT_TRUE(t.wait_for("GPU UTIL")) << t.screen();
  ASSERT_GT(t.pid(), 0);
  auto alternate_becomes = [&](const char* want) {
    for (int i = 0; i < 100 && t.display("#{alternate_on}") != want; ++i)
      std::this_thread::sleep_for(50ms);
    return t.display("#{alternate_on}") == want;
  };
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(kill(t.pid(), SIGTSTP), 0);
    ASSERT_TRUE(t.wait_for("Stopped")) << t.screen();
    ASSERT_TRUE(alternate_becomes("0")) << "round " << round;
    t.expect_restored();
    t.keys("fg Enter");
    ASSERT_TRUE(alternate_becomes("1")) << "round " << round;
    ASSERT_TRUE(t.wait_for("GPU UTIL")) << t.screen();
  }
  // After a stop, bash drops the rest of the line (the EXITED echo): watch the process instead.
  const int pid = t.pid();
  t.keys("q");
  for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_NE(kill(pid, 0), 0) << "top did not quit";
  t.expect_restored();
}

TEST(Top, ColoursUnlessNoColor) {
  if (!have_tmux()) GTEST_SKIP() << "tmux not installed";
  const std::regex colour("\x1b\\[(3[1-6]|90)m");
  {
    Tmux t;
    t.start("-u NO_COLOR", "--source sim:healthy,gpus=2", 100, 30);
    ASSERT_TRUE(t.wait_for("GPU UTIL")) << t.screen();
    EXPECT_TRUE(std::regex_search(t.screen(true), colour));
  }
  for (const auto& [env, flag] :
       {std::pair<std::string, std::string>{"NO_COLOR=1", ""},
        std::pair<std::string, std::string>{"-u NO_COLOR", "--no-color"}}) {
    Tmux t;
    t.start(env, "--source sim:healthy,gpus=2 " + flag, 100, 30);
    ASSERT_TRUE(t.wait_for("GPU UTIL")) << t.screen();
    const std::string s = t.screen(true);
    EXPECT_FALSE(std::regex_search(s, colour)) << env << " " << flag;
    EXPECT_NE(s.find("\x1b[7m"), std::string::npos);  // reverse video is not colour
  }
}

TEST(Top, SixteenGpusScrollToTheSelectedOne) {
  if (!have_tmux()) GTEST_SKIP() << "tmux not installed";
  Tmux t;
  t.start("", "--source sim:healthy,gpus=16", 100, 14);
  ASSERT_TRUE(t.wait_for("of 16")) << t.screen();
  t.keys("End");
  ASSERT_TRUE(t.wait_for(">15")) << t.screen();
  t.keys("1 2");
  ASSERT_TRUE(t.wait_for(">12")) << t.screen();
  t.keys("q");
  ASSERT_TRUE(t.wait_for("EXITED 0")) << t.screen();
}

TEST(Top, OncePrintsOnePlainFrame) {
  const auto r = run_with("LANG=C.UTF-8", "top --source sim:healthy,gpus=8 --once");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 10u) << r.out;
  ASSERT_LE(lines.size(), 40u) << r.out;
  EXPECT_EQ(lines[0].rfind(" gpudoctor top", 0), 0u);
  for (const auto& l : lines) {
    size_t cols = 0;
    for (unsigned char c : l) cols += (c & 0xC0) != 0x80;
    EXPECT_LE(cols, 120u) << l;
  }
  for (int g = 0; g < 8; ++g)
    EXPECT_NE(line_starting(r.out, fmt::format("{}{:>2}", g == 0 ? '>' : ' ', g)), "") << g;
  EXPECT_NE(r.out.find("Findings"), std::string::npos);
  EXPECT_EQ(r.out.find("q quit"), std::string::npos);  // no key line in a printed frame

  const auto ascii = run_with("LANG=C.UTF-8", "top --source sim:healthy,gpus=2 --once --ascii");
  ASSERT_EQ(ascii.exit_code, 0) << ascii.err;
  for (unsigned char c : ascii.out) ASSERT_LT(c, 0x80) << ascii.out;
}

TEST(Top, OnceWithWarmupHasFindings) {
  const auto r =
      run_with("LANG=C.UTF-8",
               "top --source sim:data_starvation,gpus=2,speed=40 -i 100ms --warmup 4s --once");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Data starvation for"), std::string::npos) << r.out;
  EXPECT_NE(line_starting(r.out, ">").find("data starvation"), std::string::npos) << r.out;
}

TEST(Top, LostGpuOnTheStandInNvml) {
  const auto r = run("faults-lost", "top --once --warmup 1s");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(line_starting(r.out, "  1").find("LOST"), std::string::npos) << r.out;
  EXPECT_EQ(line_starting(r.out, "> 0").find("LOST"), std::string::npos) << r.out;
}

TEST(Top, NeedsATerminalOrOnce) {
  const auto r = run_with("", "top --source sim:healthy </dev/null >/dev/null");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--once"), std::string::npos) << r.err;
  EXPECT_EQ(run_with("", "top --source sim:healthy --warmup 1s").exit_code, 2);
  EXPECT_EQ(run_with("", "top --source sim:healthy --once -i 20s").exit_code, 2);
}

}  // namespace
