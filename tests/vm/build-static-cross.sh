#!/usr/bin/env bash
# build-static-cross.sh ARCH [--refresh] BUILD_DIR: cross-builds a statically linked schedhot
# for ARCH, arm64 (aarch64) or ppc64el (ppc64le), on this x86-64 Debian 12 machine, at
# BUILD_DIR/schedhot, plus the guest tools BUILD_DIR/workload and BUILD_DIR/tracecount
# (tests/vm/workload.c, tracecount.c) and Debian's busybox-static of ARCH at BUILD_DIR/busybox
# (with busybox.list, its applets), and prints the schedhot path on stdout. BUILD_DIR is a
# build directory of its own (e2e.py uses <build>/vm-static-arm64; build-static-arm64.sh
# BUILD_DIR is this script for arm64); a native, non-static or other-ARCH CMake build
# directory is refused. Below, "arm64" stands for ARCH and aarch64 for its GNU triple's CPU
# (ppc64el: powerpc64le-linux-gnu, ISA-L's arch=ppc64le, BPF's __TARGET_ARCH_powerpc).
#
# Parts, all Debian 12's own:
#   * the cross toolchain: gcc-aarch64-linux-gnu / g++-aarch64-linux-gnu (host packages,
#     tests/vm/DEPS; ppc64el: g++-powerpc64le-linux-gnu), with the toolchain file
#     tests/vm/arm64-toolchain.cmake (ppc64le-toolchain.cmake; both cross-toolchain.cmake);
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
ARCH=${1:-}
# Per ARCH: GNU triple, ISA-L's arch=, readelf's Machine, toolchain file, its sysroot variable,
# the BPF objects' __TARGET_ARCH_
case "$ARCH" in
    arm64) TRIPLE=aarch64-linux-gnu ISAL_ARCH=aarch64 MACHINE=AArch64 TOOLCHAIN=arm64-toolchain.cmake
           SYSROOT_VAR=SCHEDHOT_ARM64_SYSROOT BPF_ARCH=arm64 ;;
    ppc64el) TRIPLE=powerpc64le-linux-gnu ISAL_ARCH=ppc64le MACHINE=PowerPC64 TOOLCHAIN=ppc64le-toolchain.cmake
           SYSROOT_VAR=SCHEDHOT_PPC64LE_SYSROOT BPF_ARCH=powerpc ;;
    -h|--help) awk 'NR>1 && /^#/{sub(/^# ?/,"");print;next} NR>1{exit}' "$0"; exit 0 ;;
    *) echo "build-static-cross: error: usage: build-static-cross.sh arm64|ppc64el [--refresh] BUILD_DIR" >&2; exit 1 ;;
esac
shift
XDIR=$CACHE/$ARCH
log() { echo "build-static-$ARCH: $*" >&2; }
die() { echo "build-static-$ARCH: error: $*" >&2; exit 1; }
REFRESH=0
case "${1:-}" in
    --refresh) REFRESH=1; shift ;;
    "") die "usage: build-static-cross.sh $ARCH [--refresh] BUILD_DIR" ;;
esac
[ $# -eq 1 ] || die "usage: build-static-cross.sh $ARCH [--refresh] BUILD_DIR"
OUT=$1
[ ! -e "$OUT" ] || [ -d "$OUT" ] || die "$OUT exists and is not a directory"
if [ -f "$OUT/CMakeCache.txt" ] && ! grep -q "^$SYSROOT_VAR:" "$OUT/CMakeCache.txt"; then
    die "$OUT is not an $ARCH cross build directory: give build-static-cross.sh $ARCH a directory of its own (e.g. build/vm-static-$ARCH)"
fi
for t in apt-get dpkg-deb dpkg-source make cmake readelf flock $TRIPLE-gcc $TRIPLE-g++ $TRIPLE-nm $TRIPLE-strip; do
    command -v "$t" >/dev/null || die "$t not found (packages: see tests/vm/DEPS; g++-$TRIPLE for the cross toolchain)"
done
mkdir -p "$XDIR" 2>/dev/null && [ -w "$XDIR" ] || die "cannot write to $XDIR (SCHEDHOT_VM_CACHE picks another cache)"
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

APT=$XDIR/apt
SYSROOT=$XDIR/sysroot
apt_opts() {
    printf '%s\n' -o "APT::Architecture=$ARCH" -o "APT::Architectures=$ARCH" \
        -o "Dir::Etc::SourceList=$APT/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
        -o "Dir::State=$APT/state" -o "Dir::State::Lists=$APT/lists" -o "Dir::State::status=$APT/status" \
        -o "Dir::Cache=$APT/cache" -o APT::Install-Recommends=false -o APT::Install-Suggests=false \
        -o APT::Get::Assume-Yes=true -o Debug::NoLocking=true
}

exec 8> "$XDIR/lock"
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
    log "apt-get update (private $ARCH configuration in $APT; mirror $m)"
    if ! apt-get "${o[@]}" --error-on=any update >"$APT/update.log" 2>&1; then
        grep -E '^(E|W|Err):' "$APT/update.log" | head -n 3 >&2 || true
        die "downloading the $ARCH package index of $SUITE failed (log $APT/update.log)"
    fi
    rm -f "$APT/cache/archives/"*.deb
    log "downloading ${PKGS[*]} and their dependencies for $ARCH"
    if ! apt-get "${o[@]}" install --download-only "${PKGS[@]}" >"$APT/download.log" 2>&1; then
        grep -E '^(E|W):' "$APT/download.log" | head -n 5 >&2 || true
        die "apt-get install --download-only for $ARCH failed (log $APT/download.log)"
    fi
    debs=("$APT/cache/archives/"*.deb)
    [ -e "${debs[0]}" ] || die "no $ARCH .deb downloaded (log $APT/download.log)"
    new=$SYSROOT.new
    rm -rf "$new"; mkdir -p "$new"
    for d in "${debs[@]}"; do
        a=$(dpkg-deb -f "$d" Architecture)
        [ "$a" = "$ARCH" ] || [ "$a" = all ] || die "$d is for $a, not $ARCH"
        dpkg-deb -x "$d" "$new" || die "dpkg-deb -x $d failed"
    done
    { echo "$want"; for d in "${debs[@]}"; do dpkg-deb --showformat='${Package} ${Version} ${Architecture}\n' -W "$d"; done | sort; } > "$new/.schedhot-packages"
    rm -rf "$SYSROOT"; mv "$new" "$SYSROOT"
    log "sysroot $SYSROOT: ${#debs[@]} $ARCH packages"
fi
for f in usr/lib/$TRIPLE/libbpf.a usr/lib/$TRIPLE/libelf.a usr/lib/$TRIPLE/libz.a usr/lib/$TRIPLE/libzstd.a \
         usr/lib/$TRIPLE/libncursesw.a usr/lib/$TRIPLE/libtinfo.a usr/lib/$TRIPLE/libc.a usr/include/bpf/libbpf.h; do
    [ -e "$SYSROOT/$f" ] || die "the $ARCH sysroot has no $f (packages: $SYSROOT/.schedhot-packages; --refresh rebuilds it)"
done

# ---- ISA-L, cross-built from Debian's source of the sysroot's libisal-dev version
ver=$(awk '$1 == "libisal-dev" { print $2 }' "$SYSROOT/.schedhot-packages")
[ -n "$ver" ] || die "no libisal-dev in the $ARCH sysroot"
ISAL=$XDIR/isal/$ver/isa-l.a
isal_ok() { [ -s "$1" ] && $TRIPLE-nm "$1" 2>/dev/null | grep ' T crc32_iscsi$' >/dev/null; }
if [ -e "$ISAL" ] && ! isal_ok "$ISAL"; then log "$ISAL is damaged: building it again"; rm -f "$ISAL"; fi
if [ ! -e "$ISAL" ]; then
    src=$XDIR/apt-src
    mkdir -p "$src/lists/partial" "$src/cache/archives/partial" "$XDIR/isal/$ver"
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
    # (make.inc assembles the .S files with AS=$(CC) -D__ASSEMBLY__ for arch=aarch64 and
    # arch=ppc64le: CC only)
    log "cross-building isa-l.a (make -f Makefile.unx arch=$ISAL_ARCH)"
    # (make.inc names ar's flags for aarch64, not for ppc64le: given for both)
    nice -n 10 make -C "$work/isal" -f Makefile.unx -j2 arch=$ISAL_ARCH host_cpu=$ISAL_ARCH "ARFLAGS_$ISAL_ARCH=cr \$@" \
        CC=$TRIPLE-gcc AR=$TRIPLE-ar lib >"$XDIR/isal/$ver/build.log" 2>&1 ||
        { tail -n 5 "$XDIR/isal/$ver/build.log" >&2; die "cross-building ISA-L failed (log $XDIR/isal/$ver/build.log)"; }
    basename "$dsc" .dsc > "$XDIR/isal/$ver/source"
    cp "$work/isal/bin/isa-l.a" "$ISAL.tmp"
    isal_ok "$ISAL.tmp" || { rm -f "$ISAL.tmp"; die "the $ARCH ISA-L just built has no crc32_iscsi"; }
    readelf -h "$ISAL.tmp" | grep "Machine:.*$MACHINE" >/dev/null || { rm -f "$ISAL.tmp"; die "the ISA-L just built is not $MACHINE"; }
    mv "$ISAL.tmp" "$ISAL"
    log "ISA-L $(cat "$XDIR/isal/$ver/source") for $ARCH: $ISAL"
fi
exec 8>&-

# ---- schedhot, static, for ARCH (one build at a time in OUT)
# Without -g, as build-static.sh (mkimage.sh strips the guest's copy; SCHEDHOT_VM_GUEST_DEBUG=1
# keeps it).
opt="-O2 -DNDEBUG"
[ -z "${SCHEDHOT_VM_GUEST_DEBUG:-}" ] || opt="-O2 -g -DNDEBUG"
exec 9> "$OUT/.build-static.lock"
flock 9
if ! cmake -S "$ROOT" -B "$OUT" -DCMAKE_TOOLCHAIN_FILE="$HERE/$TOOLCHAIN" \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt" \
        -D"$SYSROOT_VAR=$SYSROOT" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCHEDHOT_TESTS=OFF \
        -DSCHEDHOT_DOCS=OFF -DSCHEDHOT_STATIC=ON -DSCHEDHOT_ISAL_STATIC="$ISAL" >"$OUT/static-cmake.log" 2>&1; then
    grep -E -A3 'Error|error' "$OUT/static-cmake.log" | head -n 12 >&2 || true
    die "cmake configure of the $ARCH static build failed (log $OUT/static-cmake.log)"
fi
if ! nice -n 10 cmake --build "$OUT" -j"${SCHEDHOT_BUILD_JOBS:-2}" --target schedhot >"$OUT/static-build.log" 2>&1; then
    grep -E 'error|undefined' "$OUT/static-build.log" | head -n 10 >&2 || true
    die "$ARCH static build failed (log $OUT/static-build.log; ISA-L from $ISAL)"
fi
# ---- the guest tools, static, for ARCH
$TRIPLE-gcc -O2 -g0 -Wall -Wextra -Wno-unused-parameter -static -pthread -o "$OUT/workload" "$HERE/workload.c" ||
    die "cross-compiling workload.c failed"
$TRIPLE-gcc -O2 -Wall -Wextra -static -o "$OUT/tracecount" "$HERE/tracecount.c" || die "cross-compiling tracecount.c failed"
# ---- busybox for the guest: Debian's busybox-static of ARCH, and its applet list (mkinitramfs.sh
# links one name per applet; an arm64 busybox cannot run here to list them, so the list comes
# from the host's busybox-static when both are built from the same source version, whose
# Debian configuration is the same on every architecture)
cp "$SYSROOT/bin/busybox" "$OUT/busybox"
bb_guest=$(awk '$1 == "busybox-static" { print $2 }' "$SYSROOT/.schedhot-packages")
bb_host=$(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null) || die "busybox-static is not installed on the host (tests/vm/DEPS)"
[ "${bb_guest%+b[0-9]*}" = "${bb_host%+b[0-9]*}" ] ||
    die "$ARCH busybox-static $bb_guest and the host's $bb_host differ in source version: no applet list for the $ARCH one"
/bin/busybox --list-full > "$OUT/busybox.list"
for b in schedhot workload tracecount busybox; do
    readelf -h "$OUT/$b" | grep "Machine:.*$MACHINE" >/dev/null || die "$OUT/$b is not an $MACHINE executable"
    # a dynamic executable has a PT_INTERP program header; a static one has none
    if readelf -l "$OUT/$b" | grep 'INTERP' >/dev/null; then die "$OUT/$b is not statically linked"; fi
done
# the BPF objects were compiled for ARCH's pt_regs (a kprobe program reads its registers)
grep -q "^SCHEDHOT_BPF_ARCH:STRING=$BPF_ARCH\$" "$OUT/CMakeCache.txt" || die "the BPF objects were not built for $ARCH ($BPF_ARCH)"
log "static $ARCH schedhot: $OUT/schedhot (and $OUT/workload, $OUT/tracecount, $OUT/busybox $bb_guest)"
echo "$OUT/schedhot"
