#!/usr/bin/env bash
# MPI benchmark: one process with T threads against `mpirun -np N` (threads per rank chosen by
# ravlt: cores / ranks) on the same input and segmentor, in two cases:
#  eval:  an ADE20K-format set; images/s of both, the time outside inference (mpirun start +
#         MPI_Init/Finalize; rank 0's wait and reduction); --json outputs compared byte for byte;
#  video: one video file split into N frame ranges; frames/s of both (command wall time, model
#         load included, and the pipelines'), rank 0's wait and part concatenation; the JSON
#         lines compared byte for byte.
# Not a test: with the defaults (fixture Semantic FPN, the 3 test images repeated to 12; 40
# frames of vtest.avi at --size 120x160) it takes about 2 minutes on 2 cores. Needs a
# -DRAVLT_MPI=ON build.
#
#   bash bench/bench_mpi.sh [BUILD_DIR=build-mpi] [--case all|eval|video] [--root ADEChallengeData2016]
#                           [--weights W] [--threads 2] [--ranks 2] [--repeat 4]
#                           [--video FILE] [--frames 40] [--size 120x160] [--output out.mp4]
set -euo pipefail
cd "$(dirname "$0")/.."
B=build-mpi
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then B=$1; shift; fi
ROOT="" W=../shared/fixtures/e2e/semantic_fpn/checkpoint.pth THREADS=2 RANKS=2 REPEAT=4 CASE=all
VIDEO=/usr/share/doc/opencv-doc/examples/data/vtest.avi FRAMES=40 SIZE=120x160 VOUT=mp4
while [ $# -gt 0 ]; do
  case $1 in
    --case) CASE=$2; shift 2 ;;
    --video) VIDEO=$2; shift 2 ;;
    --frames) FRAMES=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --output) VOUT=${2##*.}; shift 2 ;;
    --root) ROOT=$2; shift 2 ;;
    --weights) W=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
BIN=$B/ravlt
[ -x "$BIN" ] || { echo "build ravlt first: cmake -S . -B $B -DRAVLT_MPI=ON && cmake --build $B" >&2; exit 1; }
"$BIN" --version | grep -q "(MPI)" || { echo "$BIN was built without MPI (-DRAVLT_MPI=ON)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
MPI=(mpirun --allow-run-as-root --mca btl_vader_single_copy_mechanism none -np "$RANKS")
now() { date +%s.%N; }
case $CASE in all | eval | video) ;; *) echo "--case all, eval or video" >&2; exit 2 ;; esac

video_case() {
  echo "video: $FRAMES frames of $VIDEO at --size $SIZE, .$VOUT output + JSON lines, weights $W"
  local args=(video --weights "$W" "$VIDEO" --max-frames "$FRAMES" --size "$SIZE")
  local t0 t1 t2
  t0=$(now)
  "$BIN" --threads "$THREADS" "${args[@]}" --output "$T/one.$VOUT" --json "$T/one.jsonl" 2> "$T/verr1"
  t1=$(now)
  "${MPI[@]}" "$BIN" "${args[@]}" --output "$T/mpi.$VOUT" --json "$T/mpi.jsonl" 2> "$T/verr"
  t2=$(now)
  grep "MPI:" "$T/verr" | sed 's/^/  rank 0: /'
  local fps1
  fps1=$(grep -o '[0-9.]* fps; [0-9.]* s wall' "$T/verr1" | head -1)
  awk -v n="$FRAMES" -v a="$t0" -v b="$t1" -v c="$t2" -v th="$THREADS" -v r="$RANKS" -v p1="$fps1" 'BEGIN {
    printf "1 process x %d threads: %7.2f s  %6.3f frames/s (the pipeline alone: %s)\n", th, b - a, n / (b - a), p1;
    printf "mpirun -np %d         : %7.2f s  %6.3f frames/s (model load and mpirun start included)\n", r, c - b, n / (c - b);
  }'
  if cmp -s "$T/one.jsonl" "$T/mpi.jsonl"; then echo "MPI JSON lines: identical to the single run"; return; fi
  # some kernels sum in an order that follows the thread count: compare at the ranks' count
  local per
  per=$(grep -o '[0-9]* threads\? per rank' "$T/verr" | grep -o '^[0-9]*')
  echo "MPI JSON lines differ from 1 process x $THREADS threads; checking 1 process x $per thread(s)"
  "$BIN" --quiet --threads "$per" "${args[@]}" --json "$T/one1.jsonl"
  if cmp -s "$T/one1.jsonl" "$T/mpi.jsonl"; then echo "MPI JSON lines: identical to 1 process x $per thread(s)"; else echo "MPI JSON lines DIFFER"; exit 1; fi
}

if [ "$CASE" = video ]; then video_case; exit 0; fi
if [ -z "$ROOT" ]; then # the test set, repeated
  ROOT=$T/ade
  mkdir -p "$ROOT/images/validation" "$ROOT/annotations/validation"
  for r in $(seq 1 "$REPEAT"); do
    for f in tests/data/evalrun/ade/images/validation/*.jpg; do
      n=$(basename "$f" .jpg)
      cp "$f" "$ROOT/images/validation/${n}_$r.jpg"
      cp "tests/data/evalrun/ade/annotations/validation/$n.png" "$ROOT/annotations/validation/${n}_$r.png"
    done
  done
fi
NIMG=$(ls "$ROOT/images/validation" | wc -l)
echo "set: $NIMG images ($ROOT), weights $W"

t0=$(now)
"$BIN" --quiet --threads "$THREADS" eval ade20k --root "$ROOT" --weights "$W" --json "$T/one.json" > /dev/null
t1=$(now)
"${MPI[@]}" "$BIN" eval ade20k --root "$ROOT" --weights "$W" --json "$T/mpi.json" > /dev/null 2> "$T/err"
t2=$(now)
"${MPI[@]}" "$BIN" eval ade20k --help > /dev/null 2>&1 # launch + MPI_Init + MPI_Finalize, no work
t3=$(now)
grep "MPI:" "$T/err" | sed 's/^/  rank 0: /'
awk -v n="$NIMG" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v th="$THREADS" -v r="$RANKS" 'BEGIN {
  printf "1 process x %d threads: %7.2f s  %6.3f images/s\n", th, b - a, n / (b - a);
  printf "mpirun -np %d         : %7.2f s  %6.3f images/s (of which mpirun start + MPI init/finalize %.2f s)\n",
         r, c - b, n / (c - b), d - c;
}'
if cmp -s "$T/one.json" "$T/mpi.json"; then echo "MPI numbers: identical to the single run"; else echo "MPI numbers DIFFER"; exit 1; fi
[ "$CASE" = eval ] || video_case
