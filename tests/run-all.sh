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
build="${SCHEDHOT_BUILD:-$root/build}"
(cd "$build" && ctest --output-on-failure --timeout 3600 "$@") || status=$?
# A long run's log is often seen cut in the middle: the failing tests' own FAIL/error lines
# are printed once more at the very end.
failed_summary=""
if [ "$status" -ne 0 ] && [ -f "$build/Testing/Temporary/LastTestsFailed.log" ]; then
  # from each failed test's section of ctest's log: its FAIL lines (tests/vm/e2e.py) and
  # gtest's "Failure" lines with the two after them, else its last 5 lines of output
  failed_summary="$(cat "$build/Testing/Temporary/LastTestsFailed.log"
    awk '/^[0-9]+\/[0-9]+ Testing: /{name = $3; n = 0; m = 0; after = 0; out = 0; next}
         /^Output:$/ {out = 1; next}
         /^<end of output>$/ {out = 0; next}
         /^Test Failed/ {print "--- " name
                         if (n) for (i = 1; i <= n; i++) print "  " keep[i]
                         else for (i = (m > 5 ? m - 4 : 1); i <= m; i++) print "  " last[i]
                         next}
         out { last[++m] = $0
               if ($0 ~ /(^|[[:space:]])FAIL[: ]|: Failure$/) {keep[++n] = $0; after = 2}
               else if (after > 0) {keep[++n] = $0; after--} }' \
      "$build/Testing/Temporary/LastTest.log" | head -n 80 || true)"
fi
# The unit tests once more under ASan and UBSan, in their own build directory
# ($SCHEDHOT_ASAN_BUILD, default build-asan/). SCHEDHOT_NO_ASAN=1 skips this pass.
if [ -z "${SCHEDHOT_NO_ASAN:-}" ]; then
  asan="${SCHEDHOT_ASAN_BUILD:-$root/build-asan}"
  cmake -S "$root" -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSCHEDHOT_TESTS=ON -DSCHEDHOT_SANITIZE=ON >/dev/null
  cmake --build "$asan" -j"$(nproc)" --target unit_tests
  (cd "$asan" && ctest --output-on-failure --timeout 3600 -L unit) || status=$?
fi
if [ -n "$failed_summary" ]; then
  printf '\nrun-all: the tests that failed (number:name), and their FAIL lines:\n%s\n' "$failed_summary"
fi
exit "$status"
