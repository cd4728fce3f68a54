// The terminal side of `gpudoctor top`: raw mode and the alternate screen (plain ANSI escape
// sequences, no curses), key decoding, and the promise that the terminal is given back as it was
// on every way out: a normal exit, q, Ctrl-C, SIGINT / SIGTERM / SIGHUP, Ctrl-Z (and fg), and a
// crash (a fatal-signal handler writes the restore sequence with write(2) and re-raises).
#pragma once

#include <signal.h>
#include <termios.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace gpudoctor::tui {

enum class KeyCode : uint8_t {
  kChar,
  kUp,
  kDown,
  kLeft,
  kRight,
  kPageUp,
  kPageDown,
  kHome,
  kEnd,
  kEnter,
  kEscape,
  kBackspace,
  kTab,
  kCtrlC,
  kCtrlL,
  kCtrlZ,
  kUnknown,
};
struct Key {
  KeyCode code = KeyCode::kUnknown;
  char ch = 0;  // for kChar
  friend bool operator==(const Key&, const Key&) = default;
};
// Decodes what a terminal in raw mode sent: printable characters, Enter, Esc, arrows and the
// other cursor keys (CSI and SS3 forms), control keys. An Esc at the end of the input is the Esc
// key (terminals send a whole sequence in one write). Unknown sequences are skipped whole.
std::vector<Key> decode_keys(std::string_view bytes);

// Keys from input that may come in pieces (over SSH or tmux, or cut at the read size): a sequence
// cut at the end of one read is held for the next, so "\x1b[" then "6~" is Page Down, not Esc,
// '[', '6', '~'. An Esc alone stays held until more input comes or flush() decides it was the
// Esc key (after a short wait with no input).
class KeyDecoder {
 public:
  std::vector<Key> feed(std::string_view bytes);
  bool pending() const { return !held_.empty(); }
  std::vector<Key> flush();

 private:
  std::string held_;
};

// Full screen on: alternate screen, cursor hidden, no autowrap. Off: the reverse, attributes reset.
inline constexpr std::string_view kEnterFullScreen = "\x1b[?1049h\x1b[?25l\x1b[?7l";
inline constexpr std::string_view kLeaveFullScreen = "\x1b[0m\x1b[?7h\x1b[?25h\x1b[?1049l";

// Signals, process-wide: SIGINT, SIGTERM and SIGHUP ask to quit (a second one restores the
// terminal and ends the process at once); SIGWINCH says the size changed; SIGTSTP restores the
// terminal before stopping and SIGCONT asks for raw mode again; SIGSEGV, SIGBUS, SIGFPE, SIGILL
// and SIGABRT restore the terminal and re-raise (so the crash is still reported as such).
void install_signal_handlers();

// While one lives, the calling thread blocks the signals above (the fatal ones excepted), so
// threads started meanwhile (a source's NVML workers, the sampler) never take them: they reach
// the UI thread (stop, continue and resize between frames: see Terminal). The destructor puts
// the old mask back.
class SignalBlock {
 public:
  SignalBlock();
  ~SignalBlock();
  SignalBlock(const SignalBlock&) = delete;
  SignalBlock& operator=(const SignalBlock&) = delete;

 private:
  sigset_t old_;
};

bool quit_requested();
bool take_resized();
bool take_continued();

// What restore_terminal_now() gives back: the leave sequence written to out_fd, then the saved
// terminal attributes set on in_fd (when `saved` is not null). Exposed for tests.
void arm_restore(int in_fd, int out_fd, const termios* saved);
// Async-signal-safe; does nothing when not armed, and disarms.
void restore_terminal_now();

class Terminal {
 public:
  // Puts the terminal on in_fd / out_fd (both must be terminals) into raw mode and full screen.
  static Result<std::unique_ptr<Terminal>> open(int in_fd = 0, int out_fd = 1);
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  // Gives the terminal back (idempotent).
  void restore();
  // Raw mode and full screen again (after a stop and continue).
  void resume();
  // Ctrl-Z: gives the terminal back and stops the process; returns once continued (then resumed).
  void suspend();

  // Rows and columns (24 x 80 when the terminal does not say).
  std::pair<int, int> size() const;
  // Writes all of `bytes`; false when the terminal is gone (hang-up).
  bool write(std::string_view bytes);
  // Waits up to timeout_ms for input on the terminal or for wake_fd (-1: none) to be readable;
  // returns what the terminal sent ("" on time-out, a signal, or a wake-up; *woken says which).
  std::string read_input(int timeout_ms, int wake_fd, bool* woken);
  // The terminal hung up (SSH connection lost, window closed).
  bool gone() const { return gone_; }

 private:
  Terminal(int in_fd, int out_fd, const termios& saved);
  void enter();

  int in_fd_, out_fd_;
  termios saved_;
  // While full screen, the UI thread takes SIGWINCH, SIGTSTP and SIGCONT only inside
  // read_input's ppoll (ui_mask_ is its mask without them): no flag set just before the wait is
  // missed, and a stop never lands in the middle of a frame.
  sigset_t ui_mask_{};
  bool masked_ = false;
  bool active_ = false;
  bool gone_ = false;
};

}  // namespace gpudoctor::tui
