#!/usr/bin/env bash
# The Python package (python/ravlt) with Debian's python3, numpy and pytest: python/tests
# (cocotools parity, mask API, mean_iou, inference equal to the CLI, errors). The examples of
# the README and docs/python.md: tests/cli/test_docs.sh.
#   bash tests/cli/test_python.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -euo pipefail
# (in pipelines grep reads all of its input, never -q: a writer killed by SIGPIPE would make
# the pipeline fail under pipefail, a false "no match" depending on timing)
BIN=$(readlink -f "$1"); FIX=$(readlink -f "$2")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(dirname "$BIN")
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
"$PY" -c 'import numpy, pytest' || { echo "test_python: $PY lacks numpy or pytest (scripts/install-deps.sh installs python3-numpy python3-pytest)" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT

# The .so the Python package loads: the build's libravlt.so.0 when the build makes one, else a
# development .so linked here from the whole static archive libravlt.a (with its link line).
LIB=""
# (a .so without the package's entry points, rv_py_*, is not used)
for c in "$BUILD/libravlt.so.0" "$BUILD/libravlt.so"; do
  [ -e "$c" ] && nm -D --defined-only "$c" 2>/dev/null | grep ' rv_py_abi$' > /dev/null && { LIB=$c; break; }
done
if [ -z "$LIB" ]; then
  [ -f "$BUILD/libravlt.a" ] && [ -f "$BUILD/CMakeFiles/ravlt.dir/link.txt" ] || { echo "test_python: no libravlt.so or libravlt.a in $BUILD" >&2; exit 1; }
  LIBS=$(sed 's/.* libravlt\.a//' "$BUILD/CMakeFiles/ravlt.dir/link.txt")
  SAN=$( (grep -o -- '-fsanitize=[^ ]*' "$BUILD/CMakeFiles/ravlt.dir/link.txt" || true) | sort -u | tr '\n' ' ')
  # shellcheck disable=SC2086
  ${CC:-cc} -shared $SAN -o "$W/libravlt_dev.so" -Wl,--whole-archive "$BUILD/libravlt.a" -Wl,--no-whole-archive $LIBS -lstdc++
  LIB=$W/libravlt_dev.so
fi
# A sanitizer build's library needs its runtimes loaded before python3 (not instrumented) starts;
# Python's own allocations at exit are not leaks of ours.
if ldd "$LIB" 2>/dev/null | grep libasan > /dev/null; then
  export LD_PRELOAD="$(ldd "$LIB" | awk '/libasan|libubsan/{print $3}' | tr '\n' ' ')"
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi
export RAVLT_LIBRARY=$LIB RAVLT_BIN=$BIN RAVLT_TEST_FIXTURES=$FIX PYTHONPATH=$ROOT/python PYTHONDONTWRITEBYTECODE=1

# pytest: exit 5 (nothing collected) or any skip is a failure, never a pass
set +e
(cd "$ROOT" && "$PY" -m pytest -q -rs -p no:cacheprovider python/tests) > "$W/pytest.log" 2>&1
rc=$?
set -e
cat "$W/pytest.log"
[ $rc -eq 5 ] && { echo "test_python: pytest collected no tests" >&2; exit 1; }
[ $rc -eq 0 ] || { echo "test_python: pytest failed (exit $rc)" >&2; exit 1; }
grep -Eq '^[0-9]+ passed' "$W/pytest.log" || { echo "test_python: no 'N passed' line" >&2; exit 1; }
grep -Eq 'skipped|xfail|deselected' "$W/pytest.log" && { echo "test_python: tests were skipped" >&2; exit 1; }
n=$(grep -Eo '^[0-9]+ passed' "$W/pytest.log" | grep -Eo '^[0-9]+')
[ "$n" -ge 80 ] || { echo "test_python: only $n tests passed (expected >= 80)" >&2; exit 1; }

# The Python examples of the README and docs/ run in tests/cli/test_docs.sh (release suite).
echo "test_python: $n passed"
