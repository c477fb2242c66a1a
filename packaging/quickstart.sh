#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is needed, build, show how
# every probe attaches on this kernel, record 10 s of the live kernel under a small
# load, and report it.  Usage: sudo packaging/quickstart.sh [SECONDS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
secs="${1:-10}"
"$root/packaging/install-deps.sh" --build   # tests/run-all.sh installs the test packages
"$root/packaging/build.sh" -DSCHEDHOT_TESTS=OFF   # tests/run-all.sh builds the tests
bin="$root/build/schedhot"
out="${SCHEDHOT_OUT:-$root/build/quickstart.shot}"
echo
echo "== schedhot probes"
"$bin" probes
echo
echo "== schedhot record -d $secs -i 1 -o $out  (under packaging/load.sh: naps, busy bursts, an RT sleeper)"
echo "   (the idle and nohz figures need CPUs that go idle: on a machine already busy they stay low)"
"$root/packaging/load.sh" $((secs + 1)) &
load_pid=$!
"$bin" record -d "$secs" -i 1 -o "$out" --force
wait "$load_pid" 2>/dev/null || true
echo
echo "== schedhot report $out"
"$bin" report "$out"
