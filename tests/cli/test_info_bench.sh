#!/usr/bin/env bash
# CLI: `ravlt info` (official parameter counts, MACs with and without attention matmuls,
# JSON shape) and `ravlt bench` (random weights, JSON keys), with their usage errors.
# usage: bash test_info_bench.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1
FIX=$2
fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok: $1"; }
bad() { fails=$((fails + 1)); echo "FAIL: $1"; }

check_info() { # preset params macs_G_2dp
  local out
  out=$("$BIN" info "$1" --json -) || { bad "info $1 exited non-zero"; return; }
  if echo "$out" | grep -q "\"params\":$2," && echo "$out" | grep -q '"macs_paper":' &&
     echo "$out" | grep -q '"stages":\[{' ; then
    local macs
    macs=$(echo "$out" | grep -o '"macs":[0-9.e+]*' | head -1 | cut -d: -f2)
    local g
    g=$(awk -v m="$macs" 'BEGIN { printf "%.2f", m / 1e9 }')
    if [ "$g" = "$3" ]; then ok "info $1: params $2, macs $g G"; else bad "info $1: macs $g G, expected $3"; fi
  else
    bad "info $1: $out"
  fi
}
check_info ravlt-t 14897768 2.61
check_info ravlt-s 25591208 4.88
check_info ravlt-b 48241288 10.58
check_info ravlt-l 95242440 17.21

out=$("$BIN" info ravlt-s-backbone --size 512x512)
if echo "$out" | grep -q "stage3 *32x32" && echo "$out" | grep -q "macs_paper"; then ok "info text table"; else bad "info text: $out"; fi
out=$("$BIN" info "$FIX/backbone/tiny/checkpoint.pth" --size 70x94 --json -)
if echo "$out" | grep -q '"params":168416,' && echo "$out" | grep -q '"h":18,"w":24'; then ok "info on a checkpoint"; else bad "info checkpoint: $out"; fi

expect_fail() { # name pattern command...
  local name=$1 pat=$2
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && echo "$out" | grep -q -- "$pat"; then ok "$name (exit $rc)"; else bad "$name: exit $rc: $out"; fi
}
expect_fail "info unknown model" "neither a preset" "$BIN" info ravlt-q
expect_fail "info bad size" "--size" "$BIN" info ravlt-t --size 0x5
expect_fail "bench preset without weights" "random-weights" "$BIN" bench ravlt-t
expect_fail "bench bad runs" "--runs" "$BIN" bench ravlt-t --random-weights --runs 0
expect_fail "info not a checkpoint" "config.json" "$BIN" info "$FIX/backbone/tiny/config.json"

out=$("$BIN" bench ravlt-t --random-weights --size 64x48 --runs 2 --threads 1 --json -)
if echo "$out" | grep -q '"median_ms":' && echo "$out" | grep -q '"gmacs_per_s":' &&
   echo "$out" | grep -q '"peak_rss_mb":' && echo "$out" | grep -q '"min_ms":' &&
   echo "$out" | grep -q '"max_ms":'; then ok "bench --json"; else bad "bench json: $out"; fi
out=$("$BIN" bench ravlt-t-backbone --random-weights --size 40x40 --runs 1)
if echo "$out" | grep -q "GMAC/s"; then ok "bench backbone text"; else bad "bench text: $out"; fi
out=$("$BIN" bench "$FIX/backbone/d64/weights.safetensors" --size 64x64 --runs 1 --json -)
if echo "$out" | grep -q '"variant":"backbone"'; then ok "bench a checkpoint"; else bad "bench checkpoint: $out"; fi

# classify: a small random classifier checkpoint (tests/data/backbone), DeiT-style .pth
DATA=$3
out=$("$BIN" classify --weights "$DATA/backbone/classifier.pth" "$DATA/image/rgb8.png" 2>&1)
n=$(echo "$out" | grep -c '%  ')
if [ "$n" -eq 5 ] && echo "$out" | grep -q "rgb8.png:"; then ok "classify top-5"; else bad "classify: $out"; fi
out=$("$BIN" classify --weights "$DATA/backbone/classifier.safetensors" --json - --top 3 "$DATA/image/rgb8.png")
if echo "$out" | grep -q '"top":\[{"index":[0-9]*,"label":"[^"]*","prob":0\.[0-9]*},{' ; then ok "classify --json"; else bad "classify json: $out"; fi
expect_fail "classify missing image" "nothere.jpg" "$BIN" classify --weights "$DATA/backbone/classifier.pth" "$DATA/image/rgb8.png" nothere.jpg
expect_fail "classify backbone weights" "no classifier head" "$BIN" classify --weights "$FIX/backbone/tiny/weights.safetensors" "$DATA/image/rgb8.png"
expect_fail "classify no weights" "--weights" "$BIN" classify "$DATA/image/rgb8.png"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
