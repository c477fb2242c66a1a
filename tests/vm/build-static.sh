#!/usr/bin/env bash
# build-static.sh BUILD_DIR: builds a statically linked schedhot at BUILD_DIR/schedhot for the
# guests' initramfs (the issue asks for busybox-static plus a static schedhot), and prints
# its path on stdout. BUILD_DIR is a build directory of its own (e2e.py and demo.sh use
# <build>/vm-static); a non-static CMake build directory is refused.
#
# Debian 12 ships every library schedhot links as a static archive (libbpf.a, libelf.a,
# libz.a, libzstd.a, libncursesw.a, libtinfo.a; fmt is used header-only) except ISA-L, whose
# libisal-dev has only the shared library. So ISA-L's isa-l.a is built from Debian's own
# source package of the installed libisal-dev version (same headers), fetched through a
# PRIVATE apt configuration with a deb-src line for the system's Debian mirror under
# $CACHE/apt-src (the system's /etc/apt is untouched), unpacked with dpkg-source (Debian's
# patches applied) and built with its Makefile.unx (nasm). Kept in $CACHE/isal/<version>/;
# a rebuild of schedhot reuses it. Concurrent runs wait for each other (flock on the cache's
# ISA-L step and on BUILD_DIR).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}
log() { echo "build-static: $*" >&2; }
die() { echo "build-static: error: $*" >&2; exit 1; }
case "${1:-}" in
    -h|--help) awk 'NR>1 && /^#/{sub(/^# ?/,"");print;next} NR>1{exit}' "$0"; exit 0 ;;
    "") die "usage: build-static.sh BUILD_DIR" ;;
esac
[ $# -eq 1 ] || die "usage: build-static.sh BUILD_DIR"
OUT=$1
[ ! -e "$OUT" ] || [ -d "$OUT" ] || die "$OUT exists and is not a directory"
if [ -f "$OUT/CMakeCache.txt" ] && ! grep -q '^SCHEDHOT_STATIC:BOOL=ON$' "$OUT/CMakeCache.txt"; then
    die "$OUT is a non-static CMake build directory: give build-static.sh a directory of its own (e.g. build/vm-static)"
fi
for t in apt-get dpkg-source dpkg-query make nasm cmake readelf nm flock; do
    command -v "$t" >/dev/null || die "$t not found (packages: see tests/vm/DEPS)"
done
mkdir -p "$CACHE/isal" 2>/dev/null && [ -w "$CACHE/isal" ] || die "cannot write to $CACHE/isal (SCHEDHOT_VM_CACHE picks another cache)"
mkdir -p "$OUT" 2>/dev/null && [ -w "$OUT" ] || die "cannot create or write $OUT"

# ---- ISA-L static archive, from Debian's source of the installed version
ver=$(dpkg-query -W -f='${Version}' libisal-dev 2>/dev/null) || die "libisal-dev is not installed"
ISAL=$CACHE/isal/$ver/isa-l.a
# (grep without -q reads all of nm's output: no SIGPIPE for pipefail to report)
isal_ok() { [ -s "$1" ] && nm "$1" 2>/dev/null | grep ' T crc32_iscsi$' >/dev/null; }
exec 8> "$CACHE/isal/lock"
flock 8
if [ -e "$ISAL" ] && ! isal_ok "$ISAL"; then
    log "$ISAL is damaged (no crc32_iscsi in it): building it again"
    rm -f "$ISAL"
fi
if [ ! -e "$ISAL" ]; then
    src=$CACHE/apt-src
    mkdir -p "$src/lists/partial" "$src/cache/archives/partial" "$CACHE/isal/$ver"
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -r "$keyring" ] || die "$keyring missing (apt-get install debian-archive-keyring)"
    suite=$( . /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    # The system's mirror of Debian's main archive: the URI apt-cache policy shows for
    # SUITE/main whose release line says o=Debian and l=Debian (not security, not a
    # third-party repository, not a CD-ROM); deb.debian.org when there is none.
    mirror=$(apt-cache policy 2>/dev/null | awk -v s="$suite/main" '
        $3 == s && $2 ~ /^https?:/ { uri = $2; next }
        uri != "" && /release / && /o=Debian,/ && /l=Debian,/ { print uri; exit }
        { uri = "" }' || true)
    echo "deb-src [signed-by=$keyring] ${mirror:-http://deb.debian.org/debian} $suite main" > "$src/sources.list"
    o=(-o "Dir::Etc::SourceList=$src/sources.list" -o Dir::Etc::SourceParts=/dev/null
       -o "Dir::State::Lists=$src/lists" -o "Dir::Cache=$src/cache" -o Dir::State::status=/dev/null
       -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null)
    log "apt-get source libisal=$ver from ${mirror:-http://deb.debian.org/debian} (private deb-src config in $src)"
    if ! apt-get "${o[@]}" --error-on=any update >"$src/update.log" 2>&1; then
        grep -E '^(E|W|Err):' "$src/update.log" | head -n 3 >&2 || true
        die "downloading the deb-src index of $suite failed (network or mirror; log $src/update.log)"
    fi
    work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
    # the installed version; else the suite's current one (ISA-L's CRC API is stable)
    if ! (cd "$work" && apt-get "${o[@]}" source --download-only "libisal=$ver") >"$src/source.log" 2>&1; then
        log "libisal=$ver is not in the deb-src index; taking its current source version"
        (cd "$work" && apt-get "${o[@]}" source --download-only libisal) >>"$src/source.log" 2>&1 ||
            { tail -n 3 "$src/source.log" >&2; die "apt-get source libisal failed (log $src/source.log)"; }
    fi
    dsc=$(ls "$work"/*.dsc 2>/dev/null | head -n1)
    [ -n "$dsc" ] || die "no .dsc downloaded for libisal (log $src/source.log)"
    (cd "$work" && dpkg-source -q -x "$dsc" isal) >"$src/unpack.log" 2>&1 ||
        { tail -n 3 "$src/unpack.log" >&2; die "dpkg-source -x $dsc failed"; }
    log "building isa-l.a (make -f Makefile.unx lib)"
    make -C "$work/isal" -f Makefile.unx -j"$(nproc)" lib >"$CACHE/isal/$ver/build.log" 2>&1 ||
        { tail -n 5 "$CACHE/isal/$ver/build.log" >&2; die "building ISA-L failed (log $CACHE/isal/$ver/build.log)"; }
    basename "$dsc" .dsc > "$CACHE/isal/$ver/source"   # the source version actually built
    cp "$work/isal/bin/isa-l.a" "$ISAL.tmp" || { rm -f "$ISAL.tmp"; die "cannot write $ISAL"; }
    isal_ok "$ISAL.tmp" || { rm -f "$ISAL.tmp"; die "the ISA-L just built has no crc32_iscsi"; }
    mv "$ISAL.tmp" "$ISAL"
    log "ISA-L $(cat "$CACHE/isal/$ver/source"): $ISAL"
fi
exec 8>&-

# ---- schedhot, static (one build at a time in OUT)
# RelWithDebInfo's -O2 -DNDEBUG without -g: mkimage.sh strips the binary it puts in the
# guest, so its debug info was compiled only to be thrown away (GCC's code is the same with
# or without -g; about a quarter of the compile's CPU time). SCHEDHOT_VM_GUEST_DEBUG=1 keeps
# -g, for a debugger on the unstripped OUT/schedhot.
opt="-O2 -DNDEBUG"
[ -z "${SCHEDHOT_VM_GUEST_DEBUG:-}" ] || opt="-O2 -g -DNDEBUG"
exec 9> "$OUT/.build-static.lock"
flock 9
if ! cmake -S "$ROOT" -B "$OUT" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCHEDHOT_TESTS=OFF -DSCHEDHOT_STATIC=ON \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt" \
        -DSCHEDHOT_ISAL_STATIC="$ISAL" >"$OUT/static-cmake.log" 2>&1; then
    grep -E 'Error|error' "$OUT/static-cmake.log" | head -n 5 >&2 || true
    die "cmake configure of the static build failed (log $OUT/static-cmake.log)"
fi
if ! cmake --build "$OUT" -j"$(nproc)" --target schedhot >"$OUT/static-build.log" 2>&1; then
    grep -E 'error|undefined' "$OUT/static-build.log" | head -n 10 >&2 || true
    die "static build failed (log $OUT/static-build.log; ISA-L from $ISAL)"
fi
# a dynamic executable has a PT_INTERP program header; a static one has none
if readelf -l "$OUT/schedhot" | grep 'INTERP' >/dev/null; then die "$OUT/schedhot is not statically linked"; fi
log "static schedhot: $OUT/schedhot"
echo "$OUT/schedhot"
