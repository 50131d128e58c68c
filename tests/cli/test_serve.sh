#!/usr/bin/env bash
# `ravlt serve` end to end (tests/serve_check.py): predictions equal to the CLI's, the KServe v2
# routes, every error status with its JSON body, the token, overload (503 / 504), SIGTERM with
# requests in flight, live streams (MJPEG, SSE, 410), slow clients, start-up failures, TLS.
# Servers listen on 127.0.0.1 on a port each picks (--port 0). Registered in the release build
# only: ctest label once (CMakeLists.txt RV_ONCE_TESTS), run once in CI.
#   bash tests/cli/test_serve.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR [CHECK...]
set -euo pipefail
BIN=$(readlink -f "$1")
shift 3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(dirname "$BIN")
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
"$PY" -c 'import numpy' || { echo "test_serve: $PY lacks numpy (scripts/install-deps.sh installs python3-numpy)" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
LIB=$BUILD/libravlt.so.0
[ -e "$LIB" ] || { echo "test_serve: no $LIB (the Python package reads the images)" >&2; exit 1; }
export SERVE_ASAN_OPTIONS=${ASAN_OPTIONS:-}  # the servers' own (leaks checked), not python3's
if ldd "$LIB" 2>/dev/null | grep libasan > /dev/null; then  # a sanitizer build: python3 needs its runtimes first
  export LD_PRELOAD="$(ldd "$LIB" | awk '/libasan|libubsan/{print $3}' | tr '\n' ' ')"
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi
export RAVLT_LIBRARY=$LIB PYTHONPATH=$ROOT/python PYTHONDONTWRITEBYTECODE=1
timeout 600 "$PY" "$ROOT/tests/serve_check.py" "$BIN" "$W" "$@"
