#!/usr/bin/env bash
# CLI: `ravlt bench --weights CKPT` on the small e2e fixture checkpoints (a segmentor and a
# detector): JSON keys, a per-stage breakdown whose stages sum to the total within 10%, and
# the usage errors. Timings themselves are not asserted.
# usage: bash test_bench_dense.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1
FIX=$2
fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok: $1"; }
bad() { fails=$((fails + 1)); echo "FAIL: $1"; }
num() { echo "$1" | grep -o "\"$2\":[0-9.e+-]*" | head -1 | cut -d: -f2; }

check_model() { # fixture arch stage...
  local ck=$FIX/e2e/$1/checkpoint.pth arch=$2
  shift 2
  [ -f "$ck" ] || { bad "missing fixture $ck"; return; }
  local out
  out=$("$BIN" bench --weights "$ck" --size 48x64 --runs 1 --warmup 0 --threads 1 --json - 2>/dev/null) ||
    { bad "bench --weights $ck exited non-zero"; return; }
  echo "$out" | grep -q "\"arch\":\"$arch\"" || { bad "$arch: arch missing: $out"; return; }
  echo "$out" | grep -q '"input":\[48,64\]' || { bad "$arch: input missing: $out"; return; }
  for s in "$@"; do
    echo "$out" | grep -q "\"$s\":[0-9]" || { bad "$arch: stage $s missing: $out"; return; }
  done
  local sum tot
  sum=$(echo "$out" | sed 's/.*"stages_ms":{\([^}]*\)}.*/\1/' | tr ',' '\n' | cut -d: -f2 | awk '{ s += $1 } END { print s }')
  tot=$(num "$out" median_ms)
  if awk -v s="$sum" -v t="$tot" 'BEGIN { exit !(t > 0 && s <= t * 1.001 && s >= 0.9 * t) }'; then
    ok "$arch: stages $* sum to $sum of $tot ms"
  else
    bad "$arch: stages sum $sum vs total $tot: $out"
  fi
  "$BIN" bench --weights "$ck" --size 48x64 --runs 1 --warmup 0 --threads 1 2>/dev/null | grep -q "stages (median run): preprocess" &&
    ok "$arch: text output" || bad "$arch: text output"
}
check_model semantic_fpn semantic_fpn preprocess backbone head post
check_model mask_rcnn mask_rcnn preprocess backbone neck rpn roi mask post

usage_err() { # description args...
  local d=$1
  shift
  local err
  err=$("$BIN" bench "$@" 2>&1 >/dev/null)
  local rc=$?
  if [ $rc -ne 0 ] && [ "$(echo "$err" | wc -l)" -le 2 ] && [ -n "$err" ]; then ok "$d: rc $rc"; else bad "$d: rc $rc, '$err'"; fi
}
usage_err "missing checkpoint" --weights /nonexistent/model.pth
usage_err "weights and model" ravlt-t --weights "$FIX/e2e/semantic_fpn/checkpoint.pth"
usage_err "weights and random" --weights "$FIX/e2e/semantic_fpn/checkpoint.pth" --random-weights
usage_err "name without weights" ravlt-t --random-weights --name upernet-ravlt-s
usage_err "weights without value" --weights

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
