#!/usr/bin/env bash
# `ravlt check-fixture` on every whole-model fixture in FIXTURES_DIR/e2e (official
# checkpoints with meta, a real photograph, the official outputs: segmentors' label maps,
# detectors' detections, masks and mmdet's results JSON): every check passes, exit 0.
# usage: test_e2e_check.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1
FIX=$2
fail() { echo "FAIL: $*"; exit 1; }
n=0
for d in "$FIX"/e2e/*/; do
  [ -f "$d/config.json" ] || continue
  k=$(basename "$d")
  out=$("$BIN" check-fixture "$d" 2>&1) || { echo "$out"; fail "check-fixture $k exited non-zero"; }
  echo "$out" | grep -q "checks, 0 failed" || { echo "$out"; fail "$k: not every check passed"; }
  echo "$out" | grep -q "FAIL" && { echo "$out"; fail "$k: a FAIL line"; }
  echo "ok: $k ($(echo "$out" | tail -1))"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no e2e fixtures under $FIX/e2e"
exit 0
