#!/usr/bin/env bash
# `cmake --install` puts the Python package into the interpreter's purelib for the prefix
# (cmake/python_purelib.py: <prefix>/lib/python3.X/dist-packages/ravlt with Debian's python3), and
# `PYTHONPATH=<that folder> python3 -c "import ravlt"` works with nothing else set (env -i): the
# package finds the installed libravlt.so.0 by itself, at <prefix>/lib (GNUInstallDirs' libdir
# for a staging prefix) and at <prefix>/lib/<multiarch> (its libdir for prefix /usr on Debian),
# and evaluates a fixture with pycocotools' numbers from there. A default install (prefix
# /usr/local, staged with DESTDIR) puts it in a folder on python3's own sys.path, so there
# `import ravlt` needs nothing set at all; py.typed is installed, __pycache__ and a stray
# libravlt.so of the source tree are not.
#   bash tests/cli/test_python_install.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -euo pipefail
BIN=$(readlink -f "$1"); FIX=$(readlink -f "$2")
BUILD=$(dirname "$BIN")
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
cmake --install "$BUILD" --prefix "$W/p" > "$W/install.log" 2>&1 || { cat "$W/install.log"; exit 1; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SITEDIR=$(env -i "$PY" "$ROOT/cmake/python_purelib.py" "$W/p")
SITE=${SITEDIR#"$W/p/"}
case "$SITE" in lib/python3*/*-packages) ;; *) echo "test_python_install: unexpected purelib $SITEDIR" >&2; exit 1;; esac
for f in __init__.py _lib.py apis.py config.py _draw.py py.typed cocotools/__init__.py cocotools/coco.py cocotools/cocoeval.py cocotools/mask.py; do
  [ -f "$W/p/$SITE/ravlt/$f" ] || { echo "test_python_install: $SITE/ravlt/$f not installed" >&2; exit 1; }
done
if find "$W/p/$SITE" -name __pycache__ -o -name 'libravlt.so*' | grep . > /dev/null; then echo "test_python_install: __pycache__ or a libravlt.so installed into the package" >&2; exit 1; fi
# the default prefix: its package folder is on python3's sys.path with nothing set
DEFPREFIX=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")
DESTDIR=$W/root cmake --install "$BUILD" > "$W/install_default.log" 2>&1 || { cat "$W/install_default.log"; exit 1; }
DEFSITE=$(env -i "$PY" "$ROOT/cmake/python_purelib.py" "$DEFPREFIX")
[ -f "$W/root$DEFSITE/ravlt/__init__.py" ] || { echo "test_python_install: a default install (prefix $DEFPREFIX) did not put the package in $DEFSITE" >&2; exit 1; }
if [ "$DEFPREFIX" = /usr/local ]; then
  (cd / && env -i "$PY" -c 'import sys; sys.exit(0 if sys.argv[1] in sys.path else 1)' "$DEFSITE") ||
    { echo "test_python_install: $DEFSITE (default install) is not on $PY's sys.path" >&2; exit 1; }
fi
LIBSO=$(find "$W/p" -name 'libravlt.so.0' | head -1)
[ -n "$LIBSO" ] || { echo "test_python_install: no libravlt.so.0 installed" >&2; exit 1; }
MULTI=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("MULTIARCH") or "")')
# a second prefix laid out as GNUInstallDirs does for /usr: the library in lib/<multiarch>
mkdir -p "$W/q/lib/$MULTI"
cp -a "$(dirname "$LIBSO")"/libravlt.so* "$W/q/lib/$MULTI/"
mkdir -p "$(dirname "$W/q/$SITE")"
cp -a "$W/p/$SITE" "$W/q/$SITE"
CHECK='
import os, sys, io, json, contextlib
import ravlt
prefix, fix = sys.argv[1], sys.argv[2]
lib = os.path.realpath(ravlt._lib.path)
assert lib.startswith(os.path.realpath(prefix) + os.sep), "library from " + lib + ", not from " + prefix
assert ravlt.__version__ == ravlt._lib.lib.rv_version().decode(), ravlt.__version__
from ravlt.cocotools import COCO, COCOeval
d = os.path.join(fix, "coco_eval", "03_crowd")
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(os.path.join(d, "gt.json"))
    ev = COCOeval(gt, gt.loadRes(os.path.join(d, "dt_segm.json")), "segm")
    ev.evaluate(); ev.accumulate(); ev.summarize()
assert list(ev.stats) == json.load(open(os.path.join(d, "expected.json")))["segm"]["stats"]
print("ok", lib)
'
# A sanitizer build's library needs its runtimes loaded before python3 (not instrumented)
# starts: only then does env -i pass LD_PRELOAD too (Python's own memory at exit is no leak).
SANENV=()
if ldd "$LIBSO" 2>/dev/null | grep libasan > /dev/null; then
  SANENV=(LD_PRELOAD="$(ldd "$LIBSO" | awk '/libasan|libubsan/{print $3}' | tr '\n' ' ')" ASAN_OPTIONS=detect_leaks=0)
fi
for prefix in "$W/p" "$W/q"; do
  out=$(cd / && env -i "${SANENV[@]}" PYTHONPATH="$prefix/$SITE" "$PY" -c "$CHECK" "$prefix" "$FIX") || { echo "test_python_install: import from $prefix failed" >&2; exit 1; }
  echo "$out"
done
# nothing found: a clear ImportError naming RAVLT_LIBRARY, not a crash
rm -f "$W/q/lib/$MULTI"/libravlt.so*
if out=$(cd / && env -i "${SANENV[@]}" PYTHONPATH="$W/q/$SITE" "$PY" -c 'import ravlt' 2>&1); then
  echo "test_python_install: import without a library succeeded" >&2; exit 1
fi
echo "$out" | grep 'ImportError: ravlt: libravlt.so not found; set RAVLT_LIBRARY' > /dev/null || { echo "$out"; echo "test_python_install: unexpected error without a library" >&2; exit 1; }
echo "test_python_install: installed package imports and evaluates from both layouts"
