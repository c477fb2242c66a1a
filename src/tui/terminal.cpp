#include "tui/terminal.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace schedhot::tui {

namespace {

/// What the crash handler needs, prepared before any crash: async-signal-safe to use.
struct CrashRestore {
  volatile sig_atomic_t active = 0;
  struct termios saved {};
  bool have_saved = false;
  char seq[512] = {};  ///< the terminal's exit sequences (sgr0, cnorm, rmkx, rmcup; clear without rmcup)
  size_t len = 0;
};
CrashRestore g_crash;
// Crashes, and every other signal whose default action ends the process (SIGINT, SIGTERM
// and SIGHUP are caught for a clean stop elsewhere; SIGPIPE is ignored).
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS,  SIGFPE,    SIGILL,  SIGABRT, SIGQUIT, SIGTRAP, SIGSYS,
                                 SIGUSR1, SIGUSR2, SIGALRM,   SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ,
                                 SIGPWR,  SIGSTKFLT};
struct sigaction g_old_actions[std::size(kCrashSignals)];

void on_crash(int sig) {
  if (g_crash.active) {
    ssize_t n = write(STDOUT_FILENO, g_crash.seq, g_crash.len);
    (void)n;
    if (g_crash.have_saved) tcsetattr(STDIN_FILENO, TCSANOW, &g_crash.saved);
  }
  // SA_RESETHAND put the default action back: re-raised, it runs when this returns.
  raise(sig);
}

/// The terminal's string capability name, or nullptr when it has none.
const char* cap_of(const char* name) {
  char* s = tigetstr(name);
  return !s || s == reinterpret_cast<char*>(-1) || !*s ? nullptr : s;
}

/// Whether the terminal has an alternate screen to leave (rmcup); without one (TERM=linux,
/// vt100) what the UI drew stays on the screen after endwin unless it is cleared.
bool has_alt_screen() { return cap_of("rmcup") != nullptr; }

/// Appends s to the crash handler's sequence, without terminfo padding: delays ("$<50>" in
/// vt100's clear and sgr0) are for tputs; written as is they would print.
void add_seq(const char* s) {
  std::string out;
  for (const char* p = s; *p; ++p) {
    const char* close = p[0] == '$' && p[1] == '<' ? strchr(p, '>') : nullptr;
    if (close) p = close;
    else out.push_back(*p);
  }
  if (g_crash.len + out.size() >= sizeof g_crash.seq) return;
  memcpy(g_crash.seq + g_crash.len, out.data(), out.size());
  g_crash.len += out.size();
}

/// Appends capability name to the crash handler's sequence (nothing when the terminal has none).
void add_cap(const char* name) {
  if (const char* s = cap_of(name)) add_seq(s);
}

// The handler's own stack: a stack overflow (SIGSEGV at the guard page) leaves no room on
// the normal one, and without it the kernel kills the process with the terminal unrestored.
alignas(64) char g_alt_stack[64 * 1024];
stack_t g_old_alt_stack {};
bool g_alt_installed = false;

SCREEN* g_screen = nullptr;

enum Pair : short { kCyan = 1, kGreen, kRed, kBlue, kYellow, kHead, kSortHead, kStatus };

attr_t attr_of(Role r, bool color) {
  if (!color) {
    switch (r) {
      case Role::title:
      case Role::bad:
      case Role::mark: return A_BOLD;
      case Role::head:
      case Role::status: return A_REVERSE;
      case Role::sort_head: return A_REVERSE | A_BOLD | A_UNDERLINE;
      default: return A_NORMAL;
    }
  }
  switch (r) {
    case Role::title: return A_BOLD | COLOR_PAIR(kCyan);
    case Role::label: return COLOR_PAIR(kCyan);
    case Role::good: return COLOR_PAIR(kGreen);
    case Role::bad: return A_BOLD | COLOR_PAIR(kRed);
    case Role::dim: return COLOR_PAIR(kBlue) | A_BOLD;
    case Role::head: return COLOR_PAIR(kHead);
    case Role::sort_head: return COLOR_PAIR(kSortHead) | A_BOLD;
    case Role::bar: return COLOR_PAIR(kGreen);
    case Role::mark: return A_BOLD | COLOR_PAIR(kYellow);
    case Role::status: return COLOR_PAIR(kStatus);
    case Role::normal: return A_NORMAL;
  }
  return A_NORMAL;
}

}  // namespace

std::string fullscreen_unavailable() {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) return "stdin and stdout are not both terminals";
  const char* term = getenv("TERM");
  if (!term || !*term) return "TERM is not set";
  int err = 0;
  if (setupterm(term, STDOUT_FILENO, &err) != OK) return fmt::format("unknown terminal type '{}'", term);
  char* cup = tigetstr("cup");
  bool ok = cup && cup != reinterpret_cast<char*>(-1);
  del_curterm(cur_term);
  return ok ? "" : fmt::format("terminal '{}' has no cursor addressing", term);
}

bool utf8_locale() {
  static const bool utf8 = [] {
    setlocale(LC_ALL, "");
    const char* cs = nl_langinfo(CODESET);
    return cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
  }();
  return utf8;
}

Terminal::Terminal() {
  utf8_locale();
  g_crash.have_saved = tcgetattr(STDIN_FILENO, &g_crash.saved) == 0;
  set_escdelay(25);
  g_screen = newterm(nullptr, stdout, stdin);
  if (!g_screen) throw std::runtime_error("cannot open the terminal (TERM unknown?)");
  set_term(g_screen);
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  const char* no_color = getenv("NO_COLOR");
  color_ = has_colors() && !(no_color && *no_color);
  if (color_) {
    start_color();
    use_default_colors();
    init_pair(kCyan, COLOR_CYAN, -1);
    init_pair(kGreen, COLOR_GREEN, -1);
    init_pair(kRed, COLOR_RED, -1);
    init_pair(kBlue, COLOR_BLUE, -1);
    init_pair(kYellow, COLOR_YELLOW, -1);
    init_pair(kHead, COLOR_BLACK, COLOR_GREEN);
    init_pair(kSortHead, COLOR_BLACK, COLOR_CYAN);
    init_pair(kStatus, COLOR_BLACK, COLOR_CYAN);
  }
  g_crash.len = 0;
  for (const char* cap : {"sgr0", "cnorm", "rmkx", "rmcup"}) add_cap(cap);
  if (!has_alt_screen()) add_cap("clear");
  arm_crash_restore(nullptr);
}

void arm_crash_restore(const char* seq) {
  if (seq) {
    g_crash.have_saved = tcgetattr(STDIN_FILENO, &g_crash.saved) == 0;
    g_crash.len = 0;
    add_seq(seq);
  }
  stack_t ss {};
  ss.ss_sp = g_alt_stack;
  ss.ss_size = sizeof g_alt_stack;
  g_alt_installed = sigaltstack(&ss, &g_old_alt_stack) == 0;
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (size_t i = 0; i < std::size(kCrashSignals); ++i) sigaction(kCrashSignals[i], &sa, &g_old_actions[i]);
  g_crash.active = 1;
}

void disarm_crash_restore() {
  g_crash.active = 0;
  for (size_t i = 0; i < std::size(kCrashSignals); ++i) sigaction(kCrashSignals[i], &g_old_actions[i], nullptr);
  if (g_alt_installed) sigaltstack(&g_old_alt_stack, nullptr);
  g_alt_installed = false;
}

Terminal::~Terminal() {
  disarm_crash_restore();
  endwin();
  // No alternate screen: the UI's last screen (its key line at the bottom) would stay
  // under the shell's prompt. Clear it; the cursor goes home, so the prompt starts on a
  // clean line at the top.
  if (!has_alt_screen()) {
    if (const char* clr = cap_of("clear")) {
      putp(clr);
      fflush(stdout);
    }
  }
  delscreen(g_screen);
  g_screen = nullptr;
}

int Terminal::read_key(int timeout_ms) {
  timeout(timeout_ms);
  int ch = getch();
  switch (ch) {
    case ERR: return kNoKey;
    case KEY_UP: return kKeyUp;
    case KEY_DOWN: return kKeyDown;
    case KEY_LEFT: return kKeyLeft;
    case KEY_RIGHT: return kKeyRight;
    case KEY_PPAGE: return kKeyPgUp;
    case KEY_NPAGE: return kKeyPgDn;
    case KEY_HOME: return kKeyHome;
    case KEY_END: return kKeyEnd;
    case KEY_F(6): return kKeyF6;
    case KEY_RESIZE: return kKeyResize;
    case KEY_ENTER:
    case '\r':
    case '\n': return kKeyEnter;
    case KEY_BACKSPACE:
    case 127:
    case 8: return kKeyBackspace;
    case 27: return kKeyEsc;
    default: return ch >= 0 && ch < 256 ? ch : kNoKey;
  }
}

void Terminal::draw(const Screen& s) {
  erase();
  const int h = height(), w = width();
  for (int y = 0; y < h && y < static_cast<int>(s.size()); ++y) {
    const Line& l = s[size_t(y)];
    int col = 0;
    auto put = [&](int from, int to, attr_t a) {
      from = std::min(from, w);
      to = std::min(to, w);
      if (to <= from) return;
      size_t b0 = byte_of_cell(l.text, from), b1 = byte_of_cell(l.text, to);
      if (b1 <= b0) return;
      attrset(a);
      mvaddnstr(y, from, l.text.data() + b0, static_cast<int>(b1 - b0));
    };
    for (const Span& sp : l.spans) {
      put(col, sp.col, A_NORMAL);
      put(sp.col, sp.col + sp.len, attr_of(sp.role, color_));
      col = sp.col + sp.len;
    }
    put(col, cells(l.text), A_NORMAL);
  }
  attrset(A_NORMAL);
  refresh();
}

int Terminal::width() const { return getmaxx(stdscr); }
int Terminal::height() const { return getmaxy(stdscr); }

bool quits_ahead(const TuiApp& app, const std::vector<int>& keys) {
  if (app.in_prompt()) return false;
  bool overlay = app.overlay() != Overlay::none;
  for (int k : keys) {
    if (overlay) {  // any key but the scrolling ones closes it (TuiApp::on_key): q too
      const bool scroll = k == kKeyUp || k == kKeyDown || k == kKeyPgUp || k == kKeyPgDn || k == kKeyHome || k == kKeyEnd;
      overlay = scroll;
      continue;
    }
    if (k == 'q') return true;
    if (k == '?' || k == 'p') overlay = true;
    if (k == '/' || k == 'j') return false;  // a prompt opens: what follows is its text
  }
  return false;
}

void run_tui(TuiApp& app, TuiFeed& feed, Terminal& term, const std::atomic<bool>& stop) {
  bool dirty = true;
  while (!stop.load()) {
    if (feed.update()) dirty = true;
    if (dirty) {
      term.draw(app.render(term.width(), term.height()));
      dirty = false;
    }
    int wait = feed.wait_ms();
    int key = term.read_key(wait < 0 ? 250 : std::clamp(wait, 0, 250));
    if (key == kNoKey) continue;
    dirty = true;
    // Every key typed ahead, at once: a q among them quits now instead of waiting behind
    // slow keys (a w on 8192 CPUs takes seconds), unless a prompt would take it as text.
    std::vector<int> keys{key};
    for (int k; keys.size() < 1024 && (k = term.read_key(0)) != kNoKey;) keys.push_back(k);
    if (quits_ahead(app, keys)) break;
    for (int k : keys)
      if (stop.load() || !app.on_key(k)) return;
  }
}

}  // namespace schedhot::tui
