#!/usr/bin/env bash
# `ravlt serve`'s web page in Debian's headless Chromium (python3-selenium + chromium-driver;
# tests/serve_page_check.py): renders, an upload shows its overlay and table, a live stream
# plays, no console errors, no request leaves the server. Release build only (run once in
# CI: the ctest label once, CMakeLists.txt RV_ONCE_TESTS).
#   bash tests/cli/test_serve_page.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -euo pipefail
BIN=$(readlink -f "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
for f in /usr/bin/chromium /usr/bin/chromedriver; do
  [ -x "$f" ] || { echo "test_serve_page: no $f (scripts/install-deps.sh installs chromium chromium-driver)" >&2; exit 1; }
done
"$PY" -c 'import selenium' || { echo "test_serve_page: no selenium for $PY (install-deps.sh: python3-selenium)" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
timeout 300 "$PY" "$ROOT/tests/serve_page_check.py" "$BIN" "$W"
