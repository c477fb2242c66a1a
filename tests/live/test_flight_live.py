#!/usr/bin/env python3
"""Live flight recorder test on the running kernel (needs root): record --flight.

On this kind of host (fentry refused, no kprobes) only `idle` and `bcast_wait` have
durations, and the other work on the host decides when a CPU idles. A helper pinned to
the last CPU sleeps 200 ms and spins 2 ms in turn, so that CPU has one long idle
residency per period whenever the rest of the host lets it; and the threshold comes from a
first 8 s measurement (`record --catch idle>1us`, the idle residencies' p90, at least
50 us), so the rule fires a few times a second either way. A host that never idles (no
residency at all in the measurement or in the run): the test says so and exits 77 (skip).

Part 1: `record --flight 2s -i 100ms -d 14 --catch idle>LONG -o DIR`; checks: the files on
disk are the ones stderr names (one `flight: wrote` line each) and the summary counts
them (firings = files + inside + skipped); each file is complete (info: END seen), readable
by `schedhot report --json`, and covers [firing - 2 s, firing + 2 s] (the firing's
CLOCK_MONOTONIC time from its META command; the first sample at or before firing - 2 s
unless it is the run's first file, the last at or after firing + 2 s unless the run ended
first, and neither more than 1 s beyond); files' firings are more than 2 s apart (later
firings inside a file extend nothing).
Part 2: `--flight 1s --catch idle>1us -d 0`, killed with SIGKILL once a file was written and
the next is in progress (or 10 s after the first file when no other firing comes): every
file stderr said was written is still complete with its samples, the one in progress (if
any) is readable by report.

usage: test_flight_live.py PATH/TO/schedhot
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from livecheck import check, failures, require_root

SCHEDHOT = sys.argv[1]
D = 2.0
SLEEP, SPIN = 0.2, 0.002


require_root()

ncpu = os.cpu_count() or 1
pacer_code = ("import time,sys\n"
              "end=time.time()+float(sys.argv[1])\n"
              f"while time.time()<end:\n"
              f"    time.sleep({SLEEP})\n"
              f"    t=time.time()+{SPIN}\n"
              "    while time.time()<t: pass\n")


def pacer(seconds):
    return subprocess.Popen(["taskset", "-c", str(ncpu - 1), sys.executable, "-c", pacer_code, str(seconds)])


def info(path):
    r = subprocess.run([SCHEDHOT, "info", "--json", path], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def meta_fire_ns(path):
    with open(path, "rb") as f:
        head = f.read(1 << 20)
    m = re.search(rb"CLOCK_MONOTONIC ([0-9.]+) s\)", head)
    return int(float(m.group(1)) * 1e9) if m else None


def written(err):
    return re.findall(r"flight: wrote (\S+): (\d+) samples", err)


with tempfile.TemporaryDirectory() as tmp:
    # ---- the threshold: idle residencies' p90 over 8 s ----
    m = os.path.join(tmp, "measure.shot")
    p = pacer(9)
    r = subprocess.run([SCHEDHOT, "record", "-d", "8", "-i", "500ms", "-q", "--catch", "idle>1us", "-o", m],
                       capture_output=True, text=True, timeout=120)
    p.wait()
    check(r.returncode == 0, f"the measurement records ({r.stderr.strip()[-300:]})")
    rep = subprocess.run([SCHEDHOT, "report", "--json", m], capture_output=True, text=True)
    lat = {}
    if rep.returncode == 0:
        lat = next((x.get("latency_ns") or {} for x in json.loads(rep.stdout)["probes"] if x["name"] == "idle"), {})
    if not lat.get("count"):
        print("SKIP: no idle residency in 8 s: the host never idles (saturated by other work)")
        sys.exit(1 if failures else 77)
    LONG = f"{max(50, int(lat['p90'] / 1000))}us"
    print(f"idle residencies: {lat['count']} in 8 s, p50 {lat['p50'] / 1e3:.0f} us, p90 {lat['p90'] / 1e3:.0f} us: "
          f"--catch idle>{LONG}")

    # ---- part 1 ----
    out = os.path.join(tmp, "flight")
    p = pacer(16)
    rec = subprocess.run([SCHEDHOT, "record", "--flight", "2s", "-i", "100ms", "-d", "14", "--catch", f"idle>{LONG}",
                          "-o", out], capture_output=True, text=True, timeout=120)
    p.wait()
    err = rec.stderr
    print(err)
    check(rec.returncode == 0, f"record --flight exits 0 ({err.strip()[-300:]})")
    check(os.path.isdir(out) and (os.stat(out).st_mode & 0o022) == 0, "DIR created, not writable by group or others")
    summ = re.search(r"flight: (\d+) firings?, (\d+) files? in \S+, (\d+) inside a file in progress, (\d+) skipped", err)
    check(summ is not None, "the summary line")
    files = sorted(f for f in os.listdir(out)) if os.path.isdir(out) else []
    if summ and int(summ.group(1)) == 0:
        check(files == [], "no firing, no file")
        print(f"SKIP: no idle residency over {LONG} in 14 s: the host gave no CPU idle time that long "
              "(saturated by other work)")
        sys.exit(1 if failures else 77)
    wr = written(err)
    check(len(files) == int(summ.group(2)) if summ else False, f"files on disk {files} = summary's count")
    check(sorted(os.path.basename(f) for f, _ in wr) == files, f"one 'flight: wrote' line per file: {wr}")
    check(all(re.fullmatch(r"\d{8}T\d{6}Z-idle(-\d+)?\.shot", f) for f in files), f"file names {files}")
    if summ:
        check(int(summ.group(1)) == int(summ.group(2)) + int(summ.group(3)) + int(summ.group(4)),
              "firings = files + inside + skipped")
    fires = []
    run_first = run_last = None
    for f in files:
        path = os.path.join(out, f)
        i = info(path)
        check(i is not None and i["integrity"]["complete"], f"{f}: complete (END)")
        rep = subprocess.run([SCHEDHOT, "report", "--json", path], capture_output=True, text=True)
        check(rep.returncode == 0, f"{f}: report reads it ({rep.stderr.strip()})")
        fire = meta_fire_ns(path)
        check(fire is not None, f"{f}: META names the firing")
        if i is None or fire is None:
            continue
        first, last = i["integrity"]["first_mono_ns"], i["integrity"]["last_mono_ns"]
        fires.append(fire)
        print(f"{f}: firing {fire / 1e9:.3f}, samples {first / 1e9:.3f} .. {last / 1e9:.3f}")
        check(first <= fire - D * 1e9 or f == files[0], f"{f}: starts at or before firing - 2 s ({first} vs {fire})")
        check(last >= fire + D * 1e9 or f == files[-1], f"{f}: ends at or after firing + 2 s ({last} vs {fire})")
        check(first >= fire - (D + 1.0) * 1e9 or f == files[0], f"{f}: no more than one interval before firing - 2 s")
        check(last <= fire + (D + 1.0) * 1e9, f"{f}: no more than one interval after firing + 2 s")
    fires.sort()
    check(all(b - a > D * 1e9 for a, b in zip(fires, fires[1:])), f"files' firings more than 2 s apart: {fires}")

    # ---- part 2: kill -9 in the middle ----
    out2 = os.path.join(tmp, "flight9")
    p = pacer(30)
    proc = subprocess.Popen([SCHEDHOT, "record", "--flight", "1s", "-i", "100ms", "-d", "0", "--catch", "idle>1us",
                             "-o", out2], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    os.set_blocking(proc.stderr.fileno(), False)
    buf = ""
    deadline = time.monotonic() + 45
    killed_with = None
    first_done = None
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        try:
            buf += proc.stderr.read() or ""
        except TypeError:
            pass
        done = written(buf)
        on_disk = os.listdir(out2) if os.path.isdir(out2) else []
        if done and first_done is None:
            first_done = time.monotonic()
        # one closed and the next in progress; or, when idle is scarce, one closed and 10 s
        # without a next firing: the kill then hits the held samples only
        if done and (len(on_disk) > len(done) or time.monotonic() - first_done > 10):
            killed_with = (list(done), sorted(on_disk))
            proc.send_signal(signal.SIGKILL)
            break
    if killed_with is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    p.kill()
    p.wait()
    check(killed_with is not None, f"a file written within 45 s ({buf.strip()[-300:]})")
    if killed_with:
        done, on_disk = killed_with
        for f, n in done:
            i = info(f)
            check(i is not None and i["integrity"]["complete"] and i["integrity"]["samples"] == int(n),
                  f"{f}: still complete with its {n} samples after kill -9")
        open_ones = [f for f in sorted(os.listdir(out2)) if os.path.join(out2, f) not in [d for d, _ in done]]
        print(f"killed with {len(done)} file(s) written and {len(open_ones)} in progress")
        for f in open_ones:
            rep = subprocess.run([SCHEDHOT, "report", "--json", os.path.join(out2, f)], capture_output=True, text=True)
            check(rep.returncode == 0, f"{f} (in progress at the kill): report reads it ({rep.stderr.strip()})")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("OK")
