#!/usr/bin/env bash
# Configures and builds schedhot into build/ (or $SCHEDHOT_BUILD). Extra arguments go to cmake; JOBS=N limits the parallel jobs (default: the CPUs).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SCHEDHOT_BUILD:-$root/build}"
# SCHEDHOT_STATIC=OFF: a directory once configured static (tests/vm/build-static.sh) must
# not stay static here; arguments after it may still turn it on.
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCHEDHOT_STATIC=OFF "$@" >/dev/null
cmake --build "$build" -j"${JOBS:-$(nproc)}"
