#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is needed, build, show how
# every probe attaches on this kernel, record 10 s of the live kernel under a small
# load, and report it.  Usage: sudo packaging/quickstart.sh [SECONDS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
secs="${1:-10}"
"$root/packaging/install-deps.sh"
"$root/packaging/build.sh"
bin="$root/build/schedhot"
out="${SCHEDHOT_OUT:-$root/build/quickstart.shot}"
echo
echo "== schedhot probes"
"$bin" probes
echo
echo "== schedhot record -d $secs -i 1 -o $out  (with a small idle-churn load)"
# Two short-sleep loops: idle enter/exit churn, the rate that drives the nohz paths.
load_pids=()
for _ in 1 2; do
  ( end=$((SECONDS + secs + 1)); while [ $SECONDS -lt $end ]; do sleep 0.002; done ) &
  load_pids+=($!)
done
"$bin" record -d "$secs" -i 1 -o "$out" --force
kill "${load_pids[@]}" 2>/dev/null || true
wait 2>/dev/null || true
echo
echo "== schedhot report $out"
"$bin" report "$out"
