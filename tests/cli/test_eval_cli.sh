#!/usr/bin/env bash
# CLI end-to-end test of `ravlt eval`: pycocotools' summary text for every coco_eval case
# (bbox and segm), mmseg's numbers on the miou cases, the --json outputs, and clear errors
# with non-zero exits on bad input.
#   bash tests/cli/test_eval_cli.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1
DATA=$3/eval
FIX=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_rc RC "grep pattern for stderr" cmd...
expect_err() {
  local rc=$1 pat=$2
  shift 2
  "$@" > "$T/out" 2> "$T/err"
  local got=$?
  [ "$got" = "$rc" ] || fail "rc $got (want $rc): $* -- $(cat "$T/err")"
  grep -q -- "$pat" "$T/err" || fail "stderr lacks '$pat': $* -- $(cat "$T/err")"
  [ "$(wc -l < "$T/err")" -le 3 ] || fail "more than a short message: $*"
}

# 1. summaries identical to pycocotools
n=0
for d in "$FIX"/coco_eval/*/; do
  c=$(basename "$d")
  for iou in bbox segm; do
    "$BIN" --quiet eval coco --ann "$d/gt.json" --results "$d/dt_$iou.json" --iou-type $iou \
      --json "$T/$c.$iou.json" > "$T/stdout" 2> "$T/err" || fail "$c $iou: rc $? $(cat "$T/err")"
    head -n 12 "$T/stdout" > "$T/summary"
    cmp -s "$T/summary" "$DATA/cli/${c}_$iou.summary.txt" || { fail "$c $iou summary differs"; diff "$T/summary" "$DATA/cli/${c}_$iou.summary.txt" | head -5; }
    grep -q "^per-category AP" "$T/stdout" || fail "$c $iou: no per-category table"
    grep -q "\"iou_type\": \"$iou\", \"stats\": \[" "$T/$c.$iou.json" || fail "$c $iou: --json content"
    n=$((n + 1))
  done
done
[ $n -ge 12 ] || fail "only $n coco runs"

# mmdet maxDets and mask area mode run and say so
F=$FIX/coco_eval/04_maxdets
"$BIN" --quiet eval coco --ann "$F/gt.json" --results "$F/dt_segm.json" --iou-type segm --mmdet-maxdets \
  --area-mode mask --json "$T/mm.json" > "$T/stdout" 2>&1 || fail "mmdet maxdets rc"
grep -q "maxDets=1000 \] = " "$T/stdout" || fail "mmdet maxDets line"
grep -q '"max_dets": \[100, 300, 1000\], "area_mode": "mask"' "$T/mm.json" || fail "mmdet json"

# 2. ADE20K
for d in "$FIX"/miou/*/; do
  c=$(basename "$d")
  "$BIN" --quiet eval ade20k --pred-dir "$d/pred" --gt-dir "$d/gt" --pred-zero-based --json "$T/$c.json" \
    > "$T/stdout" 2> "$T/err" || fail "ade20k $c: rc $? $(cat "$T/err")"
  grep -qxF -- "$(cat "$DATA/cli/miou_$c.txt")" "$T/stdout" || fail "ade20k $c: numbers differ"
  grep -q '"IoU": \[' "$T/$c.json" || fail "ade20k $c json"
  grep -q 'null' "$T/$c.json" || fail "ade20k $c json has no null for absent classes"
done
# --root layout
mkdir -p "$T/ade/images/validation" "$T/ade/annotations/validation"
cp "$FIX"/miou/01_small/gt/*.png "$T/ade/annotations/validation/"
"$BIN" --quiet eval ade20k --root "$T/ade" --pred-dir "$FIX/miou/01_small/pred" --pred-zero-based > "$T/stdout" 2>&1 ||
  fail "ade20k --root"
grep -qxF -- "$(cat "$DATA/cli/miou_01_small.txt")" "$T/stdout" || fail "ade20k --root numbers"

# 3. help and usage errors
"$BIN" eval --help > /dev/null || fail "eval --help"
"$BIN" eval coco --help | grep -q -- "--iou-type" || fail "eval coco --help"
"$BIN" eval ade20k --help | grep -q -- "--pred-zero-based" || fail "eval ade20k --help"
G=$FIX/coco_eval/01_tiny/gt.json
expect_err 2 "ann" "$BIN" eval coco --results x.json
expect_err 2 "needs --results" "$BIN" eval coco --ann "$G"
expect_err 2 "bbox or segm" "$BIN" eval coco --ann "$G" --results x.json --iou-type keypoints
expect_err 2 "unknown dataset" "$BIN" eval voc
expect_err 2 "unknown option" "$BIN" eval coco --ann "$G" --results x.json --bogus
expect_err 1 "w.pth: cannot open" "$BIN" eval coco --ann "$G" --images "$T" --weights w.pth

# 4. bad input files: one clear line naming the file and entry, non-zero exit
expect_err 1 "missing.json: cannot open" "$BIN" eval coco --ann "$T/missing.json" --results x.json
printf '{"images": [' > "$T/trunc.json"
expect_err 1 "trunc.json: malformed JSON" "$BIN" eval coco --ann "$T/trunc.json" --results x.json
printf '[{"image_id": 566118, "category_id": 1, "bbox": [1,2,3,4], "score": 0.5}, {"image_id": 42, "category_id": 1, "bbox": [1,2,3,4], "score": 0.5}]' > "$T/unk.json"
expect_err 1 "unk.json: results\[1\]: image_id 42 is not in the ground truth" "$BIN" eval coco --ann "$G" --results "$T/unk.json"
printf '[{"image_id": 566118, "category_id": 1, "score": 0.5, "segmentation": {"size": [174, 172], "counts": "X[3~4S"}}]' > "$T/rle.json"
expect_err 1 "rle.json: results\[0\]: .*corrupt RLE" "$BIN" eval coco --ann "$G" --results "$T/rle.json" --iou-type segm
printf '[{"image_id": 566118, "category_id": 1, "score": 0.5, "segmentation": {"size": [10, 10], "counts": "T3"}}]' > "$T/size.json"
# a mask of another size than its image is read and evaluated as pycocotools does (IoU -1 with
# the gt: it never matches), not refused
if out=$("$BIN" --quiet eval coco --ann "$G" --results "$T/size.json" --iou-type segm 2>&1); then
  echo "$out" | grep 'Average Precision  (AP) @\[ IoU=0.50:0.95 | area=   all | maxDets=100 \] = 0.000' > /dev/null \
    || { echo "FAIL: size.json: no AP 0.000 line: $out"; fails=$((fails + 1)); }
else
  echo "FAIL: size.json refused: $out"; fails=$((fails + 1))
fi
expect_err 1 "img_00.png: missing prediction" "$BIN" eval ade20k --pred-dir "$T" --gt-dir "$FIX/miou/01_small/gt"
expect_err 1 "not an ADE20K folder" "$BIN" eval ade20k --root "$T/nothing" --pred-dir "$T"
# a JSON output that cannot be written leaves nothing behind
F=$FIX/coco_eval/01_tiny
expect_err 1 "cannot write" "$BIN" --quiet eval coco --ann "$F/gt.json" --results "$F/dt_bbox.json" --json "$T/no/such/dir/o.json"

if [ $fails -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "eval CLI: all checks passed ($n coco runs)"
