#!/usr/bin/env python3
"""--catch across CPU hotplug on the running kernel (needs root and a hot-pluggable CPU).

A CPU's perf event is dead once the CPU went offline (bpf_perf_event_output fails there:
full drops); schedhot's reader (probe/perf_drain.h) opens a new buffer for a CPU that came
back online. Records `--catch idle>100us` for 5 s, takes the last CPU offline at 1.5 s and
back online at 2.5 s (restored in any case), then reads the caught events back (export
--format perfetto: a slice per event, tid 1000 + CPU, ts CLOCK_MONOTONIC us). Checks:
- the CPU's idle periods are caught after it came back (from 0.5 s after the online write
  to the end): a dead event would make every one of them a full drop;
- report --json's accounting still holds for the rule: caught + dropped = the histogram's
  count at or above the threshold.
SKIP (exit 77) on a 1-CPU host or one whose last CPU cannot go offline.

usage: test_hotplug_live.py PATH/TO/schedhot
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from livecheck import check, failures, require_root

SCHEDHOT = sys.argv[1]
require_root()

ncpu = os.cpu_count() or 1
cpu = ncpu - 1
online_file = f"/sys/devices/system/cpu/cpu{cpu}/online"
if ncpu < 2 or not os.path.exists(online_file):
    print(f"SKIP: no hot-pluggable CPU ({ncpu} CPUs, {online_file} missing)")
    sys.exit(77)


def set_online(v):
    with open(online_file, "w") as f:
        f.write("1" if v else "0")


with tempfile.TemporaryDirectory() as tmp:
    rec = os.path.join(tmp, "hotplug.shot")
    p = subprocess.Popen([SCHEDHOT, "record", "-d", "5", "-i", "500ms", "-q", "--catch", "idle>100us", "-o", rec],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    back = None
    try:
        time.sleep(1.5)
        try:
            set_online(False)
        except OSError as e:
            p.terminate()
            p.wait()
            print(f"SKIP: CPU {cpu} cannot go offline here ({e})")
            sys.exit(77)
        time.sleep(1.0)
        set_online(True)
        back = time.monotonic()
    finally:
        with open(online_file) as f:
            if f.read().strip() != "1":
                set_online(True)
        out, err = p.communicate(timeout=120)
    if not check(p.returncode == 0, f"record exits 0 ({err.strip()[-300:]})"):
        sys.exit(1)
    trace = os.path.join(tmp, "t.json")
    e = subprocess.run([SCHEDHOT, "export", rec, "--format", "perfetto", "-o", trace], capture_output=True, text=True)
    if not check(e.returncode == 0, f"export --format perfetto exits 0 ({e.stderr.strip()[-300:]})"):
        sys.exit(1)
    with open(trace) as f:
        slices = [ev for ev in json.load(f)["traceEvents"]
                  if ev.get("ph") == "X" and (ev.get("args") or {}).get("rule")]
    mine = [ev for ev in slices if ev.get("tid") == 1000 + cpu]
    after = [ev for ev in mine if ev["ts"] / 1e6 >= back + 0.5]
    print(f"{len(slices)} caught, {len(mine)} on CPU {cpu}, {len(after)} of them from 0.5 s after it came back")
    check(len(after) > 0, f"CPU {cpu}'s idle periods are caught after it came back online ({len(after)})")
    rep = subprocess.run([SCHEDHOT, "report", "--json", rec], capture_output=True, text=True)
    if check(rep.returncode == 0, "report --json exits 0"):
        t = next((x for x in json.loads(rep.stdout).get("tails") or [] if x["probe"] == "idle"), None)
        if check(t is not None, "the report has the idle rule's tails"):
            print(f"idle: caught {t['caught']}, rate drops {t['rate_drops']}, full drops {t['full_drops']}, "
                  f"histogram above {t['histogram_above']}")
            check(t["caught"] + t["rate_drops"] + t["full_drops"] == t["histogram_above"],
                  "caught + dropped = the histogram's count at or above the threshold")
sys.exit(1 if failures else 0)
