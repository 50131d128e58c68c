#!/usr/bin/env bash
# COCO evaluation benchmark: builds bench/gen_coco_bench.c and bench/bench_cocoeval.c with the
# evaluation sources (no OpenCV/BLAS needed), generates a COCO-scale set (5000 images, ~34k gt,
# ~485k detections with masks) and times load + evaluate + accumulate for bbox and segm with
# 1 and 2 threads. With --ref N it also checks the numpy reference (tools/ref_cocoeval.py) on
# an N-image set and prints both times.
#   bash bench/bench_cocoeval.sh [WORKDIR=/tmp/ravlt_cocobench] [--ref 100]
set -euo pipefail
cd "$(dirname "$0")/.."
W=${1:-/tmp/ravlt_cocobench}
REF=0
[ "${2:-}" = "--ref" ] && REF=${3:-100}
mkdir -p "$W/full"
SRC="eval/rle.c eval/cocoeval.c datasets/coco.c datasets/coco_results.c datasets/json_scan.c core/error.c core/fs.c"
FLAGS="-O3 -std=c11 -march=x86-64-v2 -fopenmp -I. -Wall -Wextra"
gcc $FLAGS -o "$W/gen_coco_bench" bench/gen_coco_bench.c eval/rle.c core/error.c -lm
gcc $FLAGS -o "$W/bench_cocoeval" bench/bench_cocoeval.c $SRC -lm
[ -f "$W/full/dt_segm.json" ] || "$W/gen_coco_bench" "$W/full" 5000 40 1
ls -l "$W"/full/*.json
for t in 1 2; do "$W/bench_cocoeval" "$W/full" $t | grep threads; done
if [ "$REF" -gt 0 ]; then
  mkdir -p "$W/sub"
  "$W/gen_coco_bench" "$W/sub" "$REF" 40 7
  s=$(date +%s.%N); "$W/bench_cocoeval" "$W/sub" 1 | grep threads; e=$(date +%s.%N)
  echo "C total on $REF images: $(echo "$e - $s" | bc) s"
  s=$(date +%s.%N); /usr/bin/python3 tools/ref_cocoeval.py --case "$W/sub" > "$W/sub/ref.json"; e=$(date +%s.%N)
  echo "numpy reference on $REF images: $(echo "$e - $s" | bc) s"
  /usr/bin/python3 - "$W/sub" <<'PY'
import json, sys
d = sys.argv[1]
ref = json.load(open(d + '/ref.json'))
for t in ('bbox', 'segm'):
    c = json.load(open('%s/c_%s.json' % (d, t)))
    pc = {int(k): v for k, v in c['per_category'].items()}
    ok = c['stats'] == ref[t]['stats'] and all(pc[x['category_id']] == x['ap'] for x in ref[t]['per_category_ap'])
    print('%s: C vs numpy reference: %s' % (t, 'bit-identical' if ok else 'DIFFERENT'))
PY
fi
