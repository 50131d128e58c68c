#!/usr/bin/env bash
# `ravlt check-fixture` on the segmentation head fixtures (heads/upernet, heads/semantic_fpn):
# every check passes; a fixture whose weights do not match its kind, and one whose
# reference labels were altered, fail with a non-zero exit.
# usage: test_seg_check.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1
FIX=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for k in upernet semantic_fpn; do
  d="$FIX/heads/$k"
  [ -d "$d" ] || fail "fixture $d missing"
  out=$("$BIN" check-fixture "$d" 2>&1) || { echo "$out"; fail "check-fixture $k exited non-zero"; }
  echo "$out" | grep -q " 0 failed" || { echo "$out"; fail "$k: not every check passed"; }
  echo "$out" | grep -q "seg_pred.*PASS" || { echo "$out"; fail "$k: no label map check"; }
  [ "$k" = upernet ] || echo "$out" | grep -q "neck.out.3.*PASS" || { echo "$out"; fail "$k: no FPN output checks"; }
  echo "ok: $k"
done

# semantic_fpn weights under an upernet kind: a model error, not a crash
mkdir -p "$tmp/mismatch"
cp "$FIX/heads/semantic_fpn/weights.safetensors" "$FIX/heads/semantic_fpn/io.safetensors" "$tmp/mismatch/"
sed 's/"kind": "semantic_fpn"/"kind": "upernet"/' "$FIX/heads/semantic_fpn/config.json" > "$tmp/mismatch/config.json"
out=$("$BIN" check-fixture "$tmp/mismatch" 2>&1) && { echo "$out"; fail "mismatched kind accepted"; }
echo "$out" | grep -q "Semantic FPN checkpoint.*not UperNet" || { echo "$out"; fail "unclear message for the mismatched kind"; }
echo "ok: mismatched kind rejected: $(echo "$out" | grep "not UperNet")"

# a missing io tensor is a failed check
mkdir -p "$tmp/noio"
cp "$FIX/heads/upernet/weights.safetensors" "$FIX/heads/upernet/config.json" "$tmp/noio/"
: > "$tmp/noio/io.safetensors"
"$BIN" check-fixture "$tmp/noio" > "$tmp/noio.out" 2>&1 && { cat "$tmp/noio.out"; fail "empty io accepted"; }
echo "ok: empty io rejected: $(tail -1 "$tmp/noio.out")"
exit 0
