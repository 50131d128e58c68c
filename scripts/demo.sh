#!/usr/bin/env bash
# Main job on a fresh machine: install dependencies, build, then segment and detect objects
# in a photograph with the small whole-model checkpoints of ../shared/fixtures/e2e.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)"
FIX="${RAVLT_FIXTURES:-$PWD/../shared/fixtures}"
IMG=/usr/share/doc/opencv-doc/examples/data/home.jpg
OUT=demo-out
mkdir -p "$OUT"
./build/ravlt segment --weights "$FIX/e2e/upernet/checkpoint.pth" --out-dir "$OUT" --format both "$IMG"
./build/ravlt detect --weights "$FIX/e2e/mask_rcnn/checkpoint.pth" --out-dir "$OUT" --score-thr 0.3 --json "$OUT/results.json" "$IMG"
echo "outputs in $OUT/:"
ls -l "$OUT"
