#!/usr/bin/env bash
# boot.sh --kernel VER --initrd FILE [--smp N] [--sockets S] [--maxcpus M] [--mem MB] [--no-arat]
#         [--no-hypervisor] [--cst] [--timeout S] [--log FILE] [--append ARGS]
#         [--quiet] [--retries N] [--qemu-arg ARG]...
#
# Boots a cached Debian kernel (see fetch-kernels.sh) with an initramfs under
# QEMU TCG (KVM is not usable here):
#   qemu-system-x86_64 -accel tcg,thread=multi -cpu max[,-arat,-monitor][,-hypervisor]
#     -smp N -m M -nographic -no-reboot -nic none -kernel vmlinuz -initrd FILE
#     -append "console=ttyS0 quiet panic=-1 schedhot.watchdog=W ARGS" [-acpitable file=cst.aml]
# VER is 6.1, 6.12, 7.3, 6.1-arm64, 6.12-arm64, 6.1-ppc64le, 6.12-ppc64le (under $CACHE/kernels), or a directory holding vmlinuz
# (+ version), or a vmlinuz file. A kernel whose release ends in -arm64 boots with
#   qemu-system-aarch64 -M virt -accel tcg,thread=multi -cpu max ... console=ttyAMA0
# (the x86 CPU and ACPI options --no-arat, --no-hypervisor and --cst are refused there); one
# whose release ends in -powerpc64le (6.1-ppc64le, 6.12-ppc64le: the ELF vmlinux) with
#   qemu-system-ppc64 -M pseries,x-vof=on,cap-*=broken -cpu POWER9 ... console=hvc0
#   --sockets S      -smp N,sockets=S: S packages (S divides N), for topology folding
#   --no-arat        -cpu max,-arat,-monitor: LAPIC timer keeps C3STOP, no mwait idle
#   --no-hypervisor  also clear CPUID.hypervisor: native qspinlock instead of virt_spin_lock
#   --idle-states    arm64: boot with QEMU's virt device tree plus a PSCI idle state marked
#                    local-timer-stop and the arch timer without always-on (arm64-idle-dt.py;
#                    dtc), so deep idle goes through the tick broadcast (cached in $CACHE/dtb)
#   --cst            load cst.asl (compiled with iasl into $CACHE/acpi) as an SSDT: _CST
#                    with C1 (hlt) and C2 (I/O port 0x814), so acpi_idle gets a deep state
#   --timeout S      host-side limit (default 300); the guest watchdog fires at S-15
#   --stall S        after /init, a console silent for S s is a hung guest (rc 8; default 0: off)
#   --log FILE       serial log (default: $CACHE/logs/boot-<ver>-<time>.log)
#   --quiet          do not stream the serial console to stdout
#   --tcg-thread single|multi  TCG threading (default multi, or $SCHEDHOT_TCG_THREAD)
#   --retries N      boot up to N times while the kernel panics before /init (rc 6, the
#                    sporadic 7.3 TCG oops) or with "Oops: int3" or a kernel call to address
#                    0 after it (rc 7: runtime text patching, e.g. BPF attach, raced under
#                    multi-threaded TCG) or
#                    hung (rc 8); each such log is kept as LOG.panic-K
#   --summary FILE   also write key=value lines (release, init_s, guest_uptime_s, total_s, result, rc)
# Prints the kernel release used and the boot time. Exit status: 0 guest init
# finished with rc 0; 1 guest rc != 0; 3 kernel panic (6 if before /init, e.g. the
# sporadic early-boot "Oops: int3" of 7.3 under multi-threaded TCG; 7 if after /init with
# "Oops: int3", the same race hit by runtime text patching); 4 guest ended without the
# DONE marker; 5 guest watchdog fired; 8 guest hung (a soft lockup of 40 s or more: seen
# once in ~150 boots, a 6.1 no-ARAT guest whose CPUs all stopped while ftrace patched text;
# qemu is stopped then rather than at the timeout; also a console silent for --stall S
# after /init); 124 host timeout; 2 usage/setup error.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}
die() { echo "boot: error: $*" >&2; exit 2; }

RETRIES=1 ARGS=("$@")
KVER='' INITRD='' SMP=4 SOCKETS='' MAXCPUS='' MEM=1024 NOARAT=0 NOHYP=0 CST=0 IDLEDT=0 TIMEOUT=300 STALL=0 LOG='' APPEND='' QUIET=0 SUMMARY='' TCGTHREAD=${SCHEDHOT_TCG_THREAD:-multi}
QARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --kernel) KVER=${2:?}; shift ;;
        --initrd) INITRD=${2:?}; shift ;;
        --smp) SMP=${2:?}; shift ;;
        --sockets) SOCKETS=${2:?}; shift ;;
        --maxcpus) MAXCPUS=${2:?}; shift ;;
        --mem) MEM=${2:?}; shift ;;
        --no-arat) NOARAT=1 ;;
        --no-hypervisor) NOHYP=1 ;;
        --cst) CST=1 ;;
        --idle-states) IDLEDT=1 ;;
        --timeout) TIMEOUT=${2:?}; shift ;;
        --stall) STALL=${2:?}; shift ;;
        --log) LOG=${2:?}; shift ;;
        --append) APPEND=${2:?}; shift ;;
        --quiet) QUIET=1 ;;
        --summary) SUMMARY=${2:?}; shift ;;
        --tcg-thread) TCGTHREAD=${2:?}; shift ;;
        --retries) RETRIES=${2:?}; shift ;;
        --qemu-arg) QARGS+=("${2:?}"); shift ;;
        -h|--help) awk 'NR>1 && /^#/{sub(/^# ?/,"");print;next} NR>1{exit}' "$0"; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
    shift
done
# Numbers first, before anything is looked up or run: digits only, no leading zero, at most 6
# digits (so that no value reaches bash arithmetic or qemu's -smp as anything but a number)
isnum() { [[ "$1" =~ ^[1-9][0-9]{0,5}$ ]]; }
isnum "$SMP" || die "--smp wants a number of CPUs (1-999999)"
[ -z "$MAXCPUS" ] || { isnum "$MAXCPUS" && [ "$MAXCPUS" -ge "$SMP" ]; } || die "--maxcpus wants a number of CPUs, at least --smp"
[ -z "$SOCKETS" ] || { isnum "$SOCKETS" && [ $(( ${MAXCPUS:-$SMP} % SOCKETS )) -eq 0 ]; } ||
    die "--sockets wants a number that divides the CPU count"
isnum "$MEM" || die "--mem wants megabytes"
isnum "$TIMEOUT" && [ "$TIMEOUT" -ge 20 ] || die "--timeout wants seconds (>= 20)"
[ -n "$KVER" ] || die "--kernel VER is required"
[ -n "$INITRD" ] || die "--initrd FILE is required"
[ -f "$INITRD" ] || die "initrd '$INITRD' not found"
[ "$STALL" = 0 ] || isnum "$STALL" || die "--stall wants seconds (0: off)"
case "$TCGTHREAD" in single|multi) ;; *) die "--tcg-thread wants single or multi" ;; esac
isnum "$RETRIES" || die "--retries wants a number >= 1"

# ---- kernel
if [ -f "$KVER" ]; then
    VMLINUZ=$KVER; KDIR=$(dirname "$KVER")
elif [ -d "$KVER" ]; then
    KDIR=$KVER; VMLINUZ=$KDIR/vmlinuz
else
    KDIR=$CACHE/kernels/$KVER; VMLINUZ=$KDIR/vmlinuz
fi
[ -f "$VMLINUZ" ] || die "no kernel at $VMLINUZ (run tests/vm/fetch-kernels.sh $KVER)"
RELEASE=$(cat "$KDIR/version" 2>/dev/null || echo unknown)
# an arm64 kernel (6.1-arm64: Debian's -arm64 flavour; its vmlinuz is arm64's Image) boots on
# qemu-system-aarch64's virt machine, console on its PL011 UART
ARCH=x86_64
case "$RELEASE" in *-arm64) ARCH=arm64 ;; *-powerpc64le) ARCH=ppc64le ;; esac
if [ "$ARCH" = ppc64le ]; then
    # pseries with QEMU's Virtual Open Firmware (x-vof: /init in about 5 s; SLOF adds 6-11 s);
    # the cap-* settings are what TCG can give (each else warns at every boot)
    QEMU=${QEMU:-qemu-system-ppc64}
    command -v "$QEMU" >/dev/null || die "$QEMU not found (apt-get install qemu-system-ppc)"
    [ "$NOARAT" = 0 ] && [ "$NOHYP" = 0 ] && [ "$CST" = 0 ] && [ "$IDLEDT" = 0 ] ||
        die "--no-arat, --no-hypervisor, --cst and --idle-states are x86 and arm64 options"
    MACHINE=(-M pseries,x-vof=on,cap-cfpc=broken,cap-sbbc=broken,cap-ibs=broken,cap-ccf-assist=off)
    CONSOLE=hvc0
elif [ "$ARCH" = arm64 ]; then
    QEMU=${QEMU:-qemu-system-aarch64}
    command -v "$QEMU" >/dev/null || die "$QEMU not found (apt-get install qemu-system-arm)"
    [ "$NOARAT" = 0 ] && [ "$NOHYP" = 0 ] && [ "$CST" = 0 ] || die "--no-arat, --no-hypervisor and --cst are x86 CPU/ACPI options (arm64: --idle-states)"
    MACHINE=(-M virt)
    CONSOLE=ttyAMA0
else
    QEMU=${QEMU:-qemu-system-x86_64}
    command -v "$QEMU" >/dev/null || die "$QEMU not found (apt-get install qemu-system-x86)"
    [ "$IDLEDT" = 0 ] || die "--idle-states is an arm64 device-tree option (x86: --no-arat --cst)"
    MACHINE=()
    CONSOLE=ttyS0
fi

# ---- CPU model
CPU=max
[ "$ARCH" = ppc64le ] && CPU=POWER9
# arm64: QEMU's implementation-defined pointer-authentication hash instead of the
# architected QARMA5, which TCG computes slowly; Debian's kernel signs and checks return
# addresses in every function (CONFIG_ARM64_PTR_AUTH_KERNEL), and runs the same code either way
[ "$ARCH" = arm64 ] && CPU="$CPU,pauth-impdef=on"
[ "$NOARAT" = 1 ] && CPU="$CPU,-arat,-monitor"
[ "$NOHYP" = 1 ] && CPU="$CPU,-hypervisor"
SMPARG=$SMP
[ -n "$MAXCPUS" ] && SMPARG="$SMP,maxcpus=$MAXCPUS"
[ -z "$SOCKETS" ] || SMPARG="$SMPARG,sockets=$SOCKETS"

# ---- arm64 --idle-states: QEMU's own virt device tree (dumped for this -smp/-m), with a PSCI idle
# state marked local-timer-stop and the architected timer without always-on (arm64-idle-dt.py),
# so that idle entries go through the tick broadcast (bc_hrtimer)
if [ "$IDLEDT" = 1 ]; then
    command -v dtc >/dev/null || die "dtc not found (apt-get install device-tree-compiler)"
    key=$( { "$QEMU" --version | head -n1; echo "$CPU $SMPARG $MEM"; cat "$HERE/arm64-idle-dt.py"; } | sha256sum | cut -c1-12)
    DTB=$CACHE/dtb/virt-idle-$key.dtb
    if [ ! -s "$DTB" ]; then
        mkdir -p "$CACHE/dtb"
        t=$CACHE/dtb/virt-idle-$key
        "$QEMU" -M "virt,dumpdtb=$t.orig.dtb" -cpu "$CPU" -smp "$SMPARG" \
            -m "$MEM" -nographic >"$t.log" 2>&1 || { cat "$t.log" >&2; die "qemu could not dump the virt device tree"; }
        dtc -q -I dtb -O dts -o "$t.orig.dts" "$t.orig.dtb" || die "dtc could not decompile $t.orig.dtb"
        python3 "$HERE/arm64-idle-dt.py" "$t.orig.dts" "$t.dts" || die "arm64-idle-dt.py failed on $t.orig.dts"
        dtc -q -I dts -O dtb -o "$DTB.tmp" "$t.dts" || die "dtc could not compile $t.dts"
        mv "$DTB.tmp" "$DTB"
    fi
    QARGS+=(-dtb "$DTB")
fi

# ---- optional _CST SSDT
ACPI=()
if [ "$CST" = 1 ]; then
    command -v iasl >/dev/null || die "iasl not found (apt-get install acpica-tools)"
    [ "${MAXCPUS:-$SMP}" -le 64 ] || die "cst.asl covers 64 CPUs at most"
    sum=$(sha256sum "$HERE/cst.asl" | cut -c1-12)
    AML=$CACHE/acpi/cst-$sum.aml
    if [ ! -s "$AML" ]; then
        mkdir -p "$CACHE/acpi"
        iasl -p "$CACHE/acpi/cst-$sum" "$HERE/cst.asl" > "$CACHE/acpi/cst-$sum.iasl.log" 2>&1 ||
            { cat "$CACHE/acpi/cst-$sum.iasl.log" >&2; die "iasl failed on cst.asl"; }
    fi
    ACPI=(-acpitable "file=$AML")
fi

# ---- log
if [ -z "$LOG" ]; then
    mkdir -p "$CACHE/logs"
    LOG=$CACHE/logs/boot-$(basename "$KVER")-$(date +%Y%m%d-%H%M%S)-$$.log
fi
mkdir -p "$(dirname "$LOG")"
if [ "$RETRIES" -gt 1 ]; then
    # the same command, once per attempt, without --retries and with this log
    one=()
    for ((i = 0; i < ${#ARGS[@]}; i++)); do
        case "${ARGS[i]}" in --retries|--log) i=$((i + 1)) ;; *) one+=("${ARGS[i]}") ;; esac
    done
    for ((k = 1; ; k++)); do
        set +e; "$0" "${one[@]}" --log "$LOG"; rc=$?; set -e
        { [ "$rc" = 6 ] || [ "$rc" = 7 ] || [ "$rc" = 8 ]; } && [ "$k" -lt "$RETRIES" ] || exit "$rc"
        cp "$LOG" "$LOG.panic-$k"
        echo "boot: attempt $k of $RETRIES $( [ "$rc" = 8 ] && echo "hung (soft lockup or a silent console)" || echo "hit the TCG text-patching race") (rc $rc, log kept as $LOG.panic-$k); booting again" >&2
    done
fi
: > "$LOG"

WD=$((TIMEOUT - 15))
CMDLINE="console=$CONSOLE quiet panic=-1 schedhot.watchdog=$WD${APPEND:+ $APPEND}"
echo "boot: kernel $RELEASE ($KVER) $ARCH tcg=$TCGTHREAD smp=$SMPARG mem=${MEM}M cpu=$CPU${ACPI[1]:+ acpitable=${ACPI[1]#file=}} log=$LOG" >&2

T0=$EPOCHREALTIME
timeout -k 10 "$TIMEOUT" "$QEMU" ${MACHINE[@]+"${MACHINE[@]}"} -accel "tcg,thread=$TCGTHREAD" -cpu "$CPU" -smp "$SMPARG" -m "$MEM" \
    -nographic -no-reboot -nic none -kernel "$VMLINUZ" -initrd "$INITRD" -append "$CMDLINE" \
    ${ACPI[@]+"${ACPI[@]}"} ${QARGS[@]+"${QARGS[@]}"} </dev/null >"$LOG" 2>"$LOG.qemu-stderr" &
QPID=$!
TAILPID=
if [ "$QUIET" = 0 ]; then tail -n +1 -f --pid="$QPID" "$LOG" & TAILPID=$!; fi
cleanup() { kill "$QPID" 2>/dev/null || true; [ -n "$TAILPID" ] && kill "$TAILPID" 2>/dev/null || true; }
trap cleanup INT TERM

TINIT=
HUNG=
SILENT=
n=0
LAST_SIZE=-1 LAST_GROW=$SECONDS
while kill -0 "$QPID" 2>/dev/null; do
    if [ -z "$TINIT" ] && grep -aq '=====SCHEDHOT-INIT ' "$LOG"; then TINIT=$EPOCHREALTIME; fi
    # every 2 s: a CPU stuck for 40 s or more never comes back in these guests (the guest's
    # own watchdog cannot fire then); stop qemu instead of waiting for the timeout
    if [ $((++n % 20)) = 0 ]; then
        stuck=$(grep -ao 'soft lockup - CPU#[0-9]* stuck for [0-9]*s' "$LOG" | sed 's/.* for \([0-9]*\)s/\1/' | sort -n | tail -n1 || true)
        # (a guest that already wrote its DONE marker is left to power off)
        if [ -n "$stuck" ] && [ "$stuck" -ge 40 ] && ! grep -aq '=====SCHEDHOT-DONE ' "$LOG"; then
            HUNG=$stuck; kill "$QPID" 2>/dev/null || true
        fi
        # --stall: a guest past /init whose console stays silent that long has stopped as a
        # whole (seen on 6.1 under multi-threaded TCG right after attach: no lockup message,
        # no watchdog); the longest silence of a healthy e2e guest is ~13 s
        size=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
        if [ "$size" != "$LAST_SIZE" ]; then LAST_SIZE=$size LAST_GROW=$SECONDS; fi
        if [ "$STALL" -gt 0 ] && [ -n "$TINIT" ] && [ $((SECONDS - LAST_GROW)) -ge "$STALL" ] &&
            ! grep -aq '=====SCHEDHOT-DONE ' "$LOG"; then
            SILENT=$((SECONDS - LAST_GROW)); kill "$QPID" 2>/dev/null || true
        fi
    fi
    sleep 0.1
done
set +e; wait "$QPID"; QRC=$?; set -e
T1=$EPOCHREALTIME
[ -n "$TAILPID" ] && { wait "$TAILPID" 2>/dev/null || true; }
if [ -z "$TINIT" ] && grep -aq '=====SCHEDHOT-INIT ' "$LOG"; then TINIT=$T1; fi

GUEST_UP=$(sed -n 's/.*=====SCHEDHOT-INIT uptime=\([0-9.]*\) .*/\1/p' "$LOG" | head -n1)
total=$(awk -v a="$T0" -v b="$T1" 'BEGIN{printf "%.1f", b-a}')
toinit=$( [ -n "$TINIT" ] && awk -v a="$T0" -v b="$TINIT" 'BEGIN{printf "%.1f", b-a}' || echo "n/a")
DONE=$(sed -n 's/.*=====SCHEDHOT-DONE rc=\([0-9]*\)=====.*/\1/p' "$LOG" | tail -n1 | tr -d '\r')

if [ -n "$HUNG" ]; then res="guest hung: soft lockup, a CPU stuck for ${HUNG}s (qemu stopped)"; rc=8
elif [ -n "$SILENT" ]; then res="guest hung: console silent for ${SILENT}s after /init (--stall; qemu stopped)"; rc=8
elif [ "$QRC" = 124 ] || [ "$QRC" = 137 ]; then res="host timeout after ${TIMEOUT}s"; rc=124
elif grep -aq 'Kernel panic' "$LOG"; then
    res="kernel panic$( [ -z "$TINIT" ] && echo " before /init" || true)"; rc=3
    [ -z "$TINIT" ] && rc=6
    if grep -aq 'Oops: int3' "$LOG"; then
        res="$res (Oops: int3: text patching raced with another vCPU under multi-threaded TCG; retry, or use --tcg-thread single)"
        [ "$rc" = 3 ] && rc=7
    elif grep -aqE 'RIP: 0010:0x0[[:space:]]*$' "$LOG" && grep -aq 'supervisor instruction fetch in kernel mode' "$LOG"; then
        # A kernel call to address 0 on several vCPUs at once, right as kprobes and ftrace patch
        # the same call sites (seen once on 7.3, in dequeue_rt_stack -> cpupri_set): a vCPU ran
        # a half-patched call, the same multi-threaded TCG race as the int3 oops.
        res="$res (a kernel call to address 0: text patching raced with another vCPU under multi-threaded TCG; retry, or use --tcg-thread single)"
        [ "$rc" = 3 ] && rc=7
    fi
elif grep -aq '=====SCHEDHOT-WATCHDOG' "$LOG"; then res="guest watchdog fired"; rc=5
elif [ -z "$DONE" ]; then res="guest ended without DONE marker (qemu rc=$QRC)"; rc=4
elif [ "$DONE" != 0 ]; then res="guest init failed rc=$DONE"; rc=1
else res="ok"; rc=0; fi
if [ "$QRC" != 0 ] && [ "$rc" != 124 ] && [ -s "$LOG.qemu-stderr" ]; then
    grep -v 'TCG doesn.t support requested feature' "$LOG.qemu-stderr" >&2 || true
fi
if [ -n "$SUMMARY" ]; then
    printf 'release=%s\nkernel=%s\ncpu=%s\nsmp=%s\ninit_s=%s\nguest_uptime_s=%s\ntotal_s=%s\nresult=%s\nrc=%s\nlog=%s\n' \
        "$RELEASE" "$KVER" "$CPU" "$SMPARG" "$toinit" "${GUEST_UP:-n/a}" "$total" "$res" "$rc" "$LOG" > "$SUMMARY"
fi
echo "boot: kernel $RELEASE: /init after ${toinit}s (guest uptime ${GUEST_UP:-n/a}s), total ${total}s: $res" >&2
exit "$rc"
