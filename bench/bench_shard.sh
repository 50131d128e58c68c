#!/usr/bin/env bash
# Sharding benchmark: one process with T threads against N shard processes with T/N threads
# each (run side by side, then `ravlt merge`), on the same ADE20K-format set and segmentor.
# Prints images/s of both, the time outside inference (merge), and checks that the merged
# numbers equal the single run's (the --json outputs are compared byte for byte).
# Not a test: with the defaults (fixture Semantic FPN, the 3 test images repeated to 12) it
# takes about a minute on 2 cores.
#
#   bash bench/bench_shard.sh [BUILD_DIR=build] [--root ADEChallengeData2016] [--weights W]
#                             [--threads 2] [--shards 2] [--repeat 4]
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then B=$1; shift; fi
ROOT="" W=../shared/fixtures/e2e/semantic_fpn/checkpoint.pth THREADS=2 SHARDS=2 REPEAT=4
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=$2; shift 2 ;;
    --weights) W=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --shards) SHARDS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
BIN=$B/ravlt
[ -x "$BIN" ] || { echo "build ravlt first: cmake -S . -B $B && cmake --build $B" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
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
PER=$((THREADS / SHARDS))
[ $PER -ge 1 ] || PER=1
now() { date +%s.%N; }
echo "set: $NIMG images ($ROOT), weights $W"

t0=$(now)
"$BIN" --quiet --threads "$THREADS" eval ade20k --root "$ROOT" --weights "$W" --json "$T/one.json" > /dev/null
t1=$(now)
pids=()
for i in $(seq 0 $((SHARDS - 1))); do
  "$BIN" --quiet --threads "$PER" eval ade20k --root "$ROOT" --weights "$W" --shard "$i/$SHARDS" --output "$T/part$i.json" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
t2=$(now)
"$BIN" --quiet merge "$T"/part*.json --json "$T/merged.json" > /dev/null
t3=$(now)
awk -v n="$NIMG" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v th="$THREADS" -v s="$SHARDS" -v per="$PER" 'BEGIN {
  printf "1 process x %d threads : %7.2f s  %6.3f images/s\n", th, b - a, n / (b - a);
  printf "%d shards x %d thread(s): %7.2f s  %6.3f images/s (+ merge %.3f s)\n", s, per, c - b, n / (c - b), d - c;
}'
if cmp -s "$T/one.json" "$T/merged.json"; then echo "merged numbers: identical to the single run"; else echo "merged numbers DIFFER"; exit 1; fi
