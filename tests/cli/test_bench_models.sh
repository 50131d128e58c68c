#!/usr/bin/env bash
# CLI: `ravlt bench NAME --random-weights` for every whole-model name (rv_model_names, as
# `ravlt models` lists them) at a small --size with one run: valid JSON (`--json -`) with the
# model, its family, the network input (--size, padded to 32 for detectors), the stage keys
# of its family summing to the total within 10%, and the forced detection counts (two-stage:
# 100 detections from 1..1000 RPN proposals; RetinaNet: 20..100 at this size). An unknown name is one clear line listing
# every name; a whole-model name without --random-weights is a usage error. Timings are not
# asserted.
# usage: bash test_bench_models.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1
fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok: $1"; }
bad() { fails=$((fails + 1)); echo "FAIL: $1"; }
num() { echo "$1" | grep -o "\"$2\":[0-9.e+-]*" | head -1 | cut -d: -f2; }
isjson() { python3 -c 'import json,sys; json.load(sys.stdin)'; }

# the names, from the unknown-name error (which must list them all)
err=$("$BIN" bench no-such-model --random-weights 2>&1 >/dev/null)
rc=$?
names=$(echo "$err" | grep -o '[a-z-]*-ravlt-[tsbl]' | sort -u)
count=$(echo "$names" | grep -c .)
if [ $rc -eq 2 ] && [ "$(echo "$err" | wc -l)" -eq 1 ] && echo "$err" | grep -q "unknown model 'no-such-model'" &&
  [ "$count" -eq 18 ]; then
  ok "unknown name: one line, rc 2, $count names listed"
else
  bad "unknown name: rc $rc, $count names: '$err'"
fi
for n in semantic-fpn-ravlt-t upernet-ravlt-s retinanet-ravlt-s mask-rcnn-ravlt-t cascade-mask-rcnn-ravlt-s; do
  echo "$names" | grep -qx "$n" || bad "name $n not listed"
done
# ravlt models lists the same names
models=$("$BIN" models 2>/dev/null)
for n in $names; do echo "$models" | grep -q -- "$n" || bad "'ravlt models' does not list $n"; done

for n in $names; do
  d="" p=""
  case $n in
    semantic-fpn-*) arch=semantic_fpn; stages="preprocess backbone head post" ;;
    upernet-*) arch=upernet; stages="preprocess backbone head post" ;;
    retinanet-*) arch=retinanet; stages="preprocess backbone neck rpn post" ;;
    mask-rcnn-*) arch=mask_rcnn; stages="preprocess backbone neck rpn roi mask post" ;;
    cascade-mask-rcnn-*) arch=cascade_mask_rcnn; stages="preprocess backbone neck rpn roi mask post" ;;
  esac
  out=$("$BIN" bench "$n" --random-weights --size 64x90 --runs 1 --warmup 0 --threads 1 --json - 2>"$0.$$.err")
  rc=$?
  e=$(cat "$0.$$.err" 2>/dev/null); rm -f "$0.$$.err"
  [ $rc -eq 0 ] || { bad "$n: exit $rc: $e"; continue; }
  echo "$out" | isjson || { bad "$n: not JSON: $out"; continue; }
  echo "$out" | grep -q "\"model\":\"$n\"" && echo "$out" | grep -q "\"arch\":\"$arch\"" &&
    echo "$out" | grep -q '"weights":"random"' || { bad "$n: model/arch/weights: $out"; continue; }
  if [ "$arch" = semantic_fpn ] || [ "$arch" = upernet ]; then want='"network_input":\[64,90\]'; else want='"network_input":\[64,96\]'; fi
  echo "$out" | grep -q "$want" || { bad "$n: network input (want $want): $out"; continue; }
  miss=""
  for s in $stages; do echo "$out" | grep -q "\"$s\":[0-9]" || miss="$miss $s"; done
  [ -z "$miss" ] || { bad "$n: stages missing:$miss: $out"; continue; }
  sum=$(echo "$out" | sed 's/.*"stages_ms":{\([^}]*\)}.*/\1/' | tr ',' '\n' | cut -d: -f2 | awk '{ s += $1 } END { print s }')
  tot=$(num "$out" median_ms)
  awk -v s="$sum" -v t="$tot" 'BEGIN { exit !(t > 0 && s <= t * 1.001 && s >= 0.9 * t) }' ||
    { bad "$n: stages sum $sum vs total $tot"; continue; }
  case $arch in
    semantic_fpn | upernet)
      echo "$out" | grep -q '"detections"' && { bad "$n: a segmentor with detections: $out"; continue; } ;;
    *)
      d=$(num "$out" detections)
      # RetinaNet: the one class's best anchors after NMS (100 at 800x1344, fewer here)
      if [ "$arch" = retinanet ]; then
        [ -n "$d" ] && [ "$d" -ge 20 ] && [ "$d" -le 100 ] || { bad "$n: $d detections (want 20..100): $out"; continue; }
      else
        [ "$d" = 100 ] || { bad "$n: $d detections (want 100): $out"; continue; }
      fi
      if [ "$arch" != retinanet ]; then
        p=$(num "$out" proposals)
        [ -n "$p" ] && [ "$p" -ge 1 ] && [ "$p" -le 1000 ] || { bad "$n: proposals '$p': $out"; continue; }
      fi ;;
  esac
  ok "$n: $arch, stages $stages sum to $sum of $tot ms${d:+, $d detections}${p:+, $p proposals}"
done

# text output and the usage errors
"$BIN" bench mask-rcnn-ravlt-t --random-weights --size 64x64 --runs 1 --warmup 0 --threads 1 2>/dev/null |
  grep -q "stages (median run): preprocess.*100 detections" && ok "text output" || bad "text output"
err=$("$BIN" bench upernet-ravlt-s 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q "add --random-weights" && ok "whole model without --random-weights: rc 2" ||
  bad "whole model without --random-weights: rc $rc '$err'"
err=$("$BIN" bench upernet-ravlt-s --random-weights --backbone 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] && ok "--backbone with a whole model: rc 2" || bad "--backbone with a whole model: rc $rc '$err'"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
