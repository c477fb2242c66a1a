#!/usr/bin/env python3
"""e2e.py SCHEDHOT_BIN: schedhot on Debian's own kernels under QEMU, checked against ftrace.

For each kernel of ${SCHEDHOT_VM_KERNELS:-6.1 6.12 7.3 6.1-arm64} (SCHEDHOT_VM_FULL=1, the full tier: also
6.12-arm64 6.12-ppc64le 6.1-ppc64le, which do not fit CI's 60 minutes) it boots one guest (tests/vm/boot.sh,
TCG, 4 vCPUs; a boot that hits the TCG text-patching race or hangs (a soft lockup, or a console
silent for 120 s after /init: boot.sh --stall), boot.sh rc 6, 7 or 8, boots
again, up to 5 times in all) from an initramfs of busybox-static and static binaries: a
statically linked schedhot built from this source tree (tests/vm/build-static.sh, in
<SCHEDHOT_BIN's directory>/vm-static/; $SCHEDHOT_VM_GUEST_BIN names another), the workload and
tracecount. Its /init (e2e-init.sh) records with schedhot, once per backend (default and --backend kprobe; also --backend proxy
on ${SCHEDHOT_VM_PROXY:-6.12}), while workloads drive every target (idle churn, hackbench,
SCHED_FIFO sleepers, CPU hotplug) and the ftrace function tracer counts the same functions
on trace_clock mono. Only trace events whose timestamp lies in (first sample's mono time,
last sample's] are counted (report JSON window.start_mono_ns/end_mono_ns). Then, on the host:

  * every function probe attached with the expected backend and symbol, non-zero on every
    CPU, all of its calls timed (none nested, at most one orphan exit per CPU: a call in flight
    at attach; the timed count is the calls'
    within two per CPU: calls in flight at the window's edges, and calls completed between a
    sample's reads of the calls word and of the histogram);
  * schedhot's totals and per-CPU counts agree with ftrace's within 2 % (at least 1 call);
    ILB kicks against csd:csd_queue_cpu filtered on nohz_csd_func; tick-broadcast sites
    one by one; tick_broadcast_offline against the hotplug workload's offline operations;
  * ftrace lost nothing (no overrun, no lost events, every line parsed);
  * the recording replays on the host (this SCHEDHOT_BIN) into the same report;
  * ARAT guests: bcast_lock says "attached, path not in use on this machine: ARAT
    present" and __tick_broadcast_oneshot_control ran 0 times (schedhot and ftrace);
  * a hypervisor-bit guest (virt_spin_lock): bcast_wait is "blind", no numbers;
  * function_graph p50 of cpupri_set and nohz_balance_exit_idle within a factor of 10
    of schedhot's p50 (default backend);
  * tail capture (issue 31): the default backend's recording also runs --catch with fixed
    thresholds (CATCH_RULES: cpupri_set>150us,idle>300us, and bcast_wait>50us in the
    no-ARAT no-hypervisor guests); per rule, from the host's `report --json`: caught +
    rate drops + full drops == the histogram's count at or above the threshold, exactly;
    something caught; the events received = caught within max(2 per CPU, 1 %) (events at
    the window's first and last samples) when no CATCH frame was lost; every named stack frame
    a text symbol of the guest's own kallsyms; cpupri_set's stacks name a known caller
    (rt.c) and its tasks the SCHED_FIFO workload (fifo-sleeper), with no interrupt time
    inside (interrupts off); idle periods with interrupt time inside (check_tails); with a
    bcast_wait rule (SCHEDHOT_VM_CATCH_NOARAT=1) every caught wait exported, and at least
    85 % of the holders they name confirmed by ftrace: the holder CPU's traced entry of the
    named site from 25 us before to 2 us after the entry its state recorded, 30 points above
    a control CPU's score (check_holder);
  * before/after on ${SCHEDHOT_VM_DIFF:-6.12} (plain boot; issue 12): the cpupri workload
    recorded alone (A) and with a competing SCHED_FIFO load on the same CPUs (B);
    `schedhot diff A B --json` on the host exits 3 with cpupri_set's and cpupri_find's
    changes significant, and `--format patch` is saved as diff.patch.txt;
  * proxies: their counts against the real calls (printed and saved; checked only for
    the direction their documented error states);
  * no-ARAT guests on ${SCHEDHOT_VM_NOARAT:-6.1 6.12} (boot.sh --no-arat --no-hypervisor --cst
    and --no-arat --cst, single-threaded TCG): __tick_broadcast_oneshot_control above the rates
    below; tick_broadcast_lock contentions equal to lock:contention_begin filtered on the lock's
    address (total and per CPU; at least NOHV_MIN_CONTENTIONS of them, so that the comparison
    means something); and the blind spot with the hypervisor bit.

arm64 (6.1-arm64: Debian's linux-image-6.1.0-N-cloud-arm64 on qemu-system-aarch64 -M virt): the
guest runs a static arm64 schedhot, workload, tracecount and busybox cross-built by
tests/vm/build-static-arm64.sh in <SCHEDHOT_BIN's directory>/vm-static-arm64/
($SCHEDHOT_VM_GUEST_BIN_ARM64 names another schedhot; a failed cross build fails the test). The
same checks run, with that kernel's facts: `schedhot probes --json` in the guest must show fentry
refused with ENOTSUPP (arm64 has BPF trampolines on kernel functions since 6.4) and every function
probe on kprobe, so its plain run records the default backend only (= kprobe); the layouts read
from its BTF must be NR_CPUS=256's inline 32 B masks (no CPUMASK_OFFSTACK: no separate mask lines,
no mask pointers to learn, cpu_to_pri[] learned); without KALLSYMS_ALL tick_broadcast_lock's line
is unknown and bcast_wait blind until the lock's address is learned from a contention. With
6.1-arm64 in SCHEDHOT_VM_NOARAT it also gets the idle-dt run: boot.sh --idle-states (a PSCI idle
state marked local-timer-stop, the arch timer without always-on), the no-ARAT workloads, every
tick-broadcast site against ftrace and __tick_broadcast_oneshot_control >= IDLEDT_BCAST_MIN_RATE/s.

6.12-arm64 (Debian's linux-image-6.12.N+deb12-cloud-arm64, bookworm-security; issue 33): the same
guest binaries, and the x86 kernels' facts (CPUMASK_OFFSTACK, KALLSYMS_ALL, NR_CPUS=512): every
function probe on fentry in `probes --json` (BPF trampolines on arm64 since 6.4), both backends
recorded, counts = ftrace; caught idle periods hold no interrupt time there (idle_takes_irqs:
arm64 since 6.3 takes the waking interrupt after the idle exit). Full tier.

6.12-ppc64le (Debian's linux-image-6.12.N+deb12-powerpc64le on qemu-system-ppc64 -M pseries; issue
33): a static ppc64le schedhot cross-built by build-static-cross.sh ppc64el in vm-static-ppc64el/
($SCHEDHOT_VM_GUEST_BIN_PPC64LE names another); no BPF trampoline there, so every function probe is
a kprobe (fentry refused with ENOTSUPP, as 6.1 arm64), counts = ftrace; NR_CPUS=2048 without
CPUMASK_OFFSTACK: the layouts must state inline 256 B masks; KALLSYMS_ALL, so tick_broadcast_lock's
line is known (alone). 6.1-ppc64le has no BTF (NO_BTF): its `nobtf` run only runs `probes` (text,
JSON) and a 1 s record in the guest, and checks that nothing attached, that each says why (no
vmlinux BTF) and what --btf FILE must be, and that record exits 1 with that reason. Full tier.

The many-CPU guest (big, on ${SCHEDHOT_VM_BIG:-} among the kernels; full tier: 6.12): boot.sh --smp 66
--sockets 2 (single-threaded TCG), plain's workloads with more threads, the default backend: the
plain checks but "non-zero on every CPU", learned masks of two 64-bit words (16 B) and 66 CPUs
in 2 packages in the recording's topology.

Results: ${SCHEDHOT_VM_OUT:-<SCHEDHOT_BIN's directory>/vm-e2e}/<kernel>-<variant>/ (serial log
and every emitted file), summary.txt and summary.json there. One VM run at a time per machine
(a lock on $CACHE/vm.lock; a second run waits): parallel guests on a small host would
distort every rate. Exit status 0 when every check passed, 1 otherwise
(one line per failed check), 2 on a usage error. Missing VM packages fail (exit 1).
"""
import atexit
import fcntl
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get("SCHEDHOT_VM_CACHE", "/var/cache/schedhot-vm")
KNOWN = ("6.1", "6.12", "7.3", "6.1-arm64", "6.12-arm64", "6.12-ppc64le", "6.1-ppc64le")
# The default boots (CI's): the three x86 series and arm64 without trampolines; the full tier
# (SCHEDHOT_VM_FULL=1) adds arm64 with fentry and ppc64le, which do not fit CI's 60 minutes
# (the whole CI took 70 min with 6.12-arm64 in the default list, 2026-12-07).
DEFAULT_KERNELS = "6.1 6.12 7.3 6.1-arm64"
FULL_KERNELS = DEFAULT_KERNELS + " 6.12-arm64 6.12-ppc64le 6.1-ppc64le"
# Kernels without BTF: the guest only runs `schedhot probes` (text and JSON) and a record that
# must fail, and the host checks that they say why (no BTF) and what --btf FILE needs.
NO_BTF = ("6.1-ppc64le",)
# The many-CPU guest (issue 33): 66 vCPUs in 2 packages (cpumasks of 2 words), on
# ${SCHEDHOT_VM_BIG:-} (full tier: 6.12), single-threaded TCG like every x86 guest.
BIG_SMP = int(os.environ.get("SCHEDHOT_VM_BIG_SMP", "66"))
BIG_SOCKETS = 2


def arch(kver):
    """The guest's architecture: Debian's -arm64 kernels boot on qemu-system-aarch64, the
    -ppc64le ones on qemu-system-ppc64 (pseries)."""
    for a in ("arm64", "ppc64le"):
        if kver.endswith("-" + a):
            return a
    return "x86_64"


def kernel_low(kver):
    """The lowest address of the kernel's linear map: x86-64 and arm64 kernels live in the top
    byte's range (0xff.. with 5-level paging, QEMU -cpu max has LA57); ppc64's PAGE_OFFSET is
    0xc000000000000000."""
    return 0xc000000000000000 if arch(kver) == "ppc64le" else 0xff00000000000000


def series(kver):
    """The kernel series of a kernel key: "6.1-arm64" -> "6.1"."""
    return kver.split("-")[0]


# What the kernels' Debian configurations give (checked by the layouts, lines and learned
# addresses): x86-64 (amd64 cloud) has CPUMASK_OFFSTACK=y (every cpumask a separate
# allocation) and KALLSYMS_ALL=y; arm64 (arm64 cloud, 6.1) has neither: NR_CPUS=256 masks of
# 32 B inline in their structs, and tick_broadcast_lock's address is not in kallsyms. The
# arm64 cloud 6.12 (bookworm-security's 6.12.N+deb12) has both, like x86 (NR_CPUS=512).
KERNEL_FACTS = {
    "6.1-arm64": {"offstack": False, "kallsyms_all": False, "mask_bytes": 32},
    "6.12-arm64": {"offstack": True, "kallsyms_all": True, "mask_bytes": None},
    # ppc64el (powerpc64le, 6.12): NR_CPUS=2048 without CPUMASK_OFFSTACK (256 B inline masks),
    # KALLSYMS_ALL=y
    "6.12-ppc64le": {"offstack": False, "kallsyms_all": True, "mask_bytes": 256},
}
X86_FACTS = {"offstack": True, "kallsyms_all": True, "mask_bytes": None}


def facts(kver):
    return KERNEL_FACTS.get(kver, X86_FACTS)


def idle_takes_irqs(kver):
    """Whether the interrupt that ends an idle period runs inside it (before cpu_idle's exit
    event). x86 idles with sti; hlt, so the handler runs before hlt returns; arm64 waits in WFI
    with interrupts masked, and since 6.3 (89b3098703bd, "arch/idle: Change arch_cpu_idle()
    behavior: always exit with IRQs disabled") unmasks them only after the idle exit, so no
    idle period holds interrupt time (6.1 arm64 unmasked them inside arch_cpu_idle())."""
    if arch(kver) != "arm64":
        return True
    major, minor = (int(x) for x in series(kver).split("."))
    return (major, minor) < (6, 3)


# Kernels whose default backend cannot be fentry: arm64 attaches BPF trampolines to kernel
# functions through ftrace direct calls, which arm64 has since 6.4 (DYNAMIC_FTRACE_WITH_CALL_OPS);
# on 6.1 the kernel refuses fentry with ENOTSUPP and schedhot falls back to kprobes.
# ppc64 has no BPF trampoline for kernel functions in Debian's 6.12 (arch_prepare_bpf_trampoline
# is the weak stub there): fentry is refused with ENOTSUPP as well.
NO_TRAMPOLINE = ("6.1-arm64", "6.12-ppc64le")
OUT = ""  # set in main

TOL = 0.02            # schedhot vs ftrace: 2 % of the ftrace count, at least 1 call, at least
                      # the events ftrace saw within 10 ms after either boundary (see agree())
GRAPH_FACTOR = 10.0   # function_graph p50 / schedhot p50 must lie in [1/10, 10]
GRAPH_MIN = 20        # function_graph durations needed per function
MIN_CALLS = 10        # a compared function must have run at least this often
# No-ARAT thresholds (all CPUs together, per second of the recording window): the path is
# hot (an ARAT guest runs it 0 times). The rate is TCG's and falls with the host's load: 37,500-
# 63,220/s (6.1) and 49,276-59,274/s (6.12) on a quiet host, 8,219-10,885/s on a host loaded by
# two builds and a VM (2026-12-07: the floors of 10,000 and 15,000 failed there twice), so
# the floors are half the lowest loaded rate.
NOHV_BCAST_MIN_RATE = 4000    # --no-hypervisor
# bcast_wait is checked for agreeing with ftrace's contention_begin count on the lock (total,
# per CPU, every contention timed); the count itself depends on the host's load (47 on a busy
# host, 841-55,875 otherwise; 6 on 6.12 once, 2026-12-06, when its broadcast rate fell to
# 20,336/s: those 6 agreed with ftrace per CPU), so it only has to be large enough for the
# agreement to mean something: a loaded host must not fail CI.
NOHV_MIN_CONTENTIONS = 5      # --no-hypervisor: 6 and 47 (slow guest, loaded host), 841-34,765 (6.12), 1,834-55,875 (6.1) per run
HV_BCAST_MIN_RATE = 4000      # hypervisor bit: 49,473-67,494 (6.1), 54,256-64,664/s (6.12) quiet, 10,119-10,885/s loaded

# Functions each probe attaches to, and the ftrace name counted for it.
FUNC_PROBES = {
    "nohz_exit": "nohz_balance_exit_idle",
    "nohz_enter": "nohz_balance_enter_idle",
    "nohz_kick": None,  # the caller nohz_balancer_kick is inlined into, per kernel
    "cpupri_set": "cpupri_set",
    "cpupri_find": "cpupri_find_fitness",
}
KICK_HOST = {"6.1": "trigger_load_balance", "6.12": "sched_balance_trigger", "7.3": "sched_balance_trigger",
             "6.1-arm64": "trigger_load_balance", "6.12-arm64": "sched_balance_trigger",
             "6.12-ppc64le": "sched_balance_trigger"}
TIMED = ("nohz_exit", "nohz_kick", "cpupri_set", "cpupri_find")
BACKEND_LABEL = {"auto": "fentry", "kprobe": "kprobe"}
# proxy probe -> (real function, the band in % of its calls that its documented error
# allows): nohz_exit counts ticks that leave rq->idle_balance clear, so it misses hotplug
# calls and also counts ticks whose sched_balance_trigger() returns early (measured
# -0.2..+0.0 % in 4 runs; -0.3..+0.7 % when it read idle_cpu()'s inputs at the entry);
# nohz_enter also counts the function's early returns (an upper bound); cpupri_set misses
# changes undone before the next switch (a lower bound, measured -1.4..-6.1 %).
PROXIES = {
    "nohz_exit": ("nohz_balance_exit_idle", -1.0, 1.0),
    "nohz_enter": ("nohz_balance_enter_idle", 0.0, 10.0),
    "cpupri_set": ("cpupri_set", -10.0, 0.0),
}
ARAT_NOTE = "attached, path not in use on this machine: ARAT present"
BLIND = "virt_spin_lock() is a test-and-set loop that emits no contention events"

# Every x86 guest runs single-threaded TCG (run_one adds X86_TCG): under multi-threaded
# TCG, x86 text patching (BPF attach and detach, the function tracer) races with vCPUs
# running the patched code. It oopsed (Oops: int3 in cpuidle_enter_state) in 4 of 6 6.12
# no-ARAT boots and hung a 6.1 one for 10 min; the 6.12 plain boot died at cpupri_set+0x5
# or nohz_balance_*_idle+0x5 in 4 of 4 attempts (2026-12-05). Single-threaded none did, and
# the broadcast path runs faster. arm64 patches under stop_machine: multi-threaded TCG.
X86_TCG = ["--tcg-thread", "single"]

# variant -> boot.sh flags (x86: plus X86_TCG), guest mode, backends, function_graph sample,
# host timeout (s).
VARIANTS = {
    "plain": ([], "plain", ["auto", "kprobe"], True, 420),
    "noarat-nohv": (["--no-arat", "--no-hypervisor", "--cst"], "noarat-nohv", ["auto"], False, 600),
    "noarat": (["--no-arat", "--cst"], "noarat", ["auto"], False, 600),
    # arm64's counterpart (6.1-arm64 in SCHEDHOT_VM_NOARAT): a PSCI idle state marked
    # local-timer-stop and the arch timer without always-on (boot.sh --idle-states), the
    # no-ARAT guests' workloads; the tick broadcast is bc_hrtimer, the spinlocks native
    "idle-dt": (["--idle-states"], "noarat", ["auto"], False, 420),
    # a many-CPU guest (SCHEDHOT_VM_BIG, full tier): BIG_SMP vCPUs in BIG_SOCKETS packages, so the
    # cpumasks hold more than one 64-bit word and the topology has packages to fold
    "big": (["--smp", "BIG_SMP", "--sockets", "BIG_SOCKETS", "--mem", "2048"], "big", ["auto"], False, 1800),
    # a kernel without BTF (NO_BTF): `probes` and a record that must fail, no workloads
    "nobtf": ([], "probes", [], False, 300),
}
# __tick_broadcast_oneshot_control per second in the idle-dt guest (all CPUs): 475, 830 and
# 596/s measured in three runs (2026-12-04, multi-threaded TCG); a third of the lowest
IDLEDT_BCAST_MIN_RATE = 150

# --catch rules of the auto backend's recording (issue 31), fixed thresholds: a fixed one is
# what makes caught + dropped == the histogram's count above it an identity over the run (a
# percentile rule's threshold moves). Set from the e2e's reports of 2026-12-06 (4 vCPUs):
# cpupri_set p90 9.5-13.6 us, p98 100-209 us, p99 143-352 us of ~28,000-32,000 calls (x86),
# p90 76 us, p98 434 us of 12,000 (arm64): 150 us is above the fast mode (TCG preempting a
# vCPU inside the function makes the slow one) and is exceeded a few hundred times per run;
# idle p50 160-190 us, p90 870-930 us (plain): 300 us catches the sleeps between the
# workloads' wakeups, thousands of them, so the rate limit (100/s per CPU) drops some and
# the accounting covers both; bcast_wait (no-ARAT without the hypervisor bit, the one guest
# where it is measured) p50 21-52 us.
CATCH_RULES = {"cpupri_set": "150us", "idle": "300us"}
CATCH_RULES_NOHV = dict(CATCH_RULES, bcast_wait="50us")
# Where cpupri_set is called from (kernel/sched/rt.c of 6.1, 6.12 and 7.3): inc_rt_prio_smp,
# dec_rt_prio_smp (through inc/dec_rt_tasks when an RT task is enqueued or dequeued),
# rq_online_rt and rq_offline_rt (hotplug, root domain changes); GCC inlines the first two
# into the enqueue/dequeue chain, so a stack names what is left of it. The guest greps its
# kallsyms for these (e2e-init.sh CPUPRI_CALLERS, in sysinfo) and the host checks that the
# caught stacks name at least one that the kernel has.


def die(msg, rc=1):
    print(f"e2e: error: {msg}", file=sys.stderr)
    sys.exit(rc)


def pct(s, f):
    return (s - f) * 100.0 / f if f else (0.0 if s == f else float("inf"))


def agree(s, f, edges=0):
    """A sample's mono time is read just before its maps: an event between the two is in
    that sample for schedhot but after the boundary for ftrace. edges = the events ftrace
    saw within 10 ms after the window's start and end, a bound on that (a vCPU of a loaded
    TCG host can stall for milliseconds between the clock read and the map read)."""
    return abs(s - f) <= max(TOL * f, 1, edges)


def check_deps():
    """Every package of tests/vm/DEPS must be installed: a missing one fails, loudly."""
    missing = []
    with open(os.path.join(HERE, "DEPS")) as fh:
        for line in fh:
            p = line.split("#")[0].strip()
            if not p:
                continue
            r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
            if "install ok installed" not in r.stdout:
                missing.append(p)
    if missing:
        die(f"missing VM packages: {' '.join(missing)} (install them: sudo packaging/install-deps.sh)")


def parse_counts(path):
    """ftrace_count_window output -> dict."""
    c = {"count": {}, "trace": {}, "edge": {}, "overrun": {}}
    with open(path) as fh:
        for line in fh:
            f = line.split()
            if not f:
                continue
            if f[0] in ("count", "trace", "edge") and len(f) == 4:
                c[f[0]][(f[1], f[2])] = int(f[3])
            elif f[0] == "overrun" and len(f) == 3:
                c["overrun"][f[1]] = int(f[2])
            elif f[0] == "window" and len(f) == 3:
                c["window"] = (int(f[1]), int(f[2]))
            elif f[0] in ("traced", "missing", "events"):
                c[f[0]] = f[1:]
            elif len(f) == 2:
                c[f[0]] = f[1]
    return c


def parse_record_log(path):
    jobs, rc = [], {}
    with open(path, errors="replace") as fh:
        for line in fh:
            line = line.strip()
            if line.startswith("{"):
                try:
                    jobs.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
            m = re.match(r"workloads rc=(\d+) record rc=(\d+)(?: stop_mono_ns=(\d+))?", line)
            if m:
                rc = {"workloads": int(m.group(1)), "record": int(m.group(2))}
                if m.group(3):
                    rc["stop_mono_ns"] = int(m.group(3))
    return jobs, rc


def first_difference(a, b, path=""):
    if type(a) is not type(b):
        return f"{path or '/'}: {a!r} vs {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}/{k}: only in {'host' if k in a else 'guest'}"
            d = first_difference(a[k], b[k], f"{path}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} elements"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def median(v):
    s = sorted(v)
    return s[len(s) // 2] if s else None


class Checker:
    def __init__(self):
        self.failures = []
        self.rows = []      # agreement rows for the summary
        self.proxies = []
        self.graph = []
        self.diffs = []
        self.learned = []
        self.noarat = []
        self.lines = []
        self.stops = []     # the last sample after the SIGINT, ms
        self.cachelines = []
        self.gap_state = []
        self.tails = []     # --catch rules of the auto recordings

    def say(self, msg=""):
        print(msg, flush=True)
        self.lines.append(msg)

    def fail(self, tag, msg):
        self.failures.append(f"{tag}: {msg}")
        self.say(f"   FAIL {tag}: {msg}")

    def expect(self, ok, tag, msg):
        if not ok:
            self.fail(tag, msg)
        return ok


def probes_by_name(report):
    return {p["name"]: p for p in report["probes"]}


def total(p, field=None):
    if not p or p.get("counters") is None:
        return None
    return p["counters"][field or p["primary"]]["total"]


def compare(ck, tag, kver, variant, backend, probe, fname, s, counts, per_cpu=None, cpus=()):
    """schedhot count s (and per-CPU totals) against ftrace's count of fname in the window."""
    f = counts["count"].get((fname, "all"))
    if not ck.expect(f is not None, tag, f"{fname} not counted by ftrace (traced: {' '.join(counts.get('traced', []))})"):
        return
    row = {"kernel": kver, "variant": variant, "backend": backend, "probe": probe, "function": fname,
           "schedhot": s, "ftrace": f, "diff_pct": round(pct(s, f), 3),
           "edge_start": counts["edge"].get((fname, "start"), 0), "edge_end": counts["edge"].get((fname, "end"), 0)}
    edges = row["edge_start"] + row["edge_end"]
    worst = 0
    if per_cpu is not None:
        for pc in per_cpu:
            fc = counts["count"].get((fname, f"cpu{pc['cpu']}"), 0)
            worst = max(worst, abs(pc["total"] - fc))
            ck.expect(agree(pc["total"], fc, edges), tag,
                      f"{probe} on CPU {pc['cpu']}: schedhot {pc['total']} vs ftrace {fc} ({pct(pc['total'], fc):+.2f} %)")
        row["per_cpu_max_abs_diff"] = worst
    ck.rows.append(row)
    ok = agree(s, f, edges)
    ck.say(f"   {backend:<6} {probe:<11} {fname:<34} schedhot {s:>7}  ftrace {f:>7}  {pct(s, f):+6.2f} %"
           + (f"  per-CPU max |d| {worst}" if per_cpu is not None else "")
           + (f"  (edge events {edges})" if edges else "") + ("" if ok else "  <-- beyond 2 %"))
    ck.expect(ok, tag, f"{probe} ({fname}): schedhot {s} vs ftrace {f} ({pct(s, f):+.2f} %, allowed "
                       f"max(2 %, 1, {edges} edge events))")


def check_backend(ck, kver, variant, backend, d, binary):
    tag = f"{kver}/{variant}/{backend}"
    rep_path = os.path.join(d, f"report-{backend}.json")
    cnt_path = os.path.join(d, f"counts-{backend}")
    log_path = os.path.join(d, f"record-{backend}.log")
    rec_path = os.path.join(d, f"rec-{backend}.shot")
    for p in (rep_path, cnt_path, log_path, rec_path):
        if not os.path.exists(p):
            ck.fail(tag, f"the guest emitted no {os.path.basename(p)} (serial log: {os.path.join(d, 'serial.log')})")
            return
    with open(rep_path) as fh:
        report = json.load(fh)
    counts = parse_counts(cnt_path)
    jobs, rcs = parse_record_log(log_path)
    probes = probes_by_name(report)
    w = report.get("window", {})

    # the run itself
    ck.expect(rcs.get("record") == 0 and rcs.get("workloads") == 0, tag,
              f"record rc={rcs.get('record')} workloads rc={rcs.get('workloads')} (see {log_path})")
    ck.expect(w.get("samples", 0) >= 8, tag, f"only {w.get('samples')} samples in the recording")
    # SIGINT came while a workload ran: the last sample must be the stop's (taken when the
    # signal arrived), so the recording covers the whole run and ftrace's window, (first
    # sample, max(last sample, stop)], is the recording's. Before issue 9's fix the last
    # sample was the last 500 ms one before the signal, and the calls after it were lost.
    stop = rcs.get("stop_mono_ns")
    end = w.get("end_mono_ns")
    if ck.expect(stop is not None and end is not None, tag, f"no stop time in {log_path} or no window end"):
        ck.say(f"   stop   SIGINT at +{(stop - w['start_mono_ns']) / 1e9:.3f} s; last sample "
               f"{(end - stop) / 1e6:+.1f} ms after it")
        ck.expect(end >= stop, tag, f"the recording ends {(stop - end) / 1e6:.1f} ms before the SIGINT: "
                                    "its last sample is not the stop's (the calls after it are lost)")
        ck.stops.append({"kernel": kver, "variant": variant, "backend": backend, "after_stop_ms": round((end - stop) / 1e6, 1)})
    ck.expect("start_mono_ns" in w and counts.get("window") == (w.get("start_mono_ns"), max(end or 0, stop or 0)), tag,
              f"ftrace window {counts.get('window')} is not the whole run ({w.get('start_mono_ns')}, "
              f"max({end}, {stop})]")
    ck.expect(counts.get("clock") == "mono", tag, f"trace_clock is {counts.get('clock')}, not mono")
    ck.expect(counts.get("status") == "ok" and counts.get("overrun_total") == "0", tag,
              f"ftrace overran: {counts.get('overrun_total')} events overwritten")
    ck.expect(counts.get("lost_events") == "0" and counts.get("unparsed_lines") == "0", tag,
              f"ftrace lost {counts.get('lost_events')} events, {counts.get('unparsed_lines')} lines unparsed")

    # replay on the host
    r = subprocess.run([binary, "report", "--json", "--all-cpus", rec_path], capture_output=True, text=True)
    host = None
    if ck.expect(r.returncode == 0, tag, f"host replay: schedhot report exited {r.returncode}: {r.stderr.strip()}"):
        host = json.loads(r.stdout)
        host.pop("source", None)
        guest = dict(report)
        guest.pop("source", None)
        diff = first_difference(host, guest)
        ck.expect(diff is None, tag, f"host replay differs from the guest's report at {diff}")

    if backend == "proxy":
        check_proxy(ck, tag, kver, probes, counts, w)
        return

    want = BACKEND_LABEL[backend]
    if backend == "auto" and kver in NO_TRAMPOLINE:
        want = "kprobe"
    for probe, fname in FUNC_PROBES.items():
        fname = fname or KICK_HOST[kver]
        p = probes.get(probe)
        if not ck.expect(p and p["status"] == "attached", tag, f"{probe} not attached: {p and p['reason']}"):
            continue
        ck.expect(p["backend"] == want and p["symbol"] == fname, tag,
                  f"{probe} attached as {p['backend']} {p['symbol']}, expected {want} {fname}")
        if probe == "nohz_kick":
            ck.expect("nohz_balancer_kick inlined" in p["via"], tag, f"nohz_kick via '{p['via']}', expected the inlined note")
        s = total(p)
        compare(ck, tag, kver, variant, backend, probe, fname, s, counts, p["per_cpu"])
        # How often the guest's workload drives a function is the workload's doing: the plain
        # guest is built to drive each one (>= MIN_CALLS); in the no-ARAT guests, made for the
        # tick broadcast, an idle-entry path can run only a few times on a loaded host (9
        # nohz_balance_enter_idle calls seen, schedhot = ftrace), so there it must only have run.
        # The big guest's 12 SCHED_FIFO sleepers on 66 CPUs nearly always wake on a CPU with
        # no RT task, so find_lowest_rq (cpupri_find_fitness) ran 8 times there (= ftrace).
        floor = MIN_CALLS if variant == "plain" or (variant == "big" and probe != "cpupri_find") else 1
        ck.expect(s >= floor, tag, f"{probe}: only {s} calls: the workload did not drive it")
        if variant == "plain":
            idle = [pc["cpu"] for pc in p["per_cpu"] if pc["total"] == 0]
            ck.expect(not idle, tag, f"{probe}: no calls on CPU(s) {idle} although the workload ran there")
        if probe in TIMED:
            # Calls are counted at entry and timed at return: a call in flight when the
            # window's first sample is read is timed but not counted, one in flight at the
            # last sample is counted but not timed. These functions do not nest on a CPU,
            # so the two totals differ by at most one call per CPU. An orphan exit (a return
            # with no entry time) is a call already running when the entry program attached
            # (fentry and fexit are two links); one on a CPU whose vCPU thread was descheduled
            # past the baseline sample lands in the window (seen once on 6.1 under a loaded
            # TCG host): at most one per CPU. And a sample's copy of a CPU's slot is not atomic:
            # the calls word is read before the histogram, so calls completed between the two
            # reads are timed but not counted (at the last sample, taken while the workload
            # runs). On hardware that is microseconds; under single-threaded TCG the reading
            # vCPU can be switched out between them (6.12 plain, 2026-12-07: 18,010 timed of
            # 18,005 counted calls, no nesting, no orphan exit): one more per CPU.
            c = p["counters"]
            lat = p["latency_ns"] or {}
            ncpu = len(p["per_cpu"] or [])
            timed = lat.get("count")
            ck.expect(c["nested"]["total"] == 0 and c["orphan_exits"]["total"] <= ncpu and timed is not None
                      and abs(timed - s) <= 2 * ncpu, tag,
                      f"{probe}: {s} calls but {timed} timed ({c['nested']['total']} nested, "
                      f"{c['orphan_exits']['total']} orphan exits; calls in flight at the window's edges "
                      f"allow {2 * ncpu}): entries and exits do not pair up")

    # ILB kicks: csd_queue_cpu of nohz_csd_func (6.5+)
    ik = probes.get("ilb_kick")
    if series(kver) == "6.1":
        ck.expect(ik and ik["status"] == "unavailable" and "6.5" in ik["reason"], tag,
                  f"ilb_kick on 6.1 should be unavailable (csd tracepoints since 6.5), got {ik and ik['status']}")
    elif ck.expect(ik and ik["status"] == "attached" and ik["backend"] == "tracepoint", tag,
                   f"ilb_kick not attached as a tracepoint: {ik and (ik['reason'] or ik['backend'])}"):
        if "csd_queue_cpu" in counts.get("events", []):
            compare(ck, tag, kver, variant, backend, "ilb_kick", "event:csd_queue_cpu", total(ik, "sent"), counts)
        ck.expect(total(ik, "sent") > 0, tag, "ilb_kick: no kick seen")

    check_bcast(ck, tag, kver, variant, backend, report, probes, counts, jobs, want, w)
    check_cachelines(ck, tag, kver, variant, backend, report, probes)
    if backend == "auto":
        check_gap_state(ck, tag, kver, variant, binary, rec_path, jobs, w)
    if backend == "auto" and variant in ("plain", "big"):
        check_learned(ck, tag, kver, binary, rec_path, report)
    if backend == "auto" and catch_rules(variant):
        check_tails(ck, tag, kver, variant, binary, d, rec_path, host, probes, jobs)

    idle = probes.get("idle")
    ck.expect(idle and idle["status"] == "attached" and total(idle) > 0, tag, "idle: not attached or no idle exits")


def catch_rules(variant):
    """The --catch rules of a variant's auto recording: {probe: threshold}. None on the no-ARAT
    guests in the default tier: there the broadcast-rate floors are checked, and with the
    interrupt programs and a rule at ~60k idle exits/s the first run (a loaded host) fell
    below them (11.2k/s against 15k on 6.1, 4.1k against 10k on 6.12) with the cause not
    yet told apart from the host's load; SCHEDHOT_VM_CATCH_NOARAT=1 arms them there
    (bcast_wait included on noarat-nohv), as measured on 2026-12-06."""
    if variant.startswith("noarat") and os.environ.get("SCHEDHOT_VM_CATCH_NOARAT") != "1":
        return {}
    return CATCH_RULES_NOHV if variant == "noarat-nohv" else CATCH_RULES


def duration_ns(text):
    """'150us' -> 150000 (the units --catch takes here)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ns|us|ms|s)", text)
    return round(float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)])


def clone_base(name):
    """cpupri_set.isra.0 -> cpupri_set (GCC/LLVM clone suffixes, as src/probe/kallsyms)."""
    return re.sub(r"(\.(isra|constprop|part|llvm|cold)(\.\d+)?)+$", "", name)


def parse_kallsyms_lines(path):
    """kallsyms lines -> {name: set of nm types}."""
    syms = {}
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                f = line.split()
                if len(f) >= 3:
                    syms.setdefault(f[2], set()).add(f[1])
    return syms


def sysinfo_field(d, key):
    """The words after 'KEY ' on the guest's sysinfo line of that key, or None."""
    path = os.path.join(d, "sysinfo")
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                if line.startswith(key + " "):
                    return line.split()[1:]
    return None


def frame_name(frame):
    """'enqueue_task_rt+0x8c' -> 'enqueue_task_rt' ('[unknown]' for code outside the kernel's
    text: the BPF program and its trampoline)."""
    return frame.rsplit("+0x", 1)[0]


# The holder oracle (e2e-init.sh holder_oracle): a caught bcast_wait's holder is confirmed
# when the holder CPU's ftrace function trace has an entry of the named site from
# HOLD_BEFORE_NS before to HOLD_AFTER_NS after the entry time its state recorded: ftrace's
# callback runs first at the function's entry and the BPF program after it, which under
# TCG is several microseconds later (6.1 no-ARAT guest, 2026-12-06: the traced entry
# 3.4-17.3 us before the recorded one for 80 % of 592 holders, median 7.9 us; ftrace prints
# whole microseconds). At least HOLD_MIN_CONFIRMED of the holders must be confirmed, and a
# control CPU (neither the holder nor the waiter, queried the same way) must score at least
# HOLD_MIN_MARGIN lower: what a wrong holder would get from the site's call rate alone. The
# waiter's traced contention_begin in the same window around the wait's begin shows the clocks
# agree (6.12 no-ARAT guest: 60 of 63 from 7.3 us before to 0.6 us before).
HOLD_BEFORE_NS = 25000
HOLD_AFTER_NS = 2000
HOLD_MIN_CONFIRMED = 0.85
HOLD_MIN_MARGIN = 0.3


def check_holder(ck, tag, d, report_tail):
    """Issue 31: bcast_wait's holder (abi.h struct sh_bcast_holder) against ftrace, from the
    guest's holder-auto (holder_oracle). Returns the figures (also printed)."""
    path = os.path.join(d, "holder-auto")
    if not ck.expect(os.path.exists(path), tag, "bcast_wait rule: the guest emitted no holder-auto (holder_oracle)"):
        return None
    head, got = {}, {"hold": [], "ctrl": [], "wait": []}
    with open(path) as fh:
        for line in fh:
            f = line.split()
            if len(f) == 2:
                head[f[0]] = int(f[1])
            elif len(f) == 4 and f[0] in got:
                got[f[0]].append(None if f[3] == "none" else int(f[3]))
    hold, ctrl, wait = got["hold"], got["ctrl"], got["wait"]
    slices, named = head.get("slices", 0), head.get("with_holder", 0)

    def entered(xs):
        return sum(1 for x in xs if x is not None and -HOLD_BEFORE_NS <= x <= HOLD_AFTER_NS)

    ok_hold, ok_ctrl = entered(hold), entered(ctrl)
    ok_wait = entered(wait)
    ds = sorted(x for x in hold if x is not None)
    fig = {"slices": slices, "with_holder": named, "ambiguous": head.get("ambiguous", 0), "confirmed": ok_hold,
           "control_confirmed": ok_ctrl, "controls": len(ctrl), "wait_confirmed": ok_wait,
           "median_delta_ns": ds[len(ds) // 2] if ds else None}
    ck.say(f"   holder bcast_wait: {slices} caught waits exported, {named} name a holder "
           f"({fig['ambiguous']} of them ambiguous); ftrace confirms {ok_hold} of {len(hold)} holders' site entries "
           f"({HOLD_BEFORE_NS / 1e3:.0f} us before to {HOLD_AFTER_NS / 1e3:.0f} us after the recorded one, median delta "
           f"{fig['median_delta_ns']} ns), a control CPU {ok_ctrl} of {len(ctrl)}; {ok_wait} of {len(wait)} waits' "
           f"contention_begin in the same window")
    ck.expect(slices == report_tail.get("events_received"), tag,
              f"holder oracle: {slices} bcast_wait slices exported, the report received {report_tail.get('events_received')}")
    ck.expect(len(hold) == named, tag, f"holder oracle: {len(hold)} holder queries for {named} holders")
    if slices:
        ck.expect(named > 0, tag, f"holder oracle: none of {slices} caught waits names a holder")
        ck.expect(ok_wait >= HOLD_MIN_CONFIRMED * len(wait), tag,
                  f"holder oracle: only {ok_wait} of {len(wait)} waits have a traced contention_begin from "
                  f"{HOLD_BEFORE_NS} ns before to {HOLD_AFTER_NS} ns after their begin")
    if named:
        ck.expect(ok_hold >= HOLD_MIN_CONFIRMED * named, tag,
                  f"holder oracle: only {ok_hold} of {named} holders entered the named site where their state says, "
                  f"per ftrace")
        if ctrl:
            ck.expect(ok_hold / named >= ok_ctrl / len(ctrl) + HOLD_MIN_MARGIN, tag,
                      f"holder oracle: the holders score {ok_hold}/{named}, a control CPU {ok_ctrl}/{len(ctrl)}: "
                      f"not {HOLD_MIN_MARGIN:.0%} better than chance")
    return fig


def check_tails(ck, tag, kver, variant, binary, d, rec_path, report, probes, jobs=()):
    """Issue 31: the auto recording's --catch rules (catch_rules()), from the host's
    `report --json` of it (`tails`, one entry per rule) and `info --json` (integrity.caught):
      * per rule: accounted (caught + rate drops + full drops == the probe's histogram count
        in the buckets at or above the threshold, exactly), caught > 0 (bcast_wait: when the
        histogram has events above it), every received event at or above the threshold, and
        events_received == caught within max(2 per CPU, 1 %) (events between a sample's
        clock read and its counters' copy, at the window's first and last samples) when the recording's CATCH frames lost nothing;
      * every named frame of every top stack is a text symbol of the guest's own kallsyms (the
        guest's lines of each named function: kallsyms-tails; '[unknown]' is code past _etext:
        BPF, freed .init.text); each stack names at least one kernel function, a cpupri_set
        stack cpupri_set or a known caller;
      * cpupri_set: at least one of its known callers (the guest's CPUPRI_CALLERS that its
        kallsyms has) in the top stacks; 'fifo-sleeper' (the SCHED_FIFO workload) among the
        top tasks; no hard IRQ, softirq or NMI time inside any caught event (it runs under
        the rq lock with interrupts off);
      * idle: some caught events had interrupt time inside (an interrupt ends an idle period),
        none where the waking interrupt runs after the idle exit (idle_takes_irqs());
      * with --exact (tails[].exact, printed per rule): with_transfers <= with_accesses <= events
        <= events_received, with_transfers <= transfers <= the window's transfers, the listed
        lines' sums within the totals, lower_bound iff records were lost."""
    rules = catch_rules(variant)
    if not ck.expect(report is not None and "tails" in report, tag,
                     f"the host's report of {os.path.basename(rec_path)} has no tails (--catch {rules})"):
        return
    r = subprocess.run([binary, "info", "--json", rec_path], capture_output=True, text=True)
    try:
        caught_info = json.loads(r.stdout)["integrity"].get("caught")
    except (ValueError, KeyError, TypeError):
        caught_info = None
    if not ck.expect(caught_info is not None, tag, f"schedhot info --json: no integrity.caught (exit {r.returncode})"):
        caught_info = {}
    frames_lost = caught_info.get("lost")
    ck.say(f"   tails  --catch {','.join(f'{p}>{t}' for p, t in rules.items())}: {caught_info.get('frames')} CATCH "
           f"frames, {caught_info.get('events')} events, {frames_lost} lost")
    syms = parse_kallsyms_lines(os.path.join(d, "kallsyms-tails"))
    ck.expect(bool(syms), tag, "the guest emitted no kallsyms lines for the caught stacks (kallsyms-tails)")
    known = sysinfo_field(d, "cpupri_callers") or []
    known_here = [k for k in known if k in syms or any(clone_base(n) == k for n in syms)]
    tails = {t["probe"]: t for t in report["tails"]}
    ck.expect(sorted(tails) == sorted(rules), tag, f"tails for {sorted(tails)}, rules were {sorted(rules)}")
    # Full drops before the hotplug job (printed, not checked): a CPU that went offline and
    # came back has no perf event in sh_catch_events until the reader opens a new one
    # (probe/perf_drain.h), and what it catches meanwhile counts as a full drop; before the
    # job they are the perf buffers' own overflows.
    marks = {j["mark"]: j["mono_ns"] for j in jobs if "mark" in j}
    pre = {}
    start = report.get("window", {}).get("start_mono_ns")
    if "hotplug" in marks and start:
        to = f"{(marks['hotplug'] - start) / 1e9:.3f}s"
        r = subprocess.run([binary, "report", "--json", "--to", to, rec_path], capture_output=True, text=True)
        try:
            pre = {t["probe"]: t for t in json.loads(r.stdout).get("tails", [])}
        except ValueError:
            pre = {}
        if pre:
            ck.say(f"   tails  before the hotplug job (to {to}): " + ", ".join(
                f"{k} {v['caught']} caught, {v['full_drops']} full drops" for k, v in sorted(pre.items())))
    for probe, thr in rules.items():
        t = tails.get(probe)
        if t is None:
            continue
        asked = duration_ns(thr)
        p = probes.get(probe) or {}
        lat = p.get("latency_ns") or {}
        above, caught, rd, fd = t["histogram_above"], t["caught"], t["rate_drops"], t["full_drops"]
        dur = t.get("duration_ns") or {}
        row = {"kernel": kver, "variant": variant, "rule": t["rule"], "threshold_ns": t["threshold_ns"],
               "caught": caught, "rate_drops": rd, "full_drops": fd, "histogram_above": above,
               "histogram_count": lat.get("count"), "events_received": t["events_received"],
               "perf_lost": t.get("perf_lost"), "p50_ns": dur.get("p50"), "p99_ns": dur.get("p99"),
               "max_ns": dur.get("max"), "stacks_unique": t.get("stacks_unique"), "tasks_unique": t.get("tasks_unique"),
               "full_drops_before_hotplug": (pre.get(probe) or {}).get("full_drops")}
        ck.say(f"   tails  {t['rule']:<18} >= {t['threshold_ns'] / 1e3:.1f} us: caught {caught}, dropped {rd} (rate) "
               f"{fd} (buffer); histogram {above} of {lat.get('count')} at or above: "
               f"{'accounted' if t['accounted'] else 'NOT accounted'}; received {t['events_received']}, "
               f"p50 {(dur.get('p50') or 0) / 1e3:.1f} us p99 {(dur.get('p99') or 0) / 1e3:.1f} us "
               f"max {(dur.get('max') or 0) / 1e3:.1f} us; {t.get('stacks_unique')} stacks, {t.get('tasks_unique')} tasks")
        # With --exact too (the auto recording): the transfers each caught event's CPU took
        # inside its window and the other CPUs' accesses to its lines there (tails[].exact).
        x = t.get("exact")
        if x is not None:
            lines = ", ".join(f"{l['name']} {l['transfers']}/{l['other_accesses']}" for l in x.get("lines", []))
            ck.say(f"   tails  {t['rule']:<18} exact: {x['events']} of {t['events_received']} received in intervals "
                   f"with records, {x['with_accesses']} with their CPU's records inside, {x['with_transfers']} took "
                   f"transfers ({x['transfers']} of the window's {x['window_transfers']}), other CPUs' accesses "
                   f"{x['other_accesses']}, {x['lost']} records lost{' (lower bounds)' if x['lower_bound'] else ''}; "
                   f"lines (transfers/others): {lines or '-'}")
            row.update({"exact_events": x["events"], "exact_with_transfers": x["with_transfers"],
                        "exact_transfers": x["transfers"], "exact_other_accesses": x["other_accesses"]})
            ck.expect(x["with_transfers"] <= x["with_accesses"] <= x["events"] <= t["events_received"]
                      and x["with_transfers"] <= x["transfers"] <= x["window_transfers"]
                      and sum(l["transfers"] for l in x.get("lines", [])) <= x["transfers"]
                      and sum(l["other_accesses"] for l in x.get("lines", [])) <= x["other_accesses"]
                      and x["lower_bound"] == (x["lost"] > 0), tag,
                      f"{t['rule']}: tails exact figures out of order: {json.dumps(x)} "
                      f"(events_received {t['events_received']})")
        ck.expect(t["asked_ns"] == asked and t.get("percentile", 0) == 0 and asked <= t["threshold_ns"], tag,
                  f"{t['rule']}: asked {t['asked_ns']} ns, threshold {t['threshold_ns']} ns, expected a fixed "
                  f"{asked} ns rounded up to a bucket bound")
        # Per CPU within one event in flight at a window edge (the report checks each CPU;
        # the total here can differ by at most one per CPU).
        ncpu = len(p.get("per_cpu") or []) or 4
        ck.expect(t["accounted"] is True and t.get("in_flight") == above - (caught + rd + fd)
                  and abs(above - (caught + rd + fd)) <= ncpu, tag,
                  f"{t['rule']}: caught {caught} + rate drops {rd} + full drops {fd} = {caught + rd + fd}, but the "
                  f"histogram has {above} events at or above {t['threshold_ns']} ns (accounted={t['accounted']}, "
                  f"in_flight={t.get('in_flight')})")
        if probe == "bcast_wait":
            # its count is the host's load's doing (6 to 55,875 contentions per run): caught
            # only has to be there when the histogram has tail events at all
            ck.expect(above == 0 or caught > 0, tag, f"{t['rule']}: {above} events above the threshold, none caught")
            hf = check_holder(ck, tag, d, t)
            if hf:
                row.update({"holder_" + k: v for k, v in hf.items()})
        else:
            ck.expect(caught > 0, tag, f"{t['rule']}: nothing caught ({above} events above the threshold)")
        if frames_lost == 0:
            # The counters of a sample are copied after its clock is read (mono_ns): an event
            # stamped in between is counted in that sample but lies after it, so its record
            # goes to the next interval's batch; and one stamped before it but counted after the
            # copy (the stack walk and the perf output come first; under single-threaded TCG a
            # vCPU can be parked in between) goes the other way. Like the ftrace comparison's
            # edge events, so the window's two edges allow a few: 2 per CPU or 1 % of the
            # caught, whichever is more (2026-12-06: the first interval +4 on 6.1 and +2 on
            # 7.3, an inner boundary of 7.3 +-7 in idle's 2,333).
            ncpu = len(p.get("per_cpu") or []) or 4
            allow = max(2 * ncpu, math.ceil(0.01 * caught))
            ck.expect(abs(t["events_received"] - caught) <= allow, tag,
                      f"{t['rule']}: {t['events_received']} events received but {caught} caught, with no CATCH "
                      f"frame lost (perf_lost {t.get('perf_lost')}; events at the window's two edges allow {allow})")
            row["received_minus_caught"] = t["events_received"] - caught
        if t["events_received"]:
            ck.expect(dur.get("count") == t["events_received"] and (dur.get("p50") or 0) >= t["threshold_ns"], tag,
                      f"{t['rule']}: durations {dur} of {t['events_received']} received events, below the threshold")
        # stacks: every frame a text symbol of this guest's kallsyms
        stacks = t.get("stacks") or []
        if t["events_received"]:
            ck.expect(stacks and t.get("no_stack", 0) < t["events_received"], tag,
                      f"{t['rule']}: no stacks among {t['events_received']} events ({t.get('no_stack')} without)")
        # '[unknown]' is an address past the kernel's _etext that the symbolizer leaves
        # unnamed: the BPF program and its trampoline (innermost) and, on the boot CPU's idle
        # task, the freed .init.text of start_kernel (between rest_init and common_startup_64)
        unknown_syms = set()
        stray = []  # cpupri_set stacks that name neither it nor a known caller
        for st in stacks:
            names = [frame_name(f) for f in st["frames"]]
            real = [n for n in names if n != "[unknown]"]
            ck.expect(real, tag, f"{t['rule']}: stack {';'.join(st['frames'])}: no frame symbolized")
            for n in real:
                if not syms.get(n, set()) & set("tTwW"):
                    unknown_syms.add(n)
            if probe == "cpupri_set" and not {clone_base(n) for n in real} & ({"cpupri_set"} | set(known)):
                stray.append(st)
        if probe == "cpupri_set" and stray:
            # ppc64le's kretprobes (rethook): the innermost frame is the return address the
            # rethook recovered, and 2 of 80 caught events (2026-12-07, one run of two) named
            # a deadline-class function there (__dequeue_dl_entity+0xe0, enqueue_dl_entity+0x26c,
            # then arch_rethook_trampoline and the dl callers), which never calls cpupri_set:
            # an unwinding artifact of that path, allowed for 5 % of the events there; none
            # elsewhere.
            n_stray = sum(st.get("count", 1) for st in stray)
            allowed = math.floor(0.05 * t["events_received"]) if arch(kver) == "ppc64le" else 0
            for st in stray:
                ck.say(f"          stack naming no known caller ({st.get('count', 1)}): {';'.join(st['frames'][:6])}")
            ck.expect(n_stray <= allowed, tag, f"{t['rule']}: {n_stray} caught events' stacks name neither cpupri_set "
                                               f"nor a known caller (allowed {allowed}): {';'.join(stray[0]['frames'])}")
        ck.expect(not unknown_syms, tag, f"{t['rule']}: frames name functions the guest's kallsyms does not have as "
                                         f"text: {sorted(unknown_syms)[:8]}")
        if stacks:
            top = [f for f in stacks[0]["frames"] if not f.startswith("[unknown]")]
            ck.say(f"          top stack ({stacks[0]['count']}, {stacks[0]['share'] * 100:.0f} %): {' <- '.join(top[:6])}"
                   + (" ..." if len(top) > 6 else ""))
        tasks = t.get("tasks") or []
        ck.say(f"          tasks: " + ", ".join(f"{x['comm']} ({x['pid']}) {x['count']}" for x in tasks[:5]))
        irq = t.get("interrupts")
        if irq is not None:
            kinds = {k: (irq.get(k) or {}) for k in ("irq", "softirq", "nmi")}
            ck.say(f"          interrupts (of {irq['events']} events): " + ", ".join(
                f"{k} {v.get('events', 0)} events ({v.get('share', 0) * 100:.1f} %, {(v.get('time_share') or 0) * 100:.2f} % of the time)"
                for k, v in kinds.items()) + (f"; {irq.get('events_lower_bound')} lower bounds" if irq.get("events_lower_bound") else ""))
            row["interrupts"] = {k: v.get("events", 0) for k, v in kinds.items()}
            row["interrupt_events"] = irq["events"]
        if t.get("detail"):
            ck.say(f"          detail: " + ", ".join(f"{k} {v}" for k, v in sorted(t["detail"].items(), key=lambda kv: -kv[1])[:6]))
        if probe == "cpupri_set" and t["events_received"]:
            seen = sorted({clone_base(frame_name(f)) for st in stacks for f in st["frames"]} & set(known))
            row["callers"] = seen
            ck.say(f"          cpupri_set's callers in the top stacks: {' '.join(seen) or 'none'} "
                   f"(of those this kernel has: {' '.join(known_here) or 'none'})")
            ck.expect(seen, tag, f"{t['rule']}: no known caller of cpupri_set ({' '.join(known_here)}) in the top stacks")
            ck.expect(any(x["comm"] == "fifo-sleeper" for x in tasks), tag,
                      f"{t['rule']}: the SCHED_FIFO workload (fifo-sleeper) is not among the top tasks "
                      f"({[x['comm'] for x in tasks]})")
            # rq lock held, interrupts off: no interrupt time can be inside the event
            ck.expect(irq is not None and irq["events"] > 0 and all(v.get("events", 0) == 0 for v in kinds.values()), tag,
                      f"{t['rule']}: interrupt time inside a cpupri_set event (runs with interrupts off): {irq}")
        if probe == "idle" and t["events_received"] and idle_takes_irqs(kver):
            ck.expect(irq is not None and irq["events"] > 0 and any(v.get("events", 0) > 0 for v in kinds.values()), tag,
                      f"{t['rule']}: no caught idle period had an interrupt inside: {irq}")
        elif probe == "idle" and t["events_received"]:
            ck.expect(irq is not None and irq["events"] > 0 and all(v.get("events", 0) == 0 for v in kinds.values()), tag,
                      f"{t['rule']}: interrupt time inside an idle period, where arm64 since 6.3 takes the "
                      f"waking interrupt after the idle exit: {irq}")
        ck.tails.append(row)


def check_probes(ck, kver, d):
    """The guest's `schedhot probes --json` (arm64 guests): every function probe attached with
    the kernel's best backend; where fentry cannot be (NO_TRAMPOLINE) it was tried and refused
    with ENOTSUPP, and kprobe attached instead; the layout read from the guest's own BTF."""
    tag = f"{kver}/probes"
    path = os.path.join(d, "probes.json")
    if not ck.expect(os.path.exists(path), tag, "the guest emitted no probes.json"):
        return
    with open(path) as fh:
        j = json.load(fh)
    ck.expect(j.get("btf") is True and j.get("kprobes") is True, tag, f"btf={j.get('btf')} kprobes={j.get('kprobes')}")
    for p in j["probes"]:
        tried = "; ".join(f"{t['backend']}: {t['error']}" for t in p.get("tried", []))
        ck.say(f"   probe  {p['probe']:<11} {('attached ' + p['backend']) if p['attached'] else 'unavailable':<19} "
               f"{p['symbol'] or '-':<34} {p['reason'] or ''}{'  (tried ' + tried + ')' if tried else ''}")
    by = {p["probe"]: p for p in j["probes"]}
    for probe, fname in FUNC_PROBES.items():
        p = by.get(probe)
        fname = fname or KICK_HOST[kver]
        if not ck.expect(p and p["attached"], tag, f"{probe} not attached: {p and p['reason']}"):
            continue
        if kver in NO_TRAMPOLINE:
            f = [t for t in p.get("tried", []) if t["backend"] == "fentry"]
            ck.expect(p["backend"] == "kprobe" and f and "ENOTSUPP" in f[0]["error"], tag,
                      f"{probe}: backend {p['backend']}, fentry tried: {f}: expected fentry refused "
                      f"with ENOTSUPP (no BPF trampoline for kernel functions: arm64 before 6.4, ppc64) and kprobe attached")
        else:
            ck.expect(p["backend"] == "fentry", tag, f"{probe}: backend {p['backend']}, expected fentry")
        ck.expect(p["symbol"] == fname, tag, f"{probe} on {p['symbol']}, expected {fname}")
    lay = j.get("layout") or {}
    ck.expect(lay.get("btf_source") == "/sys/kernel/btf/vmlinux", tag, f"layout not from the guest's BTF: {lay.get('btf_source')}")


def check_nobtf(ck, kver, d):
    """A kernel without BTF (NO_BTF: Debian's 6.1 ppc64el): the guest's `schedhot probes`
    (text and JSON) attaches nothing and says why for every probe (no vmlinux BTF; kprobes
    are built in but the programs are CO-RE) and what --btf FILE must be (the BTF of exactly
    this release); `record` exits 1 with that one reason."""
    tag = f"{kver}/nobtf"
    paths = {n: os.path.join(d, n) for n in ("probes.txt", "probes.json", "record-probes.log")}
    for n, pth in paths.items():
        if not ck.expect(os.path.exists(pth), tag, f"the guest emitted no {n}"):
            return
    with open(paths["probes.json"]) as fh:
        try:
            j = json.load(fh)
        except ValueError as e:
            ck.fail(tag, f"probes.json is not JSON: {e}")
            return
    rel = j.get("kernel", "")
    need = f"give --btf FILE: the BTF of exactly {rel} (raw BTF, or an ELF vmlinux with a .BTF section)"
    ck.expect(j.get("btf") is False and j.get("kprobes") is True, tag,
              f"btf={j.get('btf')} kprobes={j.get('kprobes')}: expected no BTF and kprobes built in")
    for p in j["probes"]:
        ck.say(f"   probe  {p['probe']:<11} {'attached' if p['attached'] else 'unavailable'}: {p['reason'][:150]}")
        ck.expect(not p["attached"], tag, f"{p['probe']} attached without BTF")
        ck.expect("no vmlinux BTF: /sys/kernel/btf/vmlinux not present" in p["reason"] and need in p["reason"]
                  and "nothing can attach" in p["reason"], tag,
                  f"{p['probe']}: the reason does not say no BTF and what --btf needs: {p['reason']!r}")
        ck.expect(p["reason"].count("no vmlinux BTF") == 1, tag, f"{p['probe']}: the BTF reason repeated: {p['reason']!r}")
    with open(paths["probes.txt"], errors="replace") as fh:
        text = fh.read()
    n = len(j["probes"])
    ck.expect(f"BTF no" in text and f"0 of {n} probes attached" in text and "\nexit 0\n" in text
              and "json exit 0" in text, tag, f"probes (text): expected 'BTF no', '0 of {n} probes attached' and "
                                              f"exit 0 for both forms: {text[-300:]!r}")
    with open(paths["record-probes.log"], errors="replace") as fh:
        rec = fh.read()
    ck.say(f"   record {rec.strip()[:400]}")
    ck.expect(rec.rstrip().endswith("exit 1") and "no probe could attach: no vmlinux BTF" in rec and need in rec
              and rec.count("\n") == 2, tag, f"record without BTF: expected one line naming the cause and what --btf "
                                            f"needs, exit 1: {rec!r}")


def learned_lines(learned, line_bytes):
    """The modeled lines of the learned separate cpupri allocations, computed here from the
    addresses alone: allocations whose line ranges overlap form one object (as
    separate_groups() in src/probe/layout.cpp); returns (allocations, lines)."""
    items = [(m, learned["mask_bytes"]) for m in learned["masks"] if m]
    if learned.get("cpu_to_pri"):
        items.append((learned["cpu_to_pri"], learned["cpu_to_pri_bytes"]))
    groups = []  # [first line, last line]
    for addr, size in sorted(items):
        first, last = addr // line_bytes, (addr + max(size, 1) - 1) // line_bytes
        if groups and first <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], last)
        else:
            groups.append([first, last])
    return len(items), sum(b - a + 1 for a, b in groups)


def check_learned(ck, tag, kver, binary, rec_path, report):
    """Issue 11: the real addresses of the guest's OFFSTACK allocations (Debian: CPUMASK_OFFSTACK=y,
    KALLSYMS_ALL=y) learned by BPF at attach; the lines modeled from them agree with a grouping
    computed here from the addresses; nohz.idle_cpus_mask's bitmap learned through &nohz."""
    r = subprocess.run([binary, "info", "--json", rec_path], capture_output=True, text=True)
    try:
        info = json.loads(r.stdout)
        lay = info["layout"]
    except (ValueError, KeyError, TypeError):
        ck.fail(tag, f"schedhot info --json: no layout (exit {r.returncode}: {r.stderr.strip()[-200:]})")
        return
    a = (lay or {}).get("learned")
    if not ck.expect(a is not None, tag, f"no learned addresses in the recording's layout: {(lay or {}).get('notes')}"):
        return
    nprios = lay["cpupri"]["nr_prios"] if lay.get("cpupri") else 0
    ncpus = report["host"]["online_count"]
    ck.expect(a["cpus"] == list(range(ncpus)), tag, f"learned on CPUs {a['cpus']}, want 0-{ncpus - 1} (one root domain)")
    lb = lay["line_bytes"]
    low = kernel_low(kver)
    if not facts(kver)["offstack"]:
        # CPUMASK_OFFSTACK off (6.1 arm64, ppc64le): the masks are inline in root_domain and nohz, so the
        # only separate allocation is cpu_to_pri[]; its line is modeled from its learned address
        notes = report["cachelines"]["layout"]["notes"]
        ck.expect(a["masks"] == [] and lay["cpupri"]["mask_is_pointer"] is False, tag,
                  f"inline cpupri masks, but {len(a['masks'])} mask pointers learned")
        cp = a.get("cpu_to_pri", 0)
        ck.expect(cp >= low and a.get("rd", 0) >= low, tag,
                  f"root_domain {a.get('rd', 0):#x} / cpu_to_pri {cp:#x} not learned as kernel addresses")
        want = f"cpu_to_pri[] ({a.get('cpu_to_pri_bytes')} B) at {cp:#x}"
        ck.expect(any(want in n for n in notes), tag, f"layout note does not say '{want}': {notes}")
        ck.say(f"   learn  rd {a['rd']:#x}; masks inline; cpu_to_pri[] {a.get('cpu_to_pri_bytes')} B at {cp:#x}")
        ck.learned.append({"kernel": kver, "allocations": 1, "lines": None, "mask_bytes": 0,
                           "nohz_idle_mask_learned": False, "idle_mask_shares_with_cpupri": 0})
        return
    ck.expect(len(a["masks"]) == nprios and all(m >= low for m in a["masks"]), tag,
              f"learned {len(a['masks'])} pri_to_cpu[].mask pointers, want {nprios} kernel addresses")
    allocs, lines = learned_lines(a, lb)
    notes = report["cachelines"]["layout"]["notes"]
    want = f"{allocs} separate allocations in {lines} modeled lines"
    ck.expect(any(want in n for n in notes), tag, f"layout note does not say '{want}': {notes}")
    im = a.get("nohz_idle_mask", 0)
    ck.expect(im >= low, tag, f"nohz.idle_cpus_mask's bitmap not learned (KALLSYMS_ALL guest): {notes}")
    rl = {l["name"]: l for l in report["cachelines"]["lines"]}
    if im and "nohz.idle_cpus_mask" in rl:
        ck.expect(not any("address unknown" in x or "its own line-aligned" in x for x in rl["nohz.idle_cpus_mask"]["assumptions"]),
                  tag, f"nohz.idle_cpus_mask still assumed: {rl['nohz.idle_cpus_mask']['assumptions']}")
    shared = sum(1 for m in a["masks"] if im and m // lb == im // lb)
    if ncpus > 64:
        # the many-CPU guest: OFFSTACK masks of nr_cpu_ids bits, two 64-bit words, and the
        # packages the topology folds (info's topology, from the recording's sysfs facts)
        words = (ncpus + 63) // 64
        ck.expect(a["mask_bytes"] == 8 * words, tag, f"learned {a['mask_bytes']} B masks on {ncpus} CPUs, want {8 * words}")
        topo = info.get("topology") or {}
        ck.expect(topo.get("cpus") == ncpus and topo.get("packages") == BIG_SOCKETS, tag,
                  f"topology {topo}: want {ncpus} CPUs in {BIG_SOCKETS} packages")
        ck.say(f"   big    {ncpus} CPUs: masks of {words} words; topology {topo}")
    ck.say(f"   learn  rd {a['rd']:#x}; {allocs} OFFSTACK allocations ({a['mask_bytes']} B masks) in {lines} lines of {lb} B; "
           f"nohz idle mask {im:#x} (line shared with {shared} cpupri masks)")
    ck.learned.append({"kernel": kver, "allocations": allocs, "lines": lines, "mask_bytes": a["mask_bytes"],
                       "nohz_idle_mask_learned": bool(im), "idle_mask_shares_with_cpupri": shared})


def check_cachelines(ck, tag, kver, variant, backend, report, probes):
    """Issue 11: the guest's own layout (BTF, kallsyms) and fixes, and the model's lines."""
    c = report.get("cachelines")
    if not ck.expect(c is not None, tag, "report has no cachelines section"):
        return
    lay = c["layout"]
    ck.expect(lay["recorded"] and lay["btf"] == "/sys/kernel/btf/vmlinux", tag,
              f"layout not read from the guest's BTF: {lay}")
    fx = c["fixes"]
    want_nr = kver.startswith("7.")  # nohz.nr_cpus removed in 7.0 (5d86d542)
    ck.expect(fx["nohz_nr_cpus_removed"] is want_nr, tag, f"fixes: nohz.nr_cpus removed = {fx['nohz_nr_cpus_removed']}, "
                                                             f"expected {want_nr} on {kver}")
    ck.expect(fx["cpupri_count_removed"] is False, tag, f"fixes: cpupri_vec.count removed = {fx['cpupri_count_removed']}")
    kf = facts(kver)
    lines = {l["name"]: l for l in c["lines"]}
    if kf["kallsyms_all"]:
        # Debian x86 builds with KALLSYMS_ALL: the lock's address is known and it is alone in its line (4.11+)
        ck.expect(fx["bcast_lock_own_line"] is True, tag, f"fixes: tick_broadcast_lock own line = {fx['bcast_lock_own_line']} "
                                                            f"({fx['text']})")
    else:
        # arm64's Debian config has no KALLSYMS_ALL: the lock's line is unknown, and says why
        ck.expect(fx["bcast_lock_own_line"] is None and "KALLSYMS_ALL off" in fx["text"], tag,
                  f"fixes: tick_broadcast_lock own line = {fx['bcast_lock_own_line']} without KALLSYMS_ALL ({fx['text']})")
    if kf["offstack"]:
        # Debian x86: CPUMASK_OFFSTACK=y, so the idle mask is its own allocation
        ck.expect("nohz.idle_cpus_mask" in lines, tag, f"no separate nohz.idle_cpus_mask line (lines: {sorted(lines)})")
    else:
        # 6.1 arm64: NR_CPUS=256, masks inline (32 B) in nohz and in each cpupri vector;
        # ppc64le: NR_CPUS=2048, 256 B
        mb = kf["mask_bytes"]
        notes = lay["notes"]
        ck.expect("nohz.idle_cpus_mask" not in lines and "nohz" in lines
                  and "nohz.idle_cpus_mask[cpu]" in lines["nohz"]["fields"], tag,
                  f"inline idle_cpus_mask: expected it among the nohz line's fields (lines: {sorted(lines)})")
        ck.expect(any(f"idle_cpus_mask an inline {mb} B bitmap" in n for n in notes)
                  and any(f"mask inline {mb} B" in n for n in notes), tag,
                  f"layout notes do not state the inline {mb} B masks of NR_CPUS={mb * 8}: {notes}")
    wi = {w["id"]: w for w in c["what_if"]}
    ck.expect(wi["nohz_nr_cpus"]["applies"] is (not want_nr), tag, f"nr_cpus what-if applies={wi['nohz_nr_cpus']['applies']}")
    ex = c.get("exact")
    for name, l in sorted(lines.items()):
        ck.say(f"   line   {name:<40} reads {l['reads_per_s']:>9.1f}/s writes {l['writes_per_s']:>9.1f}/s "
               f"xfer {l['xfers_per_s']:>9.1f}/s" + (f"  exact {l['exact']['xfers_per_s']:.1f}/s" if l.get("exact") else ""))
        row = {"kernel": kver, "variant": variant, "line": name, "xfers_per_s": l["xfers_per_s"],
               "exact_xfers_per_s": (l.get("exact") or {}).get("xfers_per_s"),
               "gap_xfers_per_s": (l.get("gap") or {}).get("xfers_per_s")}
        ck.cachelines.append(row)
        if not (l.get("exact") and ex):
            continue
        # Issue 29: the gap model (per-CPU gaps of the same accesses) against the exact count,
        # ratios printed for every line with 100 exact transfers or more. The goal is 15 %;
        # what the gap model cannot see (correlation between CPUs: the cpupri handovers, TCG's
        # time-sliced vCPUs on tick_broadcast_lock) keeps some lines out of it, so the check
        # is the measured bound: nohz and cpupri lines within 0.5-2x (the independent-arrivals
        # model was 1.4-2.7x on them), printed for tick_broadcast_lock.
        e, g = l["exact"]["xfers_per_s"], (l.get("gap") or {}).get("xfers_per_s")
        if e * ex["seconds"] < 100:
            if g is not None:
                ck.say(f"   ratio  {name:<40} model/exact {l['exact']['ratio'] or 0:6.2f}  gap/exact "
                       f"{(g / e) if e > 0 else 0:6.2f}  ({e * ex['seconds']:.0f} exact transfers: not checked)")
            continue
        if not ck.expect(g is not None, tag, f"line {name}: an exact figure but no gap model figure"):
            continue
        rg, rm = g / e, l["xfers_per_s"] / e
        goal = "met" if abs(rg - 1) <= 0.15 else "missed"
        ck.say(f"   ratio  {name:<40} model/exact {rm:6.2f}  gap/exact {rg:6.2f}  (15 % goal {goal}; "
               f"{e * ex['seconds']:.0f} exact transfers)")
        row.update({"model_ratio": rm, "gap_ratio": rg, "goal_15pct": goal == "met"})
        if l["family"] in ("nohz", "cpupri"):
            ck.expect(0.5 <= rg <= 2.0, tag, f"line {name}: gap model {g:.1f}/s against exact {e:.1f}/s (x{rg:.2f}): "
                                             f"outside the measured 0.5-2x")
    if backend == "auto":
        if ck.expect(ex is not None and ex["records"] > 0, tag, "record --exact stored no access records"):
            ck.say(f"   exact  {ex['records']} records, {ex['lost']} lost, {ex['skipped']} skipped")
            ck.expect(ex["skipped"] == 0, tag, f"{ex['skipped']} exact records out of order or out of range")
            # Every counted event sent a record, or the record is counted lost: records of a
            # plain counter (one record per increment) against its total over the same window.
            # A CPU's perf event is gone once it went offline (the hotplug job), until the
            # reader opens a new one: its refused records must show up as lost, never as a
            # silent shortfall.
            for pname, field in (("nohz_enter", "calls"), ("nohz_exit", "worked")):
                n, rec = total(probes.get(pname), field), ex["by_probe"].get(pname, {}).get(field, 0)
                if not n:
                    continue
                ck.say(f"   exact  {pname}.{field}: {rec} records, counter {n}")
                ck.expect(rec <= n and rec + ex["lost"] >= 0.99 * n, tag,
                          f"exact: {rec} {pname}.{field} records and {ex['lost']} lost against {n} counted events")
            for name, l in sorted(lines.items()):
                if l["family"] in ("nohz", "cpupri") and l["xfers_per_s"] > 0:
                    ck.expect(l.get("exact") is not None, tag, f"line {name}: a model figure but no exact one")
    for w in c["what_if"]:
        if w["applies"]:
            ck.say(f"   whatif {w['id']:<14} {w['before_xfers_per_s']:.1f} -> {w['after_xfers_per_s']:.1f} xfer/s")
    if variant in ("plain", "big"):
        fam = {l["family"] for l in c["lines"] if l["xfers_per_s"] > 0}
        ck.expect({"nohz", "cpupri"} <= fam, tag, f"the workload moved no nohz or cpupri line (families with transfers: {fam})")
    else:
        tb = lines.get("tick_broadcast_lock")
        ck.expect(tb is not None and tb["xfers_per_s"] > 0, tag,
                  f"no-ARAT guest: tick_broadcast_lock line has no transfers ({tb and tb['xfers_per_s']})")
        if tb:
            bw = probes.get("bcast_wait") or {}
            ck.say(f"   bcast  tick_broadcast_lock {tb['xfers_per_s']:.0f} xfer/s next to "
                   f"{total(bw, 'contentions') if bw.get('counters') else 'unmeasured'} contentions")


def check_gap_state(ck, tag, kver, variant, binary, rec_path, jobs, w):
    """Issue 29: the default cacheline figure, the gap model of the probes' own per-CPU gap
    state, against the exact replay of the --exact records, over the load phases: from the
    first workload (the idle lead-in before it is TCG running one vCPU at a time, a machine
    that does not exist) to the hotplug job (a CPU's perf event is gone once it went offline,
    so the exact count falls short after it). Per line with 100 exact transfers or more:
    the probes' state must give the figure the replay's gap model gives for the same
    accesses (within 10 %, or 3/sqrt(n) on a line with n < 900 transfers, an empirical band:
    accesses at the intervals' edges, and on a quiet line a few gaps move the ratio), and nohz
    and cpupri lines must stay within the measured 0.5-2x of the exact count; the 15 % goal is
    printed per line. The recording notes every event (e2e-init.sh: --gap-samples 0, no
    gap_samples_per_s in the report), as the replay does: sampled (the default), a CPU past
    4000 events/s closes a line's gaps after 1024 of its events, the documented under-count
    of a line it touches rarely, which put the idle mask at x0.87 and x0.83 of the replay in
    two CI runs of busier guests."""
    marks = {j["mark"]: j["mono_ns"] for j in jobs if "mark" in j}
    start = w.get("start_mono_ns")
    if not ck.expect("load" in marks and start, tag, f"no load mark in the record log ({sorted(marks)})"):
        return
    args = [binary, "report", "--json", "--all-cpus", "--from", f"{max(marks['load'] - start, 0) / 1e9:.3f}s"]
    if "hotplug" in marks:
        args += ["--to", f"{(marks['hotplug'] - start) / 1e9:.3f}s"]
    r = subprocess.run(args + [rec_path], capture_output=True, text=True)
    if not ck.expect(r.returncode == 0, tag, f"{' '.join(args[1:])}: exited {r.returncode}: {r.stderr.strip()}"):
        return
    c = json.loads(r.stdout).get("cachelines") or {}
    ex = c.get("exact")
    if not ck.expect(ex is not None, tag, "the load window has no exact figures"):
        return
    ck.say(f"   gaps   load window {args[5]}..{args[7] if len(args) > 7 else 'end'}: estimate "
           f"'{c.get('estimate')}', {ex['records']} exact records, {ex['lost']} lost")
    ck.expect(str(c.get("estimate", "")).startswith("gap model"), tag,
              f"the default estimate is '{c.get('estimate')}', not the probes' gap state")
    ck.expect("gap_samples_per_s" not in c, tag,
              f"the recording's gap state sampled ({c.get('gap_samples_per_s')}/s per CPU): not every event, as the replay")
    for l in c.get("lines", []):
        name, e = l["name"], (l.get("exact") or {}).get("xfers_per_s")
        g, d = (l.get("gap") or {}).get("xfers_per_s"), l["xfers_per_s"]
        if not e or e * ex["seconds"] < 100 or g is None:
            continue
        rd, rg = d / e, g / e
        goal = "met" if abs(rd - 1) <= 0.15 else "missed"
        ck.say(f"   ratio  {name:<40} default/exact {rd:6.2f}  replay-gap/exact {rg:6.2f}  (15 % goal {goal}; "
               f"{e * ex['seconds']:.0f} exact transfers; estimate '{l.get('estimate')}')")
        ck.gap_state.append({"kernel": kver, "variant": variant, "line": name, "default_ratio": round(rd, 3),
                             "replay_gap_ratio": round(rg, 3), "goal_15pct": goal == "met"})
        if ex["lost"] == 0:
            n = e * ex["seconds"]
            band = max(0.10, 3 / math.sqrt(n))
            ck.expect(abs(d / g - 1) <= band, tag, f"line {name}: the probes' gap state gives {d:.1f}/s, the replay "
                                                   f"of the same accesses {g:.1f}/s (x{d / g:.2f}; allowed "
                                                   f"±{band * 100:.0f} % at {n:.0f} transfers)")
        if l["family"] in ("nohz", "cpupri"):
            ck.expect(0.5 <= rd <= 2.0, tag, f"line {name}: default figure {d:.1f}/s against exact {e:.1f}/s "
                                             f"(x{rd:.2f}): outside the measured 0.5-2x")


def check_bcast(ck, tag, kver, variant, backend, report, probes, counts, jobs, want, w):
    host = report["host"]
    bl = probes.get("bcast_lock")
    if not ck.expect(bl and bl["status"] == "attached" and bl["backend"] == want, tag,
                     f"bcast_lock not attached via {want}: {bl and (bl['reason'] or bl['backend'])}"):
        return
    m = re.match(r"(\d+) of (\d+) functions", bl["symbol"])
    traced_sites = [s for s in bl["arrays"]["calls"] if s in counts.get("traced", [])]
    ck.expect(m and int(m.group(1)) == len(traced_sites), tag,
              f"bcast_lock attached '{bl['symbol']}' but ftrace traces {len(traced_sites)} of its sites")
    for site in traced_sites:
        compare(ck, tag, kver, variant, backend, "bcast_lock", site, bl["arrays"]["calls"][site], counts)
    offl = sum(j.get("offline_ops", 0) for j in jobs if j.get("mode") == "hotplug")
    # ppc64le (6.12, pseries): neither the kprobe nor the function tracer sees a call of
    # tick_broadcast_offline while CPUs go offline (0 and 0 against 6 offline operations,
    # 2026-12-07; hotplug_cpu__broadcast_tick_pull 6 = 6 there), although tick_offline_cpu
    # calls its local entry point: compared with ftrace above, not with the workload.
    if offl and arch(kver) != "ppc64le":
        ck.expect(bl["arrays"]["calls"].get("tick_broadcast_offline") == offl, tag,
                  f"tick_broadcast_offline: schedhot {bl['arrays']['calls'].get('tick_broadcast_offline')} "
                  f"vs {offl} CPU offline operations")
    hot = bl["arrays"]["calls"]["__tick_broadcast_oneshot_control"]
    rate = hot / w["seconds"] if w.get("seconds") else 0
    bw = probes.get("bcast_wait")
    ck.expect(bw and bw["status"] == "attached", tag, f"bcast_wait not attached: {bw and bw['reason']}")
    lockev = counts["count"].get(("event:contention_begin", "all"))
    if host["arat"]:
        ck.expect(any(n.startswith(ARAT_NOTE) for n in bl["notes"]), tag,
                  f"bcast_lock lacks the note '{ARAT_NOTE} ...' (notes: {bl['notes']})")
        ck.expect(hot == 0 and counts["count"].get(("__tick_broadcast_oneshot_control", "all")) == 0, tag,
                  f"ARAT guest ran __tick_broadcast_oneshot_control: schedhot {hot}, ftrace "
                  f"{counts['count'].get(('__tick_broadcast_oneshot_control', 'all'))}")
    else:
        ck.expect(not any("path not in use" in n for n in bl["notes"]), tag,
                  f"no-ARAT guest still says the path is not in use: {bl['notes']}")
    if host["spinlock"] == "virt_spin_lock":
        ck.expect(bw and BLIND in bw.get("blind", "") and bw["counters"] is None and bw["per_cpu"] is None, tag,
                  f"bcast_wait under virt_spin_lock is not reported blind: blind={bw and bw.get('blind')!r}")
        ck.expect(all(row["bcast_wait/s"] is None for row in report["cpus"]), tag,
                  "bcast_wait/s per CPU is not null under virt_spin_lock")
        ck.expect(lockev == 0, tag, f"ftrace saw {lockev} contention events on tick_broadcast_lock under virt_spin_lock")
    elif not facts(kver)["kallsyms_all"] and bw and "blind" in bw:
        # no KALLSYMS_ALL (arm64): the lock's address is learned from a contention stack; a
        # guest where the lock was never contended leaves it blind, with no numbers
        ck.expect("address was not learned" in bw["blind"] and bw["counters"] is None, tag,
                  f"bcast_wait blind for another reason: {bw['blind']!r}")
    else:
        ck.expect(bw and "blind" not in bw, tag, f"bcast_wait is blind with spinlock {host['spinlock']}")
    if variant == "noarat-nohv":
        cont = total(bw, "contentions") if bw else None
        if cont is not None:
            compare(ck, tag, kver, variant, backend, "bcast_wait", "event:contention_begin", cont, counts, bw["per_cpu"])
        lat = (bw or {}).get("latency_ns") or {}
        ck.expect(rate >= NOHV_BCAST_MIN_RATE, tag,
                  f"__tick_broadcast_oneshot_control {rate:.0f}/s, expected >= {NOHV_BCAST_MIN_RATE}/s without ARAT")
        # The agreement above is the check of schedhot; this one only makes sure it compared
        # something (ftrace's count, so a schedhot miss still fails the agreement, not this).
        ck.expect((lockev or 0) >= NOHV_MIN_CONTENTIONS, tag,
                  f"ftrace saw {lockev} contentions on tick_broadcast_lock (schedhot {cont}): fewer than "
                  f"{NOHV_MIN_CONTENTIONS}, too few to compare")
        ck.expect(cont is not None and lat.get("count") == total(bw, "ends"), tag,
                  f"bcast_wait: {cont} contentions, {lat.get('count')} timed of {total(bw, 'ends')} ends")
        per_m = (lockev or 0) * 1e6 / hot if hot else 0
        ck.noarat.append({"kernel": kver, "variant": variant, "calls": hot, "seconds": w["seconds"],
                          "calls_per_s": round(rate), "contentions": cont, "oracle": lockev,
                          "contentions_per_million_calls": round(per_m),
                          "wait_p50_ns": lat.get("p50"), "wait_p99_ns": lat.get("p99"),
                          "wait_max_ns": lat.get("max")})
        ck.say(f"   no-ARAT: __tick_broadcast_oneshot_control {hot} in {w['seconds']:.1f} s = {rate:.0f}/s; "
               f"contentions {cont} (ftrace {lockev}; {per_m:.0f} per million calls), wait p50 {lat.get('p50', 0) / 1e6:.2f} ms "
               f"p99 {lat.get('p99', 0) / 1e6:.2f} ms")
    elif variant == "idle-dt":
        ck.expect(rate >= IDLEDT_BCAST_MIN_RATE, tag,
                  f"__tick_broadcast_oneshot_control {rate:.0f}/s, expected >= {IDLEDT_BCAST_MIN_RATE}/s with "
                  f"a local-timer-stop idle state")
        ck.expect(host.get("broadcast_device") == "bc_hrtimer" and host.get("cpuidle_driver") == "psci_idle", tag,
                  f"broadcast device {host.get('broadcast_device')!r}, cpuidle {host.get('cpuidle_driver')!r}: "
                  f"expected bc_hrtimer and psci_idle")
        ck.noarat.append({"kernel": kver, "variant": variant, "calls": hot, "seconds": w["seconds"],
                          "calls_per_s": round(rate), "contentions": total(bw, "contentions") if bw and bw.get("counters") else None,
                          "oracle": lockev})
        ck.say(f"   idle-dt: __tick_broadcast_oneshot_control {hot} in {w['seconds']:.1f} s = {rate:.0f}/s; "
               f"bcast_wait {'blind: ' + bw['blind'][:60] if bw and 'blind' in bw else total(bw, 'contentions')}")
    elif variant == "noarat":
        ck.expect(rate >= HV_BCAST_MIN_RATE, tag,
                  f"__tick_broadcast_oneshot_control {rate:.0f}/s, expected >= {HV_BCAST_MIN_RATE}/s")
        ck.noarat.append({"kernel": kver, "variant": variant, "calls": hot, "seconds": w["seconds"],
                          "calls_per_s": round(rate), "contentions": None, "oracle": lockev})
        ck.say(f"   no-ARAT (hypervisor bit): __tick_broadcast_oneshot_control {rate:.0f}/s; bcast_wait blind; "
               f"ftrace contention events on the lock: {lockev}")


PROXY_UNSEEN = {"nohz_exit": ("nested", "orphan_exits"), "cpupri_set": ("noop", "nested", "orphan_exits")}


def check_proxy(ck, tag, kver, probes, counts, w):
    """Each proxy's count against ftrace's count of the real function, within the band its
    documented error allows, widened by the window's edge events (see agree())."""
    for probe, (fname, lo, hi) in PROXIES.items():
        p = probes.get(probe)
        if not ck.expect(p and p["status"] == "attached" and p["proxy"], tag,
                         f"{probe}: no proxy attached ({p and p['reason']})"):
            continue
        s = total(p)
        f = counts["count"].get((fname, "all"), 0)
        edges = counts["edge"].get((fname, "start"), 0) + counts["edge"].get((fname, "end"), 0)
        e = pct(s, f)
        ck.proxies.append({"kernel": kver, "probe": probe, "function": fname, "proxy": s, "calls": f,
                           "error_pct": round(e, 1), "seconds": w.get("seconds")})
        ck.say(f"   proxy  {probe:<11} {p['symbol']:<34} proxy {s:>7}  calls {f:>7}  error {e:+.1f} %"
               + (f"  (edge events {edges})" if edges else ""))
        ok = f * (1 + lo / 100) - edges <= s <= f * (1 + hi / 100) + edges
        ck.expect(f >= MIN_CALLS and ok, tag,
                  f"{probe} proxy {s} vs {f} calls ({e:+.1f} %): its documented error allows "
                  f"{lo:+.0f}..{hi:+.0f} % (+/- {edges} edge events)")
        # What a proxy cannot see is null, never 0 (a timed function's pairing counters; the
        # no-op calls of cpupri_set, which no cpu_to_pri change shows).
        for field in PROXY_UNSEEN.get(probe, ()):
            ck.expect(field in p["counters"] and p["counters"][field] is None, tag,
                      f"{probe} proxy: {field} is {p['counters'].get(field)!r}, expected null (not seen)")


def check_graph(ck, kver, d):
    tag = f"{kver}/plain/graph"
    path = os.path.join(d, "graph")
    rep = os.path.join(d, "report-auto.json")
    if not ck.expect(os.path.exists(path) and os.path.exists(rep), tag, "no function_graph durations emitted"):
        return
    durs = {}
    with open(path) as fh:
        for line in fh:
            f = line.split()
            if len(f) == 2:
                durs.setdefault(f[0], []).append(float(f[1]) * 1000.0)
    with open(rep) as fh:
        probes = probes_by_name(json.load(fh))
    for probe, fname in (("cpupri_set", "cpupri_set"), ("nohz_exit", "nohz_balance_exit_idle")):
        g = durs.get(fname, [])
        lat = probes[probe].get("latency_ns") or {}
        if not ck.expect(len(g) >= GRAPH_MIN and lat.get("p50"), tag,
                         f"{fname}: {len(g)} function_graph durations, schedhot p50 {lat.get('p50')}"):
            continue
        gm, sm = median(g), lat["p50"]
        ratio = gm / sm
        ck.graph.append({"kernel": kver, "function": fname, "schedhot_p50_ns": sm, "graph_p50_ns": round(gm),
                         "graph_n": len(g), "ratio": round(ratio, 2)})
        ck.say(f"   graph  {fname:<34} p50 schedhot {sm:.0f} ns, function_graph {gm:.0f} ns "
               f"({len(g)} calls): x{ratio:.2f} (allowed 1/{GRAPH_FACTOR:.0f}..{GRAPH_FACTOR:.0f})")
        ck.expect(1 / GRAPH_FACTOR <= ratio <= GRAPH_FACTOR, tag,
                  f"{fname}: function_graph p50 {gm:.0f} ns vs schedhot p50 {sm:.0f} ns: not the same order of magnitude")


# The probes whose change `schedhot diff` must call significant in the before/after run.
DIFF_PROBES = ("cpupri_set", "cpupri_find")


def check_diff(ck, kver, d, binary):
    """schedhot diff of the guest's diff-A.shot (cpupri workload) and diff-B.shot (the same
    with a competing SCHED_FIFO load): exit 3, DIFF_PROBES significant; figures printed."""
    tag = f"{kver}/plain/diff"
    a, b = os.path.join(d, "diff-A.shot"), os.path.join(d, "diff-B.shot")
    if not ck.expect(os.path.exists(a) and os.path.exists(b), tag, "no diff-A.shot/diff-B.shot emitted"):
        return
    r = subprocess.run([binary, "diff", a, b, "--json"], capture_output=True, text=True)
    p = subprocess.run([binary, "diff", a, b, "--format", "patch"], capture_output=True, text=True)
    with open(os.path.join(d, "diff.patch.txt"), "w") as fh:
        fh.write(p.stdout + p.stderr)
    try:
        j = json.loads(r.stdout)
    except ValueError:
        ck.fail(tag, f"schedhot diff --json exit {r.returncode}, no JSON: {r.stderr.strip()[-300:]}")
        return
    ck.expect(r.returncode == 3, tag, f"schedhot diff exit {r.returncode}, want 3 (a significant change)")
    for h in j.get("host_differences", []):
        ck.say(f"   diff   note: {h}")
    probes = {x["probe"]: x for x in j.get("probes", [])}
    row = {"kernel": kver, "exit": r.returncode}
    for name in DIFF_PROBES:
        x = probes.get(name)
        if not ck.expect(x is not None, tag, f"{name}: not in the diff"):
            continue
        rate, p50 = x.get("rate", {}), x.get("latency_ns", {}).get("p50", {})
        row[name] = {"rate_a": rate.get("a"), "rate_b": rate.get("b"), "rate_ratio": rate.get("ratio"),
                     "rate_significant": rate.get("significant"), "p50_a": p50.get("a"), "p50_b": p50.get("b"),
                     "p50_ratio": p50.get("ratio"), "p50_significant": p50.get("significant"),
                     "verdict": x.get("verdict")}
        ck.say(f"   diff   {name:<12} rate {rate.get('a') or 0:.0f} -> {rate.get('b') or 0:.0f}/s "
               f"(x{rate.get('ratio') or 0:.2f}, {'significant' if rate.get('significant') else 'not significant'}), "
               f"p50 {p50.get('a') or 0:.0f} -> {p50.get('b') or 0:.0f} ns: {x.get('verdict')}")
        ck.expect(x.get("significant") is True, tag,
                  f"{name}: the competing SCHED_FIFO load's change was not found significant ({x.get('verdict')})")
    ck.diffs.append(row)


def boot_guest(d, kver, image, append, flags=(), timeout=420, retries=5, stall=120):
    """Boots one guest with boot.sh (serial log d/serial.log, summary d/boot.txt), booting
    again up to RETRIES times in all on the TCG text-patching race or a hung guest.
    Returns (boot.sh's CompletedProcess, the summary's key=value dict, seconds, retried):
    retried is None or a sentence on the boots that were retried. Also used by
    tests/bench/guest_cost.py."""
    log = os.path.join(d, "serial.log")
    t0 = time.time()
    b = subprocess.run([os.path.join(HERE, "boot.sh"), "--kernel", kver, "--initrd", image, "--timeout", str(timeout),
                        "--quiet", "--retries", str(retries), "--stall", str(stall), "--log", log,
                        "--summary", os.path.join(d, "boot.txt"), "--append", append] + list(flags),
                       capture_output=True, text=True)
    dt = time.time() - t0
    boot = {}
    if os.path.exists(os.path.join(d, "boot.txt")):
        with open(os.path.join(d, "boot.txt")) as fh:
            boot = dict(line.rstrip("\n").split("=", 1) for line in fh if "=" in line)
    retried = None
    panics = [f for f in os.listdir(d) if f.startswith("serial.log.panic-")]
    if panics:
        hung = 0
        for f in panics:
            with open(os.path.join(d, f), errors="replace") as fh:
                text = fh.read()
                hung += "soft lockup" in text and "Oops: int3" not in text
        retried = (f"{len(panics) - hung} boot(s) hit the TCG text-patching race (Oops: int3), {hung} hung "
                   f"(soft lockup); each was retried, its log kept as serial.log.panic-K")
    return b, boot, dt, retried


def extract_files(d):
    """extract.sh: every file the guest emitted on d/serial.log, into d."""
    return subprocess.run([os.path.join(HERE, "extract.sh"), os.path.join(d, "serial.log"), d],
                          capture_output=True, text=True)


def run_one(ck, binary, image, kver, variant, backends, diff=False):
    flags, mode, _, graph, timeout = VARIANTS[variant]
    flags = [str(BIG_SMP) if f == "BIG_SMP" else str(BIG_SOCKETS) if f == "BIG_SOCKETS" else f for f in flags]
    if arch(kver) == "x86_64":
        flags = list(flags) + X86_TCG
    probes = arch(kver) != "x86_64" and variant == "plain"
    d = os.path.join(OUT, f"{kver}-{variant}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    log = os.path.join(d, "serial.log")
    append = f"schedhot.e2e_mode={mode} schedhot.e2e_backends={','.join(backends)} schedhot.e2e_graph={int(graph)} schedhot.e2e_diff={int(diff)} schedhot.e2e_probes={int(probes)}"
    # the auto recording's --catch rules (':' for '>' on the kernel command line)
    if catch_rules(variant):
        append += " schedhot.e2e_catch=" + ",".join(f"{p}:{t}" for p, t in catch_rules(variant).items())
    b, boot, dt, retried = boot_guest(d, kver, image, append, flags, timeout)
    ck.say(f"== {kver} {variant}: kernel {boot.get('release', '?')} (cpu {boot.get('cpu', '?')}"
           f"{' ' + ' '.join(flags) if flags else ''}): /init after {boot.get('init_s', '?')} s, "
           f"run {dt:.0f} s, {boot.get('result', b.stderr.strip()[-200:])}")
    tag = f"{kver}/{variant}"
    if retried:
        ck.say(f"   ({retried})")
    ck.expect(b.returncode == 0, tag, f"boot.sh rc {b.returncode}: {boot.get('result', b.stderr.strip())} (log {log})")
    x = extract_files(d)
    ck.expect(x.returncode == 0, tag, f"extracting the guest's files failed: {x.stderr.strip()}")
    if os.path.exists(os.path.join(d, "sysinfo")):
        with open(os.path.join(d, "sysinfo")) as fh:
            info = fh.readline().strip()
        ck.say(f"   {info.replace('schedhot-guest: ', 'guest: ')}")
    if probes:
        check_probes(ck, kver, d)
    if variant == "nobtf":
        check_nobtf(ck, kver, d)
    for be in backends:
        check_backend(ck, kver, variant, be, d, binary)
    if graph:
        check_graph(ck, kver, d)
    if diff:
        check_diff(ck, kver, d, binary)
    return dt, boot.get("release", "?")


GUEST_BUILDERS = {"x86_64": ("SCHEDHOT_VM_GUEST_BIN", ["build-static.sh"], "vm-static"),
                  "arm64": ("SCHEDHOT_VM_GUEST_BIN_ARM64", ["build-static-cross.sh", "arm64"], "vm-static-arm64"),
                  "ppc64le": ("SCHEDHOT_VM_GUEST_BIN_PPC64LE", ["build-static-cross.sh", "ppc64el"], "vm-static-ppc64el")}


def guest_binary(binary, a="x86_64", who="e2e"):
    """The guests' static schedhot for architecture a: $SCHEDHOT_VM_GUEST_BIN (_ARM64, _PPC64LE)
    when set, else built from this source tree by build-static.sh (build-static-cross.sh
    arm64|ppc64el) in <dir of binary>/vm-static/ (vm-static-arm64/, vm-static-ppc64el/); a
    failed build ends the run (exit 1)."""
    gb, _ = finish_guest_build(start_guest_build(binary, a, who, background=False), who)
    if gb is None:
        sys.exit(1)  # finish_guest_build said why
    return gb


def start_guest_build(binary, a, who="e2e", background=True):
    """Starts guest_binary()'s build for architecture a (none when its environment variable
    names a binary): the builder runs in a session of its own, killed with its make jobs if
    this run ends first. finish_guest_build() waits for it."""
    env, cmd, sub = GUEST_BUILDERS[a]
    b = {"arch": a, "script": " ".join(cmd), "t0": time.time(), "proc": None, "bin": os.environ.get(env), "why": ""}
    if not b["bin"]:
        b["proc"] = subprocess.Popen([os.path.join(HERE, cmd[0])] + cmd[1:] + [os.path.join(os.path.dirname(binary), sub)],
                                     stdout=subprocess.PIPE, text=True, start_new_session=True)

        def kill(p=b["proc"]):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        atexit.register(kill)
        if background:
            print(f"{who}: building the static {a} schedhot ({b['script']}) in the background", file=sys.stderr, flush=True)
    return b


def finish_guest_build(b, who="e2e"):
    """Waits for start_guest_build()'s build: (path of the guest binary, "") or (None, why)."""
    if b["proc"] is not None and not b["bin"] and not b["why"]:
        out, _ = b["proc"].communicate()
        if b["proc"].returncode != 0 or not out.strip():
            b["why"] = f"building the static {b['arch']} schedhot for the guests failed ({b['script']}, exit {b['proc'].returncode})"
            print(f"{who}: error: {b['why']}", file=sys.stderr, flush=True)
        else:
            b["bin"] = out.strip().splitlines()[-1]
            print(f"{who}: {b['arch']} guest binaries ({b['script']}) in {time.time() - b['t0']:.0f} s", file=sys.stderr, flush=True)
    return (b["bin"], "") if b["bin"] else (None, b["why"])


def vm_lock(who="e2e"):
    """$CACHE/vm.lock, held while guests boot (one VM run per machine); waits for another
    holder. Keep the returned file open for as long as the lock is needed."""
    os.makedirs(CACHE, exist_ok=True)
    lock = open(os.path.join(CACHE, "vm.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"{who}: another VM run holds {CACHE}/vm.lock; waiting for it", file=sys.stderr, flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) == 2 else 2
    binary = os.path.abspath(argv[1])
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        die(f"{argv[1]} is not an executable schedhot", 2)
    full = os.environ.get("SCHEDHOT_VM_FULL", "") not in ("", "0")
    kernels = os.environ.get("SCHEDHOT_VM_KERNELS", FULL_KERNELS if full else DEFAULT_KERNELS).split()
    noarat = os.environ.get("SCHEDHOT_VM_NOARAT", "6.1 6.12").split()
    proxy = os.environ.get("SCHEDHOT_VM_PROXY", "6.12")
    diff = os.environ.get("SCHEDHOT_VM_DIFF", "6.12")
    big = os.environ.get("SCHEDHOT_VM_BIG", "6.12" if full else "").split()
    for k in kernels + noarat + big + ([diff] if diff else []):
        if k not in KNOWN:
            die(f"unknown kernel '{k}' (known: {' '.join(KNOWN)})", 2)
    for k in ([proxy] if proxy else []) + ([diff] if diff else []):
        if arch(k) != "x86_64":
            die(f"{k}: the proxy and diff runs are x86 guests' (SCHEDHOT_VM_PROXY, SCHEDHOT_VM_DIFF)", 2)
    check_deps()
    global OUT
    OUT = os.environ.get("SCHEDHOT_VM_OUT", os.path.join(os.path.dirname(binary), "vm-e2e"))
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(CACHE, exist_ok=True)
    # The guests run a statically linked schedhot built from this source tree
    # (build-static.sh, next to SCHEDHOT_BIN in vm-static/); SCHEDHOT_BIN itself replays
    # their recordings on the host. SCHEDHOT_VM_GUEST_BIN names a guest binary instead.
    # arm64 guests (6.1-arm64) run a static arm64 schedhot cross-built by build-static-arm64.sh
    # in vm-static-arm64/ (with the arm64 workload, tracecount and busybox);
    # $SCHEDHOT_VM_GUEST_BIN_ARM64 names another. A failed build fails the test.
    # A cross build (arm64, ppc64le: the slowest compile of a CI run from a cold cache, 20
    # minutes or more beside CI's other builds) starts first, in the background, and goes on
    # while the x86 binary is built and the x86 guests boot (nice 10 in build-static-cross.sh:
    # the single-threaded x86 guests keep their core); its guests boot after them. A failed
    # cross build fails its guests' runs (in the summary, with why; exit 1) and the x86
    # results stay; the builder is killed if the run ends before it.
    archs = sorted({arch(k) for k in kernels}, key=lambda a: (a != "x86_64", a))
    guest_bins, builds = {}, {}
    for a in archs:
        if a != "x86_64" and len(archs) > 1:
            builds[a] = start_guest_build(binary, a)
    for a in archs:
        if a not in builds:
            guest_bins[a] = guest_binary(binary, a)
    lock = vm_lock("e2e")  # noqa: F841 (held until exit)
    t_start = time.time()
    if subprocess.run([os.path.join(HERE, "fetch-kernels.sh")] + kernels, stdout=sys.stderr).returncode != 0:
        die(f"fetch-kernels.sh {' '.join(kernels)} failed")
    images = {}

    def image(a):
        """The initramfs of architecture a's guests, made once (after its build, if any);
        None when its background build failed (a failure of the run, said in the summary)."""
        if a not in images:
            if a in builds:
                gb, why = finish_guest_build(builds[a])
                if gb is None:
                    images[a] = None
                    return None
                guest_bins[a] = gb
            images[a] = os.path.join(OUT, "e2e.cpio.gz" if a == "x86_64" else f"e2e-{a}.cpio.gz")
            if subprocess.run([os.path.join(HERE, "mkimage.sh"), guest_bins[a], images[a]]).returncode != 0:
                die(f"building the {a} initramfs failed")
        return images[a]

    runs = []
    for k in kernels:
        if k in NO_BTF:
            runs.append((k, "nobtf", [], False))
            continue
        backends = list(VARIANTS["plain"][2]) + (["proxy"] if k == proxy else [])
        if k in NO_TRAMPOLINE:
            # the default backend is kprobe there (no fentry): a --backend kprobe recording
            # would repeat it
            backends = ["auto"]
        runs.append((k, "plain", backends, k == diff))
    for k in kernels:
        if k in noarat and arch(k) == "arm64":
            runs.append((k, "idle-dt", VARIANTS["idle-dt"][2], False))
        if k in big and arch(k) == "x86_64":
            runs.append((k, "big", VARIANTS["big"][2], False))
        if k in noarat and arch(k) == "x86_64":
            runs += [(k, "noarat-nohv", VARIANTS["noarat-nohv"][2], False), (k, "noarat", VARIANTS["noarat"][2], False)]

    runs.sort(key=lambda r: archs.index(arch(r[0])))  # stable: x86 first, each arch's in list order
    ck = Checker()
    times = []
    for k, variant, backends, dk in runs:
        img = image(arch(k))
        if img is None:
            ck.expect(False, f"{k}/{variant}", f"not booted: {builds[arch(k)]['why']}")
            times.append({"kernel": k, "variant": variant, "release": "-", "seconds": 0})
            continue
        dt, rel = run_one(ck, binary, img, k, variant, backends, dk)
        times.append({"kernel": k, "variant": variant, "release": rel, "seconds": round(dt)})
    wall = time.time() - t_start
    ck.say()
    ck.say(f"e2e: {len(runs)} boots, wall time {wall:.0f} s ({wall / 60:.1f} min) for kernels {' '.join(kernels)}")
    for t in times:
        ck.say(f"   {t['kernel']:<5} {t['variant']:<12} {t['release']:<30} {t['seconds']:>4} s")
    summary = {"kernels": kernels, "runs": times, "wall_s": round(wall), "agreement": ck.rows,
               "proxies": ck.proxies, "graph": ck.graph, "diff": ck.diffs, "learned": ck.learned, "noarat": ck.noarat, "cachelines": ck.cachelines, "gap_state": ck.gap_state, "tails": ck.tails, "stops": ck.stops,
               "failures": ck.failures}
    with open(os.path.join(OUT, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    if ck.failures:
        ck.say(f"e2e: FAIL: {len(ck.failures)} check(s) failed:")
        for f in ck.failures:
            ck.say(f"   {f}")
    else:
        worst = max((abs(r["diff_pct"]) for r in ck.rows), default=0)
        ck.say(f"e2e: PASS: {len(ck.rows)} counts agree with ftrace (worst {worst:.2f} %)")
    with open(os.path.join(OUT, "summary.txt"), "w") as fh:
        fh.write("\n".join(ck.lines) + "\n")
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
