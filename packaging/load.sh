#!/usr/bin/env bash
# A small load that drives every path schedhot watches, for SECONDS (default 10), without
# forking a process per step: a fork/exec loop (`sleep 0.002` in a loop) queues RCU
# callbacks on every CPU and rcu_needs_cpu() then keeps the tick running, so the nohz
# paths it meant to drive go quiet.
#   - 20 ms naps (longer than a tick at any HZ): the idle tick stops (nohz_enter) and
#     restarts at the wakeup (nohz_exit on the next busy tick);
#   - 200 ms busy bursts on one CPU while the others idle: the load balancer's ILB kicks;
#   - a SCHED_FIFO 10 thread napping 5 ms (when chrt is there and allowed): cpupri_set on
#     every switch into and out of the RT class.
# Usage: packaging/load.sh [SECONDS]
set -u
secs=${1:-10}
case $secs in '' | *[!0-9]*) echo "load.sh: SECONDS must be a whole number, not '$secs'" >&2; exit 2 ;; esac
exec {napfd}<> <(:)   # a pipe nobody writes: read -t on it is a sleep inside bash
nap() { read -r -t "$1" -u "$napfd" _ || :; }
end=$(( ${EPOCHREALTIME/./} + secs * 1000000 ))
( while (( ${EPOCHREALTIME/./} < end )); do nap 0.02; done ) &
( while (( ${EPOCHREALTIME/./} < end )); do
    t=$(( ${EPOCHREALTIME/./} + 200000 ))
    while (( ${EPOCHREALTIME/./} < t )); do :; done
    nap 0.3
  done ) &
if command -v chrt > /dev/null && chrt -f 10 true 2> /dev/null; then
  chrt -f 10 bash -c 'exec {fd}<> <(:); while (( ${EPOCHREALTIME/./} < '"$end"' )); do read -r -t 0.005 -u $fd _ || :; done' &
fi
wait
