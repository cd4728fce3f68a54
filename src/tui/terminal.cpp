#include "tui/terminal.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

namespace gpudoctor::tui {
namespace {

// Shared with the signal handlers: only lock-free scalars and a termios copy written before arming.
volatile sig_atomic_t g_armed = 0;
int g_in_fd = -1, g_out_fd = -1;
termios g_saved{};
bool g_have_saved = false;
volatile sig_atomic_t g_quit = 0, g_resized = 0, g_continued = 0;

void write_raw(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

void set_handler(int sig, void (*handler)(int), int flags = 0) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = flags;
  sigaction(sig, &sa, nullptr);
}

extern "C" void on_fatal(int sig) {
  const int saved_errno = errno;
  restore_terminal_now();
  errno = saved_errno;
  // SA_RESETHAND put the default action back; SA_NODEFER lets this raise take effect now.
  raise(sig);
}

extern "C" void on_quit(int sig) {
  if (g_quit) {  // asked twice: stop now, but give the terminal back first
    restore_terminal_now();
    set_handler(sig, SIG_DFL);
    raise(sig);
    return;
  }
  g_quit = 1;
}

extern "C" void on_winch(int) {
  g_resized = 1;
}

extern "C" void on_cont(int) {
  g_continued = 1;
}

extern "C" void on_tstp(int) {
  const int saved_errno = errno;
  restore_terminal_now();
  set_handler(SIGTSTP, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTSTP);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(SIGTSTP);  // stops here until continued
  set_handler(SIGTSTP, on_tstp);
  g_continued = 1;
  errno = saved_errno;
}

// The final byte of a cursor key's CSI or SS3 sequence: A-D arrows, H Home, F End.
KeyCode cursor_key(char final) {
  switch (final) {
    case 'A':
      return KeyCode::kUp;
    case 'B':
      return KeyCode::kDown;
    case 'C':
      return KeyCode::kRight;
    case 'D':
      return KeyCode::kLeft;
    case 'H':
      return KeyCode::kHome;
    case 'F':
      return KeyCode::kEnd;
    default:
      return KeyCode::kUnknown;
  }
}

}  // namespace

std::vector<Key> decode_keys(std::string_view b) {
  std::vector<Key> out;
  const size_t n = b.size();
  for (size_t i = 0; i < n;) {
    const auto c = static_cast<unsigned char>(b[i]);
    if (c == 0x1b) {
      if (i + 1 >= n || b[i + 1] == '\x1b') {
        out.push_back({KeyCode::kEscape});
        ++i;
        continue;
      }
      if (b[i + 1] == 'O' && i + 2 < n) {
        out.push_back({cursor_key(b[i + 2])});
        i += 3;
        continue;
      }
      if (b[i + 1] == '[') {
        size_t j = i + 2;
        int param = 0;
        bool first_param = true;
        while (j < n && ((b[j] >= '0' && b[j] <= '9') || b[j] == ';' || b[j] == '?')) {
          if (b[j] == ';') first_param = false;
          if (first_param && b[j] >= '0' && b[j] <= '9' && param < 1000)
            param = param * 10 + (b[j] - '0');
          ++j;
        }
        KeyCode k = KeyCode::kUnknown;
        if (j < n) {
          k = cursor_key(b[j]);
          if (b[j] == '~') {  // VT220 keys: ESC [ N ~
            if (param == 1 || param == 7) k = KeyCode::kHome;
            if (param == 4 || param == 8) k = KeyCode::kEnd;
            if (param == 5) k = KeyCode::kPageUp;
            if (param == 6) k = KeyCode::kPageDown;
          }
        }
        out.push_back({k});
        i = std::min(n, j + 1);
        continue;
      }
      out.push_back({KeyCode::kEscape});  // Alt+key: Esc, then the key
      ++i;
      continue;
    }
    if (c == '\r' || c == '\n') {
      out.push_back({KeyCode::kEnter});
      i += (c == '\r' && i + 1 < n && b[i + 1] == '\n') ? 2 : 1;
      continue;
    }
    if (c == 0x7f || c == 0x08)
      out.push_back({KeyCode::kBackspace});
    else if (c == '\t')
      out.push_back({KeyCode::kTab});
    else if (c == 0x03 || c == 0x1c)
      out.push_back({KeyCode::kCtrlC});
    else if (c == 0x0c)
      out.push_back({KeyCode::kCtrlL});
    else if (c == 0x1a)
      out.push_back({KeyCode::kCtrlZ});
    else if (c >= 0x20 && c < 0x7f)
      out.push_back({KeyCode::kChar, static_cast<char>(c)});
    else if (c >= 0x80) {
      // A UTF-8 character: skip its continuation bytes.
      size_t j = i + 1;
      while (j < n && (static_cast<unsigned char>(b[j]) & 0xC0) == 0x80) ++j;
      out.push_back({KeyCode::kUnknown});
      i = j;
      continue;
    } else {
      out.push_back({KeyCode::kUnknown});
    }
    ++i;
  }
  return out;
}

namespace {

// Where a sequence that the input ends inside starts (bytes.size() when it ends on a boundary):
// an Esc alone, Esc O, Esc [ with parameters only, or a UTF-8 character missing bytes.
size_t incomplete_tail(std::string_view b) {
  const size_t esc = b.rfind('\x1b');
  if (esc != std::string_view::npos) {
    const std::string_view t = b.substr(esc);
    if (t.size() == 1 || (t.size() == 2 && (t[1] == 'O' || t[1] == '['))) return esc;
    if (t[1] == '[' && t.find_first_not_of("0123456789;?", 2) == std::string_view::npos) return esc;
  }
  for (size_t back = 1; back <= 3 && back <= b.size(); ++back) {
    const auto c = static_cast<unsigned char>(b[b.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t need = (c & 0xE0) == 0xC0   ? 2
                        : (c & 0xF0) == 0xE0 ? 3
                        : (c & 0xF8) == 0xF0 ? 4
                                             : 1;
    return need > back ? b.size() - back : b.size();
  }
  return b.size();
}

}  // namespace

std::vector<Key> KeyDecoder::feed(std::string_view bytes) {
  held_.append(bytes);
  // No key sequence is this long: a run of parameter bytes is decoded as it is, not held.
  const size_t cut = held_.size() > 32 ? held_.size() : incomplete_tail(held_);
  std::vector<Key> keys = decode_keys(std::string_view(held_).substr(0, cut));
  held_.erase(0, cut);
  return keys;
}

std::vector<Key> KeyDecoder::flush() {
  std::vector<Key> keys = decode_keys(held_);
  held_.clear();
  return keys;
}

void install_signal_handlers() {
  set_handler(SIGINT, on_quit);
  set_handler(SIGTERM, on_quit);
  set_handler(SIGHUP, on_quit);
  set_handler(SIGWINCH, on_winch);
  set_handler(SIGCONT, on_cont);
  set_handler(SIGTSTP, on_tstp);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    set_handler(sig, on_fatal, SA_RESETHAND | SA_NODEFER);
}

namespace {
sigset_t signal_set(std::initializer_list<int> sigs) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : sigs) sigaddset(&set, s);
  return set;
}
const sigset_t kDeferred = signal_set({SIGWINCH, SIGTSTP, SIGCONT});
}  // namespace

SignalBlock::SignalBlock() {
  // The quit signals too: they belong to the UI thread, whose wait they end at once (and
  // handlers without SA_RESTART must not interrupt a worker's NVML call).
  const sigset_t all = signal_set({SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP, SIGCONT});
  pthread_sigmask(SIG_BLOCK, &all, &old_);
}

SignalBlock::~SignalBlock() {
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

bool quit_requested() {
  return g_quit != 0;
}

bool take_resized() {
  const bool r = g_resized != 0;
  g_resized = 0;
  return r;
}

bool take_continued() {
  const bool r = g_continued != 0;
  g_continued = 0;
  return r;
}

void arm_restore(int in_fd, int out_fd, const termios* saved) {
  g_armed = 0;
  g_in_fd = in_fd;
  g_out_fd = out_fd;
  g_have_saved = saved != nullptr;
  if (saved) g_saved = *saved;
  g_armed = 1;
}

void restore_terminal_now() {
  if (!g_armed) return;
  g_armed = 0;
  write_raw(g_out_fd, kLeaveFullScreen);
  if (g_have_saved) tcsetattr(g_in_fd, TCSANOW, &g_saved);
}

Result<std::unique_ptr<Terminal>> Terminal::open(int in_fd, int out_fd) {
  if (!isatty(in_fd) || !isatty(out_fd))
    return usage_error(
        "top needs a terminal (stdin and stdout); use --once to print one frame to a pipe");
  termios saved{};
  if (tcgetattr(in_fd, &saved) != 0) return failure("cannot read the terminal's settings");
  std::unique_ptr<Terminal> t(new Terminal(in_fd, out_fd, saved));
  t->enter();
  return t;
}

Terminal::Terminal(int in_fd, int out_fd, const termios& saved)
    : in_fd_(in_fd), out_fd_(out_fd), saved_(saved) {}

Terminal::~Terminal() {
  restore();
}

void Terminal::enter() {
  arm_restore(in_fd_, out_fd_, &saved_);  // before anything changes
  termios raw = saved_;
  raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL | BRKINT | INPCK | ISTRIP);
  raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | ISIG | IEXTEN);
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  tcsetattr(in_fd_, TCSAFLUSH, &raw);
  write_raw(out_fd_, kEnterFullScreen);
  if (!masked_) {
    pthread_sigmask(SIG_BLOCK, &kDeferred, &ui_mask_);
    masked_ = true;
  }
  active_ = true;
}

void Terminal::restore() {
  if (!active_) return;
  active_ = false;
  restore_terminal_now();
  if (masked_) {
    masked_ = false;
    pthread_sigmask(SIG_SETMASK, &ui_mask_, nullptr);  // a pending stop or resize comes now
  }
}

void Terminal::resume() {
  if (gone_) return;
  restore_terminal_now();  // after SIGSTOP the terminal may still be armed
  enter();
}

void Terminal::suspend() {
  restore();
  raise(SIGTSTP);  // the handler (or the default action) stops the process here
  take_continued();
  enter();
}

std::pair<int, int> Terminal::size() const {
  winsize ws{};
  if (ioctl(out_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
    return {ws.ws_row, ws.ws_col};
  return {24, 80};
}

bool Terminal::write(std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size() && !gone_) {
    const ssize_t n = ::write(out_fd_, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      if (quit_requested()) return false;
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{out_fd_, POLLOUT, 0};
      ::poll(&p, 1, 100);
    } else {
      gone_ = true;
    }
  }
  return !gone_;
}

std::string Terminal::read_input(int timeout_ms, int wake_fd, bool* woken) {
  if (woken) *woken = false;
  pollfd fds[2] = {{in_fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
  const timespec ts{timeout_ms / 1000, static_cast<long>(timeout_ms % 1000) * 1000000L};
  const int n = ::ppoll(fds, wake_fd >= 0 ? 2 : 1, &ts, masked_ ? &ui_mask_ : nullptr);
  if (n <= 0) return "";
  std::string out;
  if (wake_fd >= 0 && (fds[1].revents & POLLIN)) {
    char buf[64];
    while (::read(wake_fd, buf, sizeof buf) > 0) {
    }
    if (woken) *woken = true;
  }
  if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
    char buf[256];
    const ssize_t r = ::read(in_fd_, buf, sizeof buf);
    if (r > 0)
      out.assign(buf, static_cast<size_t>(r));
    else if ((r == 0 && (fds[0].revents & (POLLHUP | POLLERR))) || (r < 0 && errno == EIO))
      gone_ = true;
  }
  return out;
}

}  // namespace gpudoctor::tui
