#!/usr/bin/env bash
# Whole detector benchmark: ravlt (`ravlt bench NAME --random-weights`) against the PyTorch
# port of the official mmdet/GLTA code (tools/det_torch.py + tools/ravlt_torch.py: same
# semantics, checked against the head fixtures) on the same machine, threads, random weights
# and input. Both time backbone + FPN + RPN + RoI heads + mask heads + paste of max_per_img
# (100) masks (score_thr 0, the worst case); RetinaNet (retinanet-t/s/b/l): backbone + FPN +
# RetinaHead + get_bboxes at its config's score_thr 0.05; ravlt's random RetinaNet gives one
# class prior 0.1 so that 100 detections come out (`ravlt bench --help`), the PyTorch port has
# mmdet's init (no box passes 0.05): a few ms of NMS more on ravlt's side. MODEL is the
# PyTorch port's short name (cascade-s, maskrcnn-t, retinanet-s); ravlt runs the published
# model of that name (`ravlt models`; others are refused). Not a test: minutes per model.
#
#   bash bench/bench_det.sh [BUILD_DIR=build] [--threads N] [--runs N]
#                           [--models "cascade-s maskrcnn-t retinanet-s"] [--sizes "800x1344"]
#                           [--no-torch]
#
# OPENBLAS_CORETYPE: see bench/bench_backbone.sh (OpenBLAS 0.3.21 falls back to SSE3 kernels
# on recent Xeons); set here from /proc/cpuinfo unless already set, for both programs.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then B=$1; shift; fi
THREADS=2 RUNS=3 MODELS="cascade-s maskrcnn-t" SIZES="800x1344" TORCH=1
while [ $# -gt 0 ]; do
  case $1 in
    --threads) THREADS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --no-torch) TORCH=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$B/ravlt" ] || { echo "build ravlt first: cmake -S . -B $B && cmake --build $B" >&2; exit 1; }
# the PyTorch port's short name -> the model name ravlt bench takes
full_name() {
  case $1 in
    cascade-*) echo "cascade-mask-rcnn-ravlt-${1#cascade-}" ;;
    maskrcnn-*) echo "mask-rcnn-ravlt-${1#maskrcnn-}" ;;
    retinanet-*) echo "retinanet-ravlt-${1#retinanet-}" ;;
    *) echo "$1" ;;
  esac
}
if [ -z "${OPENBLAS_CORETYPE+x}" ]; then
  if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
fi
export OMP_NUM_THREADS=$THREADS
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, threads $THREADS, runs $RUNS, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, load $(cut -d' ' -f1-3 /proc/loadavg)"
num() { echo "$1" | grep -o "\"$2\": *[0-9.e+-]*" | sed "s/.*: *//"; }
printf "%-11s %-9s %9s %8s %8s %7s | %9s %8s %8s %7s | %7s\n" model size ravlt_ms backbone heads RSS_MB \
  torch_ms backbone heads RSS_MB speedup
for m in $MODELS; do
  for s in $SIZES; do
    r=$("$B/ravlt" bench "$(full_name "$m")" --random-weights --size "$s" --threads "$THREADS" --runs "$RUNS" --json -)
    # heads: everything after the backbone (neck, rpn, roi, mask, post)
    heads=$(awk -v t="$(num "$r" median_ms)" -v p="$(num "$r" preprocess)" -v b="$(num "$r" backbone)" 'BEGIN { print t - p - b }')
    line=$(printf "%-11s %-9s %9.0f %8.0f %8.0f %7.0f" "$m" "$s" "$(num "$r" median_ms)" \
      "$(num "$r" backbone)" "$heads" "$(num "$r" peak_rss_mb)")
    if [ "$TORCH" = 1 ]; then
      t=$(/usr/bin/python3 tools/det_torch.py bench "$m" --size "$s" --threads "$THREADS" --runs "$RUNS" --json)
      sp=$(awk -v a="$(num "$t" median_ms)" -v b="$(num "$r" median_ms)" 'BEGIN { printf "%.2fx", a / b }')
      line="$line $(printf "| %9.0f %8.0f %8.0f %7.0f | %7s" "$(num "$t" median_ms)" "$(num "$t" backbone_ms)" \
        "$(num "$t" heads_ms)" "$(num "$t" peak_rss_mb)" "$sp")"
    fi
    echo "$line"
  done
done
