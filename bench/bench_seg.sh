#!/usr/bin/env bash
# Whole segmentation model benchmark: ravlt (`ravlt bench NAME --random-weights`) against the PyTorch port of
# the official mmseg/GLTA code (tools/seg_torch.py + tools/ravlt_torch.py: same semantics,
# checked against the head fixtures) on the same machine, threads, random weights and input.
# Both time backbone + decode head + resize to the input + rescale + argmax (whole mode);
# PyTorch also materialises the logits and the softmax, as mmseg does. Not a test: minutes.
# MODEL upernet-s / fpn-t ... is the PyTorch port's short name; ravlt runs the published model
# of that name (upernet-ravlt-s, semantic-fpn-ravlt-t: `ravlt models`; others are refused).
#
#   bash bench/bench_seg.sh [BUILD_DIR=build] [--threads N] [--runs N]
#                           [--models "upernet-s fpn-t"] [--sizes "512x2048"] [--no-torch]
#
# OPENBLAS_CORETYPE: see bench/bench_backbone.sh (OpenBLAS 0.3.21 falls back to SSE3 kernels
# on recent Xeons); set here from /proc/cpuinfo unless already set, for both programs.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then B=$1; shift; fi
THREADS=2 RUNS=3 MODELS="upernet-s fpn-t" SIZES="512x2048" TORCH=1
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
full_name() { case $1 in upernet-*) echo "upernet-ravlt-${1#upernet-}" ;; fpn-*) echo "semantic-fpn-ravlt-${1#fpn-}" ;; *) echo "$1" ;; esac; }
if [ -z "${OPENBLAS_CORETYPE+x}" ]; then
  if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
fi
export OMP_NUM_THREADS=$THREADS
# libgomp's default busy-waiting makes 2 threads on a shared 2-core machine several times
# slower than 1 (see bench/RESULTS.md); passive waiting unless the caller chose, for both.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, threads $THREADS, runs $RUNS, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, OMP_WAIT_POLICY=$OMP_WAIT_POLICY, load $(cut -d' ' -f1-3 /proc/loadavg)"
num() { echo "$1" | grep -o "\"$2\": *[0-9.e+-]*" | sed "s/.*: *//"; }
printf "%-10s %-9s %9s %8s %8s %8s %7s | %9s %8s %8s %8s %7s | %7s\n" model size ravlt_ms backbone head post RSS_MB \
  torch_ms backbone head post RSS_MB speedup
for m in $MODELS; do
  for s in $SIZES; do
    r=$("$B/ravlt" bench "$(full_name "$m")" --random-weights --size "$s" --threads "$THREADS" --runs "$RUNS" --json -)
    line=$(printf "%-10s %-9s %9.0f %8.0f %8.0f %8.0f %7.0f" "$m" "$s" "$(num "$r" median_ms)" \
      "$(num "$r" backbone)" "$(num "$r" head)" "$(num "$r" post)" "$(num "$r" peak_rss_mb)")
    if [ "$TORCH" = 1 ]; then
      t=$(/usr/bin/python3 tools/seg_torch.py bench "$m" --size "$s" --threads "$THREADS" --runs "$RUNS" --json)
      sp=$(awk -v a="$(num "$t" median_ms)" -v b="$(num "$r" median_ms)" 'BEGIN { printf "%.2fx", a / b }')
      line="$line $(printf "| %9.0f %8.0f %8.0f %8.0f %7.0f | %7s" "$(num "$t" median_ms)" "$(num "$t" backbone_ms)" \
        "$(num "$t" head_ms)" "$(num "$t" post_ms)" "$(num "$t" peak_rss_mb)" "$sp")"
    fi
    echo "$line"
  done
done
