#!/usr/bin/env bash
# mkimage.sh SCHEDHOT_BIN OUT.cpio.gz: the initramfs of e2e.py and demo.sh. Holds
# e2e-init.sh as /init, the workload and tracecount (built static), a stripped copy of
# SCHEDHOT_BIN as /bin/schedhot, plus busybox and guest-lib.sh (mkinitramfs.sh).
# SCHEDHOT_BIN should be the static build of build-static.sh (what e2e.py and demo.sh
# pass); a dynamically linked one is accepted for debugging, with every shared library
# ldd names copied at its host path, and said so on stderr. An arm64 SCHEDHOT_BIN
# (build-static-arm64.sh BUILD_DIR) takes workload, tracecount and busybox from BUILD_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}
die() { echo "mkimage: error: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: mkimage.sh SCHEDHOT_BIN OUT.cpio.gz"
BIN=$1 OUT=$2
[ -x "$BIN" ] || die "$BIN is not an executable (build schedhot first: packaging/build.sh)"
command -v strip >/dev/null || die "strip not found (apt-get install binutils)"
command -v readelf >/dev/null || die "readelf not found (apt-get install binutils)"

TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
if readelf -h "$BIN" | grep 'Machine:.*AArch64' >/dev/null; then
    # an arm64 schedhot (build-static-arm64.sh): the guest's workload, tracecount and busybox
    # are the ones cross-built and fetched next to it
    D=$(dirname "$BIN")
    for f in workload tracecount busybox busybox.list; do
        [ -s "$D/$f" ] || die "$D/$f missing: build the arm64 guest with tests/vm/build-static-arm64.sh $D"
    done
    for f in workload tracecount busybox; do
        readelf -h "$D/$f" | grep 'Machine:.*AArch64' >/dev/null || die "$D/$f is not an AArch64 executable"
    done
    command -v aarch64-linux-gnu-strip >/dev/null || die "aarch64-linux-gnu-strip not found (apt-get install binutils-aarch64-linux-gnu)"
    readelf -l "$BIN" | grep INTERP >/dev/null && die "$BIN is linked dynamically: an arm64 guest needs the static build"
    aarch64-linux-gnu-strip -o "$TMP/schedhot" "$BIN"
    files=(-f "$TMP/schedhot:/bin/schedhot" -f "$D/workload:/bin/workload" -f "$D/tracecount:/bin/tracecount"
           -b "$D/busybox" -l "$D/busybox.list")
    "$HERE/mkinitramfs.sh" -o "$OUT" -i "$HERE/e2e-init.sh" "${files[@]}"
    exit 0
fi
mkdir -p "$CACHE/build"
"$HERE/build-workload.sh" "$CACHE/build/workload"
"${CC:-gcc}" -O2 -Wall -Wextra -static -o "$CACHE/build/tracecount" "$HERE/tracecount.c" ||
    die "compiling tracecount.c failed"
strip -o "$TMP/schedhot" "$BIN"
files=(-f "$TMP/schedhot:/bin/schedhot" -f "$CACHE/build/workload:/bin/workload"
       -f "$CACHE/build/tracecount:/bin/tracecount")
if readelf -l "$BIN" | grep INTERP >/dev/null; then
    libs=$(ldd "$BIN" | grep -o '/[^ ]*') || die "ldd $BIN failed"
    echo "mkimage: $BIN is linked dynamically: copying its libraries into the image" >&2
    for l in $libs; do files+=(-f "$l:$l"); done
fi
"$HERE/mkinitramfs.sh" -o "$OUT" -i "$HERE/e2e-init.sh" "${files[@]}"
