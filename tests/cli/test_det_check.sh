#!/usr/bin/env bash
# `ravlt check-fixture` on the detection head fixtures (heads/cascade_mask_rcnn,
# heads/mask_rcnn): every check passes (FPN, RPN, proposals, per-stage RoI tensors, mask
# tensors, final detections and masks); a checkpoint of another architecture than the kind
# says, and a reference from another model, fail with a non-zero exit and no crash.
# usage: test_det_check.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1
FIX=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for k in cascade_mask_rcnn mask_rcnn; do
  d="$FIX/heads/$k"
  [ -d "$d" ] || fail "fixture $d missing"
  out=$("$BIN" check-fixture "$d" 2>&1) || { echo "$out"; fail "check-fixture $k exited non-zero"; }
  echo "$out" | grep -q "checks, 0 failed" || { echo "$out"; fail "$k: not every check passed"; }
  for key in neck.out.4 rpn.bbox_pred.4 rpn.proposals roi.stage0.cls_score mask.merged_probs \
             det.labels det.bboxes det.scores det.masks; do
    echo "$out" | grep -q "$key.*PASS" || { echo "$out"; fail "$k: no passing $key check"; }
  done
  [ "$k" = mask_rcnn ] || echo "$out" | grep -q "roi.stage2.bbox_pred.*PASS" ||
    { echo "$out"; fail "$k: no stage 2 check"; }
  echo "ok: $k ($(echo "$out" | tail -1))"
done

# cascade weights under the mask_rcnn kind: a clear model error
mkdir -p "$tmp/mismatch"
cp "$FIX/heads/cascade_mask_rcnn/weights.safetensors" "$FIX/heads/cascade_mask_rcnn/io.safetensors" "$tmp/mismatch/"
sed 's/"kind": "cascade_mask_rcnn"/"kind": "mask_rcnn"/' "$FIX/heads/cascade_mask_rcnn/config.json" > "$tmp/mismatch/config.json"
out=$("$BIN" check-fixture "$tmp/mismatch" 2>&1) && { echo "$out"; fail "mismatched kind accepted"; }
echo "$out" | grep -q "is a cascade_mask_rcnn, not a mask_rcnn" || { echo "$out"; fail "unclear message for the mismatched kind"; }
echo "ok: mismatched kind rejected: $(echo "$out" | tail -1)"

# the reference of another model (cascade io with mask_rcnn weights): checks fail, exit non-zero
mkdir -p "$tmp/otherref"
cp "$FIX/heads/mask_rcnn/weights.safetensors" "$FIX/heads/mask_rcnn/config.json" "$tmp/otherref/"
cp "$FIX/heads/cascade_mask_rcnn/io.safetensors" "$tmp/otherref/"
out=$("$BIN" check-fixture "$tmp/otherref" 2>&1) && { echo "$out"; fail "wrong reference accepted"; }
echo "$out" | grep -q "FAIL" || { echo "$out"; fail "wrong reference: no FAIL line"; }
echo "ok: wrong reference rejected: $(echo "$out" | tail -1)"
exit 0
