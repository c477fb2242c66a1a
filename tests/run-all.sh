#!/usr/bin/env bash
# Builds schedhot with its tests and runs every test (unit, BPF in the kernel, live, the
# recording reader's fuzzer, and the QEMU kernels when tests/vm is present), then the unit
# tests again under ASan+UBSan. Needs root for the BPF and live tests.
# Usage: sudo tests/run-all.sh [ctest arguments...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/packaging/install-deps.sh"
"$root/packaging/build.sh" -DSCHEDHOT_TESTS=ON
status=0
(cd "${SCHEDHOT_BUILD:-$root/build}" && ctest --output-on-failure --timeout 3600 "$@") || status=$?
# The unit tests once more under ASan and UBSan, in their own build directory
# ($SCHEDHOT_ASAN_BUILD, default build-asan/). SCHEDHOT_NO_ASAN=1 skips this pass.
if [ -z "${SCHEDHOT_NO_ASAN:-}" ]; then
  asan="${SCHEDHOT_ASAN_BUILD:-$root/build-asan}"
  cmake -S "$root" -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCHEDHOT_TESTS=ON -DSCHEDHOT_SANITIZE=ON >/dev/null
  cmake --build "$asan" -j"$(nproc)" --target unit_tests
  (cd "$asan" && ctest --output-on-failure --timeout 3600 -L unit) || status=$?
fi
exit "$status"
