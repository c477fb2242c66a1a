#!/usr/bin/env python3
"""Live test on the running kernel (needs root).

Records 3 s under a small load, reports it as JSON and checks: the tracepoint probes
attach with non-zero idle rates; idle exits equal an independent ftrace count of
power:cpu_idle exits in the same CLOCK_MONOTONIC window (up to the window's edge
events); every probe is attached or unavailable with a reason, and unavailable ones
carry no numbers; on a kernel that refuses fentry and has no
kprobes (the development machine) the fentry-only probes say exactly that. Then checks
that SIGINT stops a recording (record, top --record) cleanly with a last sample at the
signal, and that no BPF link is left behind.

usage: test_live.py PATH/TO/schedhot
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from livecheck import check, failures

SCHEDHOT = sys.argv[1]


def run(*args, **kw):
    return subprocess.run([SCHEDHOT, *args], capture_output=True, text=True, **kw)


def load():
    """Two processes: short sleeps (idle churn) and a spinning loop (busy ticks)."""
    code = ("import time,sys\n"
            "end=time.time()+float(sys.argv[1])\n"
            "while time.time()<end:\n"
            "    time.sleep(0.0005)\n"
            "    x=sum(range(2000))\n")
    return [subprocess.Popen([sys.executable, "-c", code, "6"]) for _ in range(2)]


def bpf_links():
    try:
        out = subprocess.run(["bpftool", "link", "show", "--json"], capture_output=True, text=True).stdout
        return len(json.loads(out or "[]"))
    except FileNotFoundError:
        return None


links_before = bpf_links()
tmp = tempfile.mkdtemp(prefix="schedhot-live-")
rec = os.path.join(tmp, "live.shot")

probes = run("probes", "--json")
check(probes.returncode == 0, f"probes --json exits 0 (got {probes.returncode}: {probes.stderr.strip()})")
pj = json.loads(probes.stdout)
by_name = {p["probe"]: p for p in pj["probes"]}

# The hot lines' layout and the seed-patch fixes, read from this kernel's BTF and kallsyms.
# Independent facts: nohz.nr_cpus went in v7.0 (5d86d542); cpupri_vec.count is in every
# released kernel; tick_broadcast_lock is in /proc/kallsyms only with CONFIG_KALLSYMS_ALL.
release = os.uname().release
major = int(re.match(r"(\d+)", release).group(1))
with open("/proc/kallsyms") as f:
    lock_listed = any(l.rstrip().endswith(" tick_broadcast_lock") for l in f)
try:  # some VMs have no cache directory in sysfs: schedhot then assumes 64 B and says so
    with open("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size") as f:
        line_size, line_read = int(f.read()), True
except FileNotFoundError:
    line_size, line_read = 64, False
lay, fx = pj.get("layout") or {}, pj.get("fixes") or {}
check(any(n.startswith("cacheline size %d B" % line_size) and (line_read or "(assumed: " in n)
          for n in lay.get("notes", [])),
      f"layout notes give the line size{'' if line_read else ' as assumed'}: {lay.get('notes', [])[:1]}")
check(lay.get("btf_source") == "/sys/kernel/btf/vmlinux", f"layout read from the kernel's BTF: {lay.get('btf_source')!r}")
check(lay.get("line_bytes") == line_size, f"layout line size {lay.get('line_bytes')} = sysfs {line_size}")
ptext = run("probes")
first = ptext.stdout.splitlines()[1:2]
check(first and first[0].startswith("layout BTF /sys/kernel/btf/vmlinux; tick_broadcast_lock ")
      and first[0].endswith(f"; cacheline {line_size} B; symbols /proc/kallsyms"), f"probes says where the layout was read: {first}")
fixes_lines = [l for l in ptext.stdout.splitlines() if l.startswith("fixes: ")]
check(fixes_lines == [fx.get("text")], f"probes prints the fixes line of --json: {fixes_lines} vs {fx.get('text')!r}")
if major == 6:
    check(fx.get("nohz_nr_cpus_removed") is False and lay["nohz"]["nr_cpus"] is not None,
          f"6.x: nohz.nr_cpus present ({fx}, {lay.get('nohz')})")
    check(fx.get("cpupri_count_removed") is False and lay["cpupri"]["count_offset"] is not None,
          f"6.x: cpupri_vec.count present ({fx})")
    check("nohz.nr_cpus present (fix absent); cpupri_vec.count present (fix absent)" in fx.get("text", ""),
          f"fixes text: {fx.get('text')!r}")
if not lock_listed:
    check(fx.get("bcast_lock_own_line") is None and lay["tick_broadcast_lock"]["address"] is None,
          f"tick_broadcast_lock not in kallsyms: its line is unknown ({fx})")
    check("tick_broadcast_lock unknown (KALLSYMS_ALL off" in fx.get("text", ""), f"fixes text names why: {fx.get('text')!r}")
else:
    check(fx.get("bcast_lock_own_line") in (True, False), f"tick_broadcast_lock in kallsyms: own line known ({fx})")

def tracefs():
    """The tracefs mount point, mounting it when needed; None when there is none."""
    for path in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        if os.path.exists(os.path.join(path, "instances")):
            return path
    subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], capture_output=True)
    return "/sys/kernel/tracing" if os.path.exists("/sys/kernel/tracing/instances") else None


class IdleOracle:
    """An independent count of idle exits: a private tracefs instance records
    power:cpu_idle exits (state == PWR_EVENT_EXIT) on the CLOCK_MONOTONIC clock, so the
    events can be cut to the recording's window [first sample, last sample]."""

    def __init__(self):
        self.dir = None
        root = tracefs()
        if not root or not os.path.exists(os.path.join(root, "events/power/cpu_idle")):
            return
        self.dir = os.path.join(root, "instances", f"schedhot-live-{os.getpid()}")
        os.mkdir(self.dir)
        self.write("trace_clock", "mono")
        self.write("buffer_size_kb", "4096")
        self.write("events/power/cpu_idle/filter", "state == 4294967295")
        self.write("events/power/cpu_idle/enable", "1")
        self.write("tracing_on", "1")

    def write(self, name, value):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(value)

    def stop(self):
        """Stops tracing; returns ({cpu: [event mono ns]}, events lost), or None without tracefs."""
        if not self.dir:
            return None
        self.write("tracing_on", "0")
        times = {}
        with open(os.path.join(self.dir, "trace")) as f:
            for line in f:
                m = re.match(r"^\s*.+?\s+\[(\d+)\]\s+\S+\s+(\d+)\.(\d+):\s+cpu_idle:", line)
                if m:
                    times.setdefault(int(m.group(1)), []).append(int(m.group(2)) * 10**9 + int(m.group(3).ljust(9, "0")[:9]))
        lost = 0  # events the ring buffer dropped (overrun) on any CPU
        for cpu in os.listdir(os.path.join(self.dir, "per_cpu")):
            with open(os.path.join(self.dir, "per_cpu", cpu, "stats")) as f:
                lost += sum(int(l.split(":")[1]) for l in f if l.startswith("overrun:"))
        self.write("events/power/cpu_idle/enable", "0")
        os.rmdir(self.dir)
        return times, lost


# --backend proxy on a probe without a proxy blames the choice, not the kernel.
px = run("probes", "--json", "--backend", "proxy", "--probes", "cpupri_find")
pxj = {p["probe"]: p for p in json.loads(px.stdout)["probes"]} if px.returncode == 0 else {}
check(pxj.get("cpupri_find", {}).get("reason") == "--backend proxy: this probe has no tracepoint proxy",
      f"probes --backend proxy: cpupri_find's reason names the choice ({pxj.get('cpupri_find', {}).get('reason')!r})")

procs = load()
time.sleep(0.5)
oracle = IdleOracle()
r = run("record", "-d", "3", "-i", "1", "-o", rec)
oracle_result = oracle.stop()
for p in procs:
    p.wait()
check(r.returncode == 0, f"record exits 0 (got {r.returncode}: {r.stderr.strip()})")

rep = run("report", "--json", "--all-cpus", rec)
check(rep.returncode == 0, f"report exits 0 (got {rep.returncode}: {rep.stderr.strip()})")
j = json.loads(rep.stdout)
check(j["schema"] == "schedhot.report/1", "report schema")
check(j["window"]["samples"] == 4, f"4 samples for -d 3 -i 1 (got {j['window']['samples']})")
check(abs(j["window"]["seconds"] - 3.0) < 0.2, f"window is 3 s (got {j['window']['seconds']})")
probes_rep = {p["name"]: p for p in j["probes"]}

# info of the live recording: the layout recorded at attach, the same fixes as probes.
inf = run("info", "--json", rec)
ij = json.loads(inf.stdout) if inf.returncode == 0 else {}
check(ij.get("fixes") == fx, f"info --json fixes = probes --json fixes ({ij.get('fixes')} vs {fx})")
check((ij.get("layout") or {}).get("btf_source") == "/sys/kernel/btf/vmlinux", "info --json: layout recorded")
itext = run("info", rec).stdout
check(f"fixes      {fx.get('text', '')[len('fixes: '):]}\n" in itext, f"info prints the fixes: {itext}")
# A probe blind at the recording's end: report, info (text and JSON) and record's own
# stderr all say so, with the same reason.
for name, p in probes_rep.items():
    if p["status"] == "attached" and p.get("blind"):
        ip = next((x for x in ij.get("probes", []) if x["name"] == name), {})
        check(ip.get("blind") == p["blind"], f"info --json: {name} blind as report says ({ip.get('blind')})")
        check(f"; blind: {p['blind']}" in itext, f"info: {name}'s row says blind")
        check(f"  {name} blind: {p['blind']}" in r.stderr, f"record's stderr says {name} is blind: {r.stderr}")

# Every probe: attached with numbers, attached but blind (why, and no numbers), or
# unavailable with a reason and no numbers.
for name, p in probes_rep.items():
    if p["status"] == "attached" and "blind" in p:
        check(bool(p["blind"]) and p["counters"] is None and p["per_cpu"] is None,
              f"{name}: a blind probe says why and has no numbers ({p['blind']})")
        check(all(row[f"{name}/s"] is None for row in j["cpus"] if f"{name}/s" in row),
              f"{name}: a blind probe's per-CPU cells are null")
    elif p["status"] == "attached":
        check(p["counters"] is not None, f"{name}: attached probe has counters")
        check(p["backend"] not in ("", "unavailable"), f"{name}: attached probe names its backend")
    else:
        check(bool(p["reason"]), f"{name}: unavailable probe says why")
        check(p["counters"] is None and p["latency_ns"] is None, f"{name}: unavailable probe has no numbers, not zeros")
        for row in j["cpus"]:
            for col, probe in (("nohz_kick/s", "nohz_kick"), ("cpupri_find/s", "cpupri_find"), ("bcast_lock/s", "bcast_lock")):
                if probe == name:
                    check(row[col] is None, f"per-CPU {col} is null for unavailable {name}")

# Tracepoint probes attach on any 6.x kernel with BTF.
for name in ("idle", "bcast_wait"):
    check(probes_rep[name]["status"] == "attached", f"{name} attached ({probes_rep[name]['reason']})")
# Still learning tick_broadcast_lock's address when the recording ended (no kallsyms entry
# here): its contentions were never told apart, so blind, not 0.
bw = probes_rep["bcast_wait"]
if j["host"].get("spinlock") == "virt_spin_lock":
    # a hypervisor without paravirt spinlocks: no contention event at all, which the blind reason says first
    check("emits no contention events" in (bw.get("blind") or ""), f"bcast_wait under virt_spin_lock is blind: {bw.get('blind')}")
elif any(n.startswith("tick_broadcast_lock address unknown") for n in bw["notes"]):
    check("address was not learned" in bw.get("blind", ""), f"bcast_wait with an unlearned lock address is blind: {bw.get('blind')}")
idle = probes_rep["idle"]
if idle["counters"]:
    # A host saturated by other work (a parallel build beside the tests) may never idle in
    # the window: when ftrace's independent count agrees that no CPU left idle, the rate
    # checks give way to "schedhot counted none either" (the per-CPU comparison below).
    never_idled = False
    if oracle_result is not None:
        t0, t1 = j["window"]["start_mono_ns"], j["window"]["end_mono_ns"]
        never_idled = not any(t0 < t <= t1 for ts in oracle_result[0].values() for t in ts)
    if never_idled:
        print("ftrace saw no idle exit in the window (the host never idled): idle rate checks skipped")
        check(idle["counters"]["exits"]["total"] == 0,
              f"no idle exit counted when ftrace saw none (got {idle['counters']['exits']['total']})")
    else:
        check(idle["counters"]["exits"]["rate_per_s"] > 1, f"idle exits/s > 1 under load (got {idle['counters']['exits']['rate_per_s']})")
        check(sum(1 for row in j["cpus"] if (row["idle/s"] or 0) > 0) >= 1, "some CPU has a non-zero idle rate")
        lat = idle["latency_ns"]
        check(lat is not None and lat["p10"] <= lat["p50"] <= lat["p90"] <= lat["p98"] <= lat["p99"] <= lat["max"],
              f"idle residency percentiles are ordered ({lat})")
    # The independent count: ftrace's power:cpu_idle exits between the first and last
    # sample, CPU by CPU. Each event is counted by both within microseconds, so only events
    # at the window's two edges can fall on different sides of it. A CPU where ftrace
    # recorded nothing at all while schedhot counted is left out with a message: that was
    # seen on the development host after hours of use (ftrace stopped recording one CPU's
    # cpu_idle events, in new instances too, while BPF on the same tracepoint still ran).
    if oracle_result is None:
        print("no tracefs here: the idle count is not checked against ftrace")
    else:
        times, lost = oracle_result
        check(lost == 0, f"the ftrace instance lost no events ({lost} overruns)")
        t0, t1 = j["window"]["start_mono_ns"], j["window"]["end_mono_ns"]
        ours_by_cpu = {pc["cpu"]: pc["total"] for pc in idle["per_cpu"]}
        compared = 0
        for cpu, ours in sorted(ours_by_cpu.items()):
            ts = times.get(cpu, [])
            ftrace = sum(1 for t in ts if t0 < t <= t1)
            edge = sum(1 for t in ts if abs(t - t0) < 2_000_000 or abs(t - t1) < 2_000_000)
            print(f"idle exits on CPU {cpu} in the window: schedhot {ours}, ftrace {ftrace} (edge events {edge})")
            if not ts and ours:
                print(f"  ftrace recorded no cpu_idle event on CPU {cpu}: not compared")
                continue
            compared += 1
            check(abs(ours - ftrace) <= edge,
                  f"idle exits on CPU {cpu} agree with ftrace's power:cpu_idle count: {ours} vs {ftrace} (edge events {edge})")
        check(compared > 0, "idle exits compared with ftrace on at least one CPU")

# The development machine: fentry refused (EPERM) and no kprobes.
fentry_refused = any("fentry refused: EPERM" in t["error"] for p in pj["probes"] for t in p["tried"]) or any(
    "fentry refused: EPERM" in p["reason"] for p in pj["probes"])
if fentry_refused and not pj["kprobes"]:
    print("kernel refuses fentry and has no kprobes: checking the fentry-only probes and the proxies")
    for name in ("nohz_kick", "cpupri_find", "bcast_lock"):
        p = probes_rep[name]
        check(p["status"] == "unavailable", f"{name} unavailable here")
        check("fentry refused: EPERM" in p["reason"] and "kprobes not built into this kernel" in p["reason"],
              f"{name} reason names both refusals: {p['reason']}")
    order = {"fentry": 0, "kprobe": 1, "tracepoint": 2}
    for p in pj["probes"]:
        seq = [order.get(t["backend"], 9) for t in p["tried"]]
        check(seq == sorted(seq), f"{p['probe']}: tried in resolution order: {[t['backend'] for t in p['tried']]}")
    check([t["backend"] for t in by_name["bcast_lock"]["tried"]] == ["fentry", "kprobe"],
          f"bcast_lock's tried names both refusals once: {by_name['bcast_lock']['tried']}")
    check("sched_balance_trigger" in by_name["nohz_kick"]["via"] or "trigger_load_balance" in by_name["nohz_kick"]["via"],
          f"nohz_kick names the caller it would use: {by_name['nohz_kick']['via']}")
    for name, tp in (("nohz_exit", "hrtimer_expire_entry"), ("nohz_enter", "tick_stop"), ("cpupri_set", "sched_switch")):
        p = probes_rep[name]
        check(p["status"] == "attached" and p["proxy"], f"{name} attached through its tracepoint proxy")
        check(tp in by_name[name]["symbol"], f"{name} proxy uses {tp}: {by_name[name]['symbol']}")
        check(bool(p["proxy_error"]), f"{name} proxy states its known error")
    ne = probes_rep["nohz_exit"]
    check(ne["counters"]["calls"]["total"] > 0, "nohz_exit proxy counts busy ticks under load")
    check(ne["latency_ns"] is None, "a proxy reports no duration")

# SIGINT stops a recording cleanly: exit 0, a complete file, links gone; and the stop takes
# a final sample at once, so the recording covers the run up to the signal. With -i 5 and
# SIGINT after 2.5 s: the baseline and a sample at the stop (before issue 9's fix only the
# baseline: the calls since the last sample were lost, up to an interval of them).
def stop_with_sigint(argv, what, **kw):
    """Runs schedhot argv, SIGINT after 2.5 s; returns (the signal's CLOCK_MONOTONIC ns,
    the recording's report JSON or {})."""
    path = argv[argv.index("-o" if "-o" in argv else "--record") + 1]
    p = subprocess.Popen([SCHEDHOT, *argv], stderr=subprocess.PIPE, text=True, **kw)
    time.sleep(2.5)
    t_sig = time.monotonic_ns()  # CLOCK_MONOTONIC, the clock of the samples' mono_ns
    p.send_signal(signal.SIGINT)
    try:
        err = p.communicate(timeout=10)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        err = ""
        check(False, f"{what} stops within 10 s of SIGINT")
    check(p.returncode == 0, f"{what} exits 0 after SIGINT (got {p.returncode}: {err.strip()})")
    rep = run("report", "--json", path)
    check(rep.returncode == 0, f"report of the SIGINT-stopped {what} recording exits 0 ({rep.stderr.strip()})")
    return t_sig, (json.loads(rep.stdout) if rep.stdout else {})


rec2 = os.path.join(tmp, "sigint.shot")
t_sig, j2 = stop_with_sigint(["record", "-d", "60", "-i", "5", "-o", rec2], "record")
w2 = j2.get("window", {})
check(j2.get("source", {}).get("complete") is True, "SIGINT-stopped recording is complete (END frame written)")
check(w2.get("samples") == 2, f"record -i 5 stopped after 2.5 s: the baseline and the stop's sample ({w2})")
# The last sample is taken when the signal arrives, not at the last deadline before it:
# after the signal was sent, and well within the 5 s interval.
end_after = (w2["end_mono_ns"] - t_sig) / 1e9 if "end_mono_ns" in w2 else float("nan")
check(0 <= end_after < 1.0, f"record's last sample is at the SIGINT: {end_after:+.3f} s after it")
print(f"record -i 5, SIGINT after 2.5 s: {w2.get('samples')} samples over {w2.get('seconds')} s, "
      f"the last {end_after * 1000:+.1f} ms after the signal")

# top --record (plain tables through a pipe): its recording ends at the stop too.
rec3 = os.path.join(tmp, "top-sigint.shot")
t_sig3, j3 = stop_with_sigint(["top", "-i", "5", "--record", rec3], "top --record", stdout=subprocess.DEVNULL)
w3 = j3.get("window", {})
end_after3 = (w3["end_mono_ns"] - t_sig3) / 1e9 if "end_mono_ns" in w3 else float("nan")
check(w3.get("samples") == 2 and 0 <= end_after3 < 1.0,
      f"top -i 5 --record stopped after 2.5 s: the baseline and a sample at the SIGINT "
      f"({w3.get('samples')} samples, the last {end_after3:+.3f} s after the signal)")

links_after = bpf_links()
if links_before is not None:
    check(links_after <= links_before, f"no BPF link left behind ({links_before} before, {links_after} after)")

# Two tick_broadcast_lock variables in kallsyms (a bind-mounted copy in a mount namespace):
# no address is picked; bcast_wait says it is ambiguous and treats the address as unknown.
if os.geteuid() == 0 and subprocess.run(["which", "unshare"], capture_output=True).returncode == 0:
    with open("/proc/kallsyms") as f:
        ks = [l for l in f if not l.rstrip().endswith(" tick_broadcast_lock")]
    fake = tempfile.NamedTemporaryFile("w", suffix=".kallsyms", delete=False)
    fake.write("".join(ks) + "ffffffffa0000040 b tick_broadcast_lock\nffffffffa0001080 b tick_broadcast_lock\n")
    fake.close()
    sh = f"mount --bind {fake.name} /proc/kallsyms && exec {SCHEDHOT} probes --probes bcast_wait"
    amb = subprocess.run(["unshare", "-m", "sh", "-c", sh + " --json"], capture_output=True, text=True)
    amb_text = subprocess.run(["unshare", "-m", "sh", "-c", sh], capture_output=True, text=True)
    os.unlink(fake.name)
    try:
        bw = next(p for p in json.loads(amb.stdout)["probes"] if p["probe"] == "bcast_wait")
    except (ValueError, KeyError, StopIteration):
        bw = None
        check(False, f"probes --json in a mount namespace: {amb.returncode} {amb.stderr.strip()}")
    if bw and bw["attached"]:
        check(bw["ambiguous"] == [{"name": "tick_broadcast_lock", "addresses": ["0xffffffffa0000040", "0xffffffffa0001080"],
                                   "table": "kallsyms"}], f"ambiguous tick_broadcast_lock listed: {bw['ambiguous']}")
        check(any(n.startswith("tick_broadcast_lock address unknown") and
                  "tick_broadcast_lock is ambiguous: 2 addresses (0xffffffffa0000040, 0xffffffffa0001080) in kallsyms; "
                  "not filtering on a guess" in n for n in bw["notes"]), f"no address guessed: {bw['notes']}")
        check(not any(n.startswith("tick_broadcast_lock at ") for n in bw["notes"]), "no address picked")
        check("ambiguous: 2 addresses for tick_broadcast_lock in kallsyms (0xffffffffa0000040, 0xffffffffa0001080)"
              in amb_text.stdout, f"probes prints the ambiguity: {amb_text.stdout}")

# No privileges: a clear one-line error and a non-zero exit.
if os.geteuid() == 0 and subprocess.run(["which", "setpriv"], capture_output=True).returncode == 0:
    np = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                         SCHEDHOT, "probes"], capture_output=True, text=True)
    check(np.returncode == 1, f"unprivileged probes exits 1 (got {np.returncode})")
    check("CAP_BPF" in np.stderr and len(np.stderr.strip().splitlines()) == 1,
          f"unprivileged run gives one line naming CAP_BPF: {np.stderr!r}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("live test passed")
