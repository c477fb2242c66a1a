#!/usr/bin/env bash
# asan-unit.sh SOURCE_DIR [BUILD_DIR]: the unit tests once more under ASan and UBSan, in their
# own build directory ($SCHEDHOT_ASAN_BUILD, default BUILD_DIR/asan/, else
# SOURCE_DIR/build/asan/): CTest's `asan_unit` (label asan), which tests/run-all.sh runs
# beside the VM suite. Its sources compile as the fuzzer's (CMakeLists.txt: clang's
# -fsanitize=fuzzer-no-link with SCHEDHOT_SANITIZE) in a directory as deep as the fuzzer's
# (BUILD_DIR/fuzz), so ccache compiles the sources the two share once a run.
# Built with clang-16 (installed for the fuzzer) at -O1 with line tables only, as the
# sanitizers' documentation suggests: 4 min 45 s on 2 cores against 13 min with g++ at
# -O2 -g (measured 2026-12-03); $SCHEDHOT_ASAN_CXX picks another compiler.
# SCHEDHOT_NO_ASAN=1 skips it (exit 77). Exit status: the build's or the tests' (ctest's).
set -euo pipefail
root="$1"
[ -z "${SCHEDHOT_NO_ASAN:-}" ] || { echo "SKIP: SCHEDHOT_NO_ASAN is set"; exit 77; }
asan="${SCHEDHOT_ASAN_BUILD:-${2:-$root/build}/asan}"
cxx="${SCHEDHOT_ASAN_CXX:-$(command -v clang++-16 || command -v g++)}"
cc="${cxx/clang++/clang}"; cc="${cc/g++/gcc}"
dbg=-gline-tables-only; [[ "$cxx" == *clang* ]] || dbg=-g1
cmake -S "$root" -B "$asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 $dbg" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 $dbg" \
      -DSCHEDHOT_TESTS=ON -DSCHEDHOT_SANITIZE=ON >/dev/null
cmake --build "$asan" -j"$(nproc)" --target unit_tests
rm -f "$asan/Testing/Temporary/LastTestsFailed.log"
cd "$asan" && exec ctest --output-on-failure --timeout 3600 -j"$(nproc)" -L unit
