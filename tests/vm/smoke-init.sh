#!/bin/sh
# smoke-init.sh: /init of the smoke test initramfs (see smoke.sh). Runs the ftrace
# oracle around three phases and emits the results:
#   idle    : sleep S                          (schedhot.smoke_idle=S, default 3)
#   mix     : workload mix -d S                (schedhot.smoke_mix=S, default 3)
#   hotplug : workload hotplug -n N            (schedhot.smoke_hp=N, default 3)
# Emitted files: sysinfo, counts-<phase>, <phase>.json, lockhist (if the lock
# contention hist trigger is available).
set -u
. /lib/schedhot/guest-lib.sh
# Deep C-states only inside the measured windows (see cpuidle_deep in guest-lib.sh);
# without --cst there are none and this does nothing.
cpuidle_deep off

FUNCS="nohz_balance_exit_idle nohz_balance_enter_idle cpupri_set cpupri_find_fitness trigger_load_balance sched_balance_trigger __tick_broadcast_oneshot_control tick_broadcast_offline"
IDLE_S=$(_gl_cmdline schedhot.smoke_idle || echo 3)
MIX_S=$(_gl_cmdline schedhot.smoke_mix || echo 3)
HP_N=$(_gl_cmdline schedhot.smoke_hp || echo 3)

{
    guest_info
    echo "cmdline: $(cat /proc/cmdline)"
    grep -E '^(Broadcast device|Clock Event Device|tick_broadcast_(mask|oneshot_mask))' /proc/timer_list
    for s in /sys/devices/system/cpu/cpu0/cpuidle/state*; do
        [ -d "$s" ] && echo "cpuidle $(cat "$s/name") latency=$(cat "$s/latency") usage=$(cat "$s/usage")"
    done
    echo "tick_broadcast_lock $(kallsyms_addr tick_broadcast_lock || echo absent)"
    echo "lsm $(cat /sys/kernel/security/lsm 2>/dev/null || echo '?') lockdown $(cat /sys/kernel/security/lockdown 2>/dev/null || echo '?')"
} > /tmp/sysinfo
cat /tmp/sysinfo

LOCK=$(kallsyms_addr tick_broadcast_lock || true)
EV=/sys/kernel/tracing/events/lock/contention_begin
HIST=0
if [ -n "$LOCK" ] && [ -d "$EV" ]; then
    # all contention events per lock address, independent of the event filter
    echo 'hist:keys=lock_addr.sym:vals=hitcount:sort=hitcount.descending:size=2048' > "$EV/trigger" 2>/dev/null && HIST=1
fi

if [ -n "$LOCK" ] && [ -d "$EV" ]; then ftrace_event_add lock:contention_begin "lock_addr == $LOCK"; fi

run_phase() {   # run_phase NAME CMD...
    _ph=$1; shift
    ftrace_count_start $FUNCS
    cpuidle_deep on
    "$@" > "/tmp/$_ph.json"
    _rc=$?
    cpuidle_deep off
    ftrace_count_stop > "/tmp/counts-$_ph"
    echo "phase $_ph rc=$_rc" >> "/tmp/counts-$_ph"
    cat "/tmp/$_ph.json"
    grep -E '^(count [^ ]+ all|overrun_total|elapsed_s|status)' "/tmp/counts-$_ph" | sed "s/^/$_ph: /"
}

run_phase idle sleep "$IDLE_S"
run_phase mix /bin/workload mix -d "$MIX_S"
run_phase hotplug /bin/workload hotplug -n "$HP_N"

emit_file sysinfo /tmp/sysinfo
for p in idle mix hotplug; do
    emit_file "counts-$p" "/tmp/counts-$p"
    emit_file "$p.json" "/tmp/$p.json"
done
if [ "$HIST" = 1 ]; then
    emit_file lockhist "$EV/hist"
fi
exit 0
