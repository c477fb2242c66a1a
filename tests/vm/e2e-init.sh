#!/bin/sh
# e2e-init.sh: /init of the end-to-end initramfs (see e2e.py). In one boot, for each
# backend of schedhot.e2e_backends (comma-separated: auto,kprobe,proxy), it records with
# /bin/schedhot while workloads drive every target, with the ftrace function tracer
# counting the same functions on trace_clock mono; then it counts only the trace events
# inside the recording's window (first sample's mono time, last sample's] and emits
# (schedhot is stopped by SIGINT while a workload runs; the window ends at the stop if the
# last sample came before it, which the host then reports as a failure):
#   sysinfo                guest facts, addresses, traced functions
#   rec-B.shot             the recording (gzip on the wire)
#   report-B.json          `schedhot report --json` of it, made in the guest
#   counts-B               ftrace_count_window over the report's start/end_mono_ns
#   record-B.log           record's stderr and the workloads' JSON lines
#   graph                  (schedhot.e2e_graph=1) function_graph durations, "FUNC US" lines
#   kallsyms-tails         (schedhot.e2e_catch) the /proc/kallsyms lines of every function named
#                          in report-auto.json's tails stacks (the host checks each frame against them)
#   holder-auto            (a bcast_wait rule, with the ftrace oracle) holder_oracle's lines: each
#                          caught wait's holder against the holder CPU's traced site entries
#   diff-A.shot diff-B.shot (schedhot.e2e_diff=1) the cpupri workload without (A) and with (B)
#                          a competing SCHED_FIFO load on the same CPUs, for `schedhot diff`
#   diff-A.log diff-B.log  their record stderr and workload JSON lines
# Kernel command line knobs (boot.sh --append):
#   schedhot.e2e_mode=plain|big|noarat|noarat-nohv|demo|probes   which workloads (default plain;
#                                                     big: plain's on a many-CPU guest);
#                                                     probes: no recording backend, no oracle:
#                                                     `schedhot probes` (text, JSON) and a 1 s
#                                                     record, each with its exit status (a kernel
#                                                     without BTF: the host checks that they say why)
#   schedhot.e2e_backends=auto,kprobe                 (default auto)
#   schedhot.e2e_phase=S                              seconds per workload phase (default 2)
#   schedhot.e2e_graph=0|1                            function_graph sample (default 0)
#   schedhot.e2e_diff=0|1                             before/after recordings (default 0)
#   schedhot.e2e_probes=0|1                           `schedhot probes --json` first, emitted as
#                                                     probes.json (default 0)
#   schedhot.e2e_catch=PROBE:THRESHOLD,...            the auto backend also records with
#                                                     --catch 'PROBE>THRESHOLD,...' (':' stands for
#                                                     '>' on the command line; default none)
# demo mode runs the plain workloads without the ftrace oracle (tests/vm/demo.sh).
set -u
. /lib/schedhot/guest-lib.sh
# A name for the recordings' host field (the kernel's default is "(none)").
hostname "qemu-$(uname -r | cut -d- -f1)" 2>/dev/null || true
# Deep C-states (no-ARAT guests with --cst only) stay off while BPF attaches, while the
# tracer is set up and while the traces are read; on only while the workloads run.
cpuidle_deep off

MODE=$(_gl_cmdline schedhot.e2e_mode || echo plain)
BACKENDS=$(_gl_cmdline schedhot.e2e_backends || echo auto)
PHASE=$(_gl_cmdline schedhot.e2e_phase || echo 2)
GRAPH=$(_gl_cmdline schedhot.e2e_graph || echo 0)
DIFF=$(_gl_cmdline schedhot.e2e_diff || echo 0)
PROBES=$(_gl_cmdline schedhot.e2e_probes || echo 0)
CATCH=$(_gl_cmdline schedhot.e2e_catch | tr ':' '>' || true)
ORACLE=1; [ "$MODE" = demo ] || [ "$MODE" = probes ] && ORACLE=0

# Oracle: the functions schedhot probes (and their compiler clones) that this kernel can
# trace. nohz_balancer_kick is inlined everywhere; its callers stand in for it.
WANT="nohz_balance_exit_idle nohz_balance_enter_idle trigger_load_balance sched_balance_trigger cpupri_set cpupri_find_fitness __tick_broadcast_oneshot_control tick_handle_oneshot_broadcast tick_handle_periodic_broadcast tick_broadcast_offline hotplug_cpu__broadcast_tick_pull tick_broadcast_control tick_device_uses_broadcast tick_broadcast_switch_to_oneshot"
FUNCS=$(awk -v want=" $WANT " '
    BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) W[w[i]] = 1 }
    { b = $1; sub(/(\.(isra|constprop|part|llvm)\.[0-9]+)+$/, "", b) }
    (b in W) && !seen[$1]++ { print $1 }' /sys/kernel/tracing/available_filter_functions | tr '\n' ' ')

# cpupri_set's callers in kernel/sched/rt.c (6.1 to 7.3): inc_rt_prio_smp and dec_rt_prio_smp
# (on an RT task's enqueue and dequeue, inlined by GCC into the chain below them),
# rq_online_rt and rq_offline_rt (hotplug, root domain changes). The host checks that the
# stacks --catch caught name at least one of these that this kernel has as a symbol (their
# kallsyms lines go to kallsyms-tails with the stacks' own).
CPUPRI_CALLERS="inc_rt_prio_smp dec_rt_prio_smp inc_rt_prio dec_rt_prio inc_rt_tasks dec_rt_tasks __enqueue_rt_entity __dequeue_rt_entity enqueue_rt_entity dequeue_rt_entity dequeue_rt_stack enqueue_task_rt dequeue_task_rt rq_online_rt rq_offline_rt set_rq_online set_rq_offline"
LOCK=$(kallsyms_addr tick_broadcast_lock || true)
CSDF=$(kallsyms_addr nohz_csd_func || true)
{
    guest_info
    echo "cmdline: $(cat /proc/cmdline)"
    echo "mode $MODE backends $BACKENDS phase $PHASE graph $GRAPH diff $DIFF catch ${CATCH:-none}"
    grep -E '^(Broadcast device|tick_broadcast_(mask|oneshot_mask))' /proc/timer_list
    echo "tick_broadcast_lock ${LOCK:-absent}"
    echo "nohz_csd_func ${CSDF:-absent}"
    echo "oracle_functions $FUNCS"
    echo "cpupri_callers $CPUPRI_CALLERS"
    echo "lsm $(cat /sys/kernel/security/lsm 2>/dev/null || echo '?') lockdown $(cat /sys/kernel/security/lockdown 2>/dev/null || echo '?')"
} > /tmp/sysinfo
cat /tmp/sysinfo

# Independent counts of the two tracepoint-fed probes, filtered like schedhot filters:
# contention events on tick_broadcast_lock, and ILB kicks (csd_queue_cpu of nohz_csd_func).
if [ "$ORACLE" = 1 ]; then
    [ -n "$LOCK" ] && ftrace_event_add lock:contention_begin "lock_addr == $LOCK"
    if [ -n "$CSDF" ] && [ -d /sys/kernel/tracing/events/csd/csd_queue_cpu ]; then
        ftrace_event_add csd:csd_queue_cpu "func == $CSDF" || glog "no csd_queue_cpu oracle"
    fi
fi
# shellcheck disable=SC2034  # read by guest-lib.sh's ftrace_count_start
SCHEDHOT_FTRACE_CLOCK=mono   # trace_clock mono: CLOCK_MONOTONIC, the clock of schedhot's samples

W=/bin/workload
wait_recording() {   # wait_recording PID LOG WHAT: until record says "recording" (the first
    # sample is taken right after attach); 1 if it exits first or takes over 120 s
    _n=0
    until grep -q '^schedhot: recording' "$2"; do
        kill -0 "$1" 2>/dev/null || { cat "$2"; glog "e2e: record $3 exited before recording"; return 1; }
        _n=$((_n + 1)); [ $_n -gt 1200 ] && { glog "e2e: record $3 did not start in 120 s"; return 1; }
        sleep 0.1
    done
}
workloads() {   # one recording's workload phases; JSON lines to stdout
    case "$MODE" in
    plain|demo|big)
        # big: the plain workloads on a many-CPU guest, more threads, hotplug of CPUs 1-3 once
        _t=4 _g=2 _f=6 _hp="-n 2"
        [ "$MODE" = big ] && { _t=16 _g=4 _f=12 _hp="-n 1 -c 1-3"; }
        sleep 1
        $W mark load
        $W idle-churn -d "$PHASE" -t "$_t" -u 50 -s 5
        $W hackbench -d "$PHASE" -g "$_g" -f 4
        $W fifo-sleepers -d "$PHASE" -t "$_f" -p 50 -u 1000
        $W mark hotplug
        # shellcheck disable=SC2086  # two words on purpose
        $W hotplug $_hp
        ;;
    noarat-nohv)
        sleep "$PHASE"
        $W mark load
        $W idle-churn -d "$PHASE" -t 4 -u 200 -s 5
        $W fifo-sleepers -d "$PHASE" -t 6 -p 50 -u 1000
        $W mark hotplug
        cpuidle_deep off; $W hotplug -n 1; cpuidle_deep on   # re-arm C2 on the new cpuidle devices
        ;;
    noarat)
        sleep "$PHASE"
        $W mark load
        $W idle-churn -d "$PHASE" -t 4 -u 200 -s 5
        $W fifo-sleepers -d "$PHASE" -t 6 -p 50 -u 1000
        ;;
    *) glog "unknown schedhot.e2e_mode=$MODE"; return 2 ;;
    esac
}

# holder_oracle REC: for each caught bcast_wait event of REC (export's Perfetto slices) that
# names a holder, the holder CPU's traced entry of the holder's site nearest to the time the
# holder state says it entered (wait begin - holder_inside_ns), and the waiter CPU's traced
# contention_begin on the lock nearest to the wait's begin; while the trace buffers still
# hold the run (after ftrace_count_window, before the next backend). Output:
#   slices N / with_holder N / ambiguous N   (caught waits exported; naming a holder; of
#                                             those, with more than one candidate)
#   hold ID cpuH DELTA_NS|none              (tracecount -q: traced entry - state's entry)
#   ctrl ID cpuC DELTA_NS|none              (the same query on another CPU, neither holder nor
#                                             waiter: what a wrong holder would score)
#   wait ID cpuW DELTA_NS|none              (traced contention_begin - the wait's begin)
holder_oracle() {
    /bin/schedhot export --format perfetto "$1" 2> /dev/null | grep '"name":"bcast_wait tail"' > /tmp/hold-slices
    echo "slices $(wc -l < /tmp/hold-slices)"
    rm -f /tmp/hq-*
    awk '
        function num(key,   i, s) {
            i = index($0, "\"" key "\":"); if (!i) return "null"
            s = substr($0, i + length(key) + 3)
            if (substr(s, 1, 4) == "null") return "null"
            return s + 0
        }
        function str(key,   i, s) {
            i = index($0, "\"" key "\":\""); if (!i) return ""
            s = substr($0, i + length(key) + 4); return substr(s, 1, index(s, "\"") - 1)
        }
        {
            h = num("holder_cpu"); ts = num("ts")
            begin = sprintf("%.0f", ts * 1000)
            print NR " event:contention_begin " begin > ("/tmp/hq-w" (num("tid") - 1000))
            if (h == "null") next
            nh++; if (num("holder_candidates") > 1) amb++
            q = NR " " str("holder_site") " " sprintf("%.0f", begin - num("holder_inside_ns"))
            print q > ("/tmp/hq-h" h)
            w = num("tid") - 1000; c = (h + 1) % ncpu; if (c == w) c = (c + 1) % ncpu
            if (c != h) print q > ("/tmp/hq-c" c)
        }
        END { print "with_holder " nh + 0; print "ambiguous " amb + 0 }' ncpu="$(ls -d /sys/devices/system/cpu/cpu[0-9]* | wc -l)" /tmp/hold-slices
    for _q in /tmp/hq-*; do
        [ -e "$_q" ] || continue
        _k=${_q#/tmp/hq-}; _c=${_k#?}
        case "$_k" in h*) _w=hold ;; c*) _w=ctrl ;; *) _w=wait ;; esac
        "$SCHEDHOT_TRACECOUNT" -q "$_q" -c "cpu$_c" "$SCHEDHOT_T/per_cpu/cpu$_c/trace" | sed "s/^/$_w /"
    done
}

run_backend() {   # run_backend BACKEND
    _b=$1; _rec=/tmp/rec-$_b.shot; _log=/tmp/record-$_b.log
    glog "e2e: backend $_b: attach"
    cpuidle_deep off
    if [ "$ORACLE" = 1 ]; then ftrace_count_start $FUNCS || return 1; fi
    : > "$_log"   # record and the workloads both append: neither overwrites the other
    # the default backend also records every modeled access (--exact, issue 11): the
    # coherence model is then checked against the ownership machine over the same accesses,
    # and the probes' gap state against the replay's of the same accesses: noting every
    # event (--gap-samples 0), as the replay does. Sampled (the default; the other backends'
    # runs), a CPU above 4000 events/s closes a line's gaps after 1024 of its events, the
    # documented under-count of a line it touches rarely (CI: the idle mask at x0.83, x0.87)
    _x=""; [ "$_b" = auto ] && _x="--exact --gap-samples 0"
    # and, given rules, catches its tail events (issue 31; fixed thresholds, so that caught +
    # dropped must equal the histogram's count above each one)
    [ "$_b" = auto ] && [ -n "$CATCH" ] && _x="$_x --catch $CATCH"
    /bin/schedhot record --backend "$_b" $_x --gap-state -d 1h -i 500ms -o "$_rec" 2>> "$_log" &
    _pid=$!
    wait_recording $_pid "$_log" "--backend $_b" || return 1
    glog "e2e: backend $_b: recording"
    cpuidle_deep on
    workloads >> "$_log"
    _wrc=$?
    # Stop schedhot while a workload still runs (SCHED_FIFO sleepers: cpupri_set, idle
    # churn): its last sample must be taken at the SIGINT, so the recording covers the whole
    # run up to the stop (issue 9: before, the calls since the last 500 ms sample were lost).
    $W fifo-sleepers -d 2 -t 6 -p 50 -u 1000 >> "$_log" &
    _tail=$!
    sleep 1
    _stop=$(mono_ns)
    kill -INT $_pid; wait $_pid; _rrc=$?
    wait $_tail || _wrc=1
    cpuidle_deep off
    [ "$ORACLE" = 1 ] && echo 0 > /sys/kernel/tracing/tracing_on
    echo "workloads rc=$_wrc record rc=$_rrc stop_mono_ns=${_stop:-?}" >> "$_log"
    glog "e2e: backend $_b: record rc=$_rrc workloads rc=$_wrc"
    /bin/schedhot report --json --all-cpus "$_rec" > /tmp/report-$_b.json 2>> "$_log"
    _a=$(sed -n 's/.*"start_mono_ns": *\([0-9]*\).*/\1/p' /tmp/report-$_b.json)
    _z=$(sed -n 's/.*"end_mono_ns": *\([0-9]*\).*/\1/p' /tmp/report-$_b.json)
    # ftrace's window is the whole run: from the first sample to the stop, or to the last
    # sample when that is later (it is, by the time the signal takes to arrive).
    [ -n "$_z" ] && [ -n "$_stop" ] && [ "$_stop" -gt "$_z" ] && _z=$_stop
    if [ "$ORACLE" = 0 ]; then :
    elif [ -n "$_a" ] && [ -n "$_z" ]; then
        ftrace_count_window "$_a" "$_z" 10000000 > /tmp/counts-$_b   # edges: 10 ms
    else
        glog "e2e: report-$_b.json has no start/end_mono_ns"
    fi
    if [ "$ORACLE" = 1 ] && [ "$_b" = auto ] && case ",$CATCH" in *,bcast_wait\>*) true ;; *) false ;; esac; then
        holder_oracle "$_rec" > /tmp/holder-$_b
        glog "e2e: holder oracle: $(head -n 3 /tmp/holder-$_b | tr '\n' ' ')"
        emit_file -z "holder-$_b" /tmp/holder-$_b
    fi
    [ "$ORACLE" = 0 ] || /bin/schedhot report --all-cpus "$_rec" 2>&1 | head -n 60
    emit_file -z "rec-$_b.shot" "$_rec"
    emit_file -z "report-$_b.json" /tmp/report-$_b.json
    [ -f /tmp/counts-$_b ] && emit_file "counts-$_b" /tmp/counts-$_b
    if [ "$_b" = auto ] && [ -n "$CATCH" ]; then
        # the guest's own kallsyms lines of the functions the caught stacks name ("sym+0xoff"
        # frames of the report's tails), so the host can check every frame against this kernel
        { grep -o '"[^" ]*+0x[0-9a-f]*"' /tmp/report-$_b.json | sed 's/^"//; s/+0x[0-9a-f]*"$//' | grep -v '^\['
          echo "$CPUPRI_CALLERS" | tr ' ' '\n'; } | sort -u > /tmp/tail-names
        if [ -s /tmp/tail-names ]; then grep -wF -f /tmp/tail-names /proc/kallsyms; fi > /tmp/kallsyms-tails
        glog "e2e: $(wc -l < /tmp/tail-names) functions in the caught stacks, $(wc -l < /tmp/kallsyms-tails) kallsyms lines"
        emit_file -z kallsyms-tails /tmp/kallsyms-tails
    fi
    emit_file "record-$_b.log" "$_log"
    [ "$_wrc" = 0 ] && [ "$_rrc" = 0 ]
}

emit_file sysinfo /tmp/sysinfo
rc=0
if [ "$PROBES" = 1 ]; then
    # how every probe attaches on this kernel, or why not (each tried for real, then detached)
    glog "e2e: schedhot probes --json"
    /bin/schedhot probes --json > /tmp/probes.json 2> /tmp/probes.err || { cat /tmp/probes.err; rc=1; }
    emit_file probes.json /tmp/probes.json
fi
if [ "$MODE" = probes ]; then
    # what a user sees first: `probes` and `record` on this kernel, with their exit statuses
    glog "e2e: schedhot probes; schedhot record -d 1"
    { /bin/schedhot probes 2>&1; echo "exit $?"; } > /tmp/probes.txt
    /bin/schedhot probes --json > /tmp/probes.json 2> /tmp/probes-json.err
    echo "json exit $? $(head -c 2000 /tmp/probes-json.err)" >> /tmp/probes.txt
    { /bin/schedhot record -d 1 -o /tmp/rec-probes.shot 2>&1; echo "exit $?"; } > /tmp/record-probes.log
    cat /tmp/probes.txt /tmp/record-probes.log
    emit_file probes.txt /tmp/probes.txt
    emit_file probes.json /tmp/probes.json
    emit_file record-probes.log /tmp/record-probes.log
    BACKENDS=""
fi
for b in $(echo "$BACKENDS" | tr ',' ' '); do
    run_backend "$b" || rc=1
done

if [ "$GRAPH" = 1 ]; then
    # Durations from the graph tracer on a short busy window (schedhot detached).
    if ftrace_graph_start cpupri_set nohz_balance_exit_idle; then
        $W mix -d 1 > /dev/null
        ftrace_graph_stop > /tmp/graph
        emit_file -z graph /tmp/graph
    else
        rc=1
    fi
fi
[ "$ORACLE" = 1 ] && ftrace_reset

# Before/after (issue 12): the same cpupri workload (SCHED_FIFO 50 sleepers on CPUs 0-1),
# recorded alone (A) and with a competing SCHED_FIFO 70 load on the same CPUs (B: two
# threads that spin 3 ms, sleep 200 us). With an RT task of higher priority running on the
# CPU they wake on, the sleepers' wakeups go through find_lowest_rq (cpupri_find) and the
# CPUs' cpupri vector moves between three priorities (cpupri_set). The host runs
# `schedhot diff diff-A.shot diff-B.shot`. No ftrace here: only schedhot runs.
diff_side() {   # diff_side A|B
    _s=$1; _rec=/tmp/diff-$_s.shot; _log=/tmp/diff-$_s.log
    : > "$_log"
    /bin/schedhot record -d 1h -i 250ms -o "$_rec" 2>> "$_log" &
    _pid=$!
    wait_recording $_pid "$_log" "(diff $_s)" || return 1
    $W fifo-sleepers -d 5 -t 4 -p 50 -u 1000 -c 0-1 >> "$_log" &
    _w=$!; _c=""
    if [ "$_s" = B ]; then $W fifo-sleepers -d 5 -t 2 -p 70 -u 200 -s 3000 -c 0-1 >> "$_log" & _c=$!; fi
    sleep 4   # 16 intervals of 250 ms inside the workload (diff wants 10 a side)
    kill -INT $_pid; wait $_pid; _rrc=$?
    _wrc=0; wait $_w || _wrc=1; [ -z "$_c" ] || wait $_c || _wrc=1
    echo "workloads rc=$_wrc record rc=$_rrc" >> "$_log"
    glog "e2e: diff $_s: record rc=$_rrc workloads rc=$_wrc"
    emit_file -z "diff-$_s.shot" "$_rec"
    emit_file "diff-$_s.log" "$_log"
    [ "$_wrc" = 0 ] && [ "$_rrc" = 0 ]
}
if [ "$DIFF" = 1 ]; then
    cpuidle_deep off
    diff_side A || rc=1
    diff_side B || rc=1
fi
exit $rc
