#!/usr/bin/env bash
# `ravlt eval coco --report` against plain `ravlt eval coco` and against TIDE's own Python code,
# side by side on the generated COCO-scale set (bench/gen_coco_bench.c: 5,000 images, 80
# categories, ~35k gt, ~491k detections with masks). Not a test.
#
#   bash bench/bench_report.sh TIDE_DIR PYTHONAPI_DIR [WORKDIR=/tmp/ravlt_cocobench] [--rounds R (1)]
#        [--threads T (2)] [--no-tide]
#
# TIDE_DIR: a checkout of github.com/dbolya/tide v1.0.1 (the folder holding tidecv/), outside
# this repository; PYTHONAPI_DIR: pycocotools built in place outside it (the PythonAPI folder of
# cocodataset/cocoapi, `python3 setup.py build_ext --inplace`), which TIDE needs for its IoUs.
# tidecv imports cv2, seaborn and pandas for its plots only: the runner puts empty stand-ins in
# their place when they are missing (nothing timed uses them). The TIDE run times
# datasets.COCO + COCOResult + TIDE().evaluate + summarize (the dAPs: get_main_errors and
# get_special_errors), box and mask, in one python3 process each.
#
# Timed, per iou type and round, each a whole process under /usr/bin/time (wall and CPU =
# user + sys): `ravlt --quiet --threads T eval coco --ann gt.json --results dt_X.json --iou-type X
# --json OUT` (plain) and the same with `--report R.html --report-json R.json` (report). Prints
# the ratios report / plain and TIDE / report, the HTML size, and checks that ravlt's TIDE numbers
# equal TIDE's within 0.01 AP points.
set -euo pipefail
cd "$(dirname "$0")/.."
TIDE=${1:?usage: bench_report.sh TIDE_DIR PYTHONAPI_DIR [WORKDIR] [--rounds R] [--threads T] [--no-tide]}
PYAPI=${2:?usage: bench_report.sh TIDE_DIR PYTHONAPI_DIR [WORKDIR] [--rounds R] [--threads T] [--no-tide]}
shift 2
W=/tmp/ravlt_cocobench
[ $# -gt 0 ] && [ "${1#--}" = "$1" ] && { W=$1; shift; }
ROUNDS=1; THREADS=2; RUN_TIDE=1
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --no-tide) RUN_TIDE=0; shift ;;
    *) echo "bench_report.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
BIN=${RAVLT_BIN:-build/ravlt}
[ -x "$BIN" ] || { echo "bench_report.sh: $BIN missing (cmake --build build --target ravlt)" >&2; exit 2; }
PY=/usr/bin/python3
TIDE=$(readlink -f "$TIDE"); PYAPI=$(readlink -f "$PYAPI")
D=$W/full
mkdir -p "$D"
if [ ! -f "$D/dt_segm.json" ]; then
  gcc -O3 -std=c11 -march=x86-64-v2 -fopenmp -I. -Iinclude -Ibuild/include -o "$W/gen_coco_bench" \
    bench/gen_coco_bench.c eval/rle.c core/error.c -lm
  "$W/gen_coco_bench" "$D" 5000 40 1
fi
ls -l "$D"/*.json
export OMP_WAIT_POLICY=passive
timed() { # label, then the command: prints "label wall cpu maxrss_kb"
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$W/time.txt" "$@" > "$W/out.txt" 2> "$W/err.txt" || { cat "$W/err.txt"; exit 1; }
  read -r wall user sys rss < "$W/time.txt"
  echo "$label $wall $(echo "$user + $sys" | bc) $rss"
}
echo "== $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), ravlt --threads $THREADS, $ROUNDS round(s)"
: > "$W/times.txt"
for r in $(seq 1 "$ROUNDS"); do
  for t in bbox segm; do
    order="plain report"
    [ $((r % 2)) -eq 0 ] && order="report plain"
    for m in $order; do
      args=(--quiet --threads "$THREADS" eval coco --ann "$D/gt.json" --results "$D/dt_$t.json" --iou-type "$t"
            --json "$W/stats_$t.json")
      [ "$m" = report ] && args+=(--report "$W/report_$t.html" --report-json "$W/report_$t.json")
      timed "$t $m" "$BIN" "${args[@]}" | tee -a "$W/times.txt"
    done
  done
done
if [ "$RUN_TIDE" = 1 ]; then
  cat > "$W/tide_run.py" <<'PY'
# usage: tide_run.py TIDE_DIR PYTHONAPI GT DT bbox|segm OUT.json
import contextlib, io, json, os, sys, tempfile, time, types
tide_dir, pyc, gt, dt, mode, out = sys.argv[1:7]
sys.path.insert(0, pyc)
sys.path.insert(0, tide_dir)
os.environ.setdefault("TIDE_PATH", tempfile.mkdtemp(prefix="tide_"))
for name in ("cv2", "pandas"):
    try:
        __import__(name)
    except ImportError:
        m = types.ModuleType(name)
        m.FONT_HERSHEY_SIMPLEX = 0
        sys.modules[name] = m
try:
    import seaborn  # noqa: F401
except ImportError:
    sb = types.ModuleType("seaborn")
    sb.set_palette = lambda *a, **k: None
    sb.set = lambda *a, **k: None
    sb.color_palette = lambda *a, **k: [(0.1 * i, 0.5, 0.5) for i in range(10)]
    sys.modules["seaborn"] = sb
import matplotlib
matplotlib.use("Agg")
from tidecv import TIDE, datasets
t0 = time.perf_counter()
tide = TIDE()
tide.evaluate(datasets.COCO(gt), datasets.COCOResult(dt, name="run"), mode=TIDE.BOX if mode == "bbox" else TIDE.MASK)
with contextlib.redirect_stdout(io.StringIO()):
    tide.summarize()
t1 = time.perf_counter()
json.dump({"seconds": t1 - t0, "ap": tide.runs["run"].ap, "main": tide.get_main_errors()["run"],
           "special": tide.get_special_errors()["run"]}, open(out, "w"))
PY
  for t in bbox segm; do
    timed "$t tide" "$PY" "$W/tide_run.py" "$TIDE" "$PYAPI" "$D/gt.json" "$D/dt_$t.json" "$t" "$W/tide_$t.json" | tee -a "$W/times.txt"
  done
fi
"$PY" - "$W" "$RUN_TIDE" <<'PY'
import json, os, statistics, sys
w, run_tide = sys.argv[1], sys.argv[2] == "1"
rows = {}
for line in open(os.path.join(w, "times.txt")):
    t, m, wall, cpu, rss = line.split()
    rows.setdefault((t, m), []).append((float(wall), float(cpu), int(rss)))
med = lambda v: statistics.median(v)
print("\n| iou | plain wall / CPU | --report wall / CPU | report / plain (wall, CPU) | TIDE wall / CPU | TIDE / report (wall, CPU) | HTML |")
print("|---|---:|---:|---:|---:|---:|---:|")
for t in ("bbox", "segm"):
    p, r = rows[(t, "plain")], rows[(t, "report")]
    pw, pc, rw, rc = med([x[0] for x in p]), med([x[1] for x in p]), med([x[0] for x in r]), med([x[1] for x in r])
    line = "| %s | %.2f / %.2f s | %.2f / %.2f s | %.2fx, %.2fx |" % (t, pw, pc, rw, rc, rw / pw, rc / pc)
    if run_tide and (t, "tide") in rows:
        tw, tc = rows[(t, "tide")][0][:2]
        line += " %.1f / %.1f s | %.0fx, %.0fx |" % (tw, tc, tw / rw, tc / rc)
    else:
        line += " - | - |"
    line += " %.2f MB |" % (os.path.getsize(os.path.join(w, "report_%s.html" % t)) / 1e6)
    print(line)
if run_tide:
    for t in ("bbox", "segm"):
        a = json.load(open(os.path.join(w, "report_%s.json" % t)))["tide"]
        r = json.load(open(os.path.join(w, "tide_%s.json" % t)))
        d = max([abs(a["ap50"] - r["ap"])] + [abs(a["main"][k] - v) for k, v in r["main"].items()] +
                [abs(a["special"][k] - v) for k, v in r["special"].items()])
        print("%s: ravlt's TIDE vs TIDE's code: largest difference %.2g AP points (%s)" % (t, d, "ok" if d <= 0.01 else "DIFFERENT"))
PY
