#!/usr/bin/env python3
"""Live --exact test on the running kernel (needs root).

Records 2 s with `record --exact` under a small load and checks: the recording has EXACT
frames (report's cachelines.exact), no record was lost, and for every attached probe the
records of each counter equal the counter's delta over the window (a counter with a
`minus` sends the minus counter's word instead: records(calls) = delta(calls) -
delta(minus), include/schedhot/abi.h). A counter and its record are not written at the
same instant as the sampler reads the slots: a record's time is compared with the
sample's clock, read just before the slots, so an event between the two falls in the
counter's interval and the record's next one. Under load that read window can be
preempted (the last CI saw 4 cpupri_set events in it), so the load runs only inside the
window: it starts after the baseline sample is on disk and ends a second before the
last, and each count may differ only by the background events at the two edges (at most
2 per counter here).

usage: test_exact_live.py PATH/TO/schedhot
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from livecheck import check, failures, require_root

SCHEDHOT = sys.argv[1]
EDGE = 2
# counter -> the minus counter whose word replaces it in that case (abi.h)
MINUS = {("nohz_kick", "calls"): "idle_ticks", ("cpupri_set", "calls"): "noop"}


require_root()

code = ("import time,sys\n"
        "end=time.time()+float(sys.argv[1])\n"
        "while time.time()<end:\n"
        "    t=time.time()+0.0005\n"
        "    while time.time()<t: pass\n"
        "    time.sleep(0.001)\n")
# Short-sleeping SCHED_FIFO loops pinned to CPUs 0 and 1: each wakeup and sleep changes
# cpu_to_pri[cpu] (cpupri_set's sched_switch proxy), the only modeled accesses an idle-less
# VM without fentry makes; two CPUs so that the vectors' lines move between them.
ncpu = os.cpu_count() or 1
with tempfile.TemporaryDirectory() as d:
    rec = os.path.join(d, "exact.shot")
    proc = subprocess.Popen([SCHEDHOT, "record", "--exact", "-d", "5", "-i", "1", "-q", "-o", rec],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The recording file appears with the baseline sample (RotatingWriter at the first sample).
    deadline = time.monotonic() + 60
    while not os.path.exists(rec) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    started = os.path.exists(rec)
    load = []
    if started:
        time.sleep(0.3)
        load = [subprocess.Popen(["chrt", "-f", "10", "taskset", "-c", str(c % ncpu), sys.executable, "-c", code, "3"])
                for c in range(2)]
    for p in load:
        p.wait()
    out, err = proc.communicate(timeout=90)
    check(started, f"record --exact wrote its baseline within 60 s (stderr: {err.strip()})")
    check(proc.returncode == 0, f"record --exact exits 0 (stderr: {err.strip()})")
    rep = subprocess.run([SCHEDHOT, "report", "--json", rec], capture_output=True, text=True)
    check(rep.returncode == 0, f"report exits 0 ({rep.stderr.strip()})")
    j = json.loads(rep.stdout) if rep.returncode == 0 else {"probes": []}
    text = subprocess.run([SCHEDHOT, "report", rec], capture_output=True, text=True).stdout

c = j.get("cachelines") or {}
ex = c.get("exact")
check(ex is not None, "report has cachelines.exact: the recording has EXACT frames")
if ex:
    print(f"exact: {ex['records']} records over {ex['seconds']:.2f} s, lost {ex['lost']}")
    check(ex["lost"] == 0, f"no record lost (lost {ex['lost']})")
    check(ex["skipped"] == 0, "no record out of order")
    check(ex["records"] > 0, "some records (idle churn drives nohz_enter/ilb/cpupri proxies)")
    check("exact (--exact):" in text, "text report shows the exact summary")
    by = ex["by_probe"]
    compared = 0
    for p in j["probes"]:
        name = p["name"]
        if p["status"] != "attached" or not p.get("counters"):
            continue
        got = by.get(name, {})
        # records per counter (array elements summed)
        per = {}
        for k, n in got.items():
            per[k.split("[")[0]] = per.get(k.split("[")[0], 0) + n
        for counter in per:
            if counter in p["counters"]:
                delta = p["counters"][counter]["total"]
                minus = MINUS.get((name, counter))
                if minus and (p["counters"].get(minus) or {}).get("total") is not None:
                    delta -= p["counters"][minus]["total"]  # null: a proxy cannot see it (0)
            elif counter in p["arrays"]:
                delta = sum(p["arrays"][counter].values())
            else:
                check(False, f"{name}: records of unknown counter {counter}")
                continue
            compared += 1
            print(f"  {name}.{counter}: records {per[counter]}, counter delta {delta}")
            check(abs(per[counter] - delta) <= EDGE,
                  f"{name}.{counter}: records {per[counter]} == counter delta {delta} (+-{EDGE} edge events)")
    check(compared > 0, "some probe's records compared with its counters")
    for l in c["lines"]:
        check("exact" in l, f"line {l['name']} has exact figures")
        if "exact" in l:
            print(f"  {l['name']}: model {l['xfers_per_s']:.1f} xfer/s, exact {l['exact']['xfers_per_s']:.1f}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
