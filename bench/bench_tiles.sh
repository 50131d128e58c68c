#!/usr/bin/env bash
# Large images (docs/large-images.md): tiled detection and native-resolution tiled
# segmentation with the demo models, side by side in one run on one machine.
#  1. per tile, in one process: rv_model_detect_tiled over a mosaic against rv_model_detect on
#     the same tiles cut beforehand (the overhead of cutting, shifting and merging);
#  2. the CLI: one `ravlt detect --tile` against the equivalent loop of `ravlt detect` calls,
#     one per tile cut to a PNG file (what a shell loop over a tiling tool does), and against
#     one `ravlt detect` call over all those files;
#  3. segmentation per crop against one-crop runs, and a 10000x10000 image: time and peak RSS
#     of the library call and of `ravlt segment --tile 512x512 --format png`.
# Not a test: minutes. Results go to bench/RESULTS.md by hand.
#
#   bash bench/bench_tiles.sh [BUILD_DIR=build] [--threads N] [--rounds N] [--mosaic RxC (of 240x320 pieces)]
#                             [--big N (0: skip the NxN segmentation)] [--work DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then B=$1; shift; fi
THREADS=2 ROUNDS=3 MOSAIC=8x8 BIG=10000 W=/tmp/ravlt_bench_tiles
while [ $# -gt 0 ]; do
  case $1 in
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --mosaic) MOSAIC=$2; shift 2 ;;
    --big) BIG=$2; shift 2 ;;
    --work) W=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$B/ravlt" ] && [ -f "$B/libravlt.a" ] || { echo "build first: cmake -S . -B $B && cmake --build $B" >&2; exit 1; }
export OMP_NUM_THREADS=$THREADS OMP_WAIT_POLICY=passive
mkdir -p "$W"
gcc -O2 -std=c11 -I. -Iinclude -I"$B/include" -o "$W/bench_tiles" bench/bench_tiles.c "$B/libravlt.a" -lm -lstdc++ \
  $(pkg-config --libs opencv4 libcjson libzip libcurl) -fopenmp -lopenblas -llapacke
R=$("$B/ravlt" --version | head -1)
echo "== $R, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $THREADS threads, $(date -u +%F)"

rows=${MOSAIC%x*} cols=${MOSAIC#*x}
"$W/bench_tiles" mosaic "$W/mosaic.png" $((rows * 240)) $((cols * 320)) 5
echo "== 1. per tile, in one process"
"$W/bench_tiles" detect "$W/mosaic.png" 240 320 0.2 "$ROUNDS"

echo "== 2. the CLI: one tiled run against a loop of runs over the cut tiles"
rm -rf "$W/tiles" && mkdir -p "$W/tiles"
"$W/bench_tiles" cut "$W/mosaic.png" 240 320 0.2 "$W/tiles"
n=$(ls "$W/tiles" | wc -l)
best() { sort -n | head -1; }
t_tiled=() t_loop=() t_one=()
for r in $(seq "$ROUNDS"); do
  s=$(date +%s.%N)
  "$B/ravlt" -q --threads "$THREADS" detect --no-draw --json "$W/tiled.json" --tile 240x320 "$W/mosaic.png"
  e=$(date +%s.%N); t_tiled+=("$(echo "$e - $s" | bc)")
  s=$(date +%s.%N)
  for f in "$W"/tiles/*.png; do
    "$B/ravlt" -q --threads "$THREADS" detect --no-draw --json "$W/one.json" "$f"
  done
  e=$(date +%s.%N); t_loop+=("$(echo "$e - $s" | bc)")
  s=$(date +%s.%N)
  "$B/ravlt" -q --threads "$THREADS" detect --no-draw --json "$W/all.json" "$W/tiles"
  e=$(date +%s.%N); t_one+=("$(echo "$e - $s" | bc)")
done
tt=$(printf '%s\n' "${t_tiled[@]}" | best) tl=$(printf '%s\n' "${t_loop[@]}" | best) to=$(printf '%s\n' "${t_one[@]}" | best)
echo "$n tiles of 240x320 (overlap 0.2), best of $ROUNDS:"
echo "  ravlt detect --tile 240x320 (one process, merged)   $tt s"
echo "  loop of $n ravlt detect calls, one per tile file     $tl s  ($(echo "scale=2; $tl / $tt" | bc)x)"
echo "  one ravlt detect call over the $n tile files         $to s  ($(echo "scale=2; $to / $tt" | bc)x; no merge)"

echo "== 3. segmentation"
"$W/bench_tiles" segment 2048 2048 512 512 "$ROUNDS"
if [ "$BIG" -gt 0 ]; then
  "$W/bench_tiles" segbig "$BIG" "$BIG" 512 512
  # the CLI on a PNG of that size: the decoded image, the labels, the label PNG (and the overlay)
  [ -f "$W/big$BIG.png" ] || "$W/bench_tiles" mosaic "$W/big$BIG.png" "$BIG" "$BIG" 9
  for fmt in png both; do
    "$W/bench_tiles" rss "$B/ravlt" -q --threads "$THREADS" segment --tile 512x512 --format $fmt --out-dir "$W/seg" \
      "$W/big$BIG.png"
  done
fi
