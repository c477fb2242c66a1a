#!/usr/bin/env bash
# mkimage.sh SCHEDHOT_BIN OUT.cpio.gz: the initramfs of e2e.py and demo.sh. Holds
# e2e-init.sh as /init, the workload and tracecount (built static), a stripped copy of
# SCHEDHOT_BIN as /bin/schedhot, plus busybox and guest-lib.sh (mkinitramfs.sh).
# SCHEDHOT_BIN should be the static build of build-static.sh (what e2e.py and demo.sh
# pass); a dynamically linked one is accepted for debugging, with every shared library
# ldd names copied at its host path, and said so on stderr. An arm64 or ppc64le SCHEDHOT_BIN
# (build-static-cross.sh arm64|ppc64el BUILD_DIR) takes workload, tracecount and busybox from
# BUILD_DIR.
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
# A cross-built schedhot (build-static-cross.sh arm64|ppc64el BUILD_DIR): the guest's workload,
# tracecount and busybox are the ones cross-built and fetched next to it.
MACHINE=$(readelf -h "$BIN" | sed -n 's/^ *Machine: *//p')
case "$MACHINE" in
    AArch64) TRIPLE=aarch64-linux-gnu ARCH=arm64 ;;
    PowerPC64*) TRIPLE=powerpc64le-linux-gnu ARCH=ppc64el ;;
    *) TRIPLE="" ;;
esac
if [ -n "$TRIPLE" ]; then
    D=$(dirname "$BIN")
    for f in workload tracecount busybox busybox.list; do
        [ -s "$D/$f" ] || die "$D/$f missing: build the $ARCH guest with tests/vm/build-static-cross.sh $ARCH $D"
    done
    for f in workload tracecount busybox; do
        [ "$(readelf -h "$D/$f" | sed -n 's/^ *Machine: *//p')" = "$MACHINE" ] || die "$D/$f is not a $MACHINE executable"
    done
    command -v "$TRIPLE-strip" >/dev/null || die "$TRIPLE-strip not found (apt-get install binutils-$TRIPLE)"
    readelf -l "$BIN" | grep INTERP >/dev/null && die "$BIN is linked dynamically: a $ARCH guest needs the static build"
    "$TRIPLE-strip" -o "$TMP/schedhot" "$BIN"
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
