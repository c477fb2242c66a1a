#!/usr/bin/env python3
"""guest_cost.py [--short] [--kernel 6.12] [--runs N] [--seconds S] [--build DIR] [--guest-bin BIN] [--out DIR]

What schedhot costs the kernel where fentry and kprobes work for real: a Debian kernel guest
under QEMU (tests/vm: boot.sh, TCG, 4 vCPUs, booted through e2e.py's boot_guest), ONE boot.
Inside it (tests/bench/guest-init.sh), a fixed workload runs under each configuration:

  no tool | schedhot record (default probes: fentry) | schedhot record --backend kprobe |
  schedhot record --exact | funclatency (Debian's libbpf-tools 0.26, kprobe + kretprobe)

workloads (tests/vm/workload.c, DUR seconds each, the tool attached before and detached after):
  hackbench   workload hackbench -g 2 -f 4            messages received per second
  cpupri      workload fifo-sleepers -p 50 -u 50      SCHED_FIFO sleep/wake iterations per second
funclatency times one function: the per-tick sched_balance_trigger (6.12, 7.3; trigger_load_balance
on 6.1) during hackbench, cpupri_set during the cpupri driver. The configurations run round robin
(their order rotated each round), RUNS rounds. Printed: each configuration's throughput as a ratio
to "no tool" of the same round, median and min-max over the rounds; then one window with schedhot
and funclatency both attached to cpupri_set around the cpupri driver: calls, p50 and p99 from
schedhot's `report --json` and from funclatency's log2 histogram, side by side.

All of it runs under QEMU TCG (software emulation; KVM does not work here): the ratios are TCG's,
not native hardware's. Nothing about speed is asserted. Exit 0 when the figures were produced;
1 with a one-line reason when they could not be (build, image, boot, a tool or a workload
failed, a figure missing); 2 on a usage error.

Full mode: 5 rounds, 3 s per workload, every configuration. --short: 2 rounds, 1.5 s per
workload, every configuration (about 2 minutes with the boot). Results in OUT (default
<dir of the guest binary>/guest-bench/<kernel>/): serial log, every emitted file, summary.json.
The guest's schedhot: --guest-bin, $SCHEDHOT_VM_GUEST_BIN, or built by tests/vm/build-static.sh
in BUILD/vm-static (BUILD: --build, default build/). funclatency: tests/vm/fetch-libbpf-tools.sh.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VM = os.path.join(ROOT, "tests", "vm")
sys.path.insert(0, VM)
import e2e  # noqa: E402  (tests/vm/e2e.py: boot_guest, extract_files, guest_binary, vm_lock, check_deps)

CONFIGS = [  # key (guest-init.sh), label
    ("none", "no tool"),
    ("fentry", "schedhot record (default, fentry)"),
    ("kprobe", "schedhot record --backend kprobe"),
    ("exact", "schedhot record --exact"),
    ("funclatency", "funclatency (kprobe)"),
]
LABEL = dict(CONFIGS)
WORKLOADS = [  # key, JSON throughput field, unit
    ("hackbench", "msgs_per_s", "msg/s"),
    ("cpupri", "iters_per_s", "iter/s"),
]
FULL = {"runs": 5, "seconds": 3.0}
SHORT = {"runs": 2, "seconds": 1.5}


class Failed(Exception):
    pass


def median(v):
    s = sorted(v)
    n = len(s)
    return (s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2) if n else None


def sh(cmd, what, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or [""])[-1]
        raise Failed(f"{what} failed (exit {r.returncode}): {tail}")
    return r.stdout


def package_of(path):
    """Debian package=version owning a library path (merged /usr: also /usr/PATH)."""
    for p in (path, os.path.realpath(path), "/usr" + path):
        r = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            pkg = r.stdout.split(":")[0].strip()
            v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True)
            return f"{pkg} {v.stdout.strip()}"
    return "?"


def build_image(guest_bin, out, tmp):
    """The initramfs: guest-init.sh as /init, busybox, guest-lib.sh (mkinitramfs.sh), the
    stripped static schedhot, workload (static) and Debian's funclatency with the shared
    libraries ldd names and the dynamic loader, at their own paths."""
    fl_dir = sh([os.path.join(VM, "fetch-libbpf-tools.sh")], "fetch-libbpf-tools.sh").strip().splitlines()[-1]
    fl = os.path.join(fl_dir, "root", "usr", "sbin", "funclatency")
    with open(os.path.join(fl_dir, "package")) as fh:
        fl_pkg = fh.readline().strip()
    wl = os.path.join(out, "workload")
    sh([os.path.join(VM, "build-workload.sh"), wl], "build-workload.sh")
    shot = os.path.join(tmp, "schedhot")
    sh(["strip", "-o", shot, guest_bin], f"strip {guest_bin}")
    if "INTERP" in sh(["readelf", "-l", guest_bin], "readelf"):
        raise Failed(f"{guest_bin} is linked dynamically: the guest needs the static build (tests/vm/build-static.sh)")
    libs = re.findall(r"(/[^\s]+)", sh(["ldd", fl], f"ldd {fl}"))
    if not any("ld-linux" in x for x in libs):
        raise Failed(f"ldd {fl} names no dynamic loader")
    files = [f"{shot}:/bin/schedhot", f"{wl}:/bin/workload", f"{fl}:/usr/sbin/funclatency"]
    files += [f"{x}:{x}" for x in libs]
    image = os.path.join(out, "guest-bench.cpio.gz")
    cmd = [os.path.join(VM, "mkinitramfs.sh"), "-o", image, "-i", os.path.join(HERE, "guest-init.sh")]
    for f in files:
        cmd += ["-f", f]
    sh(cmd, "mkinitramfs.sh")
    return image, fl_pkg, [(x, package_of(x)) for x in libs]


def parse_results(path):
    param, wl, tools = {}, {}, []
    with open(path) as fh:
        for line in fh:
            f = line.split(None, 5)
            if not f:
                continue
            if f[0] == "param":
                param = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
            elif f[0] == "wl" and len(f) >= 5:
                rnd, cfg, w, rc = int(f[1]), f[2], f[3], int(f[4].split("=")[1])
                try:
                    j = json.loads(f[5]) if len(f) > 5 else None
                except ValueError:
                    j = None
                wl[(cfg, w, rnd)] = (rc, j)
            elif f[0] == "tool" and len(f) >= 6:
                kv = dict(x.split("=", 1) for x in line.split()[4:] if "=" in x)
                tools.append({"round": int(f[1]), "config": f[2], "function": f[3], "rc": int(kv.get("rc", -1)),
                              "attach_s": float(kv.get("attach_s", "nan")), "probes": kv.get("probes")})
    return param, wl, tools


def parse_funclatency(path):
    """funclatency's log2 histogram -> (unit, [(lo, hi, count)])."""
    unit, rows = None, []
    with open(path, errors="replace") as fh:
        for line in fh:
            m = re.match(r"\s*(nsec|usec|msec)s?\s*:\s*count", line)
            if m:
                unit, rows = m.group(1), []   # the last histogram printed wins
                continue
            m = re.match(r"\s*(\d+)\s*->\s*(\d+)\s*:\s*(\d+)\s*\|", line)
            if m and unit:
                rows.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
    return unit, rows


def hist_pct(rows, q):
    """The log2 bucket holding the q-quantile: (lo, hi)."""
    n = sum(c for _, _, c in rows)
    acc = 0
    for lo, hi, c in rows:
        acc += c
        if acc >= q * n and c:
            return lo, hi
    return None


def fmt_ns(v):
    return f"{v / 1000:.1f} us" if v >= 10000 else f"{v:.0f} ns"


def main(argv):
    ap = argparse.ArgumentParser(prog="guest_cost.py", description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--short", action="store_true", help="CI mode: 2 rounds of 1.5 s per workload")
    ap.add_argument("--kernel", default="6.12", help="the guest's kernel (tests/vm/fetch-kernels.sh; default 6.12)")
    ap.add_argument("--runs", type=int, help="rounds (each configuration once per round)")
    ap.add_argument("--seconds", type=float, help="seconds per workload run")
    ap.add_argument("--configs", default=",".join(k for k, _ in CONFIGS), help="configurations, comma-separated")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory (guest schedhot in BUILD/vm-static)")
    ap.add_argument("--guest-bin", help="the guest's static schedhot (default $SCHEDHOT_VM_GUEST_BIN or a build)")
    ap.add_argument("--out", help="results directory")
    a = ap.parse_args(argv[1:])
    mode = SHORT if a.short else FULL
    runs = a.runs or mode["runs"]
    secs = a.seconds or mode["seconds"]
    configs = a.configs.split(",")
    if a.kernel not in e2e.KNOWN or e2e.arch(a.kernel) != "x86_64":
        print(f"guest_cost: error: --kernel {a.kernel}: an x86 kernel of {' '.join(e2e.KNOWN)}", file=sys.stderr)
        return 2
    bad = [c for c in configs if c not in LABEL]
    if bad or "none" not in configs or runs < 1 or secs <= 0:
        print(f"guest_cost: error: --configs needs 'none' and names of {' '.join(LABEL)}; --runs >= 1, --seconds > 0",
              file=sys.stderr)
        return 2
    try:
        return run(a, runs, secs, configs)
    except Failed as e:
        print(f"guest_cost: error: {e}", file=sys.stderr)
        return 1


def run(a, runs, secs, configs):
    t_all = time.time()
    e2e.check_deps()
    guest_bin = a.guest_bin or os.environ.get("SCHEDHOT_VM_GUEST_BIN") or \
        e2e.guest_binary(os.path.join(os.path.abspath(a.build), "schedhot"), "x86_64", who="guest_cost")
    guest_bin = os.path.abspath(guest_bin)
    t_bin = time.time() - t_all
    if not os.access(guest_bin, os.X_OK):
        raise Failed(f"{guest_bin} is not an executable")
    out = os.path.abspath(a.out or os.path.join(os.path.dirname(guest_bin), "guest-bench", a.kernel))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    lock = e2e.vm_lock("guest_cost")  # noqa: F841 (held until exit)
    r = subprocess.run([os.path.join(VM, "fetch-kernels.sh"), a.kernel], stdout=sys.stderr)
    if r.returncode != 0:
        raise Failed(f"fetch-kernels.sh {a.kernel} failed")
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        image, fl_pkg, libs = build_image(guest_bin, out, tmp)
    t_image = time.time() - t0
    # host-side limit: the plan's estimate (attach about 5 s per tool start) three times over
    starts = sum(2 if c == "funclatency" else (0 if c == "none" else 1) for c in configs)
    est = 30 + runs * (len(configs) * 2 * (secs + 0.5) + starts * 6) + (4 * secs + 20)
    timeout = int(max(300, 3 * est))
    append = (f"schedhot.gb_runs={runs} schedhot.gb_dur={secs:g} schedhot.gb_usec=50 "
              f"schedhot.gb_configs={','.join(configs)} schedhot.gb_compare=1")
    b, boot, dt, retried = e2e.boot_guest(out, a.kernel, image, append, timeout=timeout)
    log = os.path.join(out, "serial.log")
    x = e2e.extract_files(out)
    if b.returncode != 0:
        raise Failed(f"boot.sh rc {b.returncode}: {boot.get('result', b.stderr.strip()[-200:])} (log {log})")
    if x.returncode != 0 or not os.path.exists(os.path.join(out, "results")):
        raise Failed(f"the guest emitted no results ({x.stderr.strip()[-200:]}; log {log})")
    param, wl, tools = parse_results(os.path.join(out, "results"))

    # ---- every tool attached and stopped cleanly, every workload ran
    for t in tools:
        if t["rc"] != 0:
            what = "did not attach" if t["rc"] == 255 else f"exited {t['rc']}"
            tl = os.path.join(out, f"tool-{t['round']}-{t['config']}-{t['function']}.log")
            last = ""
            if os.path.exists(tl):
                with open(tl, errors="replace") as fh:
                    last = ([x.strip() for x in fh if x.strip()] or [""])[-1]
            raise Failed(f"round {t['round']}: {LABEL.get(t['config'], t['config'])} ({t['function']}) {what}: "
                         f"{last[:160]} (log {tl})")
    thr = {}
    for c in configs:
        for w, field, _ in WORKLOADS:
            for rnd in range(1, runs + 1):
                rc, j = wl.get((c, w, rnd), (None, None))
                if rc is None:
                    raise Failed(f"round {rnd}: no {w} run under {LABEL[c]} in the results (log {log})")
                if rc != 0 or not j or not j.get(field):
                    raise Failed(f"round {rnd}: {w} under {LABEL[c]} exited {rc} without {field} (log {log})")
                if w == "hackbench" and j.get("ok") is not True:
                    raise Failed(f"round {rnd}: hackbench under {LABEL[c]} lost messages")
                thr[(c, w, rnd)] = j[field]

    # ---- the compare window
    cmp_log = os.path.join(out, "cmp-record.log")
    cmp_rep = os.path.join(out, "cmp-report.json")
    cmp_fl = os.path.join(out, "cmp-funclatency.txt")
    for p in (cmp_log, cmp_rep, cmp_fl):
        if not os.path.exists(p):
            raise Failed(f"compare window: {os.path.basename(p)} not emitted (log {log})")
    with open(cmp_log, errors="replace") as fh:
        rcs = dict(re.findall(r"^(workload|funclatency|record|report) rc=(\d+)", fh.read(), re.M))
    for k in ("workload", "funclatency", "record", "report"):
        if rcs.get(k) != "0":
            raise Failed(f"compare window: {k} rc {rcs.get(k, 'missing')} (see {cmp_log})")
    try:
        with open(cmp_rep) as fh:
            rep = json.load(fh)
        cp = {p["name"]: p for p in rep["probes"]}["cpupri_set"]
        s_calls = cp["counters"]["calls"]["total"]
        s_lat = cp["latency_ns"]
    except (ValueError, KeyError, TypeError) as e:
        raise Failed(f"compare window: no cpupri_set counts in schedhot's report ({e!r})")
    unit, rows = parse_funclatency(cmp_fl)
    if not rows:
        raise Failed(f"compare window: no histogram in funclatency's output ({cmp_fl})")
    scale = {"nsec": 1, "usec": 1000, "msec": 1000000}[unit]
    f_calls = sum(c for _, _, c in rows)
    f50, f99 = hist_pct(rows, 0.5), hist_pct(rows, 0.99)
    wall = time.time() - t_all

    # ---- print
    info = ""
    if os.path.exists(os.path.join(out, "sysinfo")):
        with open(os.path.join(out, "sysinfo")) as fh:
            info = fh.readline().strip().replace("schedhot-guest: ", "")
    lines = []
    say = lines.append
    say(f"guest_cost: kernel {boot.get('release', '?')} under QEMU TCG (software emulation, multi-threaded, "
        f"-cpu max, {boot.get('smp', '4')} vCPUs on a {os.cpu_count()}-CPU host, no KVM): every ratio below is "
        f"TCG's, not native hardware's")
    say(f"   guest: {info}")
    say(f"   schedhot: {guest_bin} (static); funclatency: Debian {fl_pkg} with "
        + ", ".join(f"{os.path.basename(p)} ({pkg})" for p, pkg in libs))
    say(f"   {runs} rounds, round robin (order rotated each round); per configuration and round: hackbench -g 2 -f 4 "
        f"then fifo-sleepers -p 50 -u 50 (cpupri driver, {param.get('ncpus', '?')}+2 SCHED_FIFO threads), "
        f"{secs:g} s each; funclatency on {param.get('kick', '?')} (hackbench) and cpupri_set (cpupri driver)")
    say("")
    say("throughput as a ratio to no tool in the same round: median (min-max) over the rounds")
    hdr = f"  {'configuration':<34} {'hackbench':>22} {'cpupri driver':>22}   attach s (median)"
    say(hdr)
    summary = {"kernel": boot.get("release"), "kernel_key": a.kernel, "runs": runs, "seconds": secs,
               "short": a.short, "tcg": True, "throughput": {}, "ratios": {}, "attach_s": {}}
    for c in configs:
        cells = []
        for w, field, unit_w in WORKLOADS:
            vals = [thr[(c, w, rr)] for rr in range(1, runs + 1)]
            base = [thr[("none", w, rr)] for rr in range(1, runs + 1)]
            if c == "none":
                m = median(vals)
                ratios = [v / m for v in vals]
            else:
                ratios = [v / bb for v, bb in zip(vals, base)]
            summary["throughput"].setdefault(c, {})[w] = vals
            summary["ratios"].setdefault(c, {})[w] = [round(x, 4) for x in ratios]
            cells.append(f"{median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
        att = [t["attach_s"] for t in tools if t["config"] == c]
        summary["attach_s"][c] = att
        pr = sorted({t["probes"] for t in tools if t["config"] == c and t.get("probes")})
        say(f"  {LABEL[c]:<34} {cells[0]:>22} {cells[1]:>22}   "
            + (f"{median(att):.1f}" if att else "-") + (f" ({', '.join(pr)} probes)" if pr else ""))
    nb = {w: median([thr[("none", w, rr)] for rr in range(1, runs + 1)]) for w, _, _ in WORKLOADS}
    say(f"  (no tool, median: hackbench {nb['hackbench']:.0f} msg/s, cpupri driver {nb['cpupri']:.0f} iter/s; "
        f"its row is each round against that median)")
    say("")
    with open(os.path.join(out, "cmp-workload.json")) as fh:
        cw = json.load(fh)
    say(f"cpupri_set, one window: schedhot record (default probes) and funclatency cpupri_set attached together "
        f"around fifo-sleepers -p 50 -u 50 for {secs:g} s ({cw.get('iters_per_s', 0):.0f} iter/s)")
    pe = rep.get("percentile_error")
    pe_txt = f"{pe * 100:.1f} %" if isinstance(pe, (int, float)) else "?"
    say(f"  {'tool':<34} {'calls':>9} {'p50':>18} {'p99':>18}")
    say(f"  {'schedhot report --json':<34} {s_calls:>9} {fmt_ns(s_lat['p50']):>18} {fmt_ns(s_lat['p99']):>18}"
        f"   (timed {s_lat.get('count')}, {cp.get('backend')}; its percentiles within "
        f"{pe_txt} of the value)")

    def rng(b):
        return f"{b[0] * scale}-{b[1] * scale} ns" if b else "-"
    say(f"  {'funclatency (log2 histogram)':<34} {f_calls:>9} {rng(f50):>18} {rng(f99):>18}"
        f"   (kprobe + kretprobe; percentiles are its log2 buckets)")
    d = s_calls - f_calls
    say(f"  calls: schedhot - funclatency = {d:+d} ({d * 100.0 / f_calls if f_calls else 0:+.2f} %)")
    say("")
    say(f"guest_cost: wall time {wall:.0f} s (guest binary {t_bin:.0f} s, image {t_image:.0f} s, boot and runs {dt:.0f} s, /init after "
        f"{boot.get('init_s', '?')} s){'; ' + retried if retried else ''}")
    summary.update({"compare": {"schedhot": {"calls": s_calls, "timed": s_lat.get("count"), "p50_ns": s_lat["p50"],
                                             "p99_ns": s_lat["p99"], "backend": cp.get("backend")},
                                "funclatency": {"calls": f_calls, "p50_bucket_ns": [x * scale for x in f50] if f50 else None,
                                                "p99_bucket_ns": [x * scale for x in f99] if f99 else None}},
                    "wall_s": round(wall), "boot_s": round(dt), "image_s": round(t_image), "funclatency": fl_pkg,
                    "libs": libs, "tools": tools, "param": param})
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    with open(os.path.join(out, "summary.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
