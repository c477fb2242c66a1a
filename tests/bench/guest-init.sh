#!/bin/sh
# guest-init.sh: /init of the guest benchmark's initramfs (tests/bench/guest_cost.py).
# In one boot, RUNS rounds; each round runs every configuration of CONFIGS once, in an
# order rotated by one each round (round robin), and each configuration runs the two fixed
# workloads, DUR seconds each, with the tool attached (attach and detach are outside the
# timed workload):
#   hackbench  workload hackbench -d DUR -g 2 -f 4            throughput msgs_per_s
#   cpupri     workload fifo-sleepers -d DUR -p 50 -u USEC    throughput iters_per_s
#              (CPUs + 2 SCHED_FIFO threads sleeping USEC: cpupri_set at every wakeup/sleep)
# Configurations: none (no tool), fentry (`schedhot record`, default probes and backend),
# kprobe (`schedhot record --backend kprobe`), exact (`schedhot record --exact`), funclatency
# (Debian's libbpf-tools funclatency, kprobe/kretprobe, on one function: the per-tick
# sched_balance_trigger (trigger_load_balance on 6.1) during hackbench, cpupri_set during
# the cpupri driver; attached once per workload).
# Then (schedhot.gb_compare=1) one window with both `schedhot record` and `funclatency
# cpupri_set` attached around the cpupri driver: schedhot's report --json of that recording
# and funclatency's histogram, for the host to put side by side.
# Emits (guest-lib.sh emit_file):
#   sysinfo           guest facts
#   results           "param ..." once; per workload "wl RUN CONFIG WORKLOAD rc=N {workload JSON}";
#                     per tool start "tool RUN CONFIG FUNC rc=N attach_s=S[ probes=N/M]" (rc of
#                     the tool at its stop, 255: it never attached; schedhot's probes attached)
#   tool-RUN-CONFIG-FUNC.log  a failed tool's output
#   cmp-report.json cmp-funclatency.txt cmp-record.log cmp-workload.json   (the compare window)
# Kernel command line knobs: schedhot.gb_runs (5), schedhot.gb_dur (3), schedhot.gb_usec (50),
# schedhot.gb_configs (none,fentry,kprobe,exact,funclatency), schedhot.gb_compare (1).
set -u
. /lib/schedhot/guest-lib.sh
hostname "qemu-$(uname -r | cut -d- -f1)" 2>/dev/null || true

RUNS=$(_gl_cmdline schedhot.gb_runs || echo 5)
DUR=$(_gl_cmdline schedhot.gb_dur || echo 3)
USEC=$(_gl_cmdline schedhot.gb_usec || echo 50)
CONFIGS=$(_gl_cmdline schedhot.gb_configs || echo none,fentry,kprobe,exact,funclatency)
CMP=$(_gl_cmdline schedhot.gb_compare || echo 1)
W=/bin/workload
SH=/bin/schedhot
FL=/usr/sbin/funclatency
R=/tmp/results
KPL=/sys/kernel/debug/kprobes/list

# the per-tick function funclatency times during hackbench (nohz_balancer_kick is inlined
# into it; schedhot's nohz_kick probe attaches there too)
KICK=sched_balance_trigger
grep -q '^sched_balance_trigger$' /sys/kernel/tracing/available_filter_functions 2>/dev/null ||
    KICK=trigger_load_balance
{
    guest_info
    echo "cmdline: $(cat /proc/cmdline)"
    echo "funclatency: $($FL --version 2>&1 | head -n1)"
    echo "kick_function: $KICK"
} > /tmp/sysinfo
cat /tmp/sysinfo
echo "param runs=$RUNS dur=$DUR usec=$USEC configs=$CONFIGS kick=$KICK ncpus=$(nproc)" > "$R"

TPID="" TLOG=""
wait_schedhot() {   # wait_schedhot PID LOG: until record says "recording" (its first sample,
    # taken after every probe attached); 1 if it exits first or takes over 120 s
    _n=0
    until grep -q '^schedhot: recording' "$2" 2>/dev/null; do
        kill -0 "$1" 2>/dev/null || return 1
        _n=$((_n + 1)); [ $_n -gt 1200 ] && return 1
        sleep 0.1
    done
}
wait_funclatency() {   # wait_funclatency PID FUNC: until its kprobe and kretprobe on FUNC are
    # registered (kprobes/list: "ADDR  k  FUNC+0xN", +0x4 past an IBT endbr64; its "Tracing"
    # line is block-buffered into a file)
    _n=0
    while :; do
        kill -0 "$1" 2>/dev/null || return 1
        if [ -r "$KPL" ]; then
            _k=$(grep -c " k  $2+0x" "$KPL"); _r=$(grep -c " r  $2+0x" "$KPL")
            [ "${_k:-0}" -ge 1 ] && [ "${_r:-0}" -ge 1 ] && return 0
        else
            [ $_n -ge 30 ] && return 0   # no kprobes list: 3 s
        fi
        _n=$((_n + 1)); [ $_n -gt 1200 ] && return 1
        sleep 0.1
    done
}
tool_start() {   # tool_start RUN CONFIG FUNC: the tool in the background (TPID), attached
    TPID=""; TLOG=/tmp/tool-$1-$2-$3.log; _t0=$(uptime_s)
    rm -f /tmp/gb.shot
    # emptied here, appended to by the tool: a redirection in the background job could
    # come after the first grep, and an appending writer overwrites no line of another
    : > "$TLOG"
    case "$2" in
        none) return 0 ;;
        fentry) $SH record -d 0 -o /tmp/gb.shot 2>> "$TLOG" & ;;
        kprobe) $SH record --backend kprobe -d 0 -o /tmp/gb.shot 2>> "$TLOG" & ;;
        exact) $SH record --exact -d 0 -o /tmp/gb.shot 2>> "$TLOG" & ;;
        funclatency) $FL "$3" >> "$TLOG" 2>&1 & ;;
        *) glog "guest-bench: unknown configuration $2"; echo "tool $1 $2 $3 rc=254 attach_s=0" >> "$R"; return 1 ;;
    esac
    TPID=$!
    if [ "$2" = funclatency ]; then wait_funclatency $TPID "$3"; else wait_schedhot $TPID "$TLOG"; fi
    _ok=$?
    TATTACH=$(awk -v a="$_t0" -v b="$(uptime_s)" 'BEGIN { printf "%.2f", b - a }')
    if [ $_ok != 0 ]; then
        kill -INT $TPID 2>/dev/null; wait $TPID
        echo "tool $1 $2 $3 rc=255 attach_s=$TATTACH" >> "$R"
        glog "guest-bench: $2 ($3) did not attach"; cat "$TLOG"
        emit_file "tool-$1-$2-$3.log" "$TLOG"
        TPID=""
        return 1
    fi
    sleep 0.5   # let the attach's after-effects (text patching, BTF parsing) settle
}
tool_stop() {   # tool_stop RUN CONFIG FUNC
    [ -n "$TPID" ] || return 0
    kill -INT $TPID; wait $TPID; _rc=$?
    # schedhot's "recording N of M probes" -> probes=N/M
    _p=$(sed -n 's/^schedhot: recording \([0-9]*\) of \([0-9]*\) probes.*/\1\/\2/p' "$TLOG" | head -n1)
    echo "tool $1 $2 $3 rc=$_rc attach_s=$TATTACH${_p:+ probes=$_p}" >> "$R"
    if [ $_rc != 0 ]; then cat "$TLOG"; emit_file "tool-$1-$2-$3.log" "$TLOG"; fi
    TPID=""
    rm -f /tmp/gb.shot
}
workload() {   # workload RUN CONFIG hackbench|cpupri: one timed workload, its JSON to $R
    case "$3" in
        hackbench) _o=$($W hackbench -d "$DUR" -g 2 -f 4) ;;
        cpupri) _o=$($W fifo-sleepers -d "$DUR" -p 50 -u "$USEC") ;;
    esac
    _rc=$?
    echo "wl $1 $2 $3 rc=$_rc $_o" >> "$R"
}
run_config() {   # run_config RUN CONFIG
    glog "guest-bench: round $1: $2"   # (also keeps the console from looking hung: boot.sh --stall)
    if [ "$2" = funclatency ]; then
        tool_start "$1" "$2" "$KICK" && workload "$1" "$2" hackbench
        tool_stop "$1" "$2" "$KICK"
        tool_start "$1" "$2" cpupri_set && workload "$1" "$2" cpupri
        tool_stop "$1" "$2" cpupri_set
    else
        tool_start "$1" "$2" - && { workload "$1" "$2" hackbench; workload "$1" "$2" cpupri; }
        tool_stop "$1" "$2" -
    fi
}
rotate() {   # rotate K WORD...: the words from index K mod N on, then the ones before
    _k=$1; shift; _k=$((_k % $#)); _i=0; _a=""; _b=""
    for _w in "$@"; do
        if [ $_i -ge $_k ]; then _a="$_a $_w"; else _b="$_b $_w"; fi
        _i=$((_i + 1))
    done
    echo $_a $_b
}

emit_file sysinfo /tmp/sysinfo
r=1
while [ $r -le "$RUNS" ]; do
    # shellcheck disable=SC2046
    order=$(rotate $((r - 1)) $(echo "$CONFIGS" | tr ',' ' '))
    glog "guest-bench: round $r of $RUNS: $order"
    for c in $order; do run_config $r "$c"; done
    r=$((r + 1))
done

if [ "$CMP" = 1 ]; then
    # One window, both tools on cpupri_set: schedhot first (its window is its first sample to
    # its last), funclatency inside it (attach to SIGINT); the driver runs inside both, and
    # no SCHED_FIFO task runs outside it, so both see the same calls.
    glog "guest-bench: compare window (schedhot record + funclatency cpupri_set)"
    rm -f /tmp/cmp.shot
    : > /tmp/cmp-record.log; : > /tmp/cmp-funclatency.txt
    $SH record -d 0 -o /tmp/cmp.shot 2>> /tmp/cmp-record.log &
    _sp=$!
    if wait_schedhot $_sp /tmp/cmp-record.log; then
        $FL cpupri_set >> /tmp/cmp-funclatency.txt 2>&1 &
        _fp=$!
        if wait_funclatency $_fp cpupri_set; then
            sleep 0.5
            $W fifo-sleepers -d "$DUR" -p 50 -u "$USEC" > /tmp/cmp-workload.json
            echo "workload rc=$?" >> /tmp/cmp-record.log
            sleep 0.5
        else
            glog "guest-bench: funclatency did not attach"
        fi
        kill -INT $_fp; wait $_fp; echo "funclatency rc=$?" >> /tmp/cmp-record.log
    else
        glog "guest-bench: schedhot record did not start"
    fi
    kill -INT $_sp; wait $_sp; echo "record rc=$?" >> /tmp/cmp-record.log
    $SH report --json /tmp/cmp.shot > /tmp/cmp-report.json 2>> /tmp/cmp-record.log
    echo "report rc=$?" >> /tmp/cmp-record.log
    cat /tmp/cmp-record.log /tmp/cmp-funclatency.txt
    emit_file -z cmp-report.json /tmp/cmp-report.json
    emit_file cmp-funclatency.txt /tmp/cmp-funclatency.txt
    emit_file cmp-record.log /tmp/cmp-record.log
    [ -f /tmp/cmp-workload.json ] && emit_file cmp-workload.json /tmp/cmp-workload.json
fi
emit_file results "$R"
exit 0
