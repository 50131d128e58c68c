#!/usr/bin/env bash
# `--strict` on the binary (issue 23): checkpoints made here from the e2e fixtures
# (safetensors rewritten with python3's standard library: one key renamed, one extra key).
#  - a key the model needs, renamed: the load fails (non-zero exit) naming the missing key,
#    with or without --strict;
#  - an extra key and an optional key renamed (both now keys the model does not use):
#    without --strict the run succeeds and a warning names both; with --strict the run fails
#    naming them (segment, detect, bench --weights, eval ade20k; classify on a classifier);
#  - --strict is refused where nothing loads a whole model (bench MODEL).
#   bash tests/cli/test_cli_strict.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$(readlink -f "$1")
FIX=$(readlink -f "$2")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# variant SRC DST [--rename FROM TO]... [--extra KEY]...: a safetensors copy of SRC with keys
# renamed and extra F32 [3] tensors appended (the metadata kept).
variant() {
  python3 - "$@" << 'EOF'
import json, struct, sys
src, dst, args = sys.argv[1], sys.argv[2], sys.argv[3:]
raw = open(src, 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
head = json.loads(raw[8:8 + n])
data = bytearray(raw[8 + n:])
i = 0
while i < len(args):
    if args[i] == '--rename':
        head[args[i + 2]] = head.pop(args[i + 1]); i += 3
    elif args[i] == '--extra':
        off = len(data); data += struct.pack('<3f', 1, 2, 3)
        head[args[i + 1]] = {'dtype': 'F32', 'shape': [3], 'data_offsets': [off, len(data)]}; i += 2
    else:
        sys.exit('bad argument ' + args[i])
h = json.dumps(head).encode()
h += b' ' * (-len(h) % 8)
open(dst, 'wb').write(struct.pack('<Q', len(h)) + h + bytes(data))
EOF
}

# run NAME WANT_RC PATTERN... -- CMD...: exit status WANT_RC (0 or "fail": non-zero) and
# every PATTERN on stderr
run() {
  local name=$1 want=$2
  shift 2
  local pats=()
  while [ "$1" != "--" ]; do pats+=("$1"); shift; done
  shift
  "$@" > "$T/out" 2> "$T/err"
  local rc=$?
  if [ "$want" = 0 ] && [ $rc != 0 ]; then fail "$name: exit $rc, want 0: $(cat "$T/err")"; return; fi
  if [ "$want" = fail ] && { [ $rc = 0 ] || [ $rc -ge 128 ]; }; then fail "$name: exit $rc, want an error exit: $(cat "$T/err")"; return; fi
  for p in "${pats[@]}"; do
    grep -qF -- "$p" "$T/err" || { fail "$name: stderr lacks '$p': $(cat "$T/err")"; return; }
  done
  ok "$name (exit $rc)"
}

SEG=$FIX/e2e/semantic_fpn
DET=$FIX/e2e/retinanet
REQ=decode_head.scale_heads.1.0.conv.weight
OPT=decode_head.conv_seg.bias
variant "$SEG/weights.safetensors" "$T/seg_missing.safetensors" --rename $REQ ${REQ}_renamed
variant "$SEG/weights.safetensors" "$T/seg_extra.safetensors" --rename $OPT ${OPT}_renamed --extra decode_head.extra.weight
variant "$DET/weights.safetensors" "$T/det_extra.safetensors" --extra bbox_head.extra.weight
variant "$DET/weights.safetensors" "$T/det_missing.safetensors" --rename bbox_head.retina_reg.weight bbox_head.retina_reg.weight_x

IMG=$SEG/image.jpg
# the fixture as it is: no warning, strict or not
run "segment --strict, clean checkpoint" 0 -- "$BIN" segment --strict --weights "$SEG/weights.safetensors" --out-dir "$T/o0" --format png "$IMG"
grep -q "unexpected" "$T/err" && fail "clean checkpoint warned: $(cat "$T/err")"

# missing key: an error naming it, strict or not
run "segment, renamed required key" fail "missing key '$REQ'" -- "$BIN" segment --weights "$T/seg_missing.safetensors" --out-dir "$T/o1" "$IMG"
run "segment --strict, renamed required key" fail "missing key '$REQ'" -- "$BIN" segment --strict --weights "$T/seg_missing.safetensors" --out-dir "$T/o1" "$IMG"
run "detect, renamed required key" fail "missing key 'bbox_head.retina_reg.weight'" -- "$BIN" detect --weights "$T/det_missing.safetensors" --no-draw "$IMG"

# extra keys: a warning without --strict (the run succeeds and writes its output) ...
run "segment, extra keys warn" 0 "2 unexpected keys" "decode_head.extra.weight" "${OPT}_renamed" -- \
  "$BIN" segment --weights "$T/seg_extra.safetensors" --out-dir "$T/o2" --format png "$IMG"
[ -s "$T/o2/image.png" ] || fail "segment with a warning wrote no label map"
run "detect, extra key warns" 0 "1 unexpected key" "bbox_head.extra.weight" -- \
  "$BIN" detect --weights "$T/det_extra.safetensors" --no-draw --json "$T/d.json" "$IMG"
[ -s "$T/d.json" ] || fail "detect with a warning wrote no JSON"
# ... an error with --strict, naming the key
run "segment --strict, extra keys" fail "unexpected key '" "decode_head.extra.weight" "${OPT}_renamed" -- \
  "$BIN" segment --strict --weights "$T/seg_extra.safetensors" --out-dir "$T/o3" "$IMG"
[ -e "$T/o3/image.png" ] && fail "segment --strict wrote output after the load failed"
run "detect --strict, extra key" fail "unexpected key 'bbox_head.extra.weight'" -- \
  "$BIN" detect --strict --weights "$T/det_extra.safetensors" --no-draw "$IMG"
run "detect --strict=1 is a usage error" fail "--strict takes no value" -- \
  "$BIN" detect --strict=1 --weights "$T/det_extra.safetensors" --no-draw "$IMG"
run "bench --weights --strict, extra key" fail "unexpected key 'bbox_head.extra.weight'" -- \
  "$BIN" bench --strict --weights "$T/det_extra.safetensors" --size 64x64 --runs 1 --warmup 0
run "bench --weights, extra key warns" 0 "bbox_head.extra.weight" -- \
  "$BIN" bench --weights "$T/det_extra.safetensors" --size 64x64 --runs 1 --warmup 0
run "bench MODEL --strict" fail "--strict needs --weights" -- "$BIN" bench --strict ravlt-t-backbone --random-weights

# eval ade20k in model mode: one image and its annotation
mkdir -p "$T/ade/images/validation" "$T/ade/annotations/validation"
cp "$IMG" "$T/ade/images/validation/a.jpg"
"$BIN" segment --weights "$SEG/weights.safetensors" --out-dir "$T/ade/annotations/validation" --format png "$IMG" 2> /dev/null
mv "$T/ade/annotations/validation/image.png" "$T/ade/annotations/validation/a.png"
run "eval ade20k --strict, extra keys" fail "unexpected key '" "decode_head.extra.weight" -- \
  "$BIN" eval ade20k --strict --root "$T/ade" --weights "$T/seg_extra.safetensors" --json "$T/m.json"
run "eval ade20k, extra keys warn" 0 "decode_head.extra.weight" -- \
  "$BIN" eval ade20k --root "$T/ade" --weights "$T/seg_extra.safetensors" --json "$T/m.json"

# every command that loads a checkpoint lists --strict in its --help
for c in segment detect video "eval coco" "eval ade20k" classify bench; do
  # shellcheck disable=SC2086
  "$BIN" $c --help 2> /dev/null | grep -q -- "--strict" && ok "$c --help lists --strict" || fail "$c --help lacks --strict"
done

[ $fails = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all ok"
