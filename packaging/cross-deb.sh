#!/usr/bin/env bash
# cross-deb.sh ARCH [OUT]: the .deb for arm64 or ppc64el, cross-built on this amd64 machine
# with Debian's tooling and install-tested under qemu-user, all in a Debian 12 root of its
# own (the machine's dpkg architectures and packages are untouched).
#
#  1. The root: mmdebstrap --variant=buildd of amd64 plus ARCH as a foreign architecture,
#     with crossbuild-essential-ARCH, debhelper, lintian, rsync and
#     `apt-get build-dep -a ARCH` of packaging/debian/control (ARCH's libraries, the build
#     tools native, qemu-user-static by the <cross> profile). Cached as a tarball in
#     $SCHEDHOT_PKG_CACHE (/var/cache/schedhot-pkg) named by a hash of ARCH and the control file.
#  2. In a chroot of it (own mount and PID namespace): packaging/build-deb.sh with
#     SCHEDHOT_DEB_ARCH=ARCH (dpkg-buildpackage -a ARCH; the man page and completions come
#     from the built schedhot run under qemu-user; lintian).
#  3. There too: dpkg -i of the .deb (ARCH's runtime libraries came with the -dev packages;
#     python3:any is the root's own), then schedhot --version, `report` and `info` of the
#     shipped recording run under qemu-ARCH-static; their output is printed for the caller to
#     compare (tests/pkg/test_deb_cross.py compares it with this machine's schedhot).
# Output: OUT/schedhot_VERSION_ARCH.deb (OUT default build-deb-ARCH/), OUT/check.txt (step 3's
# output, sections "== NAME" then the command's stdout), OUT/build.log, OUT/lintian.txt;
# OUT/stage/ keeps build-deb.sh's stage and dh's build directory between runs.
# Needs root (chroot), mmdebstrap, Debian's archive (the root's packages). Exit 1 on failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
arch="${1:-}"
case "$arch" in
  arm64) qemu=aarch64 ;;
  ppc64el) qemu=ppc64le ;;
  *) echo "usage: packaging/cross-deb.sh arm64|ppc64el [OUT]" >&2; exit 2 ;;
esac
[ "$(dpkg --print-architecture)" = amd64 ] || { echo "cross-deb: builds on amd64" >&2; exit 2; }
out="${2:-$root/build-deb-$arch}"
cache="${SCHEDHOT_PKG_CACHE:-/var/cache/schedhot-pkg}"
for tool in mmdebstrap unshare chroot tar realpath; do
  command -v "$tool" > /dev/null || { echo "cross-deb: $tool is missing (packaging/deps.txt)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "cross-deb: needs root (chroot)" >&2; exit 1; }
# root writes into OUT (the .deb, check.txt, logs, OUT/stage) and reads the cached root from
# the cache directory, which it then runs chrooted. So, before anything is created: each
# directory from there up to / that exists must be no link, root's or the caller's (sudo's
# user), and writable by no one else unless it is sticky (as /tmp: then no other user can
# rename what is ours in it); OUT and the cache themselves writable by no one else at all.
# Missing directories are then made by root. No other user can plant or swap a name on the
# way for root to write or read through.
# shellcheck source=packaging/safe-dir.sh
. "$root/packaging/safe-dir.sh"
safe_dir cross-deb OUT "$out"
safe_dir cross-deb "the cache (SCHEDHOT_PKG_CACHE)" "$cache"
out="$(realpath -s -m -- "$out")"
mkdir -p -- "$out" "$out/stage" "$cache"
safe_dir cross-deb OUT "$out/stage"   # again, made: another user's directory made in between is refused
safe_dir cross-deb "the cache (SCHEDHOT_PKG_CACHE)" "$cache"
version="$(sed -n 's/^project(schedhot VERSION \([0-9][0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"

# 1. the root, cached by ARCH and the build dependencies
key="$( (echo "$arch -P cross"; cat "$root/packaging/debian/control") | sha256sum | cut -c1-12)"
tar="$cache/bookworm-cross-$arch-$key.tar"
if [ ! -s "$tar" ]; then
  rm -f "$cache/bookworm-cross-$arch-"*.tar   # another control file's
  ctl="$(mktemp -d)"; trap 'rm -rf "$ctl"' EXIT   # (replaced below, after its last use)
  mkdir "$ctl/debian"; cp "$root/packaging/debian/control" "$ctl/debian/control"
  printf 'schedhot (%s) unstable; urgency=medium\n\n  * build-dep only.\n\n -- x <x@x>  Thu, 01 Jan 2026 00:00:00 +0000\n' \
    "$version" > "$ctl/debian/changelog"
  sources=()
  for s in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [ -s "$s" ] && { sources=("$s"); break; }
  done
  t=$(date +%s)
  echo "cross-deb: building the $arch cross root (mmdebstrap; once per control file)"
  mmdebstrap --quiet --mode=root --format=tar --variant=buildd --architectures="amd64,$arch" \
    --include="crossbuild-essential-$arch,debhelper,lintian,rsync" \
    --customize-hook="mkdir -p \"\$1/tmp/ctl\" && cp -r $ctl/debian \"\$1/tmp/ctl/\"" \
    --chrooted-customize-hook="apt-get -y -q -o APT::Get::Build-Dep-Automatic=true build-dep -a $arch -P cross /tmp/ctl && rm -rf /tmp/ctl" \
    bookworm "$tar.part" "${sources[@]}" < /dev/null
  mv "$tar.part" "$tar"
  rm -rf "$ctl"
  echo "cross-deb: $tar in $(( $(date +%s) - t )) s ($(( $(stat -c %s "$tar") >> 20 )) MB)"
fi

# 2. and 3. in a fresh copy of it
work="$(mktemp -d "${TMPDIR:-/tmp}/cross-deb.XXXXXX")"
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xf "$tar"
mkdir -p "$work/src"
(cd "$root" && git ls-files -co --exclude-standard 2> /dev/null || find . -path ./build -prune -o -path './build-*' -prune -o -type f -print) \
  | (cd "$root" && while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done) \
  | rsync -a --files-from=- "$root/" "$work/src/"
t=$(date +%s)
echo "cross-deb: dpkg-buildpackage -a $arch in the root (minutes on a small machine)"
status=0
# The stage and dh's build directory (OUT/stage: /out in the root) outlive the root: a second
# run rebuilds only what changed, as build-deb.sh does.
mkdir -p "$work/out"
unshare --mount --pid --fork --mount-proc="$work/proc" /bin/sh -c 'mount --bind "$1" "$2/out" && shift 2 && exec chroot "$@"' \
  cross-deb "$out/stage" "$work" "$work" /usr/bin/env -i \
  PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 JOBS="${JOBS:-$(nproc)}" SCHEDHOT_DEB_ARCH="$arch" \
  /bin/bash -c '
set -euo pipefail
/src/packaging/build-deb.sh /out > /out.log 2>&1 || { cat /out.log; exit 1; }
cat /out.log
deb=/out/schedhot_'"$version"'_'"$arch"'.deb
dpkg -i "$deb" > /dpkg.log 2>&1 || { cat /dpkg.log; exit 1; }
q=/usr/bin/qemu-'"$qemu"'-static
shot=/usr/share/doc/schedhot/examples/vm-7.3.shot
{
  echo "== architecture"; dpkg-deb -f "$deb" Architecture
  echo "== depends"; dpkg-deb -f "$deb" Depends
  echo "== installed"; dpkg-query -W -f "\${Package}:\${Architecture} \${Version} \${Status}\n" schedhot
  echo "== machine"; od -An -tx2 -j18 -N2 /usr/bin/schedhot | tr -d " "
  echo "== version"; $q /usr/bin/schedhot --version
  echo "== report"; $q /usr/bin/schedhot report "$shot"
  echo "== info"; $q /usr/bin/schedhot info "$shot"
  echo "== man"; zcat /usr/share/man/man1/schedhot.1.gz | head -n 5
} > /out/check.txt 2>&1
' > "$out/run.log" 2>&1 || status=$?
cp -f "$out/stage/"*.deb "$out/stage/check.txt" "$out/stage/build.log" "$out/stage/lintian.txt" "$out/" 2> /dev/null || true
if [ "$status" != 0 ]; then
  tail -n 40 "$out/run.log" >&2
  echo "cross-deb: failed (exit $status; log: $out/run.log)" >&2
  exit 1
fi
echo "cross-deb: $out/schedhot_${version}_${arch}.deb and $out/check.txt ($(( $(date +%s) - t )) s)"
