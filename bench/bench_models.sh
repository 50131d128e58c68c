#!/usr/bin/env bash
# Whole-model benchmark, side by side in one run: ravlt (`ravlt bench NAME --random-weights`),
# the repository's PyTorch ports of the official code (tools/ravlt_torch.py, seg_torch.py,
# det_torch.py: official semantics, checked against the fixtures) and ONNX Runtime (npm
# onnxruntime-node, CPU execution provider) on those ports exported by torch.onnx
# (tools/export_onnx.py; bench/ort_bench.js checks ORT's outputs against PyTorch's, then
# times it). Random weights everywhere; not a test: tens of minutes on 2 cores.
#
#   bash bench/bench_models.sh [BUILD_DIR=build] [--threads N] [--runs N] [--quick]
#                              [--no-torch] [--no-ort] [--rows "ROW ..."] [--out DIR]
#                              [--bf16] [--official RALA.py]
#
#   --threads N  threads of every program (default 2): OMP_NUM_THREADS and the ravlt
#                --threads, torch.set_num_threads, ORT intraOpNumThreads (interOp 1)
#   --runs N     timed runs after one warm-up (default 3); --quick: 1 (a smoke check)
#   --no-torch, --no-ort   leave a column out (its cells say "-")
#   --rows       a subset of: bb-s-512 bb-s-800 fpn-t upernet-s upernet-s-576 cascade-s
#                maskrcnn-t retinanet-s (default: all)
#   --bf16       also `ravlt bench ... --precision bf16` right after each float32 ravlt run
#                (a column "bf16 ms (gain)": float32 ms / bf16 ms of the two back-to-back runs)
#   --official F the official RAVLT backbone code (F = detection/mmdet/models/backbones/RALA.py
#                of a clone of github.com/qhfan/RALA; default $RAVLT_OFFICIAL_RALA) timed by
#                tools/official_bench.py on the backbone rows: columns "official ms" and
#                "vs official" (the whole-model rows have no official column: the official
#                heads need mmdet / mmseg)
#   --out DIR    raw JSON of every program (DIR/raw.jsonl) and the exported graphs' checks
#                (default BUILD_DIR/bench_models)
#   --table RAW  only print the table of an earlier run's raw.jsonl (rows without records
#                left out)
#
# Every program runs with OMP_WAIT_POLICY=passive (libgomp's busy waiting makes 2 threads on
# a shared 2-core machine several times slower) and OPENBLAS_CORETYPE=SkylakeX (AVX-512) or
# Haswell (AVX2) from /proc/cpuinfo unless already set (OpenBLAS 0.3.21 falls back to SSE3
# kernels on CPUs it does not know; PyTorch's Debian build uses the same OpenBLAS).
#
# ONNX Runtime: $RAVLT_ORT_DIR (default BUILD_DIR/ort) holds node_modules/onnxruntime-node;
# when missing, `npm install --ignore-scripts onnxruntime-node` puts it there (network; the
# CPU library ships in the package). Graphs are exported once into $RAVLT_ORT_DIR/models.
# What ORT runs: the backbone rows the backbone; the segmentors the whole test (backbone,
# head, resize, softmax, argmax); the detectors backbone + FPN only (RPN proposals, RoIAlign
# and NMS are mmcv ops with no export here), and their "vs ORT" compares ORT with ravlt's
# backbone + neck stages. A graph torch.onnx cannot export (UperNet's adaptive pooling at
# 512x2048: the 16x64 map is not divisible by pool scales 3 and 6) gets "export: ..." in its
# cell; the 576x2304 row (18x72) is the size where it exports.
#
# Columns: ms = median wall time of the runs (ravlt's includes the preprocessing of a BGR
# image; the others take a normalised tensor); vs = the other's ms / ravlt's; %SGEMM (backbone
# rows) = ravlt's GMAC/s over `ravlt bench sgemm --size 2048` measured in the same run;
# RSS = peak resident memory of each process (MB). Detection counts: ravlt and the PyTorch
# port keep 1000 RPN proposals and 100 detections with masks (rcnn score_thr 0); RetinaNet:
# ravlt 100 detections (bench --help), the PyTorch port none (mmdet's init: no score passes
# 0.05), a difference of a few ms of NMS.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then B=$1; shift; fi
THREADS=2 RUNS=3 TORCH=1 ORT=1 BF16=0 OFFICIAL=${RAVLT_OFFICIAL_RALA:-} OUT="" TABLE="" ROWS="bb-s-512 bb-s-800 fpn-t upernet-s upernet-s-576 cascade-s maskrcnn-t retinanet-s"
while [ $# -gt 0 ]; do
  case $1 in
    --threads) THREADS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --quick) RUNS=1; shift ;;
    --no-torch) TORCH=0; shift ;;
    --no-ort) ORT=0; shift ;;
    --bf16) BF16=1; shift ;;
    --official) OFFICIAL=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --table) TABLE=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_models.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
# the table (markdown) from the raw records
PY=/usr/bin/python3
table() { # raw.jsonl
"$PY" - "$1" "$ROWS" "$TORCH" "$ORT" << 'EOF'
import json, sys
raw = [json.loads(l) for l in open(sys.argv[1])]
rows, torch_on, ort_on = sys.argv[2].split(), sys.argv[3] == "1", sys.argv[4] == "1"
labels = {"bb-s-512": ("RAVLT-S backbone", "512x512"), "bb-s-800": ("RAVLT-S backbone", "800x1344"),
          "fpn-t": ("Semantic FPN-T", "512x2048"), "upernet-s": ("UperNet-S", "512x2048"),
          "upernet-s-576": ("UperNet-S", "576x2304"), "cascade-s": ("Cascade Mask R-CNN-S", "800x1344"),
          "maskrcnn-t": ("Mask R-CNN-T", "800x1344"), "retinanet-s": ("RetinaNet-S", "800x1344")}
sg = next((d for d in raw if d["row"] == "sgemm"), {}).get("gmacs_per_s")
print("SGEMM 2048^3: %s GMAC/s (%s)" % (("%.1f" % sg) if sg else "?",
      next((d for d in raw if d["row"] == "sgemm"), {}).get("blas_core", "?")))
print()
bf_on = any(d["program"] == "ravlt-bf16" for d in raw)
off_on = any(d["program"] == "official" for d in raw)
print("| model, input | ravlt ms |%s PyTorch port ms |%s ONNX Runtime ms (detectors: backbone+FPN) | vs port |%s vs ORT | %%SGEMM | peak RSS MB ravlt / port / ORT | ORT - PyTorch max abs |"
      % (" ravlt bf16 ms (gain) |" if bf_on else "", " official PyTorch ms |" if off_on else "",
         " vs official |" if off_on else ""))
print("|---|---:|" + ("---:|" if bf_on else "") + "---:|" + ("---:|" if off_on else "") +
      "---:|---:|" + ("---:|" if off_on else "") + "---:|---:|---|---|")
notes = []
for r in rows:
    rec = {d["program"]: d for d in raw if d["row"] == r}
    if not rec:
        continue
    rv, tq, oq = rec.get("ravlt", {}), rec.get("torch", {}), rec.get("ort", {})
    bq, fq = rec.get("ravlt-bf16", {}), rec.get("official", {})
    def ms(d):
        return "%.0f" % d["median_ms"] if "median_ms" in d else None
    def err(d):
        return ("error: " + d["error"])[:60] if "error" in d else "-"
    cells = [ms(rv) or ("error: " + rv.get("error", "?"))[:60]]
    if bf_on:
        cells.append("%.0f (%.2fx)" % (bq["median_ms"], rv["median_ms"] / bq["median_ms"])
                     if "median_ms" in bq and "median_ms" in rv else err(bq))
    cells.append(ms(tq) or err(tq))
    if off_on:
        cells.append(ms(fq) or err(fq))
    if "median_ms" in oq:
        cells.append(ms(oq))
    elif "error" in oq:
        notes.append("%s %s: %s" % (labels[r][0], labels[r][1], oq["error"]))
        cells.append(oq["error"].split(":")[0] + ": see note %d" % len(notes))
    else:
        cells.append("-")
    cells.append("%.2fx" % (tq["median_ms"] / rv["median_ms"]) if "median_ms" in tq and "median_ms" in rv else "")
    if off_on:
        cells.append("%.2fx" % (fq["median_ms"] / rv["median_ms"]) if "median_ms" in fq and "median_ms" in rv else "")
    if "median_ms" in oq and "median_ms" in rv:
        st = rv.get("stages_ms", {})
        base = rv["median_ms"]
        if oq.get("part") == "backbone+neck":
            base = st.get("backbone", 0) + st.get("neck", 0)
            cells.append("%.2fx (of %.0f)" % (oq["median_ms"] / base, base))
        else:
            cells.append("%.2fx" % (oq["median_ms"] / base))
    else:
        cells.append("")
    if sg and rv.get("gmacs") and rv.get("min_ms"):
        cells.append("%.0f%%" % (100 * rv["gmacs"] / (rv["median_ms"] / 1e3) / sg))
    else:
        cells.append("")
    cells.append(" / ".join("%.0f" % d["peak_rss_mb"] if "peak_rss_mb" in d else "-" for d in (rv, tq, oq)))
    if "max_abs_diff" in oq:
        c = "%.1e" % oq["max_abs_diff"]
        if oq.get("label_agree") is not None:
            c += ", labels %.4f%% equal" % (100 * oq["label_agree"])
        cells.append(c)
    else:
        cells.append("")
    print("| %s %s | %s |" % (labels[r][0], labels[r][1], " | ".join(cells)))
for i, n in enumerate(notes):
    print("\nNote %d: %s" % (i + 1, n))
EOF
}
if [ -n "$TABLE" ]; then table "$TABLE"; exit 0; fi
BIN=$B/ravlt
[ -x "$BIN" ] || { echo "bench_models.sh: no $BIN: build first (cmake -S . -B $B && cmake --build $B)" >&2; exit 1; }
OUT=${OUT:-$B/bench_models}
ORT_DIR=$(readlink -m "${RAVLT_ORT_DIR:-$B/ort}")
export RAVLT_ORT_DIR=$ORT_DIR
mkdir -p "$OUT"
RAW=$OUT/raw.jsonl
: > "$RAW"
if [ "$TORCH" = 1 ] || [ "$ORT" = 1 ]; then
  "$PY" -c 'import torch' 2>/dev/null || { echo "bench_models.sh: $PY cannot import torch (apt install python3-torch), or pass --no-torch --no-ort" >&2; exit 1; }
fi
if [ "$ORT" = 1 ] && [ ! -d "$ORT_DIR/node_modules/onnxruntime-node" ]; then
  command -v npm > /dev/null || { echo "bench_models.sh: npm not found (apt install npm), or pass --no-ort" >&2; exit 1; }
  echo "# installing onnxruntime-node into $ORT_DIR (npm install --ignore-scripts)" >&2
  mkdir -p "$ORT_DIR"
  (cd "$ORT_DIR" && npm install --ignore-scripts --no-audit --no-fund onnxruntime-node >&2)
fi

if [ -z "${OPENBLAS_CORETYPE+x}" ]; then
  if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
fi
export OMP_NUM_THREADS=$THREADS OMP_WAIT_POLICY=passive

# row -> ravlt name, size, torch command, export model
row_def() {
  case $1 in
    bb-s-512) echo "RAVLT-S backbone|512x512|ravlt-s-backbone|ravlt_torch.py bench ravlt-s|ravlt-s" ;;
    bb-s-800) echo "RAVLT-S backbone|800x1344|ravlt-s-backbone|ravlt_torch.py bench ravlt-s|ravlt-s" ;;
    fpn-t) echo "Semantic FPN-T|512x2048|semantic-fpn-ravlt-t|seg_torch.py bench fpn-t|fpn-t" ;;
    upernet-s) echo "UperNet-S|512x2048|upernet-ravlt-s|seg_torch.py bench upernet-s|upernet-s" ;;
    upernet-s-576) echo "UperNet-S|576x2304|upernet-ravlt-s|seg_torch.py bench upernet-s|upernet-s" ;;
    cascade-s) echo "Cascade Mask R-CNN-S|800x1344|cascade-mask-rcnn-ravlt-s|det_torch.py bench cascade-s|cascade-s" ;;
    maskrcnn-t) echo "Mask R-CNN-T|800x1344|mask-rcnn-ravlt-t|det_torch.py bench maskrcnn-t|maskrcnn-t" ;;
    retinanet-s) echo "RetinaNet-S|800x1344|retinanet-ravlt-s|det_torch.py bench retinanet-s|retinanet-s" ;;
    *) echo "bench_models.sh: unknown row '$1' (see --help)" >&2; return 1 ;;
  esac
}
for r in $ROWS; do row_def "$r" > /dev/null || exit 2; done

emit() { # row program json
  "$PY" -c 'import json,sys; d=json.loads(sys.argv[3]); d["row"]=sys.argv[1]; d["program"]=sys.argv[2]; print(json.dumps(d))' "$1" "$2" "$3" >> "$RAW"
}
emit_err() { # row program message
  "$PY" -c 'import json,sys; print(json.dumps({"row": sys.argv[1], "program": sys.argv[2], "error": sys.argv[3]}))' "$1" "$2" "$3" >> "$RAW"
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; threads $THREADS, runs $RUNS, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, OMP_WAIT_POLICY=passive; load $(cut -d' ' -f1-3 /proc/loadavg)"
sg=$("$BIN" bench sgemm --size 2048 --threads "$THREADS" --runs 3 --json -)
emit sgemm ravlt "$sg"
for r in $ROWS; do
  IFS='|' read -r label size name tcmd emodel <<< "$(row_def "$r")"
  echo "# $r: $label $size" >&2
  # ravlt: backbone presets take --size as the input; detectors at 800x1344 get the mmdet
  # test image 800x1333 (padded to 800x1344); segmentors take the size as it is
  rs=$size
  case $name in *-backbone) extra="--size $size" ;; *) [ "$size" = 800x1344 ] && rs=800x1333; extra="--size $rs" ;; esac
  if out=$("$BIN" bench "$name" --random-weights $extra --threads "$THREADS" --runs "$RUNS" --json - 2> "$OUT/err"); then
    emit "$r" ravlt "$out"
  else
    emit_err "$r" ravlt "$(head -1 "$OUT/err")"
  fi
  if [ "$BF16" = 1 ]; then
    if out=$("$BIN" bench "$name" --random-weights $extra --precision bf16 --threads "$THREADS" --runs "$RUNS" --json - 2> "$OUT/err"); then
      emit "$r" ravlt-bf16 "$out"
    else
      emit_err "$r" ravlt-bf16 "$(head -1 "$OUT/err")"
    fi
  fi
  if [ -n "$OFFICIAL" ] && [ "${name%-backbone}" != "$name" ]; then
    if out=$("$PY" tools/official_bench.py "${name%-backbone}" --rala "$OFFICIAL" --size "$size" --threads "$THREADS" --runs "$RUNS" --json 2> "$OUT/err" | tail -1); then
      emit "$r" official "$out"
    else
      emit_err "$r" official "$(tail -1 "$OUT/err")"
    fi
  fi
  if [ "$TORCH" = 1 ]; then
    set -- $tcmd
    if out=$("$PY" "tools/$1" "$2" "$3" --size "$size" --threads "$THREADS" --runs "$RUNS" --json 2> "$OUT/err" | tail -1); then
      emit "$r" torch "$out"
    else
      emit_err "$r" torch "$(tail -1 "$OUT/err")"
    fi
  fi
  if [ "$ORT" = 1 ]; then
    d=$ORT_DIR/models/$emodel-$size
    if [ ! -f "$d/ref.json" ]; then
      rm -rf "$d"
      msg=$("$PY" tools/export_onnx.py "$emodel" --size "$size" --out "$d" 2> "$OUT/err" | tail -1) || true
      case $msg in export:*) emit_err "$r" ort "$msg"; continue ;; esac
      [ -f "$d/ref.json" ] || { emit_err "$r" ort "export failed: $(tail -1 "$OUT/err")"; continue; }
    fi
    if out=$(node bench/ort_bench.js "$d" --threads "$THREADS" --runs "$RUNS" 2> "$OUT/err"); then
      emit "$r" ort "$out"
    else
      emit_err "$r" ort "$(tail -1 "$OUT/err")"
    fi
  fi
done

table "$RAW"
echo "# raw JSON: $RAW"
