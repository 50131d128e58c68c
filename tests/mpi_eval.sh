#!/usr/bin/env bash
# `mpirun -np 2 ravlt eval` end to end (registered by CMake only when -DRAVLT_MPI=ON, as
# test mpi_eval; a build without MPI has no such test rather than a skipped one):
#  - eval coco (Mask R-CNN fixture, bbox + segm) and eval ade20k (Semantic FPN fixture) on the
#    small sets of tests/data/evalrun give exactly the one-process numbers: the --json
#    summaries (stats / per-class values as %.17g) and the ADE20K int64 area part are
#    byte-identical; rank 0 alone prints one report; the results file rank 0 writes evaluates
#    to the same stats;
#  - rank 0 states ranks and threads per rank at start;
#  - an image failing on rank 1 is reported by rank and image id, every rank exits non-zero
#    and no results file is written; commands other than eval and --shard are refused.
#   bash tests/mpi_eval.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR [MPIEXEC]
set -u
BIN=$1
FIX=$2
DATA=$3/evalrun
MPIEXEC=${4:-mpirun}
MR=$FIX/e2e/mask_rcnn/checkpoint.pth
SF=$FIX/e2e/semantic_fpn/checkpoint.pth
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for f in "$MR" "$SF" "$DATA/coco/img1.jpg" "$DATA/ade/images/validation/ADE_val_00000001.jpg"; do
  [ -f "$f" ] || { echo "FAIL: missing fixture $f"; exit 1; }
done
"$BIN" --version | grep -q "(MPI)" || { echo "FAIL: $BIN was not built with MPI ($("$BIN" --version))"; exit 1; }
command -v "$MPIEXEC" > /dev/null || { echo "FAIL: no $MPIEXEC"; exit 1; }
# one-process runs with one thread; 2 ranks choose their threads (2 cores / 2 ranks here)
R() { "$BIN" --threads 1 "$@"; }
# root in containers, more ranks than cores allowed, no CMA single-copy (ptrace-restricted)
M() { "$MPIEXEC" --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -np 2 "$BIN" "$@"; }
stats() { grep -o '"stats": \[[^]]*\]' "$1"; }

# ---- COCO-format set: the 3 photographs of test_eval_model_cli.sh, ids not in file order ----
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
  {"id": 5, "image_id": 1, "category_id": 1, "bbox": [300, 20, 60, 80], "area": 4500, "iscrowd": 0,
   "segmentation": [[300, 20, 360, 20, 350, 100, 310, 100]]},
  {"id": 6, "image_id": 2, "category_id": 8, "bbox": [288, 1, 58, 57], "area": 3300, "iscrowd": 0,
   "segmentation": [[288, 1, 346, 1, 346, 58, 288, 58]]},
  {"id": 8, "image_id": 2, "category_id": 22, "bbox": [20, 0, 80, 110], "area": 8800, "iscrowd": 0,
   "segmentation": [[20, 0, 100, 0, 100, 109, 20, 109]]},
  {"id": 10, "image_id": 2, "category_id": 54, "bbox": [7, 59, 19, 49], "area": 900, "iscrowd": 1,
   "segmentation": [[7, 59, 26, 59, 26, 108, 7, 108]]},
  {"id": 11, "image_id": 3, "category_id": 8, "bbox": [579, 58, 48, 62], "area": 2900, "iscrowd": 0,
   "segmentation": [[579, 58, 627, 58, 627, 119, 579, 119]]},
  {"id": 13, "image_id": 3, "category_id": 8, "bbox": [227, 53, 46, 67], "area": 3000, "iscrowd": 0,
   "segmentation": [[227, 53, 273, 53, 273, 119, 227, 119]]},
  {"id": 15, "image_id": 3, "category_id": 22, "bbox": [2, 0, 102, 119], "area": 12000, "iscrowd": 0,
   "segmentation": [[2, 0, 104, 0, 104, 119, 2, 119]]},
  {"id": 16, "image_id": 3, "category_id": 47, "bbox": [327, 41, 55, 21], "area": 1100, "iscrowd": 0,
   "segmentation": [[327, 41, 382, 41, 382, 62, 327, 62]]}]}
JSON
G=$T/gt.json

# 1. COCO: one process vs 2 ranks
R eval coco --ann "$G" --images "$T/coco" --weights "$MR" --json "$T/s.json" > "$T/s.out" 2> "$T/err" ||
  fail "one-process eval coco: $(cat "$T/err")"
stats "$T/s.json" | grep -q '"stats": \[0\.[0-9]' || fail "bbox AP should be > 0 on this gt: $(stats "$T/s.json")"
M eval coco --ann "$G" --images "$T/coco" --weights "$MR" --json "$T/m.json" --output "$T/mr.json" > "$T/m.out" 2> "$T/err" ||
  fail "mpirun eval coco: $(cat "$T/err")"
grep -q "ravlt: MPI: 2 ranks: waited .* gathered [0-9]* detections" "$T/err" || fail "rank 0 should log the gather: $(cat "$T/err")"
grep -q "^ravlt: MPI: 2 ranks (2 on this node), [0-9]* threads\? per rank" "$T/err" || fail "no ranks/threads line: $(cat "$T/err")"
[ "$(grep -c "ravlt: MPI: .* per rank" "$T/err")" = 1 ] || fail "the ranks/threads line should come from rank 0 only"
cmp -s "$T/s.json" "$T/m.json" || fail "coco bbox: 2 ranks $(stats "$T/m.json") vs one process $(stats "$T/s.json")"
cmp -s "$T/s.segm.json" "$T/m.segm.json" || fail "coco segm: 2 ranks $(stats "$T/m.segm.json") vs one process $(stats "$T/s.segm.json")"
cmp -s "$T/s.out" "$T/m.out" || fail "2 ranks printed other stdout than one process: $(diff "$T/s.out" "$T/m.out" | head -5)"
[ "$(grep -c "Average Precision  (AP) @\[ IoU=0.50:0.95 | area=   all | maxDets=100 \]" "$T/m.out")" = 2 ] ||
  fail "2 ranks: one bbox and one segm report"
R eval coco --ann "$G" --results "$T/mr.segm.json" --iou-type segm --json "$T/e.json" > /dev/null 2> "$T/err" ||
  fail "eval of the 2-rank results: $(cat "$T/err")"
[ "$(stats "$T/e.json")" = "$(stats "$T/s.segm.json")" ] || fail "2-rank results file: $(stats "$T/e.json")"
R eval coco --ann "$G" --results "$T/mr.json" --iou-type bbox --json "$T/eb.json" > /dev/null 2> "$T/err" ||
  fail "eval of the 2-rank bbox results: $(cat "$T/err")"
[ "$(stats "$T/eb.json")" = "$(stats "$T/s.json")" ] || fail "2-rank bbox results file: $(stats "$T/eb.json")"

# 2. ADE20K: one process vs 2 ranks (3 images: rank 0 two, rank 1 one)
A=$DATA/ade
R eval ade20k --root "$A" --weights "$SF" --json "$T/a.json" --output "$T/a.part.json" > "$T/a.out" 2> "$T/err" ||
  fail "one-process eval ade20k: $(cat "$T/err")"
M eval ade20k --root "$A" --weights "$SF" --json "$T/am.json" --output "$T/am.part.json" > "$T/am.out" 2> "$T/err" ||
  fail "mpirun eval ade20k: $(cat "$T/err")"
cmp -s "$T/a.json" "$T/am.json" || fail "ade20k: 2 ranks $(cat "$T/am.json") vs one process $(cat "$T/a.json")"
cmp -s "$T/a.part.json" "$T/am.part.json" || fail "ade20k: int64 areas of 2 ranks differ from one process"
cmp -s "$T/a.out" "$T/am.out" || fail "ade20k: 2 ranks printed another table: $(diff "$T/a.out" "$T/am.out" | head -5)"
grep -q "(3 images)" "$T/am.out" || fail "ade20k 2 ranks: summary of 3 images"

# 3. failures: an image of rank 1 (sorted id 2 -> k = 1) is missing
sed 's/"id": 2, "file_name": "img2.jpg"/"id": 2, "file_name": "gone.jpg"/' "$G" > "$T/gt_bad.json"
M eval coco --ann "$T/gt_bad.json" --images "$T/coco" --weights "$MR" --json "$T/bad.json" --output "$T/badr.json" \
  > "$T/out" 2> "$T/err" && fail "a missing image on rank 1 should fail the run"
grep -q "ravlt eval coco: rank 1 of 2: image 2 (gone.jpg)" "$T/err" || fail "rank 1's failure not reported by rank and id: $(cat "$T/err")"
[ "$(grep -c "ravlt eval coco:" "$T/err")" = 1 ] || fail "the failure should be printed once (rank 0): $(cat "$T/err")"
ls "$T"/bad* > /dev/null 2>&1 && fail "a failed run left files: $(ls "$T"/bad*)"
[ -s "$T/out" ] && fail "a failed run printed stats"
mkdir -p "$T/ade/images" "$T/ade/annotations"
cp -r "$A/images/validation" "$T/ade/images/"
cp -r "$A/annotations/validation" "$T/ade/annotations/"
rm "$T/ade/annotations/validation/ADE_val_00000002.png"
M eval ade20k --root "$T/ade" --weights "$SF" --json "$T/bada.json" > "$T/out" 2> "$T/err" && fail "a missing annotation on rank 1 should fail"
grep -q "ravlt eval ade20k: rank 1 of 2: .*ADE_val_00000002" "$T/err" || fail "ade20k failure on rank 1: $(cat "$T/err")"
[ -e "$T/bada.json" ] && fail "a failed ade20k run wrote its summary"
M detect --weights "$MR" --no-draw "$T/coco" > "$T/out" 2> "$T/err" && fail "mpirun ravlt detect should be refused"
grep -q "only 'ravlt eval' and 'ravlt video' run across MPI ranks" "$T/err" || fail "detect under mpirun: $(cat "$T/err")"
M eval ade20k --root "$A" --weights "$SF" --shard 0/2 --output "$T/x.json" > "$T/out" 2> "$T/err" && fail "--shard under mpirun"
grep -q "exclude each other" "$T/err" || fail "--shard under mpirun: $(cat "$T/err")"
# one rank under mpirun is a plain run
"$MPIEXEC" --allow-run-as-root -np 1 "$BIN" --threads 1 eval ade20k --root "$A" --weights "$SF" --json "$T/a1.json" \
  > /dev/null 2> "$T/err" || fail "mpirun -np 1: $(cat "$T/err")"
cmp -s "$T/a.json" "$T/a1.json" || fail "mpirun -np 1 differs from one process"

if [ $fails -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "mpi eval: all checks passed"
