#!/usr/bin/env python3
"""schedhot top/replay driven in tmux (send-keys, capture-pane) over the fixed recording
tests/data/tui16.shot, whose exact contents are described in tests/data/tui_fixture.h.

Each scenario runs in its own tmux server (a private socket) with a 160x50 window and a
plain bash with a known prompt, and waits by polling capture-pane with a timeout, never
with fixed sleeps. After the UI ends, the pane must show the prompt again and `stty -g`
must print what it printed before the UI started (the terminal is restored).

usage: test_tui.py PATH/TO/schedhot PATH/TO/tui16.shot SCENARIO
scenarios: values sort paging filter histogram topology small small_sizes resize quit sigterm
           no_alt_screen crash deep_note replay_keys plain dumb bad_input live_top (root; exit 77 =
           skipped otherwise); tails (with tests/data/v1.5-catch.shot instead of tui16.shot)
"""
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

SCHEDHOT = os.path.abspath(sys.argv[1])
FIXTURE = os.path.abspath(sys.argv[2])
SCENARIO = sys.argv[3]
PROMPT = "tui-test$"
TIMEOUT = 10.0


class Failed(Exception):
    pass


class Tmux:
    """A private tmux server with one window running a bare bash."""

    def __init__(self, width=160, height=50):
        self.socket = f"schedhot-tui-{os.getpid()}"
        self.run("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height),
                 f"env -i PATH={os.environ.get('PATH', '/usr/bin:/bin')} HOME=/tmp LANG=C.UTF-8 "
                 f"TERM=tmux-256color PS1='{PROMPT} ' bash --norc --noprofile")
        self.run("set-option", "-g", "status", "off")
        self.wait(lambda s: PROMPT in s, "the shell prompt")

    def run(self, *args):
        r = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise Failed(f"tmux {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def close(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)

    def screen(self, escapes=False):
        return self.run("capture-pane", "-p", *(["-e"] if escapes else []), "-t", "t")

    def lines(self):
        return self.screen().split("\n")

    def keys(self, *keys):
        """tmux key names: q, Space, Enter, Escape, Up, Down, PageUp, PageDown, Home, End, F6, BSpace."""
        for k in keys:
            self.run("send-keys", "-t", "t", k)

    def type(self, text):
        self.run("send-keys", "-t", "t", "-l", text)

    def shell(self, command):
        self.type(command)
        self.keys("Enter")

    def resize(self, width, height):
        self.run("resize-window", "-t", "t", "-x", str(width), "-y", str(height))

    def wait(self, pred, what, timeout=TIMEOUT):
        """Polls until pred(screen) holds on a settled screen: two captures 50 ms apart that are
        identical. tmux can be captured while it is still applying one ncurses refresh (seen in
        CI: the new header with half of the old rows), so a single matching capture is not enough."""
        end = time.time() + timeout
        screen = ""
        while time.time() < end:
            screen = self.screen()
            if pred(screen):
                time.sleep(0.05)
                again = self.screen()
                if again == screen:
                    return screen
                continue
            time.sleep(0.05)
        raise Failed(f"timed out waiting for {what}; the screen:\n{screen}")

    def wait_text(self, text, timeout=TIMEOUT):
        return self.wait(lambda s: text in s, repr(text), timeout)

    def wait_gone(self, text, timeout=TIMEOUT):
        return self.wait(lambda s: text not in s, f"{text!r} to go away", timeout)

    def stty(self):
        """`stty -g` in the pane (the shell must be at its prompt)."""
        self.run("clear-history", "-t", "t")
        self.shell("clear; echo STTY-BEGIN; stty -g; echo STTY-END")
        s = self.wait(lambda s: re.search(r"^STTY-END", s, re.M) is not None, "stty output")
        m = re.search(r"^STTY-BEGIN\n(.*?)\nSTTY-END", s, re.S | re.M)
        if not m:
            raise Failed(f"cannot read stty output:\n{s}")
        return m.group(1).strip()

    def stty_words(self):
        self.shell("clear; stty -a; echo STTY-A-END")
        s = self.wait(lambda s: re.search(r"^STTY-A-END", s, re.M) is not None, "stty -a output")
        return set(s.split())

    def pid_of_ui(self):
        """The pid of the schedhot process running in the pane's shell."""
        shell = int(self.run("display-message", "-p", "-t", "t", "#{pane_pid}").strip())
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            if ppid == shell and comm == "schedhot":
                return int(entry)
        raise Failed(f"no schedhot process under the pane's shell {shell}")


def at_prompt(screen):
    """The shell waits at an empty prompt (the last non-empty line is the bare prompt)."""
    return screen.rstrip().split("\n")[-1].strip() == PROMPT


def check(cond, what, screen=None):
    if not cond:
        raise Failed(what + (f"; the screen:\n{screen}" if screen is not None else ""))


def row_of(screen, cpu_label):
    """The table line whose first field is cpu_label (e.g. "15" or "LLC 3"), right-stripped."""
    for line in screen.split("\n"):
        if line.strip().startswith(cpu_label + " ") and re.match(r"^\s*" + re.escape(cpu_label) + r"\s", line):
            return line.rstrip()
    return None


def table_rows(screen, header_prefix="  CPU "):
    """First fields (CPU numbers) of the table rows under the header, in order."""
    lines = screen.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(header_prefix):
            out = []
            for row in lines[i + 1:]:
                m = re.match(r"^\s+(\d+)\s", row)
                if not m:
                    break
                out.append(int(m.group(1)))
            return out
    return []


def start_replay(t, *args, expect="schedhot replay  host fixture16", env=""):
    """Starts replay in the pane's shell (env: "TERM=vt100 " etc. before the command), which
    prints rc=STATUS when it ends."""
    before = t.stty()
    t.shell("clear; " + env + " ".join([SCHEDHOT, "replay", FIXTURE, *args]) + "; echo rc=$?")
    screen = t.wait_text(expect)
    return before, screen


def quit_and_check(t, before, how="q", rc=0):
    """Ends the UI (q, or the caller's signal) and checks the terminal is as it was."""
    if how == "q":
        t.keys("q")
    screen = t.wait(at_prompt, "the shell prompt after the UI")
    check(f"rc={rc}" in screen, f"exit status {rc}", screen)
    check("schedhot replay  host" not in screen and "Per CPU:" not in screen,
          "the UI's screen is gone (alternate screen left)", screen)
    after = t.stty()
    check(after == before, f"stty -g is as before the UI: {before!r} vs {after!r}")
    words = t.stty_words()
    for w in ("icanon", "echo", "isig", "icrnl", "opost", "onlcr"):
        check(w in words and "-" + w not in words, f"stty -a shows {w} after the UI")
    return screen


# Exact rows of the first interval (interval 1, sorted by idle/s), from tui_fixture.h.
# xfer/s (the last column) is the coherence model's, as report's tests/data/golden/report-tui16-3-5.txt.
ROW15 = ("   15     250        50.0        25.0         50.0        1000          0          0          100  35.8us"
         "          40.0            -            0     712")
ROW2 = ("    2     120         180        90.0          180        1000          0          0          300  22.0us"
        "          40.0            -          3.0    1161")


def s_values(t):
    before, screen = start_replay(t)
    check("sample 2/11  +1.00 s  2023-11-14 22:13:21 UTC" in screen, "header: position and time", screen)
    check("CPUs 16 online of 16  interval 1 s" in screen, "header: CPUs and interval", screen)
    check("bcast_lock unavailable: fentry refused: EPERM" in screen, "header: unavailable probe with its reason", screen)
    check("nohz_kick kprobe" in screen and "cpupri_set fentry" in screen, "header: backends", screen)
    check("lost 0  cost not recorded" in screen, "header: lost and cost", screen)
    check(row_of(screen, "15") == ROW15, f"CPU 15's row: {row_of(screen, '15')!r}", screen)
    check(row_of(screen, "2") == ROW2, f"CPU 2's row: {row_of(screen, '2')!r}", screen)
    check(table_rows(screen) == list(range(15, -1, -1)), "16 rows by idle/s, highest first", screen)
    check(" xfer/s" in screen, "the xfer/s column is there", screen)
    check("fixes: layout not recorded" in screen, "header: the fixes (this recording has no layout)", screen)
    quit_and_check(t, before)


def s_sort(t):
    before, screen = start_replay(t)
    t.type(">")
    screen = t.wait_text("sorted by nohz_exit/s (highest first)")
    check(table_rows(screen)[:3] == [0, 1, 2], "by nohz_exit/s: CPU 0 (200/s) first", screen)
    check(row_of(screen, "0").startswith("    0     100         200"), "CPU 0's values", screen)
    t.keys("r")
    screen = t.wait_text("sorted by nohz_exit/s (lowest first)")
    check(table_rows(screen)[0] == 15, "reversed: CPU 15 first", screen)
    t.keys("r")
    t.type("<<")
    screen = t.wait_text("sorted by CPU (lowest first)")
    check(table_rows(screen) == list(range(16)), "by CPU: 0..15", screen)
    t.keys("F6")
    screen = t.wait_text("sorted by idle/s (highest first)")
    check(table_rows(screen)[0] == 15, "F6: back to idle/s", screen)
    quit_and_check(t, before)


def s_paging(t):
    t.resize(160, 20)
    before, screen = start_replay(t)
    screen = t.wait_text("rows 1-13 of 16")
    check(table_rows(screen) == list(range(15, 2, -1)), "first page: CPUs 15..3", screen)
    t.keys("PageDown")
    screen = t.wait_text("rows 4-16 of 16")
    check(table_rows(screen) == list(range(12, -1, -1)), "last page: CPUs 12..0", screen)
    t.keys("Up")
    screen = t.wait_text("rows 3-15 of 16")
    check(table_rows(screen)[0] == 13, "up one row", screen)
    t.keys("Home")
    t.wait_text("rows 1-13 of 16")
    t.keys("End")
    t.wait_text("rows 4-16 of 16")
    t.keys("PageUp")
    t.wait_text("rows 1-13 of 16")
    quit_and_check(t, before)


def s_filter(t):
    before, screen = start_replay(t)
    t.type("/")
    t.wait_text("filter CPUs (list or ranges")
    t.type("0-3,12")
    t.keys("Enter")
    screen = t.wait_text("filter 0-3,12")
    check("Per CPU: 5 of 16 CPUs" in screen, "5 CPUs shown", screen)
    check(table_rows(screen) == [12, 3, 2, 1, 0], "the filtered CPUs by idle/s", screen)
    t.type("/")
    t.wait_text("0-3,12_")
    for _ in range(6):
        t.keys("BSpace")
    t.type("abc")
    t.keys("Enter")
    screen = t.wait_text("filter: bad CPU list 'abc'")
    check(table_rows(screen) == [12, 3, 2, 1, 0], "a bad filter leaves the table as it was", screen)
    t.type("/")
    t.wait_text("0-3,12_")
    t.keys("C-u")  # clears the line that starts with the current filter
    t.keys("Enter")
    screen = t.wait_text("Per CPU: 16 of 16 CPUs")
    check(len(table_rows(screen)) == 16, "an empty filter shows every CPU", screen)
    quit_and_check(t, before)


def s_histogram(t):
    before, screen = start_replay(t, "--sort", "cpupri_set")
    t.keys("h")
    screen = t.wait_text("Histogram of cpupri_set")
    check("cpupri_set entry-to-exit time, ns over all CPUs: 3100 events" in screen, "title and count", screen)
    check("p10 1008  p50 1008  p90 1008  p98 4992  p99 35.8us  max 100.0us" in screen, "percentiles", screen)
    bars = [l for l in screen.split("\n") if re.match(r"^\s+\S+\s+\S+\s+\d+(  |$)", l)]
    # 43 lines for the view: 40 bars for the 106 buckets from 1000 ns to 100000 ns, 3 a bar.
    check(bars and bars[0].startswith("     992     1152       2790  "), "first bar: 992..1152 ns, 2790 calls", screen)
    check(len(bars) == 36, f"36 bars ({len(bars)})", screen)
    check(bars[0].rstrip().endswith("p10 p50 p90"), "p10 p50 p90 marked on the first bar", screen)
    marks = " ".join(re.findall(r"(?:p\d\d|max)(?: (?:p\d\d|max))*\s*$", "\n".join(bars), re.M))
    for m in ("p10", "p50", "p90", "p98", "p99", "max"):
        check(marks.split().count(m) == 1, f"{m} marked exactly once", screen)
    t.type("/0")
    t.keys("Enter")
    screen = t.wait_text("over CPUs 0: 100 events")
    check("p98 4992  p99 20.0us  max 100.0us" in screen, "CPU 0's percentiles", screen)
    t.keys("h")
    t.wait_text("Histogram of cpupri_find")
    t.keys("c")
    t.wait_text("Per CPU: 1 of 16 CPUs")
    quit_and_check(t, before)


def s_topology(t):
    before, screen = start_replay(t)
    t.keys("o")
    screen = t.wait_text("Topology by LLC: 4 groups over 16 CPUs")
    check(row_of(screen, "LLC 3").startswith(" LLC 3    4 6-7,14-15     820"), "LLC 3 first: CPUs 6-7,14-15, 820 idle exits/s",
          screen)
    check(row_of(screen, "LLC 0").startswith(" LLC 0    4 0-1,8-9       580"), "LLC 0: 580/s", screen)
    t.keys("o")
    screen = t.wait_text("Topology by node: 2 groups over 16 CPUs")
    check(row_of(screen, "node 1").startswith(" node 1    8 4-7,12-15    1560"), "node 1: 8 CPUs, 1560/s", screen)
    check(row_of(screen, "node 0").startswith(" node 0    8 0-3,8-11     1240"), "node 0: 1240/s", screen)
    t.keys("o")
    screen = t.wait_text("Topology by package: 2 groups over 16 CPUs")
    check(row_of(screen, "pkg 1").startswith(" pkg 1      8 4-7,12-15    1560"), "package 1: 1560/s", screen)
    t.keys("o")
    screen = t.wait_text("Topology by core: 8 groups over 16 CPUs")
    check(row_of(screen, "pkg1 core3").startswith(" pkg1 core3    2 7,15         420"), "core 3 of package 1: CPUs 7,15",
          screen)
    quit_and_check(t, before)


def s_lines(t):
    before, screen = start_replay(t, "--sort", "xfer/s")
    screen = t.wait_text("sorted by xfer/s (highest first)")
    check(table_rows(screen)[:3] == [2, 5, 1], "by xfer/s: CPU 2 (1161/s), 5 (1134/s), 1 (1130/s) first", screen)
    t.keys("l")
    screen = t.wait_text("Cachelines: 6 modeled lines over 1 s")
    check("\nfixes: layout not recorded" in screen, "the fixes line", screen)
    check(" LINE " in screen and " xfer/s " in screen and " stall us/s " in screen, "the column header", screen)
    rows = [l for l in screen.split("\n") if re.match(r"^ (nohz|cpupri|root_domain|tick_broadcast_lock)", l)]
    names = [re.split(r"\s{2,}", r.strip())[0] for r in rows]
    check(names == ["nohz", "cpupri.cpu_to_pri line 0", "nohz.idle_cpus_mask", "cpupri.pri_to_cpu[0].mask",
                    "root_domain line 2 (cpupri vec 0)", "tick_broadcast_lock"], f"the lines, hottest first: {names}", screen)
    check(rows[0].split()[1:14] == ["9600", "3160", "10.7k", "666.6", "7", "13", "27", "53", "1147.88", "16", "16", "0",
                                    "(765),"], f"the nohz line's figures: {rows[0]!r}", screen)
    check("what-if sched/fair: remove nohz.nr_cpus" in screen and "nohz lines 12.6k -> 11.1k xfer/s (x0.88)" in screen,
          "the nohz.nr_cpus what-if", screen)
    t.keys("T")
    screen = t.wait_text("sample 3/11")
    check("Cachelines: 6 modeled lines" in screen, "the lines view follows the sample shown", screen)
    t.keys("Escape")
    screen = t.wait_text("Per CPU: 16 of 16 CPUs")
    quit_and_check(t, before)


def s_tails(t):
    """Run with tests/data/v1.5-catch.shot as the fixture (one rule, cpupri_set>20us)."""
    before, screen = start_replay(t, expect="schedhot replay  host testhost")
    t.keys("a")
    screen = t.wait_text("Tails (--catch): 1 rule")
    check("cpupri_set>20us  armed >= 20.0us, at most 100/s per CPU" in screen, "the rule and its threshold", screen)
    check("+0.333333    0   20.1us  stress-ng-cpu/1000       RT->RT       cpupri_set+0x4c < enqueue_task_rt+0x1a2"
          in screen, "the interval's event with its innermost frames", screen)
    t.keys("j")
    t.type("69")
    t.keys("Enter")
    screen = t.wait_text("since start 69.0 s:")
    check("47397 caught" in screen and "dropped 48928 (rate) 46395 (buffer)" in screen,
          "since start at the last sample: report's figures", screen)
    t.keys("A")
    screen = t.wait_text("A: the rule editor is only in top (live)")
    t.keys("Escape")
    screen = t.wait_text("Per CPU: 4 of 4 CPUs")
    quit_and_check(t, before)


def s_small(t):
    before, screen = start_replay(t)
    t.resize(40, 8)
    screen = t.wait_text("terminal too small")
    check("40x8, need 60x12" in screen, "says how small and what it needs", screen)
    t.resize(160, 50)
    screen = t.wait_text("Per CPU: 16 of 16 CPUs")
    check(row_of(screen, "15") == ROW15, "the table is back", screen)
    quit_and_check(t, before)


def key_line(screen):
    """The UI's last line (its key line, or a message)."""
    return screen.rstrip("\n").split("\n")[-1]


def check_small(t, w, h):
    """At w x h every view shows its table header, at least 3 rows and the key line; the
    header still names the unavailable probe; ? and p scroll and close."""
    for line in t.screen().split("\n"):
        check(len(line.rstrip()) <= w, f"{w}x{h}: line fits: {line!r}")
    views = [("c", "Per CPU: 16 of 16 CPUs", "  CPU "), ("o", "Topology by LLC", " LLC "),
             ("s", "Summary per probe", "PROBE"), ("h", "Histogram of", "    from")]
    for key, title, head in views:
        t.type(key)
        screen = t.wait(lambda s: title in s and key_line(s).startswith("q quit  ? help"), f"{w}x{h} view {key}")
        lines = screen.split("\n")
        check(len(lines) >= h and lines[h - 1].startswith("q quit"), f"{w}x{h} view {key}: key line at the bottom",
              screen)
        heads = [i for i, line in enumerate(lines) if line.startswith(head)]
        check(heads, f"{w}x{h} view {key}: table header {head!r}", screen)
        rows = [line for line in lines[heads[0] + 1:heads[0] + 4] if line.strip()]
        check(len(rows) == 3 and heads[0] + 3 < h - 1, f"{w}x{h} view {key}: 3 rows under the header", screen)
        check("bcast_lock unavailable" in screen or "1 unavailable (bcast_lock)" in screen,
              f"{w}x{h} view {key}: bcast_lock shown unavailable", screen)
    t.type("?")
    screen = t.wait_text("schedhot replay: keys")
    check(re.search(r"^(lines 1-\d+ of \d+  arrows|any key closes)", key_line(screen)), f"{w}x{h}: help's last line",
          screen)
    t.keys("End")
    t.wait_text("'-' = not measured")  # the help's last line
    t.keys("Space")
    t.wait_gone("schedhot replay: keys")
    t.type("p")
    t.wait_text("schedhot: probes")
    t.keys("End")
    t.wait_text("CONFIG_KPROBES=n)")  # the end of bcast_lock's reason
    t.keys("Escape")
    t.wait_gone("schedhot: probes")
    t.type("c")


def s_small_sizes(t):
    before, screen = start_replay(t, "--sort", "cpupri_set")  # h opens cpupri_set's histogram (several bars)
    for w, h in ((60, 12), (70, 14), (80, 17)):
        t.resize(w, h)
        t.wait(lambda s: len(s.split("\n")) >= h and "q quit" in s and "Per CPU" in s and
               max(len(x.rstrip()) for x in s.split("\n")) <= w, f"a {w}x{h} redraw")
        check_small(t, w, h)
    t.resize(160, 50)
    screen = t.wait(lambda s: row_of(s, "15") == ROW15, "the full table back at 160x50")
    check("bcast_lock unavailable: fentry refused: EPERM" in screen, "the full probe list back", screen)
    quit_and_check(t, before)


def s_no_alt_screen(t):
    # TERM=linux and vt100 have no alternate screen (no smcup/rmcup): what the UI drew must
    # not stay under the prompt after q, Ctrl-C, SIGTERM or a crash (whose handler writes the
    # terminal's sequences itself: without their terminfo padding, vt100's "$<50>").
    for term in ("linux", "vt100"):
        for how, rc in (("q", 0), ("C-c", 0), ("TERM", 0), ("SEGV", 139)):
            before, screen = start_replay(t, env=f"TERM={term} ", expect="Per CPU: 16 of 16 CPUs")
            check("q quit" in screen, f"TERM={term}: the key line is drawn", screen)
            if how == "C-c":
                t.keys("C-c")
            elif how != "q":
                os.kill(t.pid_of_ui(), getattr(signal, "SIG" + how))
            screen = quit_and_check(t, before, how="q" if how == "q" else "signal", rc=rc)
            what = f"TERM={term}, {how}"
            for gone in ("q quit", "? help", "space play", "Per CPU", "bcast_lock", "  CPU ", "$<"):
                check(gone not in screen, f"{what}: {gone!r} is not left on the screen", screen)
            lines = [x.rstrip() for x in screen.rstrip().split("\n") if x.strip()]
            if how == "SEGV":  # bash says so first
                check(lines and lines[0].startswith("Segmentation fault"), f"{what}: bash's note", screen)
                lines = lines[1:]
            check(lines == [f"rc={rc}", PROMPT], f"{what}: rc={rc} and the prompt on clean lines ({lines!r})", screen)


def s_resize(t):
    before, screen = start_replay(t)
    t.resize(100, 30)
    screen = t.wait(lambda s: "xfer/s" not in s and "Per CPU" in s, "a 100-column redraw")
    for line in screen.split("\n"):
        check(len(line.rstrip()) <= 100, f"line fits 100 columns: {line!r}")
    check(row_of(screen, "15").startswith("   15     250        50.0"), "rows keep their values", screen)
    t.keys("Right")
    screen = t.wait_text("  CPU nohz_exit/s exit_work/s")
    t.resize(160, 50)
    t.keys("Left")
    screen = t.wait_text("xfer/s")
    check(row_of(screen, "15") == ROW15, "full width again", screen)
    quit_and_check(t, before)


def s_quit(t):
    before, screen = start_replay(t)
    t.type("?")
    t.wait_text("schedhot replay: keys")
    t.keys("Space")
    t.wait_gone("schedhot replay: keys")
    quit_and_check(t, before)


def s_sigterm(t):
    before, screen = start_replay(t)
    os.kill(t.pid_of_ui(), 15)
    quit_and_check(t, before, how="signal")
    # Ctrl-C (SIGINT from the terminal) too.
    before, screen = start_replay(t)
    t.keys("C-c")
    quit_and_check(t, before, how="signal")


def s_crash(t):
    before, screen = start_replay(t)
    os.kill(t.pid_of_ui(), 11)  # SIGSEGV: the crash handler restores the terminal, then dies of it
    quit_and_check(t, before, how="signal", rc=139)
    # Any other signal whose default action ends the process restores it too (SIGQUIT
    # dumps core: 131; SIGUSR1 ends it: 138).
    for sig, rc in ((signal.SIGQUIT, 131), (signal.SIGUSR1, 138)):
        before, screen = start_replay(t)
        os.kill(t.pid_of_ui(), sig)
        quit_and_check(t, before, how="signal", rc=rc)


def crc32c(data, crc=0):
    """CRC32C (Castagnoli, reflected), as src/store/crc32c.h computes it."""
    table = crc32c.table
    if not table:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


crc32c.table = []


def with_deep_note(src, dst, before_sample=5, depth=40000):
    """Copies the recording src to dst with a NOTE frame whose payload is [ x depth then
    ] x depth (CRC valid) before sample before_sample, INDEX and END dropped. Returns the
    NOTE's byte offset."""
    d = open(src, "rb").read()
    at = struct.unpack_from("<I", d, 12)[0]
    samples, index_at = [], len(d)
    while at + 24 <= len(d):
        _, length, kind = struct.unpack_from("<IIB", d, at)
        if kind == 2:
            samples.append(at)
        elif kind == 3:
            index_at = at
        at += 24 + length
    payload = b"[" * depth + b"]" * depth
    head = struct.pack("<IIBBH", 0x52464853, len(payload), 5, 0, 0)
    mono = struct.pack("<Q", 0)
    crc = crc32c(payload, crc32c(mono, crc32c(head[4:12])))
    note = head + struct.pack("<I", crc) + mono + payload
    cut = samples[before_sample]
    with open(dst, "wb") as f:
        f.write(d[:cut] + note + d[cut:index_at])
    return cut


def s_deep_note(t):
    # A NOTE nested 40000 deep once overflowed the stack: SIGSEGV, the terminal left on the
    # alternate screen. Now it is damage at that frame, the samples before it shown.
    tmp = tempfile.mkdtemp(prefix="schedhot-tui-")
    try:
        path = os.path.join(tmp, "deep.shot")
        at = with_deep_note(FIXTURE, path)
        before = t.stty()
        t.shell(f"clear; {SCHEDHOT} replay {path}; echo rc=$?")
        screen = t.wait_text(f"recording damaged at byte {at}: bad note frame: JSON nested deeper than 64 levels")
        check(row_of(screen, "15") == ROW15, f"CPU 15's row of the first interval: {row_of(screen, '15')!r}", screen)
        check("sample 2/5  +1.00 s" in screen, "the 5 samples before the NOTE, the first interval shown", screen)
        screen = quit_and_check(t, before)
        check(f"damaged at byte {at}" in screen, "the damage is said on stderr after the UI", screen)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def s_replay_keys(t):
    before, screen = start_replay(t)
    t.keys("T", "T", "T", "T", "T", "T")
    screen = t.wait_text("sample 8/11  +7.00 s")
    check(table_rows(screen)[0] == 3 and row_of(screen, "3").startswith("    3    5000"), "CPU 3's spike on top", screen)
    t.keys("t")
    t.wait_text("sample 7/11  +6.00 s")
    t.keys("j")
    t.wait_text("jump to time since the start")
    t.type("2.5s")
    t.keys("Enter")
    t.wait_text("sample 4/11  +3.00 s")
    t.keys("j")
    t.type("abc")
    t.keys("Enter")
    t.wait_text("j: time 'abc' is not a non-negative number")
    t.keys("w")
    screen = t.wait_text("w: worst is sample 8/11 (+7.00 s)")
    check("sample 8/11  +7.00 s" in screen, "w moved to the worst sample", screen)
    t.keys("Home", "j")
    t.type("0")
    t.keys("Enter")
    t.wait_text("sample 2/11  +1.00 s")
    t.type("++")
    t.wait_text("speed 4x")
    t.keys("Space")
    t.wait_text("playing 4x")
    t.wait_text("sample 4/11", timeout=5)
    t.keys("Space")
    t.wait_text("paused (space plays)")
    quit_and_check(t, before)


def s_plain(t):
    r = subprocess.run([SCHEDHOT, "replay", FIXTURE], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"replay | cat exits 0: {r.stderr}")
    out = r.stdout
    check("\x1b" not in out, "no escape sequences in plain output")
    heads = re.findall(r"sample (\d+)/11", out)
    check(heads == [str(k) for k in range(2, 12)], f"one table per interval: {heads}")
    first = out.split("\n\n")[0]
    check(row_of(first, "15") == ROW15, f"first table's CPU 15 row: {row_of(first, '15')!r}")
    r = subprocess.run([SCHEDHOT, "replay", FIXTURE, "--at", "7", "--cpus", "2-3", "--sort", "cpu"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"replay --at 7 exits 0: {r.stderr}")
    tables = [x for x in r.stdout.split("\n\n") if x.strip()]
    check(len(tables) == 4, f"--at 7: intervals 7..10 ({len(tables)} tables)")
    check(table_rows(tables[0]) == [2, 3], "--cpus 2-3 sorted by CPU", tables[0])
    check(row_of(tables[0], "3").startswith("    3    5000"), "interval 7: CPU 3's 5000/s", tables[0])


def s_dumb(t):
    # TERM=dumb: no cursor addressing, so plain tables, and the shell is left as it was.
    before = t.stty()
    t.shell(f"TERM=dumb {SCHEDHOT} replay {FIXTURE} --at 9; echo rc=$?")
    screen = t.wait_text("rc=0")
    check(len(re.findall(r"sample \d+/11", screen)) == 2, "two plain tables (intervals 9 and 10)", screen)
    check("terminal 'dumb' has no cursor addressing: printing plain tables" in screen, "says why it is plain", screen)
    t.shell("clear")
    t.shell(f"TERM=no-such-term {SCHEDHOT} replay {FIXTURE} --at 9; echo rc=$?")
    screen = t.wait_text("rc=0")
    check("unknown terminal type 'no-such-term': printing plain tables" in screen, "names an unknown TERM", screen)
    check(len(re.findall(r"sample \d+/11", screen)) == 2, "plain tables for an unknown TERM", screen)
    check(t.stty() == before, "stty unchanged")
    # Colour by default, none with NO_COLOR (bold and reverse remain).
    t.shell("clear")
    t.shell(f"{SCHEDHOT} replay {FIXTURE}")
    t.wait_text("Per CPU:")
    esc = t.screen(escapes=True)
    check(re.search(r"\x1b\[[0-9;]*3[0-7]m|\x1b\[[0-9;]*38;5;\d+m", esc) is not None, "colours by default", esc)
    t.keys("q")
    t.wait(at_prompt, "the prompt")
    t.shell("clear")
    t.shell(f"NO_COLOR=1 {SCHEDHOT} replay {FIXTURE}")
    t.wait_text("Per CPU:")
    esc = t.screen(escapes=True)
    check(re.search(r"\x1b\[[0-9;]*(3[0-7]|4[0-7]|38;5;\d+|48;5;\d+)m", esc) is None, "no colours with NO_COLOR", esc)
    check("\x1b[7m" in esc or re.search(r"\x1b\[[0-9;]*7[;m]", esc), "reverse video marks the table header", esc)
    t.keys("q")
    t.wait(at_prompt, "the prompt")
    check(t.stty() == before, "stty unchanged")


def s_bad_input(t):
    missing = os.path.join(tempfile.gettempdir(), f"schedhot-no-such-{os.getpid()}.shot")
    cases = [
        (["replay", missing], 1, "cannot open"),
        (["replay", FIXTURE, "--at", "abc"], 2, "--at 'abc' is not a non-negative number"),
        (["replay", FIXTURE, "--at", "99"], 2, "--at 99: +99.00 s is after the last sample (+10.00 s)"),
        (["replay", FIXTURE, "--cpus", "abc"], 2, "--cpus: bad CPU list 'abc'"),
        (["replay", FIXTURE, "--cpus", "99"], 2, "--cpus '99': CPU 99 was never online in the recording (online at some point: 0-15)"),
        (["replay", FIXTURE, "--sort", "nope"], 2, "--sort: no column 'nope'"),
        (["top", "--cpus", "3-1"], 2, "--cpus: bad CPU list '3-1'"),
        (["top", "-i", "1ms"], 2, "-i/--interval must be at least 10ms"),
        (["replay", "/etc/hostname"], 1, "is not a schedhot recording"),
    ]
    for args, rc, msg in cases:
        r = subprocess.run([SCHEDHOT, *args], capture_output=True, text=True, timeout=30)
        lines = r.stderr.strip().split("\n")
        check(r.returncode == rc, f"{args}: exit {rc} (got {r.returncode}: {r.stderr.strip()})")
        check(len(lines) == 1 and lines[0].startswith("schedhot: ") and msg in lines[0],
              f"{args}: one line with {msg!r} (got {r.stderr!r})")
        check(r.stdout == "", f"{args}: nothing on stdout")


def bpf_links():
    out = subprocess.run(["bpftool", "link", "show"], capture_output=True, text=True).stdout
    return len([l for l in out.split("\n") if re.match(r"^\d+:", l)])


def s_live_top(t):
    if os.geteuid() != 0:
        print("SKIP: live top needs root")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="schedhot-tui-")
    rec = os.path.join(tmp, "top.shot")
    links = bpf_links()
    try:
        before = t.stty()
        t.shell(f"{SCHEDHOT} top -i 300ms --record {rec}")
        screen = t.wait(lambda s: re.search(r"cost BPF [\d.]+ ms/s", s) is not None, "the live table with its cost", 20)
        check(re.search(r"live \d\d:\d\d:\d\d", screen) is not None, "live clock", screen)
        check("idle tp_btf" in screen or "idle tracepoint" in screen, "the idle probe's backend", screen)
        check(f"recording to {rec}" in screen, "recording state", screen)
        check(len(table_rows(screen)) >= 1, "per-CPU rows", screen)
        t.type("+")  # a recording keeps its META's interval: replay counts lost samples against it
        t.wait_text(f"interval 0.3 s is fixed while recording to {rec} (set it with -i)")
        t.keys("Space")
        t.wait_text("paused (space resumes; sampling goes on)")
        t.keys("Space")
        t.keys("q")
        screen = t.wait(at_prompt, "the prompt", 20)
        check(re.search(r"wrote \d+ samples, \d+ bytes to " + re.escape(rec), screen) is not None, "recording summary",
              screen)
        check(t.stty() == before, "stty unchanged after top")
        r = subprocess.run([SCHEDHOT, "report", "--json", rec], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"the recording made by top reports: {r.stderr}")
        check(bpf_links() == links, "no BPF link left behind")
        r = subprocess.run([SCHEDHOT, "top", "-n", "2", "-i", "200ms"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"top | cat exits 0: {r.stderr}")
        check(len(re.findall(r"^schedhot top  host", r.stdout, re.M)) == 2, "top -n 2 prints two plain tables")
        check("\x1b" not in r.stdout, "plain top has no escape sequences")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


SCENARIOS = {name[2:]: fn for name, fn in globals().items() if name.startswith("s_")}


def main():
    if SCENARIO not in SCENARIOS:
        print(f"unknown scenario {SCENARIO}; one of: {' '.join(sorted(SCENARIOS))}")
        return 2
    if shutil.which("tmux") is None:
        print("FAIL: tmux is not installed (packaging/deps.txt lists it)")
        return 1
    t = Tmux()
    try:
        SCENARIOS[SCENARIO](t)
    except Failed as e:
        print(f"FAIL {SCENARIO}: {e}")
        return 1
    finally:
        t.close()
    print(f"ok {SCENARIO}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
