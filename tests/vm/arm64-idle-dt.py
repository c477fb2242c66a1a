#!/usr/bin/env python3
"""arm64-idle-dt.py IN.dts OUT.dts: QEMU virt's device tree (qemu-system-aarch64 -M
virt,dumpdtb=..., decompiled by dtc) with the tick-broadcast path of a deep idle state:

  * an idle state for every CPU: /cpus/idle-states/cpu-retention-0, "arm,idle-state", entered
    through PSCI CPU_SUSPEND with a retention (not power-down) parameter 0x0, marked
    local-timer-stop (cpuidle-psci gives it CPUIDLE_FLAG_TIMER_STOP, so the idle path calls
    tick_broadcast_enter/exit around it); QEMU's PSCI emulation runs CPU_SUSPEND as WFI, so
    the CPU returns normally (a power-down state would need a resume at the entry point);
  * the architected timer without "always-on", so its clockevents carry C3STOP (the kernel's
    tick_broadcast_oneshot_control() ignores CPUs whose timer has not) and the hrtimer
    broadcast device (bc_hrtimer) takes over for CPUs in that state.
"""
import re
import sys

IDLE = """\t\tidle-states {
\t\t\tentry-method = "psci";
\t\t\tcpu_ret: cpu-retention-0 {
\t\t\t\tcompatible = "arm,idle-state";
\t\t\t\tarm,psci-suspend-param = <0x00>;
\t\t\t\tlocal-timer-stop;
\t\t\t\tentry-latency-us = <20>;
\t\t\t\texit-latency-us = <20>;
\t\t\t\tmin-residency-us = <50>;
\t\t\t};
\t\t};
"""


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    s = open(argv[1]).read()
    cpus = list(re.finditer(r"^\t\tcpu@[0-9a-f]+ \{\n", s, re.M))
    if not cpus:
        print("arm64-idle-dt: no /cpus/cpu@N nodes", file=sys.stderr)
        return 1
    for m in reversed(cpus):
        s = s[:m.end()] + "\t\t\tcpu-idle-states = <&cpu_ret>;\n" + s[m.end():]
    first = re.search(r"^\t\tcpu@[0-9a-f]+ \{\n", s, re.M)
    s = s[:first.start()] + IDLE + s[first.start():]
    t = re.search(r"^\ttimer \{\n(.*?)^\t\};\n", s, re.M | re.S)
    if not t or "arm,armv8-timer" not in t.group(1):
        print("arm64-idle-dt: no architected timer node", file=sys.stderr)
        return 1
    body = re.sub(r"^\t\talways-on;\n", "", t.group(1), flags=re.M)
    s = s[:t.start(1)] + body + s[t.end(1):]
    open(argv[2], "w").write(s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
