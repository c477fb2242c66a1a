#!/usr/bin/env bash
# Runs schedhot's benchmarks and prints their figures (nothing about speed is checked):
#   recording   bench_recording.cpp: recording size and read/write/seek speed (480 CPUs)
#   tui         bench_tui.cpp: top/replay frame build+draw per view, and `w` (8192 CPUs)
#   scale       bench_scale.cpp: report of 100 samples (time, peak RSS), report --fleet (480 CPUs) and sampling (8192 CPUs)
#   interval    bench_interval.cpp: per-interval cost at 2 CPUs, -i 10ms: report of a 64 MiB rotated file
#               (--short: 2 MiB, scaled), report/export/diff of 60 s
#   goals       bench_goals.cpp: issue 32's goals table, every row at 8192 and 480 CPUs, busy and idle
#               (frames, w, report, sampling, export --format perfetto, serve --per-cpu's renderer;
#               --short: 1024 and 480 CPUs, 10 samples; full about 2-3 min)
#   probe_cost  probe_cost.cpp: kernel-side cost of the probe handlers (root, raw_tp)
#   holder      holder_scan.cpp: bcast_wait's holder scan against the possible CPUs (root, raw_tp)
#   guest       guest_cost.py: workload throughput under each tool in one QEMU TCG guest
#               (Debian 6.12: no tool, schedhot fentry/kprobe/--exact, funclatency); boots a
#               VM (tests/vm's packages and cache; --short about 1.6 min, full about 5.5 min)
# Each must exit 0 and print its table (a line of figures); probe_cost without root is
# skipped (exit 77 when it is the only one asked for).
# usage: tests/bench/run.sh [--short] [--build DIR] [NAME...]     (default: all eight)
#   --short: CI mode, a few seconds each; DIR: the build directory (default build/).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${SCHEDHOT_BUILD:-$root/build}"
short=""
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --short) short=1 ;;
    --build) build="$2"; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "schedhot: run.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1") ;;
  esac
  shift
done
[ ${#names[@]} -gt 0 ] || names=(recording tui scale interval goals probe_cost holder guest)
bin="$build/tests"

# name -> command line; and a pattern that a line of its figures matches.
cmd_of() {
  case "$1" in
    recording) echo "$bin/schedhot_bench_recording ${short:+--benchmark_min_time=0.01 --benchmark_filter=BM_(Size/busy:1/zstd:1|Write|Read)/}" ;;
    tui) echo "$bin/schedhot_bench_tui ${short:+--short}" ;;
    scale) echo "$bin/schedhot_bench_scale ${short:+--short} --schedhot $build/schedhot" ;;
    interval) echo "$bin/schedhot_bench_interval ${short:+--short} --schedhot $build/schedhot" ;;
    goals) echo "$bin/schedhot_bench_goals ${short:+--short} --schedhot $build/schedhot" ;;
    probe_cost) echo "$bin/schedhot_bench_probe_cost ${short:+--short}" ;;
    holder) echo "$bin/schedhot_bench_holder_scan ${short:+--short}" ;;
    guest) echo "python3 $root/tests/bench/guest_cost.py ${short:+--short} --build $build" ;;
    *) return 1 ;;
  esac
}
figures_of() {
  case "$1" in
    recording) echo '^BM_[A-Za-z]+/[^ ]+ +[0-9.]+ [mun]?s' ;;
    tui) echo '^ +[0-9]+ per-CPU, by idle/s +[0-9.]+ +[0-9.]+ +[0-9.]+' ;;
    scale) echo 'take a sample +[0-9.]+' ;;
    interval) echo 'per interval at 2 CPUs, in process: [0-9.]+ us' ;;
    goals) echo '^\| `serve` scrape with `--per-cpu` \| [0-9.]+ m?s' ;;
    probe_cost) echo '^ +1 +timed \+ sh_hist \(per-CPU\) +[0-9.]+' ;;
    holder) echo '^ +8192 +[0-9.]+ +-?[0-9.]+ +-?[0-9.]+' ;;
    guest) echo '^  schedhot record \(default, fentry\) +[0-9]+\.[0-9]{3} \(' ;;
  esac
}

status=0
ran=0
for n in "${names[@]}"; do
  c="$(cmd_of "$n")" || { echo "schedhot: run.sh: no benchmark named $n" >&2; exit 2; }
  if { [ "$n" = probe_cost ] || [ "$n" = holder ]; } && [ "$(id -u)" != 0 ]; then
    echo "== $n: skipped (needs root for BPF)"
    [ ${#names[@]} -eq 1 ] && exit 77
    continue
  fi
  echo "== $n: $c"
  start=$(date +%s%N)
  out="$($c 2>&1)"
  rc=$?
  printf '%s\n' "$out"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf '== %s: exit %d, %d.%03d s\n' "$n" "$rc" $((ms / 1000)) $((ms % 1000))
  ran=$((ran + 1))
  if [ $rc -ne 0 ]; then
    echo "schedhot: run.sh: $n exited with $rc" >&2
    status=1
  elif ! printf '%s\n' "$out" | grep -Eq "$(figures_of "$n")"; then
    echo "schedhot: run.sh: $n printed no figures" >&2
    status=1
  fi
done
exit $status
