#!/usr/bin/env bash
# Builds schedhot with its tests and runs every test (unit, BPF in the kernel, live,
# and the QEMU kernels when tests/vm is present). Needs root for the BPF and live tests.
# Usage: sudo tests/run-all.sh [ctest arguments...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/packaging/install-deps.sh"
"$root/packaging/build.sh" -DSCHEDHOT_TESTS=ON
cd "${SCHEDHOT_BUILD:-$root/build}"
ctest --output-on-failure --timeout 3600 "$@"
