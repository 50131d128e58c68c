#!/usr/bin/env bash
# The output rule of every command (issue 43, apps/outputs.c rv_cli_io_check): an output
# that is one of the command's inputs -- the same file through "./" spelling, a symbolic
# link or a hard link, or an existing file of an input folder the command reads -- is
# refused with exit 2 and a one-line message naming it, before any work, and the input is
# left unchanged. Table-driven: one row per (command, output option, input it would
# destroy); a command added later is one more row. Also: every string option of every
# command is declared in apps/outputs.c (tests/unit/apps/test_opts.c), and a harmless output beside
# the inputs (a JSON in the images' folder) is still accepted.
# usage: test_io_rules.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
DATA=$(cd "$3" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
R() { "$BIN" --quiet --threads 1 "$@"; }
VID=/usr/share/doc/opencv-doc/examples/data/vtest.avi

# inputs: a detection set and its results, sharded parts, a segmentation set, a checkpoint,
# a short video, a folder of backgrounds
R synth --task det --out-dir det --count 3 --size 96x128 2> /dev/null || fail "synth det"
cp det/annotations/*.json gt.json 2> /dev/null || cp det/*.json gt.json
IMG=$(ls det/images/*.jpg | head -1)
R detect --no-draw --json dt.json det/images/ || fail "detect"
for i in 0 1; do   # eval coco parts: they name their ground truth (gt.json), an input of merge
  R eval coco --ann gt.json --images det/images --weights demo-det --shard $i/2 --output p$i.json || fail "eval coco shard $i"
done
R synth --task seg --out-dir R --count 2 --size 64x64 2> /dev/null || fail "synth seg"
GT=R/annotations/validation
LAB=$GT/$(ls $GT | head -1)
cp "$DATA/backbone/classifier.pth" ck.pth
R video "$VID" --max-frames 2 --size 32x32 --output clip.avi || fail "video clip"
mkdir -p bg && cp "$IMG" bg/b.jpg
for f in gt.json dt.json p0.json p1.json p0.shard.json "$IMG" "$LAB" ck.pth clip.avi bg/b.jpg; do
  [ -s "$f" ] || { echo "FAIL: setup: $f missing"; exit 1; }
done

# VICTIM <tab> COMMAND (@ = the output path, spelled as the case says)
TABLE=$(cat << EOF
gt.json	eval coco --ann gt.json --results dt.json --json @
dt.json	eval coco --ann gt.json --results dt.json --json @
gt.json	eval coco --ann gt.json --images det/images --weights demo-det --output @
gt.json	eval coco --ann gt.json --images det/images --weights demo-det --json @
$IMG	eval coco --ann gt.json --images det/images --weights demo-det --json @
$LAB	eval ade20k --pred-dir $GT --gt-dir $GT --json @
$LAB	eval ade20k --root R --weights demo --output @
$LAB	eval ade20k --root R --weights demo --json @
ck.pth	convert ck.pth @
ck.pth	info ck.pth --json @
ck.pth	bench --weights ck.pth --runs 1 --json @
ck.pth	classify --weights ck.pth --json @ $IMG
$IMG	classify --weights ck.pth --json @ $IMG
$IMG	rank --weights ck.pth --json @ $IMG
ck.pth	rank --weights ck.pth --plot @ $IMG
p0.json	merge p0.shard.json p1.shard.json --output @
p1.shard.json	merge p0.shard.json p1.shard.json --output @
gt.json	merge p0.shard.json p1.shard.json --ann gt.json --json @
gt.json	merge p0.shard.json p1.shard.json --json @
$IMG	detect --no-draw --json @ det/images/
gt.json	detect --no-draw --ann gt.json --json @ $IMG
clip.avi	video clip.avi --size 32x32 --output @
clip.avi	video clip.avi --size 32x32 --json @
ck.pth	video clip.avi --size 32x32 --weights ck.pth --json @
bg/b.jpg	synth --task seg --count 1 --backgrounds bg --out-dir so --raw @
EOF
)

n=0
while IFS=$'\t' read -r victim cmd; do
  [ -n "$victim" ] || continue
  ext=${victim##*.}
  sum=$(md5sum < "$victim")
  for kind in dot symlink hardlink; do
    case $kind in
      dot) out=./$victim ;;
      symlink) out=alias.$ext; rm -f "$out"; ln -s "$victim" "$out" ;;
      hardlink) out=hard.$ext; rm -f "$out"; ln "$victim" "$out" ;;
    esac
    # shellcheck disable=SC2086
    R ${cmd//@/$out} 2> err.txt; rc=$?
    n=$((n + 1))
    [ $rc = 2 ] || fail "$kind: ravlt ${cmd//@/$out}: rc $rc, expected 2: $(head -c 300 err.txt)"
    grep -q "refusing to write over an input" err.txt || fail "$kind: ${cmd//@/$out}: no refusal message: $(head -c 300 err.txt)"
    [ "$(wc -l < err.txt)" = 1 ] || fail "$kind: ${cmd//@/$out}: not one line: $(cat err.txt)"
    [ "$(md5sum < "$victim")" = "$sum" ] || { fail "$kind: ${cmd//@/$out} changed $victim"; exit 1; }
    [ $kind = symlink ] && { [ -L "$out" ] || fail "$kind: the link $out was replaced"; }
    rm -f alias.* hard.*
  done
done <<< "$TABLE"
[ $n -ge 75 ] || fail "only $n cases ran"

# an output folder over the annotations (ade20k model mode: NAME.png over NAME.png)
sum=$(md5sum < "$LAB")
R eval ade20k --root R --weights demo --out-dir $GT 2> err.txt; rc=$?
[ $rc = 2 ] || fail "eval ade20k --out-dir GT: rc $rc, expected 2"
grep -q "refusing to write over an input" err.txt || fail "eval ade20k --out-dir GT: $(cat err.txt)"
[ "$(md5sum < "$LAB")" = "$sum" ] || fail "eval ade20k --out-dir GT changed $LAB"

# not inputs: a JSON written into the images' folder, an existing results file rewritten,
# a sibling of an input that the command does not read
R detect --no-draw --json det/images/results.json det/images/ || fail "detect --json into the images' folder: rc $?"
R detect --no-draw --json det/images/results.json det/images/ || fail "detect --json rewriting its own earlier output: rc $?"
R eval coco --ann gt.json --results dt.json --json stats.json > /dev/null || fail "eval coco --json stats.json: rc $?"
R eval coco --ann gt.json --results dt.json --json stats.json > /dev/null || fail "eval coco --json stats.json again: rc $?"
R convert ck.pth ck.safetensors || fail "convert ck.pth ck.safetensors: rc $?"
R convert ck.pth ck.safetensors || fail "convert over its own earlier output: rc $?"

[ $fails = 0 ] && echo "test_io_rules: all passed ($n refusals)"
exit $((fails > 0))
