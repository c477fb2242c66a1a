// The terminal side of schedhot top/replay: ncurses on stdin/stdout, keys in, Screens
// out. The terminal is restored when the Terminal is destroyed (quit, SIGINT/SIGTERM via
// the caller's stop flag, exceptions) and, on a crash, by a signal handler that puts the
// saved termios and the terminal's exit sequences back before the default action runs.
#pragma once
#include <atomic>
#include <vector>
#include <string>

#include "tui/app.h"

namespace schedhot::tui {

/// Why the full-screen UI cannot run on stdin/stdout ("" when it can): not a terminal,
/// TERM unset or unknown, or a terminal without cursor addressing (TERM=dumb).
std::string fullscreen_unavailable();

/// Sets the locale from the environment (once) and says whether it is UTF-8.
bool utf8_locale();

/// The full-screen terminal. Colours unless the terminal has none or NO_COLOR is set.
class Terminal {
 public:
  /// Starts ncurses (alternate screen, cbreak, no echo, keypad). Throws
  /// std::runtime_error with a one-line message when the terminal cannot be opened.
  Terminal();
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  /// The next key (tui::Key codes), waiting at most timeout_ms; kNoKey when none came.
  int read_key(int timeout_ms);
  /// Replaces the screen's contents with s.
  void draw(const Screen& s);
  int width() const;
  int height() const;
  bool color() const { return color_; }

 private:
  bool color_ = false;
};

/// Installs the crash handler (Terminal does, with the terminal's exit sequences): on a
/// crash signal (SIGSEGV, SIGABRT, SIGQUIT, ...) it writes the sequences to stdout, puts
/// the termios saved here back on stdin, then dies of the signal (default action). It runs
/// on an alternate signal stack (sigaltstack, SA_ONSTACK), so a stack overflow restores the
/// terminal too. seq: the sequences to write (nullptr: those Terminal prepared). Not
/// nested: one arm, then one disarm_crash_restore().
void arm_crash_restore(const char* seq);
/// Puts back the signal actions and signal stack arm_crash_restore() replaced.
void disarm_crash_restore();

/// Runs the UI until q or stop is set: update the feed, draw when something changed,
/// wait for a key or the feed's next due work. Exceptions from the feed propagate (the
/// caller's Terminal restores the screen as it unwinds).
void run_tui(TuiApp& app, TuiFeed& feed, Terminal& term, const std::atomic<bool>& stop);
/// Whether keys typed ahead (in order) hold a q that quits: not while a prompt takes text,
/// nor after a key that opens one (/ filter, j jump).
bool quits_ahead(const TuiApp& app, const std::vector<int>& keys);

}  // namespace schedhot::tui
