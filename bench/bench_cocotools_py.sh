#!/usr/bin/env bash
# ravlt.cocotools (python/ravlt over libravlt.so) against pycocotools built from source, in the
# same Python (Debian's python3 + numpy), on the generated COCO-scale set. Not a test.
#
#   bash bench/bench_cocotools_py.sh PYTHONAPI_DIR [WORKDIR=/tmp/ravlt_cocobench] [--images N (5000)]
#        [--rounds R (1)] [--threads T (2)] [--dets-per-pair P (40)]
#
# PYTHONAPI_DIR: the PythonAPI folder of cocodataset/cocoapi built in place outside this repo
# (`python3 setup.py build_ext --inplace`; needs Cython and python3-dev, which the project does
# not install). pycocotools' coco.py imports matplotlib at the top for showAnns only: when it
# is not installed the runner puts empty stand-in modules in its place (nothing timed uses
# them); numpy >= 1.24 needs the np.float alias (bench/compare_pycocotools.sh does the same).
# The library: env RAVLT_LIBRARY, else the build's libravlt.so.0, else a development copy
# linked from build/libravlt.a. Data: bench/gen_coco_bench.c (`gen_coco_bench DIR N 40 1`, the
# set bench/bench_cocoeval.sh makes for N = 5000), generated into WORKDIR/py_N if absent
# (WORKDIR/py_N_P with --dets-per-pair P: P = 4 gives the ~50k detections of issue 38's set).
#
# Timed, per tool and iou type, in one fresh python3 process each: COCO(gt) + loadRes(dt) +
# COCOeval(...).evaluate() + accumulate() + summarize() (perf_counter for wall time and
# process_time for the CPU time of all threads, around the calls; the imports and interpreter
# start are reported apart). Then the 12 stats and the precision, recall and scores arrays are
# compared for exact equality, and the speed-ups printed for evaluate + accumulate and for the
# whole Python side, wall and CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PYAPI=${1:?usage: bench_cocotools_py.sh PYTHONAPI_DIR [WORKDIR] [--images N] [--rounds R] [--threads T]}
shift
W=/tmp/ravlt_cocobench
[ $# -gt 0 ] && [ "${1#--}" = "$1" ] && { W=$1; shift; }
N=5000; ROUNDS=1; THREADS=2; DPP=40
while [ $# -gt 0 ]; do
  case $1 in
    --images) N=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --dets-per-pair) DPP=$2; shift 2 ;;
    *) echo "bench_cocotools_py.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3
PYAPI=$(readlink -f "$PYAPI")
ls "$PYAPI"/pycocotools/_mask*.so >/dev/null 2>&1 || { echo "bench_cocotools_py.sh: $PYAPI/pycocotools is not built (_mask*.so missing)" >&2; exit 2; }
mkdir -p "$W"
if [ -z "${RAVLT_LIBRARY:-}" ]; then
  if [ -e build/libravlt.so.0 ]; then RAVLT_LIBRARY=$PWD/build/libravlt.so.0
  else
    LIBS=$(sed 's/.* libravlt\.a//' build/CMakeFiles/ravlt.dir/link.txt)
    # shellcheck disable=SC2086
    cc -shared -o "$W/libravlt_dev.so" -Wl,--whole-archive build/libravlt.a -Wl,--no-whole-archive $LIBS -lstdc++
    RAVLT_LIBRARY=$W/libravlt_dev.so
  fi
fi
export RAVLT_LIBRARY PYTHONPATH=$PWD/python OMP_NUM_THREADS=$THREADS OMP_WAIT_POLICY=passive
D=$W/py_$N; [ "$DPP" = 40 ] || D=$W/py_${N}_$DPP
if [ ! -f "$D/dt_segm.json" ]; then
  gcc -O3 -std=c11 -march=x86-64-v2 -fopenmp -I. -Iinclude -Ibuild/include -o "$W/gen_coco_bench" bench/gen_coco_bench.c eval/rle.c core/error.c -lm
  mkdir -p "$D"
  "$W/gen_coco_bench" "$D" "$N" "$DPP" 1
fi
ls -l "$D"/*.json
RUNNER=$W/cocotools_run.py
cat > "$RUNNER" <<'PY'
# usage: cocotools_run.py ravlt|pycocotools PYTHONAPI GT DT IOU OUT_PREFIX
import contextlib, io, json, sys, time, types
t_start = time.perf_counter()
tool, pyapi, gt_path, dt_path, iou, out = sys.argv[1:7]
import numpy as np
if tool == 'pycocotools':
    sys.path.insert(0, pyapi)
    if not hasattr(np, 'float'):
        np.float = float
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # only showAnns uses it
        for name in ('matplotlib', 'matplotlib.pyplot', 'matplotlib.collections', 'matplotlib.patches'):
            m = types.ModuleType(name)
            m.PatchCollection = m.Polygon = None
            sys.modules[name] = m
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
else:
    from ravlt.cocotools import COCO, COCOeval
    import ravlt._lib
    ravlt._lib._open()  # `import ravlt` opens libravlt on first use: counted with the imports, as
                        # pycocotools' import loads its _mask extension
t_import = time.perf_counter()
t = [time.perf_counter()]
c = [time.process_time()]  # CPU time of the process (all threads)
def mark():
    t.append(time.perf_counter())
    c.append(time.process_time())
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(gt_path); mark()
    dt = gt.loadRes(dt_path); mark()
    ev = COCOeval(gt, dt, iou)
    ev.evaluate(); mark()
    ev.accumulate(); mark()
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    ev.summarize()
mark()
names = ['load_gt', 'load_res', 'evaluate', 'accumulate', 'summarize']
phases = dict(zip(names, [t[i + 1] - t[i] for i in range(5)]))
phases_cpu = dict(zip(names, [c[i + 1] - c[i] for i in range(5)]))
np.savez(out + '.npz', precision=ev.eval['precision'], recall=ev.eval['recall'], scores=ev.eval['scores'])
json.dump({'tool': tool, 'iou': iou, 'stats_hex': [float(x).hex() for x in ev.stats], 'summary': buf.getvalue(),
           'phases_s': phases, 'phases_cpu_s': phases_cpu, 'total_s': t[-1] - t[0], 'total_cpu_s': c[-1] - c[0],
           'import_s': t_import - t_start}, open(out + '.json', 'w'))
print('%-11s %s: total %.3f s wall, %.3f s CPU (%s), imports %.2f s' % (tool, iou, t[-1] - t[0], c[-1] - c[0],
      ' '.join('%s %.3f/%.3f' % (k, phases[k], phases_cpu[k]) for k in names), t_import - t_start))
PY
for r in $(seq 1 "$ROUNDS"); do
  for iou in bbox segm; do
    order="pycocotools ravlt"; [ $((r % 2)) -eq 0 ] && order="ravlt pycocotools"
    for tool in $order; do
      /usr/bin/time -f "$tool $iou process: %e s wall, %U+%S s CPU, %M KB max RSS" \
        "$PY" "$RUNNER" "$tool" "$PYAPI" "$D/gt.json" "$D/dt_$iou.json" "$iou" "$W/py_${tool}_${iou}_r$r"
    done
    "$PY" - "$W/py_pycocotools_${iou}_r$r" "$W/py_ravlt_${iou}_r$r" <<'PY'
import json, sys
import numpy as np
a, b = (json.load(open(p + '.json')) for p in sys.argv[1:3])
za, zb = (np.load(p + '.npz') for p in sys.argv[1:3])
same = a['stats_hex'] == b['stats_hex'] and a['summary'] == b['summary']
arrays = all(np.array_equal(za[k], zb[k]) for k in ('precision', 'recall', 'scores'))
def ea(x, k='phases_s'):
    return x[k]['evaluate'] + x[k]['accumulate']
print('%s: stats and summary %s, precision/recall/scores arrays %s' % (
      a['iou'], 'IDENTICAL' if same else 'DIFFER', 'IDENTICAL' if arrays else 'DIFFER'))
print('%s: speed-up evaluate+accumulate %.1fx wall (%.2f s vs %.3f s), %.1fx CPU (%.2f s vs %.3f s)' % (
      a['iou'], ea(a) / ea(b), ea(a), ea(b), ea(a, 'phases_cpu_s') / ea(b, 'phases_cpu_s'), ea(a, 'phases_cpu_s'),
      ea(b, 'phases_cpu_s')))
print('%s: speed-up whole Python side %.1fx wall (%.2f s vs %.3f s), %.1fx CPU (%.2f s vs %.3f s)' % (
      a['iou'], a['total_s'] / b['total_s'], a['total_s'], b['total_s'], a['total_cpu_s'] / b['total_cpu_s'],
      a['total_cpu_s'], b['total_cpu_s']))
sys.exit(0 if same and arrays else 1)
PY
  done
done
