#!/usr/bin/env bash
# fetch-libbpf-tools.sh [--refresh]: Debian's libbpf-tools (bookworm: 0.26.0+ds-1, source bpfcc),
# for the guest benchmark (tests/bench/guest_cost.py), which runs its funclatency in the guest.
#
# Downloads the package with `apt-get download` (the version apt's candidate names; no
# install, the system is not changed) into $CACHE/libbpf-tools/<version>/ and unpacks it
# there with `dpkg-deb -x` into root/. Prints that directory on stdout; root/usr/sbin/funclatency
# is the binary. It is linked dynamically against libelf1, zlib1g and libc6 (the package's
# Depends); the guest image takes those libraries and the dynamic loader from the host
# (`ldd`), which has the same bookworm packages installed (tests/vm/DEPS lists them).
# Skips the download when that version's directory is complete, unless --refresh.
# Cache: ${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}.
set -euo pipefail
CACHE=${SCHEDHOT_VM_CACHE:-/var/cache/schedhot-vm}
PKG=libbpf-tools
die() { echo "fetch-libbpf-tools: error: $*" >&2; exit 1; }
log() { echo "fetch-libbpf-tools: $*" >&2; }
REFRESH=0
for a in "$@"; do
    case "$a" in
        --refresh) REFRESH=1 ;;
        -h|--help) awk 'NR>1 && /^#/{sub(/^# ?/,"");print;next} NR>1{exit}' "$0"; exit 0 ;;
        *) die "unknown argument '$a' (see --help)" ;;
    esac
done
for t in apt-get apt-cache dpkg-deb; do
    command -v "$t" >/dev/null || die "$t not found (this needs a Debian host)"
done

candidate() { apt-cache policy "$PKG" 2>/dev/null | awk '$1 == "Candidate:" { print $2; exit }'; }
ver=$(candidate)
if { [ -z "$ver" ] || [ "$ver" = "(none)" ]; } && [ "$(id -u)" = 0 ]; then
    log "apt knows no $PKG; running apt-get update once"
    apt-get update -qq >/dev/null 2>&1 || die "apt-get update failed"
    ver=$(candidate)
fi
[ -n "$ver" ] && [ "$ver" != "(none)" ] || die "apt knows no $PKG package (bookworm main has 0.26.0+ds-1)"

D=$CACHE/libbpf-tools/$ver
BIN=$D/root/usr/sbin/funclatency
if [ "$REFRESH" = 0 ] && [ -x "$BIN" ] && [ -s "$D/package" ]; then
    echo "$D"
    exit 0
fi
mkdir -p "$D" 2>/dev/null && [ -w "$D" ] || die "cannot write to $D (SCHEDHOT_VM_CACHE picks another cache)"
rm -rf "$D/root" "$D"/*.deb "$D/package"
log "apt-get download $PKG=$ver into $D"
# the download runs as the calling user (root: no _apt sandbox for a root-owned cache dir)
(cd "$D" && apt-get -q -o APT::Sandbox::User="$(id -un)" download "$PKG=$ver") >"$D/download.log" 2>&1 ||
    { tail -n 3 "$D/download.log" >&2; die "apt-get download $PKG=$ver failed (log $D/download.log)"; }
deb=$(ls "$D"/"$PKG"_*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] || die "no $PKG .deb in $D after the download"
dpkg-deb -x "$deb" "$D/root" || die "dpkg-deb -x $deb failed"
[ -x "$BIN" ] || die "$deb has no usr/sbin/funclatency"
{
    echo "$PKG=$ver"
    echo "source=$(dpkg-deb -f "$deb" Source)"
    echo "depends=$(dpkg-deb -f "$deb" Depends)"
    echo "deb=$(basename "$deb") sha256=$(sha256sum "$deb" | cut -d' ' -f1)"
} > "$D/package"
log "$PKG $ver: $BIN"
echo "$D"
