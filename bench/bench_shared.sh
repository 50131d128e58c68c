#!/usr/bin/env bash
# One model shared by N threads, before and after, side by side in one run (not a test):
# bench/bench_shared.c (C threads, each with a default context) and bench/bench_shared.py
# (Python threads) built / run against a base revision's library (default main) and the
# working tree's, one after the other for each model: N inferences one after another, then
# the same N from N threads at once on one model; the ratio concurrent / sequential, and
# whether every output equals the sequential one.
#
#   bash bench/bench_shared.sh [BUILD_DIR=build] [--base REF] [--threads 2,4,8] [--rounds R]
#                              [--models "demo-seg demo-det mask-rcnn upernet-s"] [--no-python]
#                              [--out DIR]
#
#   BUILD_DIR  the working tree's build (its libravlt.so is used; built if missing)
#   --base     the revision to compare with (default main), exported with git archive into
#              OUT/base-src and built there (Release, the library only; kept between runs)
#   --models   demo-seg / demo-det: the built-in demo models (models/*.safetensors);
#              mask-rcnn, upernet: the e2e fixtures (tests/fixtures/e2e/mask_rcnn, upernet);
#              upernet-s: a whole UperNet-RAVLT-S with random weights (tools/random_checkpoint.py,
#              needs python3-torch; written once into OUT), N from --threads but at most 4
#   --out DIR  raw JSON lines (DIR/raw.jsonl) and the table (DIR/table.md); default
#              BUILD_DIR/bench_shared
# Every program runs with the environment as it is (no OMP_* set here: default settings are
# the point); pass OMP_WAIT_POLICY etc. in the environment to measure them.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=build BASE=main THREADS=2,4,8 ROUNDS=2 MODELS="demo-seg demo-det mask-rcnn upernet-s" PY=1 OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --base) BASE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --no-python) PY=0; shift ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    -*) echo "bench_shared: unknown option $1" >&2; exit 2 ;;
    *) BUILD=$1; shift ;;
  esac
done
BUILD=$(cd "$ROOT" && mkdir -p "$BUILD" && cd "$BUILD" && pwd)
OUT=${OUT:-$BUILD/bench_shared}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PYBIN=/usr/bin/python3

# the working tree's library
[ -e "$BUILD/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$BUILD" -j"$(nproc)" --target ravlt_shared > /dev/null
# the base's, from git archive (a clean export: no build dirs, no untracked files)
rev=$(git -C "$ROOT" rev-parse --short "$BASE")
if [ "$(cat "$OUT/base-src/.rev" 2>/dev/null || true)" != "$rev" ]; then
  rm -rf "$OUT/base-src" "$OUT/base-build"
  mkdir -p "$OUT/base-src"
  git -C "$ROOT" archive "$BASE" | tar -x -C "$OUT/base-src"
  echo "$rev" > "$OUT/base-src/.rev"
fi
[ -e "$OUT/base-build/CMakeCache.txt" ] ||
  cmake -S "$OUT/base-src" -B "$OUT/base-build" -DCMAKE_BUILD_TYPE=Release -DRAVLT_TESTS=OFF > /dev/null
cmake --build "$OUT/base-build" -j"$(nproc)" --target ravlt_shared > /dev/null
for side in base new; do
  if [ $side = base ]; then src=$OUT/base-src lib=$OUT/base-build; else src=$ROOT lib=$BUILD; fi
  cc -O2 -I "$src/include" -I "$lib/include" "$ROOT/bench/bench_shared.c" "$lib/libravlt.so" -lpthread \
    -Wl,-rpath,"$lib" -o "$OUT/bench_shared_$side"
done

model_args() {  # name -> checkpoint [--name N]
  case $1 in
    demo-seg) echo "$ROOT/models/demo_seg.safetensors" ;;
    demo-det) echo "$ROOT/models/demo_det.safetensors" ;;
    mask-rcnn) echo "$ROOT/tests/fixtures/e2e/mask_rcnn/checkpoint.pth" ;;
    upernet) echo "$ROOT/tests/fixtures/e2e/upernet/checkpoint.pth" ;;
    upernet-s)
      [ -s "$OUT/upernet_s_random.pth" ] || "$PYBIN" "$ROOT/tools/random_checkpoint.py" upernet-s "$OUT/upernet_s_random.pth"
      echo "$OUT/upernet_s_random.pth --name upernet-ravlt-s" ;;
    *) echo "bench_shared: unknown model $1" >&2; exit 2 ;;
  esac
}

: > "$OUT/raw.jsonl"
for model in $MODELS; do
  # shellcheck disable=SC2207
  args=($(model_args "$model"))
  th=$THREADS
  [ "$model" = upernet-s ] && th=$(echo "$THREADS" | tr ',' '\n' | awk '$1 <= 4' | paste -sd, -)
  for side in base new; do
    echo "bench_shared: $model, $side ($th threads)" >&2
    "$OUT/bench_shared_$side" "${args[@]}" --threads "$th" --rounds "$ROUNDS" |
      sed "s/^{/{\"model\": \"$model\", \"side\": \"$side\", \"lang\": \"c\", /" >> "$OUT/raw.jsonl"
    if [ $PY = 1 ] && [ "$model" != upernet-s ]; then
      if [ $side = base ]; then pp=$OUT/base-src/python pl=$OUT/base-build/libravlt.so.0; else pp=$ROOT/python pl=$BUILD/libravlt.so.0; fi
      PYTHONPATH=$pp RAVLT_LIBRARY=$pl "$PYBIN" "$ROOT/bench/bench_shared.py" "${args[@]}" --threads "$th" --rounds "$ROUNDS" |
        sed "s/^{/{\"model\": \"$model\", \"side\": \"$side\", \"lang\": \"python\", /" >> "$OUT/raw.jsonl"
    fi
  done
done

"$PYBIN" - "$OUT/raw.jsonl" "$rev" > "$OUT/table.md" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
key = lambda r: (r['model'], r['lang'], r['n'])
base = {key(r): r for r in rows if r['side'] == 'base'}
cpu = any('cpu_ratio' in r for r in rows)
print('| model | threads | N | %s sequential s | %s concurrent s | %s ratio | now sequential s | now concurrent s | now ratio |%s identical |' % (
    (sys.argv[2],) * 3 + (' %s CPU ratio | now CPU ratio |' % sys.argv[2] if cpu else '',)))
print('|---|---|---|---|---|---|---|---|---|' + ('---|---|' if cpu else '') + '---|')
for r in rows:
    if r['side'] != 'new':
        continue
    b = base.get(key(r))
    bs = ('%.3f' % b['sequential_s'], '%.3f' % b['concurrent_s'], '%.2fx' % b['ratio']) if b else ('-',) * 3
    cr = ''
    if cpu:
        f = lambda x: '%.2fx' % x['cpu_ratio'] if x and 'cpu_ratio' in x else '-'
        cr = ' %s | %s |' % (f(b), f(r))
    print('| %s | %s | %d | %s | %s | %s | %.3f | %.3f | %.2fx |%s %s |' % (
        r['model'], 'C' if r['lang'] == 'c' else 'Python', r['n'], bs[0], bs[1], bs[2], r['sequential_s'],
        r['concurrent_s'], r['ratio'], cr, 'yes' if r['identical'] and (not b or b['identical']) else 'NO'))
EOF
cat "$OUT/table.md"
