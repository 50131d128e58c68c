#!/usr/bin/env bash
# Benchmark of the RAVLT backbone against a PyTorch port of the official GLTA code
# (tools/ravlt_torch.py, same semantics, official-style O(N^2) softmax attention) on the
# same machine, same threads, random weights and input. Not a test: takes minutes.
#
#   bash bench/bench_backbone.sh [RAVLT_BIN] [--threads N] [--runs N] [--models "t s"]
#                                [--sizes "224x224 512x512 800x1344"] [--no-torch]
#
# OpenBLAS 0.3.21 (Debian 12) does not recognise recent Xeons (e.g. family 6 model 207)
# and falls back to its SSE3 "Prescott" kernels, 3-5x slower than its AVX-512 ones. Unless
# OPENBLAS_CORETYPE is already set, this script sets it to SkylakeX (AVX-512) or Haswell
# (AVX2) from /proc/cpuinfo, for both programs (PyTorch's matmuls use the same library).
# speedup = PyTorch wall time / ravlt wall time (medians); cpu_x = the same ratio of the
# process CPU times, which a loaded machine disturbs less; min_x = the ratio of the best runs
# (the usual estimate of the unloaded time when other processes share the cores).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/ravlt
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then BIN=$1; shift; fi
THREADS=2 RUNS=3 MODELS="t s" SIZES="224x224 512x512 800x1344" TORCH=1
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
if [ -z "${OPENBLAS_CORETYPE+x}" ]; then
  if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
fi
export OMP_NUM_THREADS=$THREADS
# libgomp's default busy-waiting makes 2 threads on a shared 2-core machine several times
# slower than 1 (see bench/RESULTS.md); passive waiting unless the caller chose, for both.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc --all) cores, threads $THREADS, runs $RUNS, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, OMP_WAIT_POLICY=$OMP_WAIT_POLICY, load $(cut -d' ' -f1-3 /proc/loadavg)"
sg=$("$BIN" bench sgemm --size 2048 --threads "$THREADS" --runs 3 --json - | grep -o '"gmacs_per_s":[0-9.e+-]*' | cut -d: -f2)
echo "# SGEMM 2048^3 with $THREADS threads: $sg GMAC/s"
printf "%-8s %-9s %10s %9s %9s %6s %8s %10s %9s %9s %8s %7s %7s %7s\n" model size ravlt_ms ravlt_min GMAC/s %sgemm RSS_MB torch_ms torch_min GMAC/s RSS_MB speedup min_x cpu_x
for m in $MODELS; do
  for s in $SIZES; do
    r=$("$BIN" bench "ravlt-$m-backbone" --random-weights --size "$s" --threads "$THREADS" --runs "$RUNS" --json -)
    rms=$(echo "$r" | grep -o '"median_ms":[0-9.e+-]*' | cut -d: -f2)
    rg=$(echo "$r" | grep -o '"gmacs_per_s":[0-9.e+-]*' | cut -d: -f2)
    rr=$(echo "$r" | grep -o '"peak_rss_mb":[0-9.e+-]*' | cut -d: -f2)
    gm=$(echo "$r" | grep -o '"gmacs":[0-9.e+-]*' | cut -d: -f2)
    rc=$(echo "$r" | grep -o '"cpu_ms":[0-9.e+-]*' | cut -d: -f2)
    rmin=$(echo "$r" | grep -o '"min_ms":[0-9.e+-]*' | cut -d: -f2)
    if [ $TORCH = 1 ]; then
      t=$(/usr/bin/python3 tools/ravlt_torch.py bench "ravlt-$m" --size "$s" --threads "$THREADS" --runs "$RUNS" --json)
      tms=$(echo "$t" | grep -o '"median_ms": [0-9.e+-]*' | cut -d' ' -f2)
      tr=$(echo "$t" | grep -o '"peak_rss_mb": [0-9.e+-]*' | cut -d' ' -f2)
      tc=$(echo "$t" | grep -o '"cpu_ms": [0-9.e+-]*' | cut -d' ' -f2)
      tmin=$(echo "$t" | grep -o '"min_ms": [0-9.e+-]*' | cut -d' ' -f2)
      awk -v m="ravlt-$m" -v s="$s" -v rms="$rms" -v rg="$rg" -v rr="$rr" -v tms="$tms" -v tr="$tr" -v gm="$gm" -v sg="$sg" -v rc="$rc" -v tc="$tc" -v rmin="$rmin" -v tmin="$tmin" \
        'BEGIN { printf "%-8s %-9s %10.1f %9.1f %9.1f %5.0f%% %8.0f %10.1f %9.1f %9.1f %8.0f %6.2fx %6.2fx %6.2fx\n", m, s, rms, rmin, gm / (rmin / 1e3), 100 * gm / (rmin / 1e3) / sg, rr, tms, tmin, gm / (tmin / 1e3), tr, tms / rms, tmin / rmin, tc / rc }'
    else
      awk -v m="ravlt-$m" -v s="$s" -v rms="$rms" -v rmin="$rmin" -v gm="$gm" -v rr="$rr" -v sg="$sg" \
        'BEGIN { printf "%-8s %-9s %10.1f %9.1f %9.1f %5.0f%% %8.0f\n", m, s, rms, rmin, gm / (rmin / 1e3), 100 * gm / (rmin / 1e3) / sg, rr }'
    fi
  done
done
