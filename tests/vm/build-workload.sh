#!/usr/bin/env bash
# build-workload.sh OUTPUT: builds workload.c as a static binary at OUTPUT.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
die() { echo "build-workload: error: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: build-workload.sh OUTPUT"
CC=${CC:-gcc}
command -v "$CC" >/dev/null || die "$CC not found (apt-get install gcc libc6-dev)"
mkdir -p "$(dirname "$1")"
"$CC" -O2 -g0 -Wall -Wextra -Wno-unused-parameter -static -pthread -o "$1" "$HERE/workload.c" ||
    die "compiling workload.c failed"
echo "build-workload: $1" >&2
