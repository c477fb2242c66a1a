#!/usr/bin/env bash
# smoke.sh [--plain-only] [--no-arat-all] [--smp N] [VER...]
#
# Proves the VM harness works without schedhot. For each VER (default: 6.1 6.12 7.3):
# fetches the kernel, builds the workload and an initramfs whose /init
# (smoke-init.sh) runs the ftrace oracle on
#   nohz_balance_exit_idle nohz_balance_enter_idle cpupri_set cpupri_find_fitness
#   trigger_load_balance sched_balance_trigger __tick_broadcast_oneshot_control
#   tick_broadcast_offline
# (those present in the kernel) plus lock:contention_begin filtered on the guest's
# tick_broadcast_lock address, around: sleep 3, `workload mix -d 3`, `workload hotplug -n 3`;
# then boots it, extracts the emitted files and prints the counts.
# On 6.1 (or every VER with --no-arat-all) it also runs the variants
#   noarat      --no-arat --cst
#   noarat-nohv --no-arat --no-hypervisor --cst
# unless --plain-only. Results: $CACHE/smoke/<ver>-<variant>/ and $CACHE/smoke/summary.txt.
# A boot that panics before /init (rc 6; seen with 7.3 under multi-threaded TCG) is
# retried up to twice. Exit status non-zero if a boot, an extraction or a consistency check failed
# (zero cpupri_set/nohz_balance_exit_idle in mix, tick_broadcast_offline != offline
# operations, ftrace overruns, no __tick_broadcast_oneshot_control without ARAT).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}
die() { echo "smoke: error: $*" >&2; exit 2; }

PLAIN_ONLY=0 NOARAT_ALL=0 SMP=4
VERS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --plain-only) PLAIN_ONLY=1 ;;
        --no-arat-all) NOARAT_ALL=1 ;;
        --smp) SMP=${2:?}; shift ;;
        -h|--help) awk 'NR>1 && /^#/{sub(/^# ?/,"");print;next} NR>1{exit}' "$0"; exit 0 ;;
        6.1|6.12|7.3) VERS+=("$1") ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
[ ${#VERS[@]} -gt 0 ] || VERS=(6.1 6.12 7.3)

mkdir -p "$CACHE"
exec 9> "$CACHE/vm.lock"   # one VM run at a time (e2e.py and demo.sh take the same lock)
flock -n 9 || { echo "smoke: waiting for another VM run to finish" >&2; flock 9; }
"$HERE/fetch-kernels.sh" "${VERS[@]}" >/dev/null
BUILD=$CACHE/build
mkdir -p "$BUILD" "$CACHE/smoke"
"$HERE/build-workload.sh" "$BUILD/workload"
"$HERE/mkinitramfs.sh" -o "$BUILD/smoke.cpio.gz" -f "$BUILD/workload:/bin/workload" -i "$HERE/smoke-init.sh"

RUNS=()
for v in "${VERS[@]}"; do
    RUNS+=("$v:plain")
    if [ "$PLAIN_ONLY" = 0 ] && { [ "$v" = 6.1 ] || [ "$NOARAT_ALL" = 1 ]; }; then
        RUNS+=("$v:noarat" "$v:noarat-nohv")
    fi
done

cnt() {   # cnt COUNTSFILE NAME -> total count (or "-" when not traced / absent)
    awk -v n="$2" '$1 == "count" && $2 == n && $3 == "all" {print $4; f=1} END{if(!f) print "-"}' "$1" 2>/dev/null || echo "-"
}
field() { awk -v k="$2" '$1 == k {print $2; exit}' "$1" 2>/dev/null; }
jnum() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" "$1" 2>/dev/null | head -n1; }

FAIL=0
SUMMARY=$CACHE/smoke/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
FUNCS="nohz_balance_exit_idle nohz_balance_enter_idle cpupri_set cpupri_find_fitness trigger_load_balance sched_balance_trigger __tick_broadcast_oneshot_control tick_broadcast_offline event:contention_begin"

for run in "${RUNS[@]}"; do
    v=${run%%:*}; variant=${run#*:}
    out=$CACHE/smoke/$v-$variant
    rm -rf "$out"; mkdir -p "$out"
    flags=()
    case "$variant" in
        noarat) flags=(--no-arat --cst) ;;
        noarat-nohv) flags=(--no-arat --no-hypervisor --cst) ;;
    esac
    echo "smoke: === $v $variant ===" >&2
    set +e
    # --retries: a TCG text-patching "Oops: int3" (boot.sh rc 6 or 7) boots again
    "$HERE/boot.sh" --kernel "$v" --initrd "$BUILD/smoke.cpio.gz" --smp "$SMP" --timeout 400 --quiet --retries 3 \
        --log "$out/serial.log" --summary "$out/boot.txt" ${flags[@]+"${flags[@]}"}
    brc=$?
    for p in "$out"/serial.log.panic-*; do [ -e "$p" ] && say "   (an attempt of $v $variant hit the TCG int3 race: ${p##*/})"; done
    "$HERE/extract.sh" --require counts-idle --require counts-mix --require counts-hotplug "$out/serial.log" "$out"
    erc=$?
    set -e
    problems=()
    [ "$brc" = 0 ] || problems+=("boot rc=$brc")
    [ "$erc" = 0 ] || problems+=("extract rc=$erc")
    say ""
    say "== $v $variant: $(sed -n 's/^release=//p' "$out/boot.txt") $(sed -n 's/^cpu=//p' "$out/boot.txt")${flags[*]:+ (${flags[*]})}"
    say "   boot: /init after $(sed -n 's/^init_s=//p' "$out/boot.txt")s (guest uptime $(sed -n 's/^guest_uptime_s=//p' "$out/boot.txt")s), whole run $(sed -n 's/^total_s=//p' "$out/boot.txt")s, $(sed -n 's/^result=//p' "$out/boot.txt")"
    [ -f "$out/sysinfo" ] && say "   guest: $(grep '^schedhot-guest:' "$out/sysinfo" | sed 's/^schedhot-guest: //')"
    [ -f "$out/sysinfo" ] && say "   $(grep '^tick_broadcast_lock' "$out/sysinfo")"
    for ph in idle mix hotplug; do
        c=$out/counts-$ph
        [ -f "$c" ] || continue
        say "   $ph: elapsed $(field "$c" elapsed_s)s, overrun_total $(field "$c" overrun_total), lost $(field "$c" lost_events), missing:$(sed -n 's/^missing//p' "$c")"
        line=""
        for f in $FUNCS; do line="$line $f=$(cnt "$c" "$f")"; done
        say "     $line"
        el=$(field "$c" elapsed_s)
        b=$(cnt "$c" __tick_broadcast_oneshot_control)
        if [ "$b" != - ] && [ "$b" != 0 ]; then
            say "      __tick_broadcast_oneshot_control: $(awk -v n="$b" -v t="$el" 'BEGIN{printf "%.0f", (t>0)?n/t:0}')/s"
        fi
        [ "$(field "$c" overrun_total)" = 0 ] || problems+=("$ph: ftrace overrun")
    done
    if [ -f "$out/mix.json" ]; then say "   mix.json: $(head -c 400 "$out/mix.json")"; fi
    if [ -f "$out/hotplug.json" ]; then say "   hotplug.json: $(cat "$out/hotplug.json")"; fi
    if [ -f "$out/lockhist" ]; then
        say "   contention_begin per lock_addr (whole run, top 5):"
        grep -E '^\{ lock_addr' "$out/lockhist" | head -n5 | sed 's/^/     /' | tee -a "$SUMMARY"
    fi
    # consistency checks
    if [ -f "$out/counts-mix" ]; then
        for f in cpupri_set nohz_balance_exit_idle; do
            n=$(cnt "$out/counts-mix" $f); { [ "$n" = - ] || [ "$n" = 0 ]; } && problems+=("mix: $f count $n")
        done
    fi
    if [ -f "$out/counts-hotplug" ] && [ -f "$out/hotplug.json" ]; then
        n=$(cnt "$out/counts-hotplug" tick_broadcast_offline); ops=$(jnum "$out/hotplug.json" offline_ops)
        [ "$n" = "$ops" ] || problems+=("hotplug: tick_broadcast_offline=$n != offline_ops=$ops")
        [ "$(jnum "$out/hotplug.json" cycles_done)" = "$(jnum "$out/hotplug.json" cycles_requested)" ] &&
            [ "$(jnum "$out/hotplug.json" errors)" = 0 ] || problems+=("hotplug: not all cycles done or errors")
    fi
    if [ "$variant" != plain ] && [ -f "$out/counts-idle" ]; then
        n=$(cnt "$out/counts-idle" __tick_broadcast_oneshot_control)
        { [ "$n" = - ] || [ "$n" = 0 ]; } && problems+=("no-ARAT: __tick_broadcast_oneshot_control count $n")
    fi
    if [ ${#problems[@]} -gt 0 ]; then
        say "   FAIL: ${problems[*]}"; FAIL=1
    else
        say "   PASS"
    fi
done
say ""
say "smoke: results in $CACHE/smoke (summary: $SUMMARY)"
exit "$FAIL"
