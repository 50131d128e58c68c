#!/usr/bin/env bash
# The test command: configure, build and run the whole suite (cmocka unit and parity tests,
# CLI end-to-end tests) through ctest.
#   bash scripts/test.sh              # optimised build in build/
#   bash scripts/test.sh --sanitize   # ASan + UBSan build in build-asan/
#   bash scripts/test.sh --clang      # optimised clang build in build-clang/ (LLVM's libomp)
# The sanitizer and clang runs leave out the tests labelled `once` (slow checks the release
# suite runs: CMakeLists.txt RV_ONCE_TESTS).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
flags=(-DCMAKE_BUILD_TYPE=Release)
select=()
if [ "${1:-}" = "--clang" ]; then
  dir=build-clang
  select=(-LE once)
  export CC=clang CXX=clang++
fi
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAVLT_SANITIZE=ON)
  select=(-LE once)
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}"
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
cmake -S . -B "$dir" "${flags[@]}" > /dev/null
cmake --build "$dir" -j "$(nproc)"
cd "$dir"
ctest --output-on-failure -j "$(nproc)" "${select[@]}"
