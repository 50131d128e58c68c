#!/usr/bin/env bash
# CLI end-to-end test of `ravlt eval coco|ade20k --report FILE.html --report-json FILE|-`: results
# mode and model mode (the built-in demo models on `ravlt synth` sets), --images thumbnails,
# --compare, --conf-score-thr / --conf-iou-thr, TIDE's numbers in the JSON equal to the goldens of
# TIDE's own code (tests/data/analysis/tide, within 0.01 AP points), the 12 stats equal to
# --json's, the report's sections, and clear errors. (The report in a browser: the `once` test
# test_report_browser.)
#   bash tests/cli/test_eval_report.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1
FIX=$2
DATA=$3
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

expect_err() { # rc "stderr pattern" cmd...
  local rc=$1 pat=$2
  shift 2
  "$@" > "$T/out" 2> "$T/err"
  local got=$?
  [ "$got" = "$rc" ] || fail "rc $got (want $rc): $* -- $(cat "$T/err")"
  grep -q -- "$pat" "$T/err" || fail "stderr lacks '$pat': $* -- $(cat "$T/err")"
}

# jcheck FILE 'python expression over j (the JSON) that must be true' label
jcheck() {
  "$PY" - "$1" "$2" <<'PY' || fail "$3"
import json, sys
j = json.load(open(sys.argv[1])) if sys.argv[1] != "-" else json.load(sys.stdin)
ok = eval(sys.argv[2], {"j": j, "abs": abs, "len": len, "all": all, "set": set, "json": json})
if not ok:
    print("  check failed: " + sys.argv[2], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

sections() { # FILE part: every section id of a COCO part
  for s in summary categories pr tide confusion f1 worst; do
    grep -q "id=\"$2-$s\"" "$1" || fail "$1: no section $2-$s"
  done
}

# 1. results mode, bbox and segm: TIDE equal to TIDE's code, stats equal to --json's
for c in 01_mixed 03_many_dets; do
  d=$DATA/analysis/tide/$c
  for iou in bbox segm; do
    "$BIN" --quiet eval coco --ann "$d/gt.json" --results "$d/dt_$iou.json" --iou-type $iou --json "$T/s.json" \
      --report "$T/$c.$iou.html" --report-json "$T/$c.$iou.json" > "$T/stdout" 2> "$T/err" || fail "$c $iou: rc $? $(cat "$T/err")"
    grep -q "^ Average Precision  (AP) @\[ IoU=0.50:0.95" "$T/stdout" || fail "$c $iou: the summary is not printed"
    jcheck "$T/$c.$iou.json" "j['iou_type'] == '$iou' and j['stats'] == json.load(open('$T/s.json'))['stats']" "$c $iou: stats"
    jcheck "$T/$c.$iou.json" "(lambda e, t: abs(t['ap50'] - e['ap']) <= 0.01 and all(abs(t['main'][k] - v) <= 0.01 for k, v in e['main'].items()) and all(abs(t['special'][k] - v) <= 0.01 for k, v in e['special'].items()))(json.load(open('$d/expected.json'))['$iou'], j['tide'])" "$c $iou: TIDE differs from TIDE's code"
    jcheck "$T/$c.$iou.json" "set(j) >= {'per_category', 'pr', 'confusion', 'f1', 'worst_images'} and len(j['pr']['precision']) == 10 and j['confusion']['labels'][-1] == 'background' and j['confusion']['score_thr'] == 0.3" "$c $iou: contract"
    sections "$T/$c.$iou.html" "$iou"
    grep -q 'https\?://' "$T/$c.$iou.html" && fail "$c $iou: the report names a URL"
  done
done

# 2. --report-json -: the JSON alone on stdout, the tables on stderr
d=$DATA/analysis/tide/02_ties_crowd
"$BIN" --quiet eval coco --ann "$d/gt.json" --results "$d/dt_bbox.json" --report-json - > "$T/stdout" 2> "$T/err" ||
  fail "--report-json -: rc $?"
jcheck "$T/stdout" "j['iou_type'] == 'bbox'" "--report-json -: stdout is not the JSON"
grep -q "Average Precision" "$T/err" || fail "--report-json -: the tables should go to stderr"

# 3. --compare and the confusion thresholds
"$BIN" --quiet eval coco --ann "$d/gt.json" --results "$d/dt_bbox.json" --compare "$d/dt_segm.json" \
  --conf-score-thr 0.5 --conf-iou-thr 0.6 --report "$T/cmp.html" --report-json "$T/cmp.json" > /dev/null 2> "$T/err" ||
  fail "--compare: rc $? $(cat "$T/err")"
jcheck "$T/cmp.json" "j['compare']['name'] == 'dt_segm.json' and len(j['compare']['stats']) == 12 and all(set(x) >= {'id', 'ap', 'other_ap', 'delta'} for x in j['compare']['per_category']) and j['confusion']['score_thr'] == 0.5 and j['confusion']['iou_thr'] == 0.6" "--compare / thresholds"
grep -q 'id="bbox-compare"' "$T/cmp.html" || fail "--compare: no comparison section"

# 4. model mode on a synthetic set with the demo detector: bbox + segm in one report, thumbnails
"$BIN" --quiet synth --task det --out-dir "$T/det" --count 4 --seed 3 --backgrounds none > /dev/null 2>&1 || fail "synth det"
"$BIN" --quiet eval coco --ann "$T/det/annotations/instances.json" --images "$T/det/images" --weights demo-det \
  --report "$T/model.html" --report-json "$T/model.json" > "$T/stdout" 2> "$T/err" || fail "model mode: rc $? $(cat "$T/err")"
jcheck "$T/model.json" "j['iou_type'] == 'bbox' and all(w.get('thumbnail', '').startswith('data:image/jpeg;base64,') for w in j['worst_images'])" "model mode: bbox JSON with thumbnails"
sections "$T/model.html" bbox
grep -q 'id="segm-' "$T/model.html" && fail "model mode: a box-only model's report has a mask part"
# a model with masks (the e2e Mask R-CNN fixture): a box and a mask part in one HTML, the mask
# analysis in the --report-json's .segm.json sibling
"$BIN" --quiet --threads 1 eval coco --ann "$T/det/annotations/instances.json" --images "$T/det/images" \
  --weights "$FIX/e2e/mask_rcnn/checkpoint.pth" --report "$T/mr.html" --report-json "$T/mr.json" > "$T/stdout" 2> "$T/err" ||
  fail "model mode, masks: rc $? $(cat "$T/err")"
jcheck "$T/mr.json" "j['iou_type'] == 'bbox'" "model mode, masks: bbox JSON"
jcheck "$T/mr.segm.json" "j['iou_type'] == 'segm' and len(j['pr']['precision']) == 10" "model mode, masks: segm JSON"
sections "$T/mr.html" bbox
sections "$T/mr.html" segm
# results mode with --images: thumbnails too
"$BIN" --quiet detect --weights demo-det --json "$T/dets.json" "$T/det/images"/*.jpg > /dev/null 2> "$T/err" ||
  fail "detect demo-det: rc $? $(cat "$T/err")"
"$BIN" --quiet eval coco --ann "$T/det/annotations/instances.json" --results "$T/dets.json" --images "$T/det/images" \
  --report-json "$T/thumbs.json" > /dev/null 2> "$T/err" || fail "results mode --images: rc $? $(cat "$T/err")"
jcheck "$T/thumbs.json" "len(j['worst_images']) > 0 and all(w['thumbnail'].startswith('data:image/jpeg;base64,') for w in j['worst_images'])" "results mode --images: no thumbnail"

# 5. ADE20K: label PNGs, and the demo segmentor on a synthetic set
m=$FIX/miou/01_small
"$BIN" --quiet eval ade20k --pred-dir "$m/pred" --gt-dir "$m/gt" --pred-zero-based --json "$T/a.json" \
  --report "$T/ade.html" --report-json "$T/ade.json" > /dev/null 2> "$T/err" || fail "ade20k: rc $? $(cat "$T/err")"
jcheck "$T/ade.json" "(lambda a: j['mIoU'] == a['mIoU'] and j['IoU'] == a['IoU'] and len(j['confusion']['counts']) == 150 and len(j['worst_images']) > 0)(json.load(open('$T/a.json')))" "ade20k: numbers or contract"
for s in summary classes confusion worst; do grep -q "id=\"ade20k-$s\"" "$T/ade.html" || fail "ade20k: no section $s"; done
"$BIN" --quiet synth --task seg --out-dir "$T/seg" --count 3 --seed 2 --backgrounds none > /dev/null 2>&1 || fail "synth seg"
"$BIN" --quiet eval ade20k --root "$T/seg" --weights demo --report "$T/seg.html" --report-json "$T/seg.json" > /dev/null 2> "$T/err" ||
  fail "ade20k model mode: rc $? $(cat "$T/err")"
jcheck "$T/seg.json" "len(j['IoU']) == len(j['names']) and all(w['thumbnail'].startswith('data:image/jpeg;base64,') for w in j['worst_images'])" "ade20k model mode: thumbnails"

# 6. errors: usage (2) and files (1), with one-line messages
g=$DATA/analysis/tide/01_mixed
expect_err 2 "--compare needs --report" "$BIN" eval coco --ann "$g/gt.json" --results "$g/dt_bbox.json" --compare "$g/dt_bbox.json"
expect_err 2 "conf-iou-thr" "$BIN" eval coco --ann "$g/gt.json" --results "$g/dt_bbox.json" --report-json - --conf-iou-thr 2
expect_err 2 "need --report" "$BIN" eval coco --ann "$g/gt.json" --results "$g/dt_bbox.json" --conf-score-thr 0.5
expect_err 2 "stdout" "$BIN" eval coco --ann "$g/gt.json" --results "$g/dt_bbox.json" --json - --report-json -
expect_err 1 "no-such-dir" "$BIN" eval coco --ann "$g/gt.json" --results "$g/dt_bbox.json" --report "$T/no-such-dir/r.html"
expect_err 1 "missing.json" "$BIN" eval coco --ann "$g/gt.json" --results "$g/dt_bbox.json" --report-json "$T/x.json" --compare "$T/missing.json"
[ -e "$T/x.json" ] && fail "a failed run left its --report-json"
cp "$g/dt_bbox.json" "$T/dt.json"
expect_err 2 "refusing to write over an input" "$BIN" eval coco --ann "$g/gt.json" --results "$T/dt.json" --report-json "$T/dt.json"
cmp -s "$g/dt_bbox.json" "$T/dt.json" || fail "--report-json wrote over --results"
expect_err 1 "no-such-dir" "$BIN" eval ade20k --pred-dir "$m/pred" --gt-dir "$m/gt" --pred-zero-based --report "$T/no-such-dir/r.html"
expect_err 2 "unknown option" "$BIN" eval ade20k --pred-dir "$m/pred" --gt-dir "$m/gt" --report-json - --compare x.json
"$BIN" eval coco --help | grep -q -- "--report FILE" || fail "eval coco --help lacks --report"
"$BIN" eval ade20k --help | grep -q -- "--report-json" || fail "eval ade20k --help lacks --report-json"

[ $fails -eq 0 ] && echo "test_eval_report: all checks passed" || { echo "test_eval_report: $fails failure(s)"; exit 1; }
