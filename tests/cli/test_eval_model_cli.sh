#!/usr/bin/env bash
# CLI end-to-end test of the model-driven `ravlt eval` modes, `--shard i/N` and `ravlt merge`,
# with the small fixture models on a generated COCO-format set and an ADE20K-format set:
#  - eval coco --weights (Mask R-CNN: bbox + segm; RetinaNet: bbox) runs, prints the stats,
#    writes the same results files as `ravlt detect --json`, and evaluating those files with
#    --results gives bit-identical stats (the --json outputs are compared as text, %.17g);
#  - 3 shards + merge give the single-run numbers (COCO stats identical; ADE20K int64 areas
#    byte-identical); missing, duplicated, overlapping shards are refused;
#  - eval ade20k --weights gives the numbers of its own --out-dir PNGs evaluated by --pred-dir.
#   bash tests/cli/test_eval_model_cli.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1
FIX=$2
DATA=$3/evalrun
MR=$FIX/e2e/mask_rcnn/checkpoint.pth
RN=$FIX/e2e/retinanet/checkpoint.pth
SF=$FIX/e2e/semantic_fpn/checkpoint.pth
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for f in "$MR" "$RN" "$SF" "$DATA/coco/img1.jpg" "$DATA/ade/images/validation/ADE_val_00000001.jpg"; do
  [ -f "$f" ] || { echo "FAIL: missing fixture $f"; exit 1; }
done
# one thread per run: the CPU work is the same and the test does not depend on the load
R() { "$BIN" --quiet --threads 1 "$@"; }
# expect_err RC "stderr pattern" cmd...: exit code, one short message
expect_err() {
  local rc=$1 pat=$2
  shift 2
  "$@" > "$T/out" 2> "$T/err"
  local got=$?
  [ "$got" = "$rc" ] || fail "rc $got (want $rc): $* -- $(cat "$T/err")"
  grep -q -- "$pat" "$T/err" || fail "stderr lacks '$pat': $* -- $(cat "$T/err")"
  [ "$(wc -l < "$T/err")" -le 3 ] || fail "more than a short message: $*"
}
stats() { grep -o '"stats": \[[^]]*\]' "$1"; }
same_stats() { # same_stats A.json B.json what
  local a b
  a=$(stats "$1") b=$(stats "$2")
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "$3: stats differ: $a vs $b"
}

# ---- generated COCO-format set: 3 photographs, ids not in file order ----
mkdir -p "$T/coco"
cp "$DATA"/coco/img*.jpg "$T/coco/"
cat > "$T/gt.json" <<'JSON'
{"images": [
  {"id": 3, "file_name": "img3.jpg", "width": 640, "height": 120},
  {"id": 1, "file_name": "img1.jpg", "width": 548, "height": 110},
  {"id": 2, "file_name": "img2.jpg", "width": 512, "height": 110}],
 "categories": [{"id": 1, "name": "person"}, {"id": 8, "name": "truck"}, {"id": 22, "name": "elephant"},
                {"id": 37, "name": "sports ball"}, {"id": 47, "name": "cup"}, {"id": 54, "name": "sandwich"}],
 "annotations": [
  {"id": 1, "image_id": 1, "category_id": 8, "bbox": [297, 0, 62, 61], "area": 3600, "iscrowd": 0,
   "segmentation": [[297, 0, 359, 0, 359, 61, 330, 50, 297, 61]]},
  {"id": 2, "image_id": 1, "category_id": 22, "bbox": [38, 10, 88, 100], "area": 8800, "iscrowd": 0,
   "segmentation": [[38, 10, 126, 10, 126, 109, 38, 109]]},
  {"id": 3, "image_id": 1, "category_id": 47, "bbox": [211, 3, 26, 24], "area": 600, "iscrowd": 0,
   "segmentation": [[211, 3, 237, 3, 237, 27, 211, 27]]},
  {"id": 4, "image_id": 1, "category_id": 37, "bbox": [182, 92, 34, 16], "area": 540, "iscrowd": 0,
   "segmentation": [[182, 92, 216, 92, 216, 108, 182, 108]]},
  {"id": 5, "image_id": 1, "category_id": 1, "bbox": [300, 20, 60, 80], "area": 4500, "iscrowd": 0,
   "segmentation": [[300, 20, 360, 20, 350, 100, 310, 100]]},
  {"id": 6, "image_id": 2, "category_id": 8, "bbox": [288, 1, 58, 57], "area": 3300, "iscrowd": 0,
   "segmentation": [[288, 1, 346, 1, 346, 58, 288, 58]]},
  {"id": 7, "image_id": 2, "category_id": 8, "bbox": [353, 0, 54, 53], "area": 2800, "iscrowd": 0,
   "segmentation": [[353, 0, 407, 0, 407, 53, 353, 53]]},
  {"id": 8, "image_id": 2, "category_id": 22, "bbox": [20, 0, 80, 110], "area": 8800, "iscrowd": 0,
   "segmentation": [[20, 0, 100, 0, 100, 109, 20, 109]]},
  {"id": 9, "image_id": 2, "category_id": 37, "bbox": [419, 84, 74, 14], "area": 1000, "iscrowd": 0,
   "segmentation": [[419, 84, 493, 84, 493, 98, 419, 98]]},
  {"id": 10, "image_id": 2, "category_id": 54, "bbox": [7, 59, 19, 49], "area": 900, "iscrowd": 1,
   "segmentation": [[7, 59, 26, 59, 26, 108, 7, 108]]},
  {"id": 11, "image_id": 3, "category_id": 8, "bbox": [579, 58, 48, 62], "area": 2900, "iscrowd": 0,
   "segmentation": [[579, 58, 627, 58, 627, 119, 579, 119]]},
  {"id": 12, "image_id": 3, "category_id": 8, "bbox": [296, 54, 46, 66], "area": 3000, "iscrowd": 0,
   "segmentation": [[296, 54, 342, 54, 342, 119, 296, 119]]},
  {"id": 13, "image_id": 3, "category_id": 8, "bbox": [227, 53, 46, 67], "area": 3000, "iscrowd": 0,
   "segmentation": [[227, 53, 273, 53, 273, 119, 227, 119]]},
  {"id": 14, "image_id": 3, "category_id": 37, "bbox": [318, 92, 51, 27], "area": 1300, "iscrowd": 0,
   "segmentation": [[318, 92, 369, 92, 369, 119, 318, 119]]},
  {"id": 15, "image_id": 3, "category_id": 22, "bbox": [2, 0, 102, 119], "area": 12000, "iscrowd": 0,
   "segmentation": [[2, 0, 104, 0, 104, 119, 2, 119]]},
  {"id": 16, "image_id": 3, "category_id": 47, "bbox": [327, 41, 55, 21], "area": 1100, "iscrowd": 0,
   "segmentation": [[327, 41, 382, 41, 382, 62, 327, 62]]}]}
JSON
G=$T/gt.json

# 1. Mask R-CNN in memory: bbox + segm
R eval coco --ann "$G" --images "$T/coco" --weights "$MR" --output "$T/r.json" --json "$T/s.json" > "$T/stdout" 2> "$T/err" ||
  fail "eval coco mask_rcnn: $(cat "$T/err")"
grep -q "^iou_type: bbox" "$T/stdout" && grep -q "^iou_type: segm" "$T/stdout" || fail "mask_rcnn: bbox and segm summaries"
[ "$(grep -c "Average Precision  (AP) @\[ IoU=0.50:0.95 | area=   all | maxDets=100 \]" "$T/stdout")" = 2 ] ||
  fail "mask_rcnn: two AP lines"
[ -f "$T/r.json" ] && [ -f "$T/r.segm.json" ] && [ -f "$T/s.segm.json" ] || fail "mask_rcnn: output files"
stats "$T/s.json" | grep -q '"stats": \[0\.[0-9]' || fail "mask_rcnn: bbox AP should be > 0 on this gt: $(stats "$T/s.json")"

# 2. `ravlt detect --json` writes the same files, and --results gives the same stats
R detect --weights "$MR" --json "$T/d.json" --no-draw "$T/coco" 2> "$T/err" || fail "detect: $(cat "$T/err")"
cmp -s "$T/d.json" "$T/r.json" || fail "detect --json and eval --out bbox results differ"
cmp -s "$T/d.segm.json" "$T/r.segm.json" || fail "detect --json and eval --out segm results differ"
R eval coco --ann "$G" --results "$T/d.json" --iou-type bbox --json "$T/e.json" > /dev/null || fail "eval --results bbox"
R eval coco --ann "$G" --results "$T/d.segm.json" --iou-type segm --json "$T/e.segm.json" > /dev/null || fail "eval --results segm"
same_stats "$T/s.json" "$T/e.json" "in-memory vs detect --json (bbox)"
same_stats "$T/s.segm.json" "$T/e.segm.json" "in-memory vs detect --json (segm)"

# 3. three shards + merge = the single run
for i in 0 1 2; do
  R eval coco --ann "$G" --images "$T/coco" --weights "$MR" --shard $i/3 --output "$T/p$i.json" > "$T/stdout" 2> "$T/err" ||
    fail "shard $i: $(cat "$T/err")"
  [ -f "$T/p$i.shard.json" ] && [ -f "$T/p$i.segm.json" ] || fail "shard $i: part files"
  [ -s "$T/stdout" ] && fail "shard $i printed stats (it should only write its part)"
done
grep -q '"id": 2,' "$T/p1.shard.json" || fail "shard 1/3 should hold image id 2 (sorted ids, interleaved)"
R merge "$T/p0.json" "$T/p2.shard.json" "$T/p1.json" --json "$T/m.json" --output "$T/mr.json" > "$T/stdout" 2> "$T/err" ||
  fail "merge: $(cat "$T/err")"
same_stats "$T/s.json" "$T/m.json" "merge of 3 shards (bbox)"
same_stats "$T/s.segm.json" "$T/m.segm.json" "merge of 3 shards (segm)"
R eval coco --ann "$G" --results "$T/mr.segm.json" --iou-type segm --json "$T/mr_e.json" > /dev/null || fail "eval merged results"
same_stats "$T/s.segm.json" "$T/mr_e.json" "merged results file (segm)"
expect_err 1 "shard 2/3 is missing" "$BIN" merge "$T/p0.json" "$T/p1.json"
expect_err 1 "shard 1/3 given twice" "$BIN" merge "$T/p0.json" "$T/p1.json" "$T/p1.shard.json" "$T/p2.json"
sed 's/"shard": 1,/"shard": 2,/' "$T/p1.shard.json" > "$T/fake.shard.json"
expect_err 1 "image id 2 is in two parts" "$BIN" merge "$T/p0.json" "$T/p1.json" "$T/fake.shard.json"
expect_err 1 "without its part description" "$BIN" merge "$T/d.json"
[ -e "$T/none.json" ] && fail "merge left output"

# 4. RetinaNet: in memory vs detect --shard parts merged against the gt
R eval coco --ann "$G" --images "$T/coco" --weights "$RN" --json "$T/rs.json" > "$T/stdout" 2> "$T/err" ||
  fail "eval coco retinanet: $(cat "$T/err")"
grep -q "^iou_type" "$T/stdout" && fail "retinanet has no masks: only bbox"
grep -q "Average Recall     (AR) @\[ IoU=0.50:0.95 | area=   all | maxDets=100 \]" "$T/stdout" || fail "retinanet summary"
for i in 0 1 2; do
  R detect --weights "$RN" --shard $i/3 --json "$T/q$i.json" --no-draw "$T/coco" 2> "$T/err" || fail "detect shard $i: $(cat "$T/err")"
done
R merge --ann "$G" "$T"/q?.json --json "$T/rm.json" > /dev/null 2> "$T/err" || fail "merge detect parts: $(cat "$T/err")"
same_stats "$T/rs.json" "$T/rm.json" "retinanet: eval in memory vs detect shards merged"
expect_err 2 "give --ann" "$BIN" merge "$T"/q?.json
R merge --output "$T/qm.json" "$T"/q?.json 2> "$T/err" || fail "merge --out without gt: $(cat "$T/err")"
R eval coco --ann "$G" --results "$T/qm.json" --json "$T/qe.json" > /dev/null || fail "eval of merged detect parts"
same_stats "$T/rs.json" "$T/qe.json" "retinanet: merged detect results file"
# a RetinaNet part among Mask R-CNN parts: another run (its masks differ too), refused by the run digest
expect_err 1 "come from different runs" "$BIN" merge "$T/q0.json" "$T/p1.json" "$T/p2.json"
sed 's/"num_shards": 3,/"num_shards": 4,/' "$T/p1.shard.json" > "$T/other.shard.json"
expect_err 1 "come from different runs" "$BIN" merge "$T/p0.json" "$T/other.shard.json" "$T/p2.json"

# 5. ADE20K with the Semantic FPN fixture
A=$DATA/ade
R eval ade20k --root "$A" --weights "$SF" --out-dir "$T/preds" --json "$T/a.json" --output "$T/a.part.json" > "$T/stdout" 2> "$T/err" ||
  fail "eval ade20k: $(cat "$T/err")"
grep -q "^  aAcc [0-9.]*  mIoU [0-9.]*  mAcc [0-9.]*   (3 images)" "$T/stdout" || fail "ade20k summary: $(tail -3 "$T/stdout")"
[ "$(ls "$T/preds" | wc -l)" = 3 ] || fail "--pred-out: 3 PNGs"
R eval ade20k --root "$A" --pred-dir "$T/preds" --json "$T/a2.json" > /dev/null 2> "$T/err" || fail "eval of --pred-out: $(cat "$T/err")"
cmp -s "$T/a.json" "$T/a2.json" || fail "ade20k in memory vs its PNGs: $(cat "$T/a.json") vs $(cat "$T/a2.json")"
for i in 0 1 2; do
  R eval ade20k --root "$A" --weights "$SF" --shard $i/3 --output "$T/ap$i.json" > "$T/stdout" 2> "$T/err" || fail "ade shard $i: $(cat "$T/err")"
  [ -s "$T/stdout" ] && fail "ade shard $i printed a table"
done
R merge "$T"/ap?.json --json "$T/am.json" --output "$T/am.part.json" > "$T/stdout" 2> "$T/err" || fail "merge ade: $(cat "$T/err")"
cmp -s "$T/a.json" "$T/am.json" || fail "ade20k merge of 3 shards differs from the single run"
cmp -s "$T/a.part.json" "$T/am.part.json" || fail "ade20k merged int64 areas differ from the single run"
expect_err 1 "shard 0/3 is missing" "$BIN" merge "$T/ap1.json" "$T/ap2.json"
# more shards than images: shard 3/4 is empty and still a part
for i in 0 1 2 3; do
  R eval ade20k --root "$A" --weights "$SF" --shard $i/4 --output "$T/aq$i.json" 2> "$T/err" || fail "ade shard $i/4: $(cat "$T/err")"
done
grep -q '"images": \[\]' "$T/aq3.json" || fail "shard 3/4 should list no images"
R merge "$T"/aq?.json --json "$T/aqm.json" > /dev/null 2> "$T/err" || fail "merge 4 ade shards: $(cat "$T/err")"
cmp -s "$T/a.json" "$T/aqm.json" || fail "ade20k merge of 4 shards (one empty) differs from the single run"
expect_err 1 "different kinds" "$BIN" merge "$T/ap0.json" "$T/p1.json"

# 6. segment --shard: only its images
R segment --weights "$SF" --shard 1/3 --format png --out-dir "$T/segs" "$A/images/validation" 2> "$T/err" || fail "segment --shard: $(cat "$T/err")"
[ "$(ls "$T/segs")" = "ADE_val_00000002.png" ] || fail "segment --shard 1/3 wrote: $(ls "$T/segs")"

# 7. usage errors and failures
expect_err 2 "i/N" "$BIN" eval coco --ann "$G" --images "$T/coco" --weights "$MR" --shard 3/3 --output "$T/x.json"
expect_err 2 "needs --out" "$BIN" eval coco --ann "$G" --images "$T/coco" --weights "$MR" --shard 0/2
expect_err 2 "give it to 'ravlt merge'" "$BIN" eval ade20k --root "$A" --weights "$SF" --shard 0/2 --output "$T/x.json" --json "$T/y.json"
expect_err 2 "needs --images" "$BIN" eval coco --ann "$G" --weights "$MR"
expect_err 2 "model mode" "$BIN" eval coco --ann "$G" --results "$T/d.json" --shard 0/2
expect_err 2 "i/N" "$BIN" eval ade20k --root "$A" --weights "$SF" --shard 1/0 --output "$T/x.json"
expect_err 2 "i/N" "$BIN" detect --weights "$MR" --shard x "$T/coco"
expect_err 1 "not a detector" "$BIN" eval coco --ann "$G" --images "$T/coco" --weights "$SF"
expect_err 1 "not a segmentor" "$BIN" eval ade20k --root "$A" --weights "$MR"
expect_err 1 "no part files\|ravlt_part" "$BIN" merge "$G"
printf '{"ravlt_part": "ade20k", "shard": 0' > "$T/trunc_part.json"
expect_err 1 "trunc_part.json: malformed JSON" "$BIN" merge "$T/trunc_part.json"
printf '{"ravlt_part": "ade20k", "shard": 5, "num_shards": 2, "total": 3, "images": []}' > "$T/badshard.json"
expect_err 1 "badshard.json: 'shard' must be an integer 0..1" "$BIN" merge "$T/badshard.json"
sed 's/"intersect": \[/"intersect": [-1, /' "$T/ap0.json" > "$T/negative.json"
expect_err 1 "negative.json: 'intersect' must be a list of 150 counts" "$BIN" merge "$T/negative.json" "$T/ap1.json" "$T/ap2.json"
expect_err 2 "no part files" "$BIN" merge
# an image that cannot be read: clear error naming it, no part left behind
sed 's/"id": 3, "file_name": "img3.jpg"/"id": 0, "file_name": "gone.jpg"/' "$G" > "$T/gt_bad.json"
expect_err 1 "image 0 (gone.jpg)" "$BIN" eval coco --ann "$T/gt_bad.json" --images "$T/coco" --weights "$MR" --shard 0/2 --output "$T/bad.json"
ls "$T"/bad.* > /dev/null 2>&1 && fail "a failed shard left files: $(ls "$T"/bad.*)"

if [ $fails -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "eval model CLI: all checks passed"
