# shellcheck shell=sh
# guest-lib.sh: sourced by guest /init scripts (busybox ash), installed in the
# initramfs as /lib/schedhot/guest-lib.sh by mkinitramfs.sh.
#
#   . /lib/schedhot/guest-lib.sh      # mounts, watchdog, EXIT trap -> poweroff
#   emit_file [-z] NAME PATH          # file -> console, base64 between markers (-z: gzip)
#   some_cmd | emit_text [-z] NAME    # stdin -> console, same markers
#   ftrace_event_add lock:contention_begin 'lock_addr == 0xffff...'   # optional
#   ftrace_count_start FUNC...        # ftrace function tracer as an oracle
#   ftrace_count_stop > counts        # counts per function and CPU, overruns
#   ftrace_count_window A B > counts  # the same, only events with timestamp in (A, B] ns
#   ftrace_graph_start FUNC... / ftrace_graph_stop > durations   # function_graph, depth 1
#   cpuidle_deep off|on               # disable/enable cpuidle states beyond C1
#   guest_finish RC                   # (also done by the EXIT trap)
#
# Console markers (each alone on a line; extract.py parses them):
#   =====SCHEDHOT-INIT uptime=S release=R=====
#   =====SCHEDHOT-FILE-BEGIN NAME=====
#   =====SCHEDHOT-FILE-META NAME size=BYTES sha256=HEX[ enc=gzip]=====
#   <base64 lines>
#   =====SCHEDHOT-FILE-END NAME=====
#   =====SCHEDHOT-WATCHDOG fired after S s=====
#   =====SCHEDHOT-DONE rc=N=====
# Kernel command line knobs (set by boot.sh): schedhot.watchdog=SECONDS.

SCHEDHOT_T=/sys/kernel/tracing
SCHEDHOT_FT_EVENTS=""
SCHEDHOT_FT_FUNCS=""
SCHEDHOT_FT_MISSING=""
SCHEDHOT_FT_PATCHED=""   # function list the function tracer is currently attached to
SCHEDHOT_TRACECOUNT=${SCHEDHOT_TRACECOUNT:-/bin/tracecount}   # for ftrace_count_window

glog() { echo "schedhot-guest: [$(cut -d' ' -f1 /proc/uptime)] $*"; }

_gl_mount() {   # _gl_mount TYPE DIR
    mkdir -p "$2"
    grep -q " $2 $1 " /proc/mounts 2>/dev/null && return 0
    mount -t "$1" "$1" "$2" 2>/dev/null || glog "warning: cannot mount $1 on $2"
}

_gl_cmdline() {   # _gl_cmdline KEY -> value of the last KEY=value on the kernel command line
    _gl_v=; _gl_f=1
    for _gl_w in $(cat /proc/cmdline); do
        case "$_gl_w" in "$1"=*) _gl_v=${_gl_w#*=}; _gl_f=0 ;; esac
    done
    [ "$_gl_f" = 0 ] && echo "$_gl_v"
    return $_gl_f
}

uptime_s() { cut -d' ' -f1 /proc/uptime; }
# CLOCK_MONOTONIC now, ns: /proc/timer_list's "now at N nsecs" is ktime_get(), the clock of
# schedhot's samples and of trace_clock mono (busybox has no date +%s%N of that clock).
mono_ns() { awk '/^now at / {print $3; exit}' /proc/timer_list; }

guest_setup() {
    export PATH=/bin:/sbin:/usr/bin:/usr/sbin
    mkdir -p /proc && mount -t proc proc /proc 2>/dev/null || true
    _gl_mount sysfs /sys
    _gl_mount devtmpfs /dev
    _gl_mount tmpfs /tmp
    _gl_mount tracefs /sys/kernel/tracing
    _gl_mount debugfs /sys/kernel/debug
    _gl_mount bpf /sys/fs/bpf
    mkdir -p /dev/pts /dev/shm && _gl_mount devpts /dev/pts && _gl_mount tmpfs /dev/shm
    [ -e /sys/fs/cgroup ] && _gl_mount cgroup2 /sys/fs/cgroup
    # shellcheck disable=SC3045
    ulimit -l unlimited 2>/dev/null || true
    SCHEDHOT_WATCHDOG=$(_gl_cmdline schedhot.watchdog || echo "${SCHEDHOT_WATCHDOG:-600}")
    (
        sleep "$SCHEDHOT_WATCHDOG"
        echo "=====SCHEDHOT-WATCHDOG fired after $SCHEDHOT_WATCHDOG s====="
        echo 1 > /proc/sys/kernel/sysrq 2>/dev/null; echo w > /proc/sysrq-trigger 2>/dev/null
        sleep 1; poweroff -f
    ) </dev/null >/dev/console 2>&1 &
    SCHEDHOT_WATCHDOG_PID=$!; export SCHEDHOT_WATCHDOG_PID   # kill it to disarm the watchdog
    trap 'guest_finish $?' EXIT
    echo "=====SCHEDHOT-INIT uptime=$(uptime_s) release=$(uname -r)====="
}

guest_finish() {   # guest_finish RC: report and power off (never returns)
    trap - EXIT
    _rc=${1:-0}
    sync
    echo; echo "=====SCHEDHOT-DONE rc=$_rc====="
    poweroff -f
    sleep 5; exit "$_rc"
}

# One line of facts about the guest, useful in every log.
guest_info() {
    _arat=no; grep -qw arat /proc/cpuinfo && _arat=yes
    _hyp=no; grep -qw hypervisor /proc/cpuinfo && _hyp=yes
    _idle=$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo none)
    _states=$(cat /sys/devices/system/cpu/cpu0/cpuidle/state*/name 2>/dev/null | tr '\n' ',' )
    _bcdev=$(awk '/^Broadcast device/{b=1} b && /Clock Event Device:/{print $4; exit}' /proc/timer_list 2>/dev/null)
    _bcmask=$(awk '/^tick_broadcast_mask:/{print $2; exit}' /proc/timer_list 2>/dev/null)
    echo "schedhot-guest: release=$(uname -r) cpus=$(nproc) online=$(cat /sys/devices/system/cpu/online) arat=$_arat hypervisor=$_hyp cpuidle=$_idle states=${_states%,} broadcast_dev=${_bcdev:-?} broadcast_mask=${_bcmask:-?} clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
}

kallsyms_addr() {   # kallsyms_addr SYMBOL -> 0xADDR (first exact match) or fails
    _a=$(awk -v s="$1" '$3 == s {print $1; exit}' /proc/kallsyms)
    [ -n "$_a" ] || return 1
    echo "0x$_a"
}

# ------------------------------------------------------------------ emitting files
_gl_quiet_console() { _gl_printk=$(cut -f1 /proc/sys/kernel/printk 2>/dev/null); echo 1 > /proc/sys/kernel/printk 2>/dev/null || true; }
_gl_restore_console() { [ -n "${_gl_printk:-}" ] && echo "$_gl_printk" > /proc/sys/kernel/printk 2>/dev/null || true; }

# emit_file [-z] NAME PATH: -z gzips the body first (the serial console moves only
# ~150 KB/s of base64 under TCG with 4 vCPUs, far less with many vCPUs; use -z for
# anything big). size/sha256 in META always describe the original bytes.
emit_file() {
    _z=0; [ "${1:-}" = -z ] && { _z=1; shift; }
    _n=$1; _p=$2
    case "$_n" in ''|*[!A-Za-z0-9._+-]*) glog "emit_file: bad name '$_n' (use [A-Za-z0-9._+-])"; return 2 ;; esac
    if [ ! -f "$_p" ] || [ ! -r "$_p" ]; then
        glog "emit_file: $_p not readable"; echo; echo "=====SCHEDHOT-FILE-MISSING $_n====="; return 1
    fi
    # copy first so size, digest and body describe the same bytes (pseudo files change)
    _tmp=/tmp/.emit.$$; cat "$_p" > "$_tmp"
    _sz=$(wc -c < "$_tmp"); _sz=$((_sz + 0))
    _sum=$(sha256sum "$_tmp" | cut -d' ' -f1)
    _enc=""
    if [ "$_z" = 1 ]; then gzip -9 -c "$_tmp" > "$_tmp.gz" && mv "$_tmp.gz" "$_tmp" && _enc=" enc=gzip"; fi
    _gl_quiet_console
    echo; echo "=====SCHEDHOT-FILE-BEGIN $_n====="
    echo "=====SCHEDHOT-FILE-META $_n size=$_sz sha256=$_sum$_enc====="
    base64 "$_tmp"
    echo "=====SCHEDHOT-FILE-END $_n====="
    _gl_restore_console
    rm -f "$_tmp"
}

emit_text() {   # cmd | emit_text [-z] NAME
    _zt=""; [ "${1:-}" = -z ] && { _zt=-z; shift; }
    _t=/tmp/.emit_text.$$; cat > "$_t"; emit_file $_zt "$1" "$_t"; _r=$?; rm -f "$_t"; return $_r
}

# ------------------------------------------------------------------ ftrace oracle
_gl_tw() { echo "$2" > "$SCHEDHOT_T/$1" 2>/dev/null || { glog "ftrace: cannot write '$2' to $1"; return 1; }; }

# ftrace_event_add SYSTEM:EVENT [FILTER]: enable an event (with an optional
# tracefs filter, e.g. 'lock_addr == 0xffffffff8a0c1234') for the next count.
ftrace_event_add() {
    _sys=${1%%:*}; _ev=${1#*:}
    _d=$SCHEDHOT_T/events/$_sys/$_ev
    [ -d "$_d" ] || { glog "ftrace: no event $1"; return 1; }
    if [ -n "${2:-}" ]; then
        echo "$2" > "$_d/filter" || { glog "ftrace: bad filter for $1: $2"; return 1; }
    fi
    echo 1 > "$_d/enable" || return 1
    SCHEDHOT_FT_EVENTS="$SCHEDHOT_FT_EVENTS $_ev"
}

# ftrace_count_start FUNC...: trace only the FUNCs that this kernel can trace.
# Buffer: SCHEDHOT_FTRACE_BUF_KB per CPU (default: 1/8 of RAM spread over the
# CPUs, at most 65536). Calling it again with the same FUNCs only clears the
# buffer and restarts: the function tracer stays attached, so no kernel text is
# re-patched (patching is slow, and fragile in a guest hammering a lock).
ftrace_count_start() {
    [ -d "$SCHEDHOT_T" ] && [ -e "$SCHEDHOT_T/trace" ] || { glog "ftrace: tracefs not available"; return 1; }
    _gl_tw tracing_on 0
    _ncpu=$(grep -c '^processor' /proc/cpuinfo)
    if [ -z "${SCHEDHOT_FTRACE_BUF_KB:-}" ]; then
        _mem=$(awk '/^MemTotal:/{print $2}' /proc/meminfo)
        SCHEDHOT_FTRACE_BUF_KB=$((_mem / 8 / _ncpu)); [ "$SCHEDHOT_FTRACE_BUF_KB" -gt 65536 ] && SCHEDHOT_FTRACE_BUF_KB=65536
    fi
    if [ -n "$SCHEDHOT_FT_PATCHED" ] && [ "$SCHEDHOT_FT_PATCHED" = "$*" ] &&
       [ "$(cat "$SCHEDHOT_T/current_tracer")" = function ]; then
        : # same functions, tracer still attached
    else
        _gl_tw current_tracer nop
        : > "$SCHEDHOT_T/set_ftrace_filter"
        : > "$SCHEDHOT_T/set_ftrace_notrace" 2>/dev/null || true
        echo > "$SCHEDHOT_T/set_ftrace_pid" 2>/dev/null || true
        SCHEDHOT_FT_FUNCS=""; SCHEDHOT_FT_MISSING=""; SCHEDHOT_FT_PATCHED=""
        _have=$(awk -v want=" $* " 'BEGIN{n=split(want,w," "); for(i=1;i<=n;i++) W[w[i]]=1}
                                   ($1 in W) && !seen[$1]++ {print $1}' "$SCHEDHOT_T/available_filter_functions")
        for _f in "$@"; do
            if echo "$_have" | grep -qx "$_f"; then
                echo "$_f" >> "$SCHEDHOT_T/set_ftrace_filter" || { glog "ftrace: cannot filter $_f"; return 1; }
                SCHEDHOT_FT_FUNCS="$SCHEDHOT_FT_FUNCS $_f"
            else
                SCHEDHOT_FT_MISSING="$SCHEDHOT_FT_MISSING $_f"
            fi
        done
        [ "$(cat "$SCHEDHOT_T/buffer_size_kb")" = "$SCHEDHOT_FTRACE_BUF_KB" ] ||
            _gl_tw buffer_size_kb "$SCHEDHOT_FTRACE_BUF_KB" || return 1
        # SCHEDHOT_FTRACE_CLOCK=mono: timestamps on CLOCK_MONOTONIC (bpf_ktime_get_ns's
        # clock), kept in the output (context-info on) for ftrace_count_window.
        _gl_tw trace_clock "${SCHEDHOT_FTRACE_CLOCK:-local}" 2>/dev/null || true
        _gl_ctx=0; [ -n "${SCHEDHOT_FTRACE_CLOCK:-}" ] && _gl_ctx=1
        _gl_tw options/context-info $_gl_ctx; _gl_tw options/print-parent 0
        # never start the function tracer with an empty filter: it would trace everything
        if [ -n "$SCHEDHOT_FT_FUNCS" ]; then _gl_tw current_tracer function || return 1; fi
        SCHEDHOT_FT_PATCHED="$*"
    fi
    [ -e "$SCHEDHOT_T/function_profile_enabled" ] && { _gl_tw function_profile_enabled 0; _gl_tw function_profile_enabled 1; }
    : > "$SCHEDHOT_T/trace"
    SCHEDHOT_FT_T0=$(uptime_s)
    _gl_tw tracing_on 1
    glog "ftrace: counting [${SCHEDHOT_FT_FUNCS# }] events [${SCHEDHOT_FT_EVENTS# }] missing [${SCHEDHOT_FT_MISSING# }] buffer ${SCHEDHOT_FTRACE_BUF_KB} KiB/cpu"
}

# ftrace_count_stop: stop tracing, print counts (stdout), one record per line:
#   schedhot-ftrace-counts v1
#   release R / ncpus N / elapsed_s S / buffer_kb K
#   traced F... / missing F... / events E...
#   count NAME all N       (NAME = function, or event:NAME for events)
#   count NAME cpuI N
#   overrun cpuI N / overrun_total N / entries_total N / lost_events N / lines_counted N
#   profile cpuI FUNC HITS (only with CONFIG_FUNCTION_PROFILER)
#   status ok|OVERRUN
# Header and per-CPU buffer statistics shared by ftrace_count_stop/_window (sets _ov).
_gl_ft_header() {
    _t1=$(uptime_s)
    echo "schedhot-ftrace-counts v1"
    echo "release $(uname -r)"
    echo "ncpus $(grep -c '^processor' /proc/cpuinfo)"
    awk -v a="$SCHEDHOT_FT_T0" -v b="$_t1" 'BEGIN{printf "elapsed_s %.2f\n", b-a}'
    echo "buffer_kb $(cat "$SCHEDHOT_T/buffer_size_kb" 2>/dev/null)"
    echo "clock $(sed -n 's/.*\[\(.*\)\].*/\1/p' "$SCHEDHOT_T/trace_clock")"
    echo "traced${SCHEDHOT_FT_FUNCS}"
    echo "missing${SCHEDHOT_FT_MISSING}"
    echo "events${SCHEDHOT_FT_EVENTS}"
    # per-CPU stats: overruns and entries
    _ov=0; _ent=0
    for _s in "$SCHEDHOT_T"/per_cpu/cpu*/stats; do
        _c=${_s%/stats}; _c=${_c##*/}
        _o=$(awk '/^overrun:/{print $2}' "$_s"); _e=$(awk '/^entries:/{print $2}' "$_s")
        echo "overrun $_c ${_o:-0}"
        _ov=$((_ov + ${_o:-0})); _ent=$((_ent + ${_e:-0}))
    done
    echo "overrun_total $_ov"
    echo "entries_total $_ent"
}

_gl_ft_status() {
    if [ "$_ov" -gt 0 ]; then echo "status OVERRUN"; glog "ftrace: WARNING: $_ov events overwritten (raise SCHEDHOT_FTRACE_BUF_KB)" >&2
    else echo "status ok"; fi
}

ftrace_count_stop() {
    echo 0 > "$SCHEDHOT_T/tracing_on"
    _gl_ft_header
    # count trace lines per (name, cpu), reading each CPU's buffer separately with
    # context-info and print-parent off (set by ftrace_count_start), so a line is
    # just "func" or "event: fields"; events show up as event:NAME.
    for _pc in "$SCHEDHOT_T"/per_cpu/cpu*; do
        awk -v c="cpu${_pc##*/cpu}" '
            /^#/ || !NF { next }
            /\[LOST [0-9]+ EVENTS\]/ { s = $0; sub(/.*\[LOST /, "", s); lost += s + 0; next }
            { n[$1]++ }
            END { for (k in n) print k, c, n[k]; if (lost) print "#LOST", c, lost }' "$_pc/trace"
    done |
    awk -v funcs="$SCHEDHOT_FT_FUNCS" -v evs="$SCHEDHOT_FT_EVENTS" '
        $1 == "#LOST" { lost += $3; next }
        { k = $1; if (k ~ /:$/) { sub(/:$/, "", k); k = "event:" k }
          all[k] += $3; print "count " k " " $2 " " $3; lines += $3 }
        END {
            m = split(funcs, F, " "); for (i = 1; i <= m; i++) if (!(F[i] in all)) all[F[i]] = 0
            m = split(evs, E, " "); for (i = 1; i <= m; i++) if (!(("event:" E[i]) in all)) all["event:" E[i]] = 0
            for (k in all) print "count " k " all " all[k]
            print "lost_events " lost + 0
            print "lines_counted " lines + 0
        }' | sort
    if [ -d "$SCHEDHOT_T/trace_stat" ] && [ -e "$SCHEDHOT_T/function_profile_enabled" ]; then
        echo 0 > "$SCHEDHOT_T/function_profile_enabled"
        for _p in "$SCHEDHOT_T"/trace_stat/function*; do
            [ -e "$_p" ] || continue
            _c=${_p##*/function}
            awk -v c="cpu$_c" 'NR > 2 && NF >= 2 {print "profile " c " " $1 " " $2}' "$_p"
        done
    fi
    _gl_ft_status
}

# ftrace_count_window START_NS END_NS [EDGE_NS]: stop tracing and count, per name and
# CPU, only the events whose timestamp t lies in (START_NS, END_NS]. Needs
# SCHEDHOT_FTRACE_CLOCK set before ftrace_count_start (timestamps in the output; with
# "mono" they are CLOCK_MONOTONIC, the clock of schedhot's samples), and the tracecount
# program (tracecount.c, $SCHEDHOT_TRACECOUNT, default /bin/tracecount: awk takes minutes
# under TCG for a no-ARAT guest's million lines). Timestamps print in whole microseconds:
# t is the start of its microsecond. Output (stdout), after the header of ftrace_count_stop:
#   window START_NS END_NS
#   count NAME cpuI N / count NAME all N   (inside the window)
#   trace NAME all N                       (whole buffer)
#   edge NAME start N / edge NAME end N    (in (START, START+EDGE] and (END, END+EDGE]:
#                                           what a late sample read could move across)
#   lost_events N / unparsed_lines N / lines_counted N / status ok|OVERRUN
ftrace_count_window() {
    echo 0 > "$SCHEDHOT_T/tracing_on"
    [ -x "$SCHEDHOT_TRACECOUNT" ] || { glog "ftrace: $SCHEDHOT_TRACECOUNT missing (tracecount.c)"; echo "status NO_TRACECOUNT"; return 1; }
    _gl_ft_header
    echo "window $1 $2"
    for _pc in "$SCHEDHOT_T"/per_cpu/cpu*; do
        "$SCHEDHOT_TRACECOUNT" -a "$1" -b "$2" -e "${3:-1000000}" -c "cpu${_pc##*/cpu}" "$_pc/trace"
    done |
    awk -v funcs="$SCHEDHOT_FT_FUNCS" -v evs="$SCHEDHOT_FT_EVENTS" '
        $1 == "#LOST" { lost += $3; bad += $4; next }
        { print "count " $1 " " $2 " " $3; all[$1] += $3; tr[$1] += $4; es[$1] += $5; ee[$1] += $6; lines += $4 }
        END {
            m = split(funcs, F, " "); for (i = 1; i <= m; i++) if (!(F[i] in all)) all[F[i]] = 0
            m = split(evs, E, " "); for (i = 1; i <= m; i++) if (!(("event:" E[i]) in all)) all["event:" E[i]] = 0
            for (k in all) {
                print "count " k " all " all[k]; print "trace " k " all " tr[k] + 0
                print "edge " k " start " es[k] + 0; print "edge " k " end " ee[k] + 0
            }
            print "lost_events " lost + 0
            print "unparsed_lines " bad + 0
            print "lines_counted " lines + 0
        }' | sort
    _gl_ft_status
}

# ftrace_graph_start FUNC...: function_graph on FUNCs only (set_ftrace_filter, so no
# other function is patched), depth 1 (their callees are not traced, so the tracer's own
# cost inside them is not added), on the current trace_clock.
ftrace_graph_start() {
    _gl_tw tracing_on 0
    _gl_tw current_tracer nop
    : > "$SCHEDHOT_T/set_ftrace_filter"
    SCHEDHOT_FT_PATCHED=""; SCHEDHOT_FT_GRAPH=""
    for _f in "$@"; do
        grep -qx "$_f" "$SCHEDHOT_T/available_filter_functions" || { glog "ftrace: graph: $_f not traceable"; continue; }
        echo "$_f" >> "$SCHEDHOT_T/set_ftrace_filter" && SCHEDHOT_FT_GRAPH="$SCHEDHOT_FT_GRAPH $_f"
    done
    [ -n "$SCHEDHOT_FT_GRAPH" ] || { glog "ftrace: graph: nothing to trace"; return 1; }
    _gl_tw max_graph_depth 1
    _gl_tw options/funcgraph-proc 0 2>/dev/null
    _gl_tw current_tracer function_graph || return 1
    : > "$SCHEDHOT_T/trace"
    _gl_tw tracing_on 1
    glog "ftrace: function_graph on [${SCHEDHOT_FT_GRAPH# }]"
}

# ftrace_graph_stop: stop and print one line per completed call: "FUNC DURATION_US".
ftrace_graph_stop() {
    echo 0 > "$SCHEDHOT_T/tracing_on"
    awk '/\(\);/ && match($0, /[0-9]+\.[0-9]+ us/) {
            d = substr($0, RSTART, RLENGTH - 3)
            f = $0; sub(/\(\);.*/, "", f); sub(/.*[| ]/, "", f)
            print f, d }' "$SCHEDHOT_T/trace"
}

# Stop tracing and restore the tracer to its idle state (empties the buffer).
ftrace_reset() {
    echo 0 > "$SCHEDHOT_T/tracing_on"
    echo nop > "$SCHEDHOT_T/current_tracer"
    : > "$SCHEDHOT_T/set_ftrace_filter"
    for _e in $SCHEDHOT_FT_EVENTS; do
        for _d in "$SCHEDHOT_T"/events/*/"$_e"; do echo 0 > "$_d/enable"; echo 0 > "$_d/filter" 2>/dev/null; done
    done
    SCHEDHOT_FT_EVENTS=""; SCHEDHOT_FT_PATCHED=""
    echo 1 > "$SCHEDHOT_T/options/context-info"; echo 1 > "$SCHEDHOT_T/options/print-parent"
    : > "$SCHEDHOT_T/trace"
}

# cpuidle_deep off|on: disable (or re-enable) every cpuidle state past the first
# two (POLL, C1) on all CPUs. With --no-arat --cst the guest spends its time in C2
# entry/exit (tick broadcast under tick_broadcast_lock, an I/O port read per entry)
# and crawls; turn deep states off around setup and trace read-out, on for the
# measured window. Re-run it after CPU hotplug (new cpuidle devices start enabled).
cpuidle_deep() {
    case "${1:-}" in off) _v=1 ;; on) _v=0 ;; *) glog "cpuidle_deep: want off|on"; return 2 ;; esac
    for _d in /sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*; do
        [ -e "$_d/disable" ] || continue
        [ "${_d##*state}" -ge 2 ] && echo "$_v" > "$_d/disable" 2>/dev/null
    done
    return 0
}

guest_setup
