#!/usr/bin/env bash
# Inputs that used to be misread (issue 43): label PNGs of another bit depth than 8 (OpenCV
# scales 1/2/4-bit grey to 0..255: a 4-bit label 1 read as 17) are refused by eval ade20k
# naming the file; convert refuses a state_dict without tensors; a checkpoint read from a
# pipe (--weights <(cat x.pth)) is read like the file, and garbage from a pipe is refused as
# "not a checkpoint" (never parsed as safetensors); decompression bombs in several formats
# refused from their headers by the CLI, fast.
# usage: test_bad_inputs.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
DATA=$(cd "$3" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
R() { "$BIN" --quiet --threads 1 "$@"; }

# 1. label PNGs of 1, 2, 4 and 16 bits: refused, naming the file (gt and prediction side)
R synth --task seg --out-dir seg --count 2 --size 64x64 2> /dev/null || fail "synth"
GT=seg/annotations/validation
mkdir -p pred && cp $GT/*.png pred/
R eval ade20k --pred-dir pred --gt-dir $GT > /dev/null || fail "eval ade20k on 8-bit labels: rc $?"
first=$(ls $GT | head -1)
for depth in 1 2 4 16; do
  sides="gt"
  [ $depth = 4 ] && sides="gt pred"
  for side in $sides; do
    rm -rf g p && cp -r $GT g && cp -r pred p
    [ $side = gt ] && dir=g || dir=p
    /usr/bin/python3 - "$dir/$first" $depth << 'PY'
import struct, sys, zlib
path, depth = sys.argv[1], int(sys.argv[2])
w = h = 64  # labels 0..min(2^depth-1, 6): values the 8-bit file could hold as they are
vals = [[(x // 8 + y // 8) % min(1 << depth, 7) for x in range(w)] for y in range(h)]
def row(r):
    if depth == 16:
        return b"".join(struct.pack(">H", v) for v in r)
    bits = "".join(format(v, "0%db" % depth) for v in r)
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))
raw = b"".join(b"\0" + row(r) for r in vals)
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, 0, 0, 0, 0))
                       + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
PY
    R eval ade20k --pred-dir p --gt-dir g > /dev/null 2> err.txt; rc=$?
    [ $rc = 1 ] || fail "$depth-bit $side label PNG: rc $rc, expected 1"
    grep -q "$dir/$first.*$depth-bit PNG; expected an 8-bit grey PNG" err.txt || fail "$depth-bit $side label: $(cat err.txt)"
  done
done

# 2. convert: an empty state_dict is refused, nothing written
R convert "$DATA/pth/empty_state_dict.pth" e.safetensors 2> err.txt; rc=$?
[ $rc = 1 ] || fail "convert of an empty state_dict: rc $rc, expected 1"
grep -q "holds no tensors" err.txt || fail "convert empty: $(cat err.txt)"
ls -A | grep -q "e.safetensors" && fail "convert of an empty state_dict wrote a file"

# 3. checkpoints from pipes: read as the files are; garbage refused as not a checkpoint
cp "$DATA/backbone/classifier.pth" ck.pth
R convert ck.pth file.safetensors || fail "convert ck.pth"
R convert <(cat ck.pth) pipe.safetensors || fail "convert <(cat ck.pth): rc $?"
cmp -s file.safetensors pipe.safetensors || fail "convert from a pipe differs from the file's"
R info ck.pth --json a.json > /dev/null && R info <(cat ck.pth) --json b.json > /dev/null || fail "info <(cat ck.pth)"
R info <(cat pipe.safetensors) --json c.json > /dev/null || fail "info <(cat x.safetensors)"
/usr/bin/python3 -c 'import json,sys; a,b,c=(json.load(open(f)) for f in sys.argv[1:4]); del a["model"], b["model"], c["model"]; sys.exit(not (a == b == c))' a.json b.json c.json \
  || fail "info from pipes differs from the file's"
IMG=$(ls seg/images/validation/*.jpg | head -1)
R classify --weights ck.pth --json k1.json "$IMG" > /dev/null && R classify --weights <(cat ck.pth) --json k2.json "$IMG" > /dev/null \
  || fail "classify --weights <(cat ck.pth)"
cmp -s k1.json k2.json || fail "classify from a pipe differs from the file's"
R convert <(printf 'PK\003\004 not a zip at all, a few more bytes of nothing') x.safetensors 2> err.txt && fail "a broken zip from a pipe was accepted"
grep -q "zip" err.txt || fail "broken zip from a pipe: $(cat err.txt)"
R info <(head -c 4096 /dev/urandom | tr '\000-\377' 'a-za-za-za-za-za-za-za-za-za-za-z') 2> err.txt && fail "garbage from a pipe accepted"
grep -q "not a checkpoint" err.txt || fail "garbage from a pipe: $(cat err.txt)"
grep -q "header length" err.txt && fail "garbage from a pipe parsed as safetensors: $(cat err.txt)"

# 4. decompression bombs through the CLI: refused from the header, before a decoder
# allocates (a 12000x12000 BGR image is 432 MB: the peak RSS stays far below), nothing written
for f in bomb.jp2 bomb_le.tif bomb_big.tif bomb.exr bomb.hdr bomb.pam; do
  kb=$(python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stderr=open("err.txt", "w")).returncode
print(r, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$BIN" --quiet --threads 1 segment --out-dir bo "$DATA/image/bombs/$f")
  rc=${kb% *}
  kb=${kb#* }
  [ "$rc" = 1 ] || fail "segment $f: rc $rc"
  grep -q "12000x12000 = 144000000 pixels, over the limit" err.txt || fail "segment $f: $(cat err.txt)"
  [ "$kb" -lt 300000 ] || fail "segment $f: peak RSS $kb KB (decoded?)"
done
[ -z "$(ls bo 2> /dev/null)" ] || fail "segment wrote outputs for bombs: $(ls bo)"
"$BIN" --quiet --max-pixels 1000 segment --out-dir bo2 "$IMG" 2> err.txt && fail "--max-pixels 1000 accepted a 64x64 image"
grep -q "over the limit of 1000" err.txt || fail "--max-pixels 1000: $(cat err.txt)"

[ $fails = 0 ] && echo "test_bad_inputs: all passed"
exit $((fails > 0))
