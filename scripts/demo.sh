#!/usr/bin/env bash
# Main job on a fresh machine, offline: install dependencies, build, then
#  1. generate a small synthetic dataset (`ravlt synth`, a seed the demo model never saw),
#     segment it with the built-in demo model (embedded in the binary: no --weights, no
#     download) and evaluate it (`ravlt eval ade20k`: mIoU of the demo model);
#  2. segment a real photograph from opencv-doc with the same model (it knows only the 5
#     synthetic shapes and background, so expect shapes, not objects);
#  3. generate a synthetic COCO-style set, detect its shapes with the built-in demo detector
#     (RetinaNet, `ravlt detect` without --weights) and evaluate it (`ravlt eval coco`: box AP);
#  4. if the golden fixtures (tests/fixtures, or $RAVLT_FIXTURES) are there, also segment
#     and detect with their small whole-model checkpoints.
# Overlays and label PNGs go to demo-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)"
export OMP_WAIT_POLICY=passive
R=./build/ravlt
OUT=demo-out
PHOTOS=/usr/share/doc/opencv-doc/examples/data
rm -rf "$OUT/synth" "$OUT/synth_det"
mkdir -p "$OUT"

echo "== 1. synthetic shapes: generate, segment, evaluate (built-in demo model)"
"$R" synth --task seg --out-dir "$OUT/synth" --count 12 --seed 4242
"$R" segment --out-dir "$OUT/synth_seg" "$OUT"/synth/images/validation/synth_00000[0-3].jpg
"$R" eval ade20k --root "$OUT/synth" --weights demo --json "$OUT/synth_eval.json" | tail -n 3

echo "== 2. a real photograph, same model"
"$R" segment --out-dir "$OUT/photo_seg" "$PHOTOS/fruits.jpg"

echo "== 3. synthetic shapes, COCO style: generate, detect, evaluate (built-in demo detector)"
"$R" synth --task det --out-dir "$OUT/synth_det" --count 12 --seed 4343
"$R" detect --out-dir "$OUT/synth_det_out" --json "$OUT/synth_det_out/results.json" "$OUT"/synth_det/images/synth_00000[0-3].jpg
"$R" eval coco --ann "$OUT/synth_det/annotations/instances.json" --images "$OUT/synth_det/images" \
  --weights demo-det --output "$OUT/synth_det_results.json" | sed -n 1,3p

FIX="${RAVLT_FIXTURES:-$PWD/tests/fixtures}"
if [ -f "$FIX/e2e/upernet/checkpoint.pth" ] && [ -f "$FIX/e2e/mask_rcnn/checkpoint.pth" ]; then
  echo "== 4. the fixture checkpoints ($FIX/e2e) on a photograph"
  "$R" segment --weights "$FIX/e2e/upernet/checkpoint.pth" --out-dir "$OUT" --format both "$PHOTOS/home.jpg"
  "$R" detect --weights "$FIX/e2e/mask_rcnn/checkpoint.pth" --out-dir "$OUT" --score-thr 0.3 --json "$OUT/results.json" "$PHOTOS/home.jpg"
else
  echo "== 4. skipped: no fixture checkpoints in $FIX/e2e (set RAVLT_FIXTURES to run them)"
fi
echo "outputs in $OUT/:"
ls -l "$OUT"/synth_seg/*_overlay.png "$OUT"/photo_seg/*_overlay.png "$OUT"/synth_det_out/* "$OUT"/*.json "$OUT"/*_overlay.png "$OUT"/*_det.jpg 2> /dev/null || true
