#!/usr/bin/env bash
# The HTML reports of `ravlt eval --report` in headless Chromium (tests/report_browser.py: Debian's
# chromium + chromedriver through python3-selenium): COCO box with --compare (every section),
# the demo detector's model-mode report with thumbnails, and an ADE20K report: every section
# present and laid out, no console error, no network request. A `once` test (CMakeLists.txt
# RV_ONCE_TESTS): the release suite runs it, the sanitizer and clang suites leave it out.
#   bash tests/cli/test_report_browser.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -euo pipefail
BIN=$(readlink -f "$1"); FIX=$(readlink -f "$2"); DATA=$(readlink -f "$3")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
for x in chromium chromedriver; do
  command -v $x > /dev/null || { echo "test_report_browser: $x missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
"$PY" -c 'import selenium' || { echo "test_report_browser: python3-selenium missing (scripts/install-deps.sh)" >&2; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
COCO_SECTIONS="summary categories pr tide confusion f1 worst"
ids() { local p=$1; shift; for s in "$@"; do printf '%s-%s ' "$p" "$s"; done; }

d=$DATA/analysis/tide/01_mixed
"$BIN" --quiet eval coco --ann "$d/gt.json" --results "$d/dt_bbox.json" --compare "$d/dt_segm.json" \
  --report "$T/cmp.html" > /dev/null
# shellcheck disable=SC2046
"$PY" "$ROOT/tests/report_browser.py" "$T/cmp.html" bbox $(ids bbox $COCO_SECTIONS compare)

"$BIN" --quiet synth --task det --out-dir "$T/det" --count 6 --seed 4 --backgrounds none > /dev/null
"$BIN" --quiet eval coco --ann "$T/det/annotations/instances.json" --images "$T/det/images" --weights demo-det \
  --report "$T/model.html" > /dev/null
grep -q 'data:image/jpeg;base64,' "$T/model.html" || { echo "test_report_browser: no thumbnail in the model report" >&2; exit 1; }
# shellcheck disable=SC2046
"$PY" "$ROOT/tests/report_browser.py" "$T/model.html" $(ids bbox $COCO_SECTIONS)

m=$FIX/miou/01_small
"$BIN" --quiet eval ade20k --pred-dir "$m/pred" --gt-dir "$m/gt" --pred-zero-based --report "$T/ade.html" > /dev/null
# shellcheck disable=SC2046
"$PY" "$ROOT/tests/report_browser.py" "$T/ade.html" ade20k $(ids ade20k summary classes confusion worst)
echo "test_report_browser: three reports open cleanly"
