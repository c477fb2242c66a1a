#!/usr/bin/env bash
# Installs every Debian package schedhot needs to build and test (packaging/deps.txt,
# plus tests/vm/DEPS when present). Runs apt-get update only when something is missing.
# Usage: install-deps.sh [--build]   (--build: only what building schedhot needs, the part of
# deps.txt before its "# tests" line; packaging/quickstart.sh uses it)
set -euo pipefail
build_only=0
case "${1:-}" in
  --build) build_only=1 ;;
  "") ;;
  *) echo "install-deps: unknown argument '$1' (usage: install-deps.sh [--build])" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=()
files=("$here/deps.txt")
[ "$build_only" -eq 1 ] || files+=("$root/tests/vm/DEPS")
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  while read -r p; do
    [ "$build_only" -eq 1 ] && [[ "$p" == "# tests"* ]] && break
    p="${p%%#*}"; p="${p// /}"
    [ -n "$p" ] && pkgs+=("$p")
  done < "$f"
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
