#!/usr/bin/env bash
# CLI end-to-end test of the one option vocabulary (apps/opts.c, issue 20), on the ravlt
# binary: strict numbers (exit 2 naming option and value), --opt=value, `--` before a file
# named -x.jpg, `--json -` parsed as JSON from stdout, the global options after the command,
# `synth --size HxW` (height first), COCO image ids (detect --ann, digit file stems) and
# `eval coco` on those results, the "not a checkpoint" and missing-folder errors, deprecated
# spellings, an Examples section in every --help, and --model refused with the built-in demo
# models. (tests/unit/apps/test_opts.c covers every
# numeric option of every command from the tables.)
#   bash tests/cli/test_cli_opts.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$(readlink -f "$1")
FIX=$(readlink -f "$2")
DATA=$(readlink -f "$3")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
isjson() { python3 -c 'import json,sys; json.load(sys.stdin)'; }

# expect_err RC "stderr pattern" cmd...
expect_err() {
  local rc=$1 pat=$2
  shift 2
  "$@" > "$T/out" 2> "$T/err"
  local got=$?
  if [ "$got" != "$rc" ]; then fail "rc $got (want $rc): $* -- $(cat "$T/err")"; return; fi
  if ! grep -q -- "$pat" "$T/err"; then fail "stderr lacks '$pat': $* -- $(cat "$T/err")"; return; fi
  ok "$* -> $rc ($pat)"
}
IMG=$DATA/image/rgb8.png

# 1. strict numbers: garbage and out-of-range values are usage errors naming option and value
expect_err 2 "--score-thr needs a number in \[0, 1\], not 'abc'" "$BIN" detect --score-thr abc "$IMG"
expect_err 2 "--score-thr needs a number in \[0, 1\], not '1.5'" "$BIN" detect --score-thr=1.5 "$IMG"
expect_err 2 "--opacity needs a number in \[0, 1\], not 'abc'" "$BIN" segment --opacity abc "$IMG"
expect_err 2 "--crop needs an integer in 1..65536, not '12abc'" "$BIN" segment --crop 12abc "$IMG"
expect_err 2 "--every needs an integer" "$BIN" video --every 0 x.mp4
expect_err 2 "--size needs HxW" "$BIN" info ravlt-t --size 200x100x3
expect_err 2 "--threads needs an integer in 0..4096, not 'many'" "$BIN" --threads many info ravlt-t
expect_err 2 "unknown option '--bogus'" "$BIN" info ravlt-t --bogus=1
expect_err 2 "--no-draw takes no value" "$BIN" detect --no-draw=1 "$IMG"
# --model with the built-in demo model (which has its own architecture) is refused, not ignored
for c in segment detect; do
  expect_err 2 "$c: --model upernet-ravlt-s: the built-in demo model has its own architecture" "$BIN" $c --model upernet-ravlt-s "$IMG"
  expect_err 2 "--model foo: the built-in demo model" "$BIN" $c --weights demo --model foo "$IMG"
done
expect_err 2 "video: --model x: the built-in demo model" "$BIN" video --model x x.mp4
expect_err 2 "eval ade20k: --model x: the built-in demo model" "$BIN" eval ade20k --weights demo --root "$T" --model x
expect_err 2 "eval coco: --model x: the built-in demo model" "$BIN" eval coco --weights demo-det --images "$T" --ann x.json --model x

# 2. --opt=value and `--json -` (parsed as JSON from stdout)
out=$("$BIN" info ravlt-t --size=64x96 --json=-) && echo "$out" | isjson &&
  echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["input"]==[64,96], d["input"]' &&
  ok "info --size=64x96 --json=- (height first)" || fail "info --json=-: $out"
"$BIN" info ravlt-t --json "$T/info.json" > "$T/out" && isjson < "$T/info.json" && grep -q "^total" "$T/out" &&
  ok "info --json FILE writes the file, the table stays on stdout" || fail "info --json FILE"
"$BIN" bench sgemm --size 64 --runs 1 --json - | isjson && ok "bench --json -" || fail "bench --json -"
RAVLT_OFFLINE=1 "$BIN" models --json - | isjson && ok "models --json -" || fail "models --json -"
"$BIN" classify --weights "$DATA/backbone/classifier.safetensors" --top 2 --json - "$IMG" "$DATA/image/palette.png" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert [len(e["top"]) for e in d] == [2, 2], d' &&
  ok "classify --json - (2 images, one JSON array)" || fail "classify --json -"
# classify collects its inputs as segment and detect do: a repeated path runs once
"$BIN" classify --weights "$DATA/backbone/classifier.safetensors" --top 1 --json - "$IMG" "$IMG" |
  python3 -c 'import json,sys; assert len(json.load(sys.stdin)) == 1' && ok "classify: a repeated input runs once" ||
  fail "classify: a repeated input"
"$BIN" eval coco --ann "$FIX/coco_eval/01_tiny/gt.json" --results "$FIX/coco_eval/01_tiny/dt_bbox.json" \
  --json - 2> "$T/err" | isjson && grep -q "Average Precision" "$T/err" &&
  ok "eval coco --json - (JSON on stdout, the table on stderr)" || fail "eval coco --json -"
"$BIN" -q video --max-frames 2 --size=120x160 --json - /usr/share/doc/opencv-doc/examples/data/vtest.avi > "$T/v.jsonl" &&
  python3 -c 'import json,sys; n=[json.loads(l) for l in open(sys.argv[1])]; assert len(n) == 2, n' "$T/v.jsonl" &&
  ok "video --json - (JSON lines on stdout)" || fail "video --json -: $(head -c 300 "$T/v.jsonl")"

# 3. global options after the command
out=$("$BIN" info ravlt-t --json - --threads 1 -q) && echo "$out" | isjson && ok "global --threads/-q after the command" ||
  fail "globals after the command: $out"
"$BIN" synth --task seg --out-dir "$T/q" --count 1 --backgrounds none --quiet 2> "$T/err" && [ ! -s "$T/err" ] &&
  ok "--quiet after the command silences the summary" || fail "--quiet after synth: $(cat "$T/err")"
expect_err 2 "--threads needs" "$BIN" info ravlt-t --threads -1
# between `eval` and its dataset, as before the command: `eval -q coco` runs as `-q eval coco`
# (same stdout and stderr), -v there turns on the debug lines, --threads N takes its value;
# a bad value or an unknown option is a usage error of `eval`
C01="--ann $FIX/coco_eval/01_tiny/gt.json --results $FIX/coco_eval/01_tiny/dt_bbox.json --json -"
# shellcheck disable=SC2086
{ "$BIN" eval -q coco $C01 > "$T/eq.json" 2> "$T/eq.err" && "$BIN" -q eval coco $C01 > "$T/qe.json" 2> "$T/qe.err" &&
  isjson < "$T/eq.json" && cmp -s "$T/eq.json" "$T/qe.json" && cmp -s "$T/eq.err" "$T/qe.err"; } &&
  ok "eval -q coco == -q eval coco" || fail "eval -q coco: $(head -3 "$T/eq.err")"
# shellcheck disable=SC2086
"$BIN" eval --threads 1 -v coco $C01 > "$T/et.json" 2> "$T/err" && cmp -s "$T/eq.json" "$T/et.json" &&
  grep -q "debug:" "$T/err" && ! grep -q "debug:" "$T/eq.err" &&
  ok "eval --threads 1 -v coco: same JSON, debug lines" || fail "eval --threads 1 -v coco: $(head -3 "$T/err")"
expect_err 2 "ravlt eval: --threads needs an integer in 0..4096, not 'x'" "$BIN" eval --threads x coco
expect_err 2 "ravlt eval: unknown option '--bogus'" "$BIN" eval --bogus coco
expect_err 2 "unknown dataset 'cocoa'" "$BIN" eval -q cocoa
"$BIN" eval -q --help | grep -q "coco" && ok "eval -q --help: the eval usage" || fail "eval -q --help"
# the globals' extent before the command: --max-pixels takes a value, -q none
"$BIN" --max-pixels 100 -q info ravlt-t --json - | isjson && ok "--max-pixels N -q before the command" ||
  fail "--max-pixels N -q before the command"

# 4. synth --size HxW: height first
"$BIN" -q synth --task det --out-dir "$T/syn" --count 1 --size 128x192 --backgrounds none &&
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); im=d["images"][0]; assert (im["height"], im["width"]) == (128, 192), im' \
    "$T/syn/annotations/instances.json" && ok "synth --size 128x192 is 128 high, 192 wide" || fail "synth --size HxW"
expect_err 2 "--size needs HxW" "$BIN" synth --task det --out-dir "$T/x" --size 32x32
# deprecated spelling: accepted with a one-line notice
"$BIN" synth --task seg --out "$T/old" --count 1 --backgrounds none 2> "$T/err" && grep -q "\-\-out is deprecated, use --out-dir" "$T/err" &&
  [ -f "$T/old/images/validation/synth_000000.jpg" ] && ok "synth --out: deprecated alias" || fail "synth --out alias: $(cat "$T/err")"

# 5. `--` ends the options: a file named -x.jpg
mkdir -p "$T/dash" && cp "$T/syn/images/synth_000000.jpg" "$T/dash/-x.jpg"
(cd "$T/dash" && "$BIN" -q detect --no-draw --json - -- -x.jpg) > "$T/dash.json" && isjson < "$T/dash.json" &&
  ok "detect -- -x.jpg" || fail "detect -- -x.jpg"
(cd "$T/dash" && "$BIN" -q detect --no-draw -x.jpg) 2> "$T/err"
[ $? = 2 ] && grep -q "unknown option '-x.jpg'" "$T/err" && ok "without --, -x.jpg is an option" || fail "-x.jpg without --"

# 6. COCO image ids. A synthetic COCO set whose ids are COCO-like (not 1..N)
"$BIN" -q synth --task det --out-dir "$T/c" --count 3 --seed 5 --backgrounds none || fail "synth det"
python3 - "$T/c" <<'PY' || fail "rewriting the ids"
import json, os, sys
d = sys.argv[1]
gt = json.load(open(f"{d}/annotations/instances.json"))
new = {1: 397133, 2: 37777, 3: 252219}
for im in gt["images"]:
    im["id"] = new[im["id"]]
for a in gt["annotations"]:
    a["image_id"] = new[a["image_id"]]
json.dump(gt, open(f"{d}/gt.json", "w"))
# the same set with COCO's file names: the id is the digit stem
os.makedirs(f"{d}/coco", exist_ok=True)
for im in gt["images"]:
    name = "%012d.jpg" % im["id"]
    os.link(f"{d}/images/{im['file_name']}", f"{d}/coco/{name}")
    im["file_name"] = name
json.dump(gt, open(f"{d}/gt_coco.json", "w"))
PY
ids() { python3 -c 'import json,sys; print(sorted({r["image_id"] for r in json.load(open(sys.argv[1]))}))' "$1"; }
want="[37777, 252219, 397133]"
"$BIN" -q detect --ann "$T/c/gt.json" --json "$T/c/d.json" --no-draw "$T/c/images" || fail "detect --ann"
[ "$(ids "$T/c/d.json")" = "$want" ] && ok "detect --ann: ids from the annotation file" || fail "detect --ann ids: $(ids "$T/c/d.json")"
"$BIN" -q eval coco --ann "$T/c/gt.json" --results "$T/c/d.json" --json "$T/c/e.json" > /dev/null 2> "$T/err" &&
  ok "eval coco on detect --ann results" || fail "eval coco on detect --ann results: $(cat "$T/err")"
"$BIN" -q eval coco --ann "$T/c/gt.json" --images "$T/c/images" --weights demo-det --json "$T/c/m.json" > /dev/null 2> "$T/err" ||
  fail "eval coco model mode: $(cat "$T/err")"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["stats"]; b=json.load(open(sys.argv[2]))["stats"]; assert a==b, (a,b)' \
  "$T/c/e.json" "$T/c/m.json" && ok "detect --ann + eval --results == eval --images --weights" || fail "stats differ"
"$BIN" -q detect --json "$T/c/s.json" --no-draw "$T/c/coco" || fail "detect on digit stems"
[ "$(ids "$T/c/s.json")" = "$want" ] && ok "detect: digit file stems are the ids" || fail "digit stem ids: $(ids "$T/c/s.json")"
"$BIN" -q eval coco --ann "$T/c/gt_coco.json" --results "$T/c/s.json" > /dev/null 2> "$T/err" &&
  ok "eval coco on digit-stem ids" || fail "eval on digit-stem ids: $(cat "$T/err")"
"$BIN" -q detect --json "$T/c/n.json" --no-draw "$T/c/images" || fail "detect plain names"
[ "$(ids "$T/c/n.json")" = "[1, 2, 3]" ] && ok "detect: other names are numbered 1..N" || fail "1..N ids: $(ids "$T/c/n.json")"
cp "$IMG" "$T/c/images/extra.png"
expect_err 1 "no image with file_name 'extra.png'" "$BIN" detect --ann "$T/c/gt.json" --json "$T/c/x.json" --no-draw "$T/c/images"
"$BIN" detect --help | grep -q "file stem is all digits" && ok "detect --help explains the ids" || fail "detect --help ids"

# 7. error words
expect_err 1 "not a checkpoint (expected a PyTorch .pth zip or .safetensors)" "$BIN" detect --weights "$T/syn/images/synth_000000.jpg" "$T/syn/images/synth_000000.jpg"
expect_err 1 "--pred-dir $T/nope: no such folder" "$BIN" eval ade20k --pred-dir "$T/nope" --gt-dir "$T"
expect_err 1 "--gt-dir $T/nope: no such folder" "$BIN" eval ade20k --pred-dir "$T" --gt-dir "$T/nope"

# 8. --help of every command: generated, with Examples
for c in segment detect video "eval coco" "eval ade20k" classify convert info bench check-fixture rank models synth merge; do
  # shellcheck disable=SC2086
  "$BIN" $c --help > "$T/h" && grep -q "^Examples:" "$T/h" && grep -q "^  --threads N" "$T/h" ||
    fail "$c --help: no Examples / common options"
done
ok "every --help has Examples and the common options"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
