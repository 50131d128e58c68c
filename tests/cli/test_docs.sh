#!/usr/bin/env bash
# The documentation (README.md, docs/*.md): every relative link and anchor resolves, every
# example marked runnable (<!-- sh-example -->, <!-- c-example -->, <!-- python-example -->)
# runs and prints what its marker expects, and docs/cli.md's option tables equal the
# commands' --help. tests/docs_check.py has the details. It runs in the release suite only
# (ctest label `once`, CMakeLists.txt RV_ONCE_TESTS).
#   bash tests/cli/test_docs.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -euo pipefail
BIN=$(readlink -f "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
"$PY" -c 'import numpy' || { echo "test_docs: $PY lacks numpy (scripts/install-deps.sh installs python3-numpy)" >&2; exit 1; }
exec "$PY" "$ROOT/tests/docs_check.py" "$BIN"
