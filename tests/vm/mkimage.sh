#!/usr/bin/env bash
# mkimage.sh SCHEDHOT_BIN OUT.cpio.gz: the initramfs of e2e.py and demo.sh. Holds
# e2e-init.sh as /init, the workload and tracecount (built static), a stripped copy of SCHEDHOT_BIN as
# /bin/schedhot and every shared library it needs at its host path (schedhot is linked
# dynamically: Debian ships libisal only as a shared library), plus busybox and
# guest-lib.sh (mkinitramfs.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}
die() { echo "mkimage: error: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: mkimage.sh SCHEDHOT_BIN OUT.cpio.gz"
BIN=$1 OUT=$2
[ -x "$BIN" ] || die "$BIN is not an executable (build schedhot first: packaging/build.sh)"
command -v strip >/dev/null || die "strip not found (apt-get install binutils)"
command -v ldd >/dev/null || die "ldd not found (apt-get install libc-bin)"

mkdir -p "$CACHE/build"
"$HERE/build-workload.sh" "$CACHE/build/workload"
"${CC:-gcc}" -O2 -Wall -Wextra -static -o "$CACHE/build/tracecount" "$HERE/tracecount.c" ||
    die "compiling tracecount.c failed"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
strip -o "$TMP/schedhot" "$BIN"
files=(-f "$TMP/schedhot:/bin/schedhot" -f "$CACHE/build/workload:/bin/workload"
       -f "$CACHE/build/tracecount:/bin/tracecount")
libs=$(ldd "$BIN" | grep -o '/[^ ]*') || die "ldd $BIN failed"
for l in $libs; do files+=(-f "$l:$l"); done
"$HERE/mkinitramfs.sh" -o "$OUT" -i "$HERE/e2e-init.sh" "${files[@]}"
