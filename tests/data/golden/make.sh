#!/bin/sh
# Regenerates the golden outputs listed in cases.txt with the given schedhot binary
# (default build/schedhot), from the source tree's root. Only for an intended change.
set -eu
cd "$(dirname "$0")/../../.."
bin=$(realpath "${1:-build/schedhot}")
grep -v '^#' tests/data/golden/cases.txt | grep -v '^$' | while read -r out args; do
  rc=0
  # shellcheck disable=SC2086
  "$bin" $args > "tests/data/golden/$out" 2> "tests/data/golden/$out.err" || rc=$?
  echo "exit $rc" >> "tests/data/golden/$out.err"
done
