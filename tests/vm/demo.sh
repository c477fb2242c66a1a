#!/usr/bin/env bash
# demo.sh [6.1|6.12|7.3|6.1-arm64]: schedhot on a real Debian kernel in one command. Installs what is
# missing (packaging/install-deps.sh), builds schedhot if $SCHEDHOT_BIN (default
# build/schedhot) does not exist, fetches the kernel (default 6.12; cached in
# ${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}), builds a static schedhot for the guest
# (build-static.sh, in ${SCHEDHOT_BUILD:-build}/vm-static/), boots it under QEMU (TCG, 4 vCPUs, about
# a minute), records with schedhot in the guest while idle churn, hackbench, SCHED_FIFO
# sleepers and CPU hotplug run, brings the recording back over the serial console and
# prints `schedhot report` of it on this machine. 6.1-arm64 boots Debian's arm64 kernel under
# qemu-system-aarch64 with a static arm64 schedhot cross-built by build-static-arm64.sh (in
# ${SCHEDHOT_BUILD:-build}/vm-static-arm64/).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$(dirname "$HERE")")
CACHE=${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}
die() { echo "demo: error: $*" >&2; exit 1; }
KVER=${1:-6.12}
case "$KVER" in 6.1|6.12|7.3|6.1-arm64) ;; -h|--help) awk 'NR>1 && /^#/{sub(/^# ?/,"");print;next} NR>1{exit}' "$0"; exit 0 ;;
    *) die "unknown kernel '$KVER' (6.1, 6.12, 7.3 or 6.1-arm64)" ;; esac
[ $# -le 1 ] || die "usage: demo.sh [6.1|6.12|7.3|6.1-arm64]"

"$ROOT/packaging/install-deps.sh" >&2
mkdir -p "$CACHE"
exec 9> "$CACHE/vm.lock"   # one VM run at a time (e2e.py takes the same lock)
flock -n 9 || { echo "demo: waiting for another VM run to finish" >&2; flock 9; }
BIN=${SCHEDHOT_BIN:-$ROOT/build/schedhot}
[ -x "$BIN" ] || "$ROOT/packaging/build.sh" >&2
[ -x "$BIN" ] || die "no schedhot at $BIN after building"
"$HERE/fetch-kernels.sh" "$KVER" >&2
OUT=$CACHE/demo/$KVER
rm -rf "$OUT"; mkdir -p "$OUT"
echo "demo: building the static schedhot for the guest (tests/vm/build-static.sh; minutes the first time)" >&2
case "$KVER" in
    *-arm64) GBIN=$("$HERE/build-static-arm64.sh" "${SCHEDHOT_BUILD:-$ROOT/build}/vm-static-arm64") ||
                 die "cross-building the static arm64 schedhot failed" ;;
    *) GBIN=$("$HERE/build-static.sh" "${SCHEDHOT_BUILD:-$ROOT/build}/vm-static") || die "building the static schedhot failed" ;;
esac
"$HERE/mkimage.sh" "$GBIN" "$OUT/demo.cpio.gz" 2>/dev/null
echo "demo: booting Debian's $(cat "$CACHE/kernels/$KVER/version") under QEMU (TCG), recording in the guest..." >&2
"$HERE/boot.sh" --kernel "$KVER" --initrd "$OUT/demo.cpio.gz" --timeout 600 --quiet --retries 3 \
    --log "$OUT/serial.log" --append "schedhot.e2e_mode=demo schedhot.e2e_backends=auto" ||
    die "the guest run failed (serial log: $OUT/serial.log)"
"$HERE/extract.sh" --require rec-auto.shot "$OUT/serial.log" "$OUT" >/dev/null ||
    die "the recording did not come back intact (serial log: $OUT/serial.log)"
echo "demo: recording $OUT/rec-auto.shot; its report:" >&2
echo >&2
"$BIN" report "$OUT/rec-auto.shot"
