#!/usr/bin/env bash
# build-static.sh BUILD_DIR: builds a statically linked schedhot at BUILD_DIR/schedhot for the
# guests' initramfs (the issue asks for busybox-static plus a static schedhot), and prints
# its path on stdout.
#
# Debian 12 ships every library schedhot links as a static archive (libbpf.a, libelf.a,
# libz.a, libzstd.a, libncursesw.a, libtinfo.a; fmt is used header-only) except ISA-L, whose
# libisal-dev has only the shared library. So ISA-L's isa-l.a is built from Debian's own
# source package of the installed libisal-dev version (same headers), fetched through a
# PRIVATE apt configuration with a deb-src line under $CACHE/apt-src (the system's /etc/apt
# is untouched), unpacked with dpkg-source (Debian's patches applied) and built with its
# Makefile.unx (nasm). Kept in $CACHE/isal/<version>/isa-l.a; a rebuild of schedhot reuses it.
# The schedhot build itself is CMake with -DSCHEDHOT_STATIC=ON into BUILD_DIR (incremental).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}
log() { echo "build-static: $*" >&2; }
die() { echo "build-static: error: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: build-static.sh BUILD_DIR"
OUT=$1
for t in apt-get dpkg-source dpkg-query make nasm cmake; do
    command -v "$t" >/dev/null || die "$t not found (packages: see tests/vm/DEPS)"
done

# ---- ISA-L static archive, from Debian's source of the installed version
ver=$(dpkg-query -W -f='${Version}' libisal-dev 2>/dev/null) || die "libisal-dev is not installed"
ISAL=$CACHE/isal/$ver/isa-l.a
if [ ! -s "$ISAL" ]; then
    src=$CACHE/apt-src
    mkdir -p "$src/lists/partial" "$src/cache/archives/partial" "$CACHE/isal/$ver"
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -r "$keyring" ] || die "$keyring missing (apt-get install debian-archive-keyring)"
    # the mirror the system uses (deb822 or one-line sources), deb.debian.org otherwise
    mirror=$( { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
                grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
                    sed 's/\[[^]]*\]//' | awk '{print $2}'; } | grep -v security | head -n1 || true)
    suite=$( . /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    echo "deb-src [signed-by=$keyring] ${mirror:-http://deb.debian.org/debian} $suite main" > "$src/sources.list"
    o=(-o "Dir::Etc::SourceList=$src/sources.list" -o Dir::Etc::SourceParts=/dev/null
       -o "Dir::State::Lists=$src/lists" -o "Dir::Cache=$src/cache" -o Dir::State::status=/dev/null
       -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null)
    log "apt-get source libisal=$ver (private deb-src config in $src)"
    apt-get "${o[@]}" update >"$src/update.log" 2>&1 || { cat "$src/update.log" >&2; die "private apt-get update (deb-src) failed"; }
    work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
    # _apt cannot write into a root-owned mktemp dir: apt falls back to root with a warning
    # the installed version; else the suite's current one (ISA-L's CRC API is stable)
    if ! (cd "$work" && apt-get "${o[@]}" source --download-only "libisal=$ver") >"$src/source.log" 2>&1; then
        log "libisal=$ver is not in the deb-src index; taking its current source version"
        (cd "$work" && apt-get "${o[@]}" source --download-only libisal) >>"$src/source.log" 2>&1 ||
            { cat "$src/source.log" >&2; die "apt-get source libisal failed"; }
    fi
    dsc=$(ls "$work"/*.dsc 2>/dev/null | head -n1)
    [ -n "$dsc" ] || die "no .dsc downloaded for libisal=$ver"
    (cd "$work" && dpkg-source -q -x "$dsc" isal) >"$src/unpack.log" 2>&1 ||
        { cat "$src/unpack.log" >&2; die "dpkg-source -x $dsc failed"; }
    log "building isa-l.a (make -f Makefile.unx lib)"
    make -C "$work/isal" -f Makefile.unx -j"$(nproc)" lib >"$CACHE/isal/$ver/build.log" 2>&1 ||
        { tail -n 20 "$CACHE/isal/$ver/build.log" >&2; die "building ISA-L failed (log $CACHE/isal/$ver/build.log)"; }
    cp "$work/isal/bin/isa-l.a" "$ISAL.tmp" && mv "$ISAL.tmp" "$ISAL"
    log "ISA-L $ver: $ISAL"
fi

# ---- schedhot, static
mkdir -p "$OUT"
cmake -S "$ROOT" -B "$OUT" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCHEDHOT_TESTS=OFF -DSCHEDHOT_STATIC=ON \
      -DSCHEDHOT_ISAL_STATIC="$ISAL" >"$OUT/static-cmake.log" 2>&1 ||
    { cat "$OUT/static-cmake.log" >&2; die "cmake configure of the static build failed"; }
cmake --build "$OUT" -j"$(nproc)" --target schedhot >"$OUT/static-build.log" 2>&1 ||
    { grep -E 'error|undefined' "$OUT/static-build.log" | head -n 20 >&2; die "static build failed (log $OUT/static-build.log)"; }
# a dynamic executable has a PT_INTERP program header; a static one has none
if readelf -l "$OUT/schedhot" | grep -q 'INTERP'; then die "$OUT/schedhot is not statically linked"; fi
log "static schedhot: $OUT/schedhot"
echo "$OUT/schedhot"
