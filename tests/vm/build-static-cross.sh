#!/usr/bin/env bash
# build-static-arm64.sh BUILD_DIR: cross-builds a statically linked arm64 (aarch64) schedhot
# on this x86-64 Debian 12 machine, at BUILD_DIR/schedhot, plus the guest tools
# BUILD_DIR/workload and BUILD_DIR/tracecount (tests/vm/workload.c, tracecount.c) and Debian's
# arm64 busybox-static at BUILD_DIR/busybox (with busybox.list, its applets), and prints the
# schedhot path on stdout. BUILD_DIR is a build directory of its own (e2e.py
# uses <build>/vm-static-arm64); a native or non-static CMake build directory is refused.
#
# Parts, all Debian 12's own:
#   * the cross toolchain: gcc-aarch64-linux-gnu / g++-aarch64-linux-gnu (host packages,
#     tests/vm/DEPS), with the toolchain file tests/vm/arm64-toolchain.cmake;
#   * the arm64 libraries and headers (libc6-dev, libbpf-dev, libelf-dev, zlib1g-dev,
#     libzstd-dev, libncurses-dev, libisal-dev, libfmt-dev, nlohmann-json3-dev, libcli11-dev
#     and what they depend on), downloaded through a PRIVATE apt configuration under
#     $CACHE/arm64/apt (APT::Architecture=arm64, its own sources.list for bookworm main on
#     the system's Debian mirror, its own lists, cache and an empty dpkg status) and unpacked
#     with dpkg-deb -x into the sysroot $CACHE/arm64/sysroot. The system's dpkg architecture
#     list, /etc/apt and /var/lib/dpkg are untouched. Their .a files are linked;
#   * ISA-L, which Debian ships without a static archive: isa-l.a built with the cross
#     compiler from Debian's libisal source package of the sysroot's libisal-dev version
#     (private deb-src configuration as in build-static.sh), its Makefile.unx with
#     arch=aarch64 (ISA-L's aarch64 assembly), kept in $CACHE/arm64/isal/<version>/;
#   * the BPF objects: clang -target bpf with -D__TARGET_ARCH_arm64 (CMake derives it from
#     CMAKE_SYSTEM_PROCESSOR), so kprobe arguments are read from arm64's user_pt_regs
#     (bpf/vmlinux.h declares the layout per architecture; everything else is CO-RE).
#
# The sysroot is rebuilt when the package list below changes or --refresh is given;
# otherwise no network is needed. Concurrent runs wait for each other (flock).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}
A64=$CACHE/arm64
TRIPLE=aarch64-linux-gnu
log() { echo "build-static-arm64: $*" >&2; }
die() { echo "build-static-arm64: error: $*" >&2; exit 1; }
REFRESH=0
case "${1:-}" in
    -h|--help) awk 'NR>1 && /^#/{sub(/^# ?/,"");print;next} NR>1{exit}' "$0"; exit 0 ;;
    --refresh) REFRESH=1; shift ;;
    "") die "usage: build-static-arm64.sh [--refresh] BUILD_DIR" ;;
esac
[ $# -eq 1 ] || die "usage: build-static-arm64.sh [--refresh] BUILD_DIR"
OUT=$1
[ ! -e "$OUT" ] || [ -d "$OUT" ] || die "$OUT exists and is not a directory"
if [ -f "$OUT/CMakeCache.txt" ] && ! grep -q '^SCHEDHOT_ARM64_SYSROOT:' "$OUT/CMakeCache.txt"; then
    die "$OUT is not an arm64 cross build directory: give build-static-arm64.sh a directory of its own (e.g. build/vm-static-arm64)"
fi
for t in apt-get dpkg-deb dpkg-source make cmake readelf flock $TRIPLE-gcc $TRIPLE-g++ $TRIPLE-nm $TRIPLE-strip; do
    command -v "$t" >/dev/null || die "$t not found (packages: see tests/vm/DEPS; g++-aarch64-linux-gnu for the cross toolchain)"
done
mkdir -p "$A64" 2>/dev/null && [ -w "$A64" ] || die "cannot write to $A64 (SCHEDHOT_VM_CACHE picks another cache)"
mkdir -p "$OUT" 2>/dev/null && [ -w "$OUT" ] || die "cannot create or write $OUT"

KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$KEYRING" ] || die "$KEYRING missing (apt-get install debian-archive-keyring)"
SUITE=$( . /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
# The system's mirror of Debian's main archive (as build-static.sh finds it); deb.debian.org
# when there is none; SCHEDHOT_DEBIAN_MIRROR overrides it.
mirror() {
    if [ -n "${SCHEDHOT_DEBIAN_MIRROR:-}" ]; then echo "$SCHEDHOT_DEBIAN_MIRROR"; return; fi
    local m
    m=$(apt-cache policy 2>/dev/null | awk -v s="$SUITE/main" '
        $3 == s && $2 ~ /^https?:/ { uri = $2; next }
        uri != "" && /release / && /o=Debian,/ && /l=Debian,/ { print uri; exit }
        { uri = "" }' || true)
    echo "${m:-http://deb.debian.org/debian}"
}

# What the static arm64 build links or includes (the static build needs no libmicrohttpd,
# GnuTLS, yaml-cpp or libcrypt: SCHEDHOT_STATIC serves --textfile only).
# busybox-static: the arm64 guest's userland (mkimage.sh takes BUILD_DIR/busybox).
PKGS=(libc6-dev libbpf-dev libelf-dev zlib1g-dev libzstd-dev libncurses-dev libisal-dev
      libfmt-dev nlohmann-json3-dev libcli11-dev busybox-static)

APT=$A64/apt
SYSROOT=$A64/sysroot
apt_opts() {
    printf '%s\n' -o APT::Architecture=arm64 -o APT::Architectures=arm64 \
        -o "Dir::Etc::SourceList=$APT/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
        -o "Dir::State=$APT/state" -o "Dir::State::Lists=$APT/lists" -o "Dir::State::status=$APT/status" \
        -o "Dir::Cache=$APT/cache" -o APT::Install-Recommends=false -o APT::Install-Suggests=false \
        -o APT::Get::Assume-Yes=true -o Debug::NoLocking=true
}

exec 8> "$A64/lock"
flock 8
# ---- the arm64 sysroot, from Debian's arm64 packages (private apt configuration)
want="$SUITE ${PKGS[*]}"
if [ "$REFRESH" = 1 ] || [ ! -s "$SYSROOT/.schedhot-packages" ] || [ "$(head -n1 "$SYSROOT/.schedhot-packages")" != "$want" ]; then
    mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/state"
    : > "$APT/status"
    m=$(mirror)
    # bookworm and bookworm-updates: the same package versions the host gets (libbpf 1.1.2's
    # point release is in bookworm itself)
    printf 'deb [signed-by=%s] %s %s main\ndeb [signed-by=%s] %s %s-updates main\n' \
        "$KEYRING" "$m" "$SUITE" "$KEYRING" "$m" "$SUITE" > "$APT/sources.list"
    mapfile -t o < <(apt_opts)
    log "apt-get update (private arm64 configuration in $APT; mirror $m)"
    if ! apt-get "${o[@]}" --error-on=any update >"$APT/update.log" 2>&1; then
        grep -E '^(E|W|Err):' "$APT/update.log" | head -n 3 >&2 || true
        die "downloading the arm64 package index of $SUITE failed (log $APT/update.log)"
    fi
    rm -f "$APT/cache/archives/"*.deb
    log "downloading ${PKGS[*]} and their dependencies for arm64"
    if ! apt-get "${o[@]}" install --download-only "${PKGS[@]}" >"$APT/download.log" 2>&1; then
        grep -E '^(E|W):' "$APT/download.log" | head -n 5 >&2 || true
        die "apt-get install --download-only for arm64 failed (log $APT/download.log)"
    fi
    debs=("$APT/cache/archives/"*.deb)
    [ -e "${debs[0]}" ] || die "no arm64 .deb downloaded (log $APT/download.log)"
    new=$SYSROOT.new
    rm -rf "$new"; mkdir -p "$new"
    for d in "${debs[@]}"; do
        a=$(dpkg-deb -f "$d" Architecture)
        case "$a" in arm64|all) ;; *) die "$d is for $a, not arm64" ;; esac
        dpkg-deb -x "$d" "$new" || die "dpkg-deb -x $d failed"
    done
    { echo "$want"; for d in "${debs[@]}"; do dpkg-deb --showformat='${Package} ${Version} ${Architecture}\n' -W "$d"; done | sort; } > "$new/.schedhot-packages"
    rm -rf "$SYSROOT"; mv "$new" "$SYSROOT"
    log "sysroot $SYSROOT: ${#debs[@]} arm64 packages"
fi
for f in usr/lib/$TRIPLE/libbpf.a usr/lib/$TRIPLE/libelf.a usr/lib/$TRIPLE/libz.a usr/lib/$TRIPLE/libzstd.a \
         usr/lib/$TRIPLE/libncursesw.a usr/lib/$TRIPLE/libtinfo.a usr/lib/$TRIPLE/libc.a usr/include/bpf/libbpf.h; do
    [ -e "$SYSROOT/$f" ] || die "the arm64 sysroot has no $f (packages: $SYSROOT/.schedhot-packages; --refresh rebuilds it)"
done

# ---- ISA-L, cross-built from Debian's source of the sysroot's libisal-dev version
ver=$(awk '$1 == "libisal-dev" { print $2 }' "$SYSROOT/.schedhot-packages")
[ -n "$ver" ] || die "no libisal-dev in the arm64 sysroot"
ISAL=$A64/isal/$ver/isa-l.a
isal_ok() { [ -s "$1" ] && $TRIPLE-nm "$1" 2>/dev/null | grep ' T crc32_iscsi$' >/dev/null; }
if [ -e "$ISAL" ] && ! isal_ok "$ISAL"; then log "$ISAL is damaged: building it again"; rm -f "$ISAL"; fi
if [ ! -e "$ISAL" ]; then
    src=$A64/apt-src
    mkdir -p "$src/lists/partial" "$src/cache/archives/partial" "$A64/isal/$ver"
    echo "deb-src [signed-by=$KEYRING] $(mirror) $SUITE main" > "$src/sources.list"
    so=(-o "Dir::Etc::SourceList=$src/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$src/lists" -o "Dir::Cache=$src/cache" -o Dir::State::status=/dev/null
        -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null)
    log "apt-get source libisal=$ver (private deb-src configuration in $src)"
    apt-get "${so[@]}" --error-on=any update >"$src/update.log" 2>&1 ||
        die "downloading the deb-src index failed (log $src/update.log)"
    work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
    (cd "$work" && apt-get "${so[@]}" source --download-only "libisal=$ver") >"$src/source.log" 2>&1 ||
        die "apt-get source libisal=$ver failed (log $src/source.log)"
    dsc=$(ls "$work"/*.dsc 2>/dev/null | head -n1)
    [ -n "$dsc" ] || die "no .dsc downloaded for libisal (log $src/source.log)"
    (cd "$work" && dpkg-source -q -x "$dsc" isal) >"$src/unpack.log" 2>&1 || die "dpkg-source -x $dsc failed"
    # (make.inc assembles the .S files with AS=$(CC) -D__ASSEMBLY__ for arch=aarch64: CC only)
    log "cross-building isa-l.a (make -f Makefile.unx arch=aarch64)"
    nice -n 10 make -C "$work/isal" -f Makefile.unx -j2 arch=aarch64 host_cpu=aarch64 \
        CC=$TRIPLE-gcc AR=$TRIPLE-ar lib >"$A64/isal/$ver/build.log" 2>&1 ||
        { tail -n 5 "$A64/isal/$ver/build.log" >&2; die "cross-building ISA-L failed (log $A64/isal/$ver/build.log)"; }
    basename "$dsc" .dsc > "$A64/isal/$ver/source"
    cp "$work/isal/bin/isa-l.a" "$ISAL.tmp"
    isal_ok "$ISAL.tmp" || { rm -f "$ISAL.tmp"; die "the arm64 ISA-L just built has no crc32_iscsi"; }
    readelf -h "$ISAL.tmp" | grep 'Machine:.*AArch64' >/dev/null || { rm -f "$ISAL.tmp"; die "the ISA-L just built is not AArch64"; }
    mv "$ISAL.tmp" "$ISAL"
    log "ISA-L $(cat "$A64/isal/$ver/source") for arm64: $ISAL"
fi
exec 8>&-

# ---- schedhot, static, arm64 (one build at a time in OUT)
# Without -g, as build-static.sh (mkimage.sh strips the guest's copy; SCHEDHOT_VM_GUEST_DEBUG=1
# keeps it).
opt="-O2 -DNDEBUG"
[ -z "${SCHEDHOT_VM_GUEST_DEBUG:-}" ] || opt="-O2 -g -DNDEBUG"
exec 9> "$OUT/.build-static.lock"
flock 9
if ! cmake -S "$ROOT" -B "$OUT" -DCMAKE_TOOLCHAIN_FILE="$HERE/arm64-toolchain.cmake" \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt" \
        -DSCHEDHOT_ARM64_SYSROOT="$SYSROOT" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCHEDHOT_TESTS=OFF \
        -DSCHEDHOT_DOCS=OFF -DSCHEDHOT_STATIC=ON -DSCHEDHOT_ISAL_STATIC="$ISAL" >"$OUT/static-cmake.log" 2>&1; then
    grep -E -A3 'Error|error' "$OUT/static-cmake.log" | head -n 12 >&2 || true
    die "cmake configure of the arm64 static build failed (log $OUT/static-cmake.log)"
fi
if ! nice -n 10 cmake --build "$OUT" -j"${SCHEDHOT_BUILD_JOBS:-2}" --target schedhot >"$OUT/static-build.log" 2>&1; then
    grep -E 'error|undefined' "$OUT/static-build.log" | head -n 10 >&2 || true
    die "arm64 static build failed (log $OUT/static-build.log; ISA-L from $ISAL)"
fi
# ---- the guest tools, static, arm64
$TRIPLE-gcc -O2 -g0 -Wall -Wextra -Wno-unused-parameter -static -pthread -o "$OUT/workload" "$HERE/workload.c" ||
    die "cross-compiling workload.c failed"
$TRIPLE-gcc -O2 -Wall -Wextra -static -o "$OUT/tracecount" "$HERE/tracecount.c" || die "cross-compiling tracecount.c failed"
# ---- busybox for the guest: Debian's arm64 busybox-static, and its applet list (mkinitramfs.sh
# links one name per applet; an arm64 busybox cannot run here to list them, so the list comes
# from the host's busybox-static when both are built from the same source version, whose
# Debian configuration is the same on every architecture)
cp "$SYSROOT/bin/busybox" "$OUT/busybox"
bb_arm64=$(awk '$1 == "busybox-static" { print $2 }' "$SYSROOT/.schedhot-packages")
bb_host=$(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null) || die "busybox-static is not installed on the host (tests/vm/DEPS)"
[ "${bb_arm64%+b[0-9]*}" = "${bb_host%+b[0-9]*}" ] ||
    die "arm64 busybox-static $bb_arm64 and the host's $bb_host differ in source version: no applet list for the arm64 one"
/bin/busybox --list-full > "$OUT/busybox.list"
for b in schedhot workload tracecount busybox; do
    readelf -h "$OUT/$b" | grep 'Machine:.*AArch64' >/dev/null || die "$OUT/$b is not an AArch64 executable"
    # a dynamic executable has a PT_INTERP program header; a static one has none
    if readelf -l "$OUT/$b" | grep 'INTERP' >/dev/null; then die "$OUT/$b is not statically linked"; fi
done
# the BPF objects were compiled for arm64's pt_regs (a kprobe program reads user_pt_regs)
grep -q '^SCHEDHOT_BPF_ARCH:STRING=arm64$' "$OUT/CMakeCache.txt" || die "the BPF objects were not built for arm64"
log "static arm64 schedhot: $OUT/schedhot (and $OUT/workload, $OUT/tracecount, $OUT/busybox $bb_arm64)"
echo "$OUT/schedhot"
