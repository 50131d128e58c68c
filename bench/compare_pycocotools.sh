#!/usr/bin/env bash
# Side-by-side COCO evaluation benchmark: the real pycocotools (cocodataset/cocoapi PythonAPI,
# built from source by you, outside this repo) against `ravlt eval coco`, on the same files.
# Never downloads anything.
#
#   bash bench/compare_pycocotools.sh PYTHONAPI_DIR [RAVLT_BIN=build/ravlt] [WORKDIR=/tmp/ravlt_cocobench]
#        [--fixtures-only] [--rounds N (default 1)] [--threads T (default 2)]
#
# PYTHONAPI_DIR is the PythonAPI folder of pycocotools built from the cocodataset/cocoapi
# sources outside this repo (its pycocotools/_mask*.so next to cocoeval.py).
# numpy >= 1.24 removed np.float, which cocoeval.py's accumulate() still uses: the runner sets
# the alias np.float = float before importing pycocotools (the same shim the fixtures used).
#
# Steps:
#  1. sanity: pycocotools on every case of shared/fixtures/coco_eval reproduces expected.json
#     (12 stats, bit-exact, bbox and segm).
#  2. benchmark (skipped with --fixtures-only): the generated COCO-scale set in WORKDIR/full
#     (bench/gen_coco_bench.c, 5000 images, as bench/bench_cocoeval.sh makes it; generated here
#     if absent). For bbox then segm: pycocotools COCO(gt) + loadRes + evaluate + accumulate +
#     summarize vs `ravlt --threads T eval coco --json`, each under /usr/bin/time -v (wall, user
#     and system CPU, max RSS), alternating, N rounds; then the 12 stats and the per-category APs
#     are compared bit for bit.
set -euo pipefail
cd "$(dirname "$0")/.."
PYAPI=${1:?usage: compare_pycocotools.sh PYTHONAPI_DIR [RAVLT_BIN] [WORKDIR] [--fixtures-only] [--rounds N] [--threads T]}
shift
BIN=build/ravlt; W=/tmp/ravlt_cocobench
[ $# -gt 0 ] && [ "${1#--}" = "$1" ] && { BIN=$1; shift; }
[ $# -gt 0 ] && [ "${1#--}" = "$1" ] && { W=$1; shift; }
FIXONLY=0; ROUNDS=1; THREADS=2
while [ $# -gt 0 ]; do
  case $1 in
    --fixtures-only) FIXONLY=1; shift ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    *) echo "compare_pycocotools.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3
FIX=../shared/fixtures/coco_eval
[ -f "$PYAPI/pycocotools/cocoeval.py" ] || { echo "compare_pycocotools.sh: $PYAPI/pycocotools/cocoeval.py not found" >&2; exit 2; }
ls "$PYAPI"/pycocotools/_mask*.so >/dev/null 2>&1 || { echo "compare_pycocotools.sh: $PYAPI/pycocotools/_mask*.so missing: pycocotools is not built there" >&2; exit 2; }
[ -x "$BIN" ] || { echo "compare_pycocotools.sh: ravlt binary $BIN not found" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "compare_pycocotools.sh: /usr/bin/time (Debian package time) needed" >&2; exit 2; }
mkdir -p "$W"
RUNNER="$W/pycoco_run.py"
cat > "$RUNNER" <<'PY'
# usage: pycoco_run.py PYTHONAPI GT DT IOUTYPE OUT.json
# pycocotools COCO(gt) + loadRes + evaluate + accumulate + summarize; writes the 12 stats.
import contextlib, io, json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
if not hasattr(np, 'float'):
    np.float = float  # removed in numpy 1.24, still used by cocoeval.accumulate
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
gt_path, dt_path, iou, out = sys.argv[2:6]
t = [time.perf_counter()]
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(gt_path); t.append(time.perf_counter())
    dt = gt.loadRes(dt_path); t.append(time.perf_counter())
    ev = COCOeval(gt, dt, iou)
    ev.evaluate(); t.append(time.perf_counter())
    ev.accumulate(); t.append(time.perf_counter())
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    ev.summarize()
t.append(time.perf_counter())
phase = dict(zip(['load_gt', 'load_res', 'evaluate', 'accumulate', 'summarize'],
                 [t[i + 1] - t[i] for i in range(5)]))
# per-category AP as ravlt reports it: mean(precision[:, :, k, area all, last maxDets][> -1])
prec = ev.eval['precision']
per_cat = {}
for k, cid in enumerate(ev.params.catIds):
    p = prec[:, :, k, 0, -1]
    p = p[p > -1]
    per_cat[str(cid)] = float(np.mean(p)) if p.size else -1.0
json.dump({'iou_type': iou, 'stats': [float(x) for x in ev.stats], 'per_category': per_cat,
           'phases_s': phase}, open(out, 'w'))
sys.stderr.write('pycocotools %s phases: %s\n' % (iou, ' '.join('%s=%.2fs' % kv for kv in phase.items())))
PY

# ---- 1. sanity on the fixtures ----
echo "== pycocotools vs shared/fixtures/coco_eval/*/expected.json =="
bad=0
for d in "$FIX"/*/; do
  for t in bbox segm; do
    [ -f "$d/dt_$t.json" ] || continue
    $PY "$RUNNER" "$PYAPI" "$d/gt.json" "$d/dt_$t.json" "$t" "$W/fix.json" 2>/dev/null
    if $PY - "$W/fix.json" "$d/expected.json" "$t" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))['stats']
exp = json.load(open(sys.argv[2]))[sys.argv[3]]['stats']
sys.exit(0 if got == exp else 1)
PY
    then echo "  $(basename "$d") $t: identical"; else echo "  $(basename "$d") $t: DIFFERENT"; bad=1; fi
  done
done
[ $bad -eq 0 ] || { echo "pycocotools does not reproduce the fixtures" >&2; exit 1; }
[ $FIXONLY -eq 1 ] && exit 0

# ---- 2. benchmark on the generated set ----
D="$W/full"
if [ ! -f "$D/dt_segm.json" ]; then
  mkdir -p "$D"
  gcc -O3 -std=c11 -march=x86-64-v2 -I. -o "$W/gen_coco_bench" bench/gen_coco_bench.c eval/rle.c core/error.c -lm
  "$W/gen_coco_bench" "$D" 5000 40 1
fi
ls -l "$D"/gt.json "$D"/dt_bbox.json "$D"/dt_segm.json
timed() { # LOG CMD...: run under /usr/bin/time -v, print "wall user sys maxrss_MB"
  local log=$1; shift
  /usr/bin/time -v -o "$log" "$@" > /dev/null
  awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); w=(n==3)?a[1]*3600+a[2]*60+a[3]:a[1]*60+a[2]}
              /User time/{u=$2} /System time/{s=$2} /Maximum resident/{m=$2/1024}
              END{printf "%.2f %.2f %.2f %.0f\n", w, u, s, m}' "$log"
}
echo "== timings (wall s, user s, sys s, max RSS MB); ravlt with --threads $THREADS =="
printf '%-5s %-5s %-12s %8s %8s %8s %8s %8s\n' round iou tool wall user sys cpu rss_MB
for r in $(seq 1 "$ROUNDS"); do
  for t in bbox segm; do
    # alternate the order between rounds so neither tool always runs on a warmer page cache
    if [ $((r % 2)) -eq 1 ]; then order="py c"; else order="c py"; fi
    for tool in $order; do
      if [ $tool = py ]; then
        set -- $(timed "$W/time_py_$t.log" $PY "$RUNNER" "$PYAPI" "$D/gt.json" "$D/dt_$t.json" $t "$W/py_$t.json")
        name=pycocotools
      else
        set -- $(timed "$W/time_c_$t.log" "$BIN" --quiet --threads "$THREADS" eval coco --ann "$D/gt.json" \
                 --results "$D/dt_$t.json" --iou-type $t --json "$W/ravlt_$t.json")
        name=ravlt
      fi
      printf '%-5s %-5s %-12s %8s %8s %8s %8.2f %8s\n' "$r" $t $name "$1" "$2" "$3" "$(echo "$2 + $3" | bc)" "$4"
    done
  done
done
echo "== 12 stats, pycocotools vs ravlt =="
$PY - "$W" <<'PY'
import json, sys
w = sys.argv[1]
ok = True
for t in ('bbox', 'segm'):
    p = json.load(open('%s/py_%s.json' % (w, t)))
    c = json.load(open('%s/ravlt_%s.json' % (w, t)))
    same = p['stats'] == c['stats']
    pc = {str(k): v for k, v in c['per_category'].items()}
    same_cat = pc == p['per_category']
    ok &= same and same_cat
    print('%s: 12 stats %s, per-category AP (%d categories) %s' % (
        t, 'bit-identical' if same else 'DIFFERENT', len(p['per_category']),
        'bit-identical' if same_cat else 'DIFFERENT'))
    print('  pycocotools %s' % ' '.join('%.6f' % x for x in p['stats']))
    print('  ravlt       %s' % ' '.join('%.6f' % x for x in c['stats']))
    if not same:
        print('  max |diff| %.3g' % max(abs(a - b) for a, b in zip(p['stats'], c['stats'])))
sys.exit(0 if ok else 1)
PY
