#!/usr/bin/env bash
# Seed corpora for the libFuzzer targets, from the fixtures and tests/data (see README.md).
# usage: fuzz/make_corpus.sh OUTDIR [FIXTURES_DIR]
set -eu
OUT=$1
FIX=${2:-$(dirname "$0")/../tests/fixtures}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"/{pth,pickle,pyconfig,safetensors,coco,imghdr}
cp "$ROOT"/tests/data/pyconfig/*.py "$OUT/pyconfig/"
for d in "$FIX"/e2e/*/; do cp "$d/train_config.py" "$OUT/pyconfig/$(basename "$d").py"; done
/usr/bin/python3 - "$OUT" "$FIX" "$ROOT" <<'PY'
import glob, json, os, struct, sys, zipfile
out, fix, root = sys.argv[1:4]
pths = sorted(glob.glob(root + "/tests/data/pth/*.pth"))
big = sorted(glob.glob(fix + "/backbone/tiny/checkpoint.pth") + glob.glob(fix + "/e2e/*/checkpoint.pth"))
for p in pths + big:
    name = os.path.basename(os.path.dirname(p)) + "_" + os.path.basename(p) if p in big else os.path.basename(p)
    raw = open(p, "rb").read()
    if p in pths:  # whole small zips (mode byte 0)
        open(f"{out}/pth/zip_{name}", "wb").write(b"\x00" + raw)
    try:
        z = zipfile.ZipFile(p)
        pkl = [z.read(n) for n in z.namelist() if n.endswith("/data.pkl")][0]
    except Exception:
        continue
    open(f"{out}/pickle/{name}.pkl", "wb").write(pkl)
    open(f"{out}/pth/pkl_{name}", "wb").write(b"\x01" + pkl)  # wrapped pickle (mode byte 1)
def st(path, tensors, meta=None):
    hdr, data = {}, b""
    if meta: hdr["__metadata__"] = meta
    for n, (dt, shape, b) in tensors.items():
        hdr[n] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(hdr).encode()
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
st(f"{out}/safetensors/a.safetensors", {"w": ("F32", [2, 3], struct.pack("<6f", *range(6))),
   "n": ("I64", [], struct.pack("<q", 7)), "h": ("F16", [2], b"\x00\x3c\x00\xc0"),
   "b": ("BF16", [1], b"\x80\x3f"), "u": ("U8", [3], b"abc")}, {"config": "model = dict()", "k": "v"})
st(f"{out}/safetensors/b.safetensors", {"d": ("F64", [1, 1], struct.pack("<d", 1.5)),
   "e": ("F32", [0, 4], b""), "i": ("I32", [2], struct.pack("<2i", -1, 2))})
PY
# COCO: gt.json, a NUL byte, then a results file (bbox and segm) of every eval case
for d in "$FIX"/coco_eval/* "$ROOT"/tests/data/eval/random_coco_*; do
  for t in bbox segm; do
    { cat "$d/gt.json"; printf '\0'; cat "$d/dt_$t.json"; } > "$OUT/coco/$(basename "$d")_$t"
  done
  cp "$d/gt.json" "$OUT/coco/$(basename "$d")_gt"
done
# image headers: the declared-size files of every format, the small test images
cp "$ROOT"/tests/data/image/bombs/* "$ROOT"/tests/data/image/*.png "$OUT/imghdr/"
echo "corpus in $OUT: $(ls "$OUT"/pth | wc -l) pth, $(ls "$OUT"/pickle | wc -l) pickle, $(ls "$OUT"/pyconfig | wc -l) pyconfig, $(ls "$OUT"/safetensors | wc -l) safetensors, $(ls "$OUT"/coco | wc -l) coco, $(ls "$OUT"/imghdr | wc -l) imghdr seeds"
