#!/usr/bin/env bash
# The pip paths of pyproject.toml / setup.py, offline, with Debian's pip (docs/python.md
# "Installing"): in a copy of the source tree as a clone has it (the files git tracks, plus new
# ones it does not ignore; no build folder):
#  1. `pip install --no-build-isolation --no-index .` into a fresh venv builds libravlt with
#     CMake (the one CMake build of this test) and installs the package with it;
#  2. python/tests run against that install, with no PYTHONPATH / RAVLT_LIBRARY;
#  3. `pip wheel` (reusing that build) makes a py3-none-<platform> wheel that installs into a
#     second fresh venv, where it imports, reports its version and infers;
#  4. `pip uninstall` removes the package.
# Slow (a CMake build): ctest label `once`, run in the release suite only.
#   bash tests/cli/test_python_pip.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -euo pipefail
BIN=$(readlink -f "$1"); FIX=$(readlink -f "$2")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
fail() { echo "test_python_pip: $*" >&2; exit 1; }
"$PY" -m pip --version > /dev/null 2>&1 || fail "$PY has no pip (scripts/install-deps.sh installs python3-pip)"
"$PY" -c 'import setuptools, wheel, venv' 2>/dev/null || fail "$PY lacks setuptools / wheel / venv (python3-setuptools python3-wheel python3-venv)"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
unset PYTHONPATH RAVLT_LIBRARY RAVLT_BUILD_DIR RAVLT_CMAKE_BUILD_DIR

# the source tree as a clone has it
mkdir "$W/src"
if git -C "$ROOT" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
     [ -e "$f" ] && printf '%s\0' "$f"; done | xargs -0 cp --parents -t "$W/src")
else
  (cd "$ROOT" && tar --exclude='./build*' -cf - .) | tar -C "$W/src" -xf -
fi
[ -f "$W/src/pyproject.toml" ] || fail "no pyproject.toml in the source tree"
[ ! -e "$W/src/build" ] || fail "a build folder in the copied tree"

# 1. pip install . into a fresh venv (--system-site-packages: Debian's numpy and pytest): the one
#    CMake build of this test, in the tree (build-python/)
"$PY" -m venv --system-site-packages "$W/venv_src"
(cd "$W/src" && CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$W/venv_src/bin/python" -m pip install --no-build-isolation \
   --no-index .) > "$W/install_src.log" 2>&1 || { tail -40 "$W/install_src.log"; fail "pip install . failed"; }
site=$("$W/venv_src/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
[ -f "$site/ravlt/libravlt.so.0" ] && [ -f "$site/ravlt/py.typed" ] || fail "pip install . did not install ravlt/libravlt.so.0 and py.typed into $site"

# 2. python/tests against that install: no PYTHONPATH / RAVLT_LIBRARY (conftest checks that the
#    package and its library come from the venv). The files of the package's API, masks and
#    COCO API (the whole of python/tests runs against the build in test_python; inference runs
#    here in step 3): the install's layout is what this checks, at a third of the time.
set +e
(cd "$W" && env RAVLT_EXPECT_PACKAGE_DIR="$site/ravlt" RAVLT_BIN="$BIN" RAVLT_TEST_FIXTURES="$FIX" OMP_NUM_THREADS=2 \
   "$W/venv_src/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/python/tests/test_api.py" \
   "$ROOT/python/tests/test_mask.py" "$ROOT/python/tests/test_pycocotools_api.py") > "$W/pytest.log" 2>&1
rc=$?
set -e
tail -3 "$W/pytest.log"
[ $rc -eq 0 ] || { cat "$W/pytest.log"; fail "python/tests failed against the pip-installed package (exit $rc)"; }
if grep -Eq 'skipped|xfail|deselected' "$W/pytest.log"; then fail "tests were skipped"; fi
grep -Eq '^[0-9]+ passed' "$W/pytest.log" || fail "no 'N passed' line"

# 3. pip wheel (the CMake build of step 1 reused): a py3-none-<platform> wheel with the package,
#    py.typed and libravlt.so.0, installed into a second fresh venv, where it imports and infers
"$PY" -m venv --system-site-packages "$W/venv_whl"
(cd "$W/src" && "$W/venv_whl/bin/python" -m pip wheel --no-build-isolation --no-index --no-deps -w "$W/wheels" .) \
  > "$W/wheel.log" 2>&1 || { tail -40 "$W/wheel.log"; fail "pip wheel failed"; }
whl=$(ls "$W"/wheels/ravlt-*.whl 2>/dev/null | head -1)
[ -n "$whl" ] || fail "pip wheel made no ravlt wheel"
ver=$(sed -n 's/^project(ravlt VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
case "$(basename "$whl")" in "ravlt-$ver-py3-none-linux_"*.whl) ;; *) fail "wheel $(basename "$whl"): expected ravlt-$ver-py3-none-linux_<arch>.whl";; esac
"$PY" - "$whl" <<'PYEOF' || fail "wheel contents"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
need = ['ravlt/__init__.py', 'ravlt/_lib.py', 'ravlt/apis.py', 'ravlt/py.typed', 'ravlt/libravlt.so.0',
        'ravlt/cocotools/__init__.py']
miss = [n for n in need if not any(x.endswith('/' + n) or x == n for x in names)]
assert not miss, 'missing from the wheel: %s' % miss
assert not [x for x in names if '__pycache__' in x or x.endswith('.pyc')], 'bytecode in the wheel'
print('wheel:', len(names), 'files')
PYEOF
"$W/venv_whl/bin/python" -m pip install --no-index --no-deps "$whl" > "$W/install_whl.log" 2>&1 ||
  { cat "$W/install_whl.log"; fail "installing the wheel"; }
out=$(cd / && "$W/venv_whl/bin/python" -c '
import os, sys, importlib.metadata as md, ravlt
here = os.path.dirname(ravlt.__file__)
assert here.startswith(sys.prefix), here
assert os.path.dirname(ravlt._lib.path) == here, ravlt._lib.path
assert ravlt.__version__ == md.version("ravlt") == sys.argv[1], (ravlt.__version__, sys.argv[1])
with ravlt.init_segmentor(os.path.join(sys.argv[2], "e2e", "semantic_fpn", "checkpoint.pth")) as m:
    seg = ravlt.inference_segmentor(m, os.path.join(sys.argv[2], "e2e", "semantic_fpn", "image.jpg"))[0]
print("wheel: ravlt", ravlt.__version__, "from", here, seg.shape)
' "$ver" "$FIX") || fail "the package installed from the wheel does not work"
echo "$out"

# 4. pip uninstall removes it
"$W/venv_src/bin/python" -m pip uninstall -y ravlt > "$W/uninstall.log" 2>&1 || { cat "$W/uninstall.log"; fail "pip uninstall"; }
[ ! -e "$site/ravlt" ] || fail "pip uninstall left $site/ravlt"
echo "test_python_pip: pip install . tested with python/tests; the wheel installs and runs; uninstall works"
