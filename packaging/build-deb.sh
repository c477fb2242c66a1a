#!/usr/bin/env bash
# Builds the Debian package with Debian's tooling: the source tree (git's tracked and
# untracked, not ignored, files) is staged in OUT/schedhot-VERSION/ with packaging/debian/
# as its debian/, debian/changelog is written with CMakeLists.txt's project() version (the
# one version: schedhot --version prints the same), then dpkg-buildpackage -b builds
# OUT/schedhot_VERSION_ARCH.deb (this machine's architecture) and lintian checks it (errors fail the build; warnings
# are printed).
# The staged tree and dh's CMake build directory (obj-*) are kept between runs, files
# copied with their times, so a second run only rebuilds what changed.
# Usage: packaging/build-deb.sh [OUT]   (OUT default: build-deb/; SCHEDHOT_DEB_OUT too)
# SCHEDHOT_DEB_ARCH=arm64|ppc64el: a cross build (dpkg-buildpackage -a; the build
# dependencies of that architecture installed, as packaging/cross-deb.sh does in a root of
# its own), OUT/schedhot_VERSION_ARCH.deb.
# Needs: packaging/deps.txt (its build part, and debhelper, lintian).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-${SCHEDHOT_DEB_OUT:-$root/build-deb}}"
version="$(sed -n 's/^project(schedhot VERSION \([0-9][0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
if [ -z "$version" ]; then
  echo "build-deb: no 'project(schedhot VERSION x.y.z' line in $root/CMakeLists.txt" >&2
  exit 1
fi
for tool in dpkg-buildpackage dh lintian rsync; do
  command -v "$tool" > /dev/null || {
    echo "build-deb: $tool is missing (packaging/install-deps.sh installs it)" >&2
    exit 1
  }
done
native="$(dpkg --print-architecture)"
arch="${SCHEDHOT_DEB_ARCH:-$native}"
case "$arch" in
  amd64|arm64|ppc64el) ;;
  *) echo "build-deb: SCHEDHOT_DEB_ARCH=$arch: schedhot is built for amd64, arm64 and ppc64el" >&2; exit 2 ;;
esac
cross=(); [ "$arch" = "$native" ] || cross=(-a "$arch")
# Run by root, the build writes into OUT (files.txt, build.log, the .deb) and builds in
# OUT's kept stage (a planted Makefile there would run as root): OUT's chain is checked
# before and after it is made (packaging/safe-dir.sh). Another user builds where they like.
if [ "$(id -u)" = 0 ]; then
  # shellcheck source=packaging/safe-dir.sh
  . "$root/packaging/safe-dir.sh"
  safe_dir build-deb OUT "$out"
fi
mkdir -p -- "$out"
out="$(cd -- "$out" && pwd -P)"   # the build runs in the stage: OUT may be relative to here
stage="$out/schedhot-$version"
mkdir -p -- "$stage"
[ "$(id -u)" != 0 ] || safe_dir build-deb OUT "$stage"

# The source: what git would commit (tracked and untracked, not ignored), else the tree.
list="$out/files.txt"
if git -C "$root" rev-parse --git-dir > /dev/null 2>&1; then
  git -C "$root" ls-files -co --exclude-standard | grep -v '^debian/' | sort > "$list"
else
  (cd "$root" && find . -path ./build -prune -o -path './build-*' -prune -o -type f -print | sed 's#^\./##' | sort) > "$list"
fi
# Only files that exist (ls-files lists a deleted, uncommitted file too).
(cd "$root" && while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done < "$list") > "$list.present"
rsync -a --files-from="$list.present" "$root/" "$stage/"
# A file removed from the source goes from the stage too (not debian/ nor dh's obj-*).
(cd "$stage" && find . -path ./debian -prune -o -path './obj-*' -prune -o -type f -print | sed 's#^\./##' | sort) \
  | comm -23 - "$list.present" | (cd "$stage" && xargs -r -d '\n' rm -f)
# debian/: packaging/debian as it is, which also drops dh's stamps and staging dirs of an
# earlier run, so every dh step runs again (on the kept obj-* build).
rsync -a --delete "$root/packaging/debian/" "$stage/debian/"

# debian/changelog: CMakeLists.txt's version, dated by the commit it is built from.
maint="$(sed -n 's/^Maintainer: //p' "$stage/debian/control")"
if commit="$(git -C "$root" rev-parse --short=12 HEAD 2> /dev/null)"; then
  when="$(git -C "$root" log -1 --format=%cD HEAD)"
  what="commit $commit"
  [ -z "$(git -C "$root" status --porcelain --untracked-files=no)" ] || what="$what and uncommitted changes"
else
  when="$(date -R)"
  what="a source tree outside git"
fi
cat > "$stage/debian/changelog" << EOF
schedhot ($version) unstable; urgency=medium

  * Built by packaging/build-deb.sh from:
    $what.
  * The version is CMakeLists.txt's project() version, as schedhot
    --version prints it.

 -- $maint  $when
EOF

cd "$stage"
start=$(date +%s)
echo "build-deb: dpkg-buildpackage in $stage (minutes on a small machine; output in $out/build.log)"
DEB_BUILD_OPTIONS="parallel=${JOBS:-$(nproc)} ${DEB_BUILD_OPTIONS:-}" \
  dpkg-buildpackage -b -us -uc -nc "${cross[@]}" > "$out/build.log" 2>&1 || {
  tail -n 40 "$out/build.log" >&2
  echo "build-deb: dpkg-buildpackage failed (whole log: $out/build.log)" >&2
  exit 1
}
deb="$out/schedhot_${version}_${arch}.deb"
echo "build-deb: $deb ($(( $(date +%s) - start )) s)"
# lintian: errors fail; every warning is listed (the README's packaging section names them).
lintian --fail-on error --display-info "$out/schedhot_${version}_${arch}.changes" | tee "$out/lintian.txt"
echo "build-deb: lintian: $(grep -c '^E:' "$out/lintian.txt" || true) errors, $(grep -c '^W:' "$out/lintian.txt" || true) warnings"
