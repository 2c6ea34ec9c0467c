#!/usr/bin/env bash
# Builds unit-test binaries with ThreadSanitizer (clang) and runs them. Not part of CI: the server
# tests alone take about 25 min to build on 2 cores. Usage:
#   scripts/tsan.sh [test binary ...]   (default: keel_base_tests keel_server_tests keel_router_tests)
# Env: BUILD (default build-tsan), JOBS (default 2). Extra gtest flags via GTEST_FILTER.
# Exit status is non-zero if a test fails or TSan reports a race.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build-tsan}"
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(keel_base_tests keel_server_tests keel_router_tests)
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread -O1" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DKEEL_TESTS=ON \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
fi
ninja -C "$BUILD" -j"${JOBS:-2}" "${TARGETS[@]}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
status=0
for t in "${TARGETS[@]}"; do
  echo "== $t"
  if ! "$BUILD/tests/$t" --gtest_brief=1 ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER}; then
    status=1
    echo "!! $t failed (a test, or a race: TSan's report is above)" >&2
  fi
done
exit $status
