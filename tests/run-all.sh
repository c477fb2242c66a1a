#!/usr/bin/env bash
# Builds schedhot with its tests and runs every test (unit, BPF in the kernel, live, the
# recording reader's fuzzer, the QEMU kernels when tests/vm is present, and the unit tests
# again under ASan+UBSan: CTest's asan_unit), then the benchmarks' short mode (label bench,
# their figures printed). Needs root for the BPF and live tests.
# Usage: sudo tests/run-all.sh [ctest arguments...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/packaging/install-deps.sh"
# One compiler cache for the five builds of a run (CMakeLists.txt SCHEDHOT_CCACHE) and the
# runs after it: root's, beside the kernels tests/vm caches. Objects from the cache are linked
# into what runs as root, so a cache (or its parent) that another user owns or can write is
# not used: the builds then compile everything.
export CCACHE_DIR="${CCACHE_DIR:-/var/cache/schedhot-vm/ccache}"
mkdir -p "$CCACHE_DIR" 2>/dev/null || true
for d in "$CCACHE_DIR" "$(dirname "$CCACHE_DIR")"; do
  if [ ! -d "$d" ] || [ "$(stat -c %u "$d")" != "$(id -u)" ] || [ -n "$(find "$d" -maxdepth 0 -perm /022)" ]; then
    echo "run-all: $d is missing, not owned by $(id -un) or writable by others: compiling without ccache" >&2
    export CCACHE_DISABLE=1
    break
  fi
done
"$root/packaging/build.sh" -DSCHEDHOT_TESTS=ON
status=0
build="${SCHEDHOT_BUILD:-$root/build}"
# A long run's log is often seen cut in the middle: at the very end (also when a later step
# fails), the failing tests' own lines once more. From each failed test's section of
# ctest's log: its FAIL lines (tests/vm/e2e.py and the Python tests) and gtest's "Failure"
# lines with the five after them (the values), else its last 5 lines of output.
summarize_failures() {   # BUILD_DIR [PASS]: PASS's copies of ctest's logs, else the last ones
  local d="$1/Testing/Temporary" p="${2:+.$2}"
  local f="$d/LastTestsFailed$p.log"
  [ -f "$f" ] || return 0
  printf '\nrun-all: failed in %s%s (number:name), and their FAIL lines:\n' "$1" "${2:+ ($2 pass)}"
  { cat "$f"
    awk '/^[0-9]+\/[0-9]+ Testing: /{name = $3; n = 0; m = 0; after = 0; out = 0; next}
         /^Output:$/ {out = 1; next}
         /^<end of output>$/ {out = 0; next}
         /^Test Failed/ || /^Test Fail Reason/ || /^Unable to find executable/ {
                         print "--- " name
                         if (n) for (i = 1; i <= n; i++) print "  " keep[i]
                         else for (i = (m > 5 ? m - 4 : 1); i <= m; i++) print "  " last[i]
                         n = 0; m = 0; next}
         out && !/^-+$/ { last[++m] = $0
               if ($0 ~ /(^|[[:space:]])FAIL[: ]/) {keep[++n] = $0; after = 0}
               else if ($0 ~ /: Failure$/) {keep[++n] = $0; after = 5}
               else if (after > 0) {keep[++n] = $0; after--} }' "$d/LastTest$p.log" 2>/dev/null
  } | head -n 120 || true
}
# ctest leaves LastTestsFailed.log of an earlier run in place: only this run's may count.
# The bench pass below rewrites ctest's logs in the same directory, so the main pass's
# are kept as LastTest.main.log and LastTestsFailed.main.log.
tmp="$build/Testing/Temporary"
asan="$(realpath -m "${SCHEDHOT_ASAN_BUILD:-$build/asan}")"   # CTest's asan_unit builds there (below)
export SCHEDHOT_ASAN_BUILD="$asan"   # absolute: asan-unit.sh runs from another directory
rm -f "$tmp"/LastTestsFailed*.log "$asan/Testing/Temporary/LastTestsFailed.log"
trap 'summarize_failures "$build" main; summarize_failures "$build"; summarize_failures "$asan"' EXIT
# Two at a time (the machine's cores): the tests that attach BPF to this host or time
# themselves (live, fleet, serve) are RUN_SERIAL and run alone; vm_e2e starts first and the
# other tests (unit, cli, tui, bpf, the fuzzer, the .deb) run beside it (tests/CMakeLists.txt).
(cd "$build" && ctest --output-on-failure --timeout 3600 -j"$(nproc)" -LE bench "$@") || status=$?
for l in LastTest LastTestsFailed; do
  [ ! -f "$tmp/$l.log" ] || cp "$tmp/$l.log" "$tmp/$l.main.log"
done
rm -f "$tmp/LastTestsFailed.log"
# The benchmarks in their short mode (label bench, a few seconds each: tests/bench/run.sh),
# alone on the machine and verbose so that their figures stay in the log.
(cd "$build" && ctest -V --output-on-failure --timeout 600 -L bench "$@") || status=$?
# The unit tests under ASan and UBSan are CTest's asan_unit (tests/asan-unit.sh, in
# $asan), run in the main pass beside the VM suite; their failures are summarized above.
exit "$status"
