#!/usr/bin/env bash
# `ravlt eval coco --weights` under partial failure and signals (issue 19): a bad image is
# named, no stats are printed, the results of the others are kept (R.json + R.shard.json) and
# --resume runs only the missing image, giving the stats of a clean run; SIGTERM keeps the
# images done, exits 143 and leaves no temporaries; an output over the annotation file is
# refused before any work.
# usage: test_outputs_eval.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") FIX=$(cd "$2" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
R() { "$BIN" --quiet --threads 1 "$@"; }
n_ids() { python3 -c 'import json,sys; print(len({d["image_id"] for d in json.load(open(sys.argv[1]))}))' "$1" 2> /dev/null || echo -1; }

R synth --task det --out-dir ev --count 8 2> /dev/null || fail "synth"
ANN=ev/annotations/instances.json
EV="eval coco --ann $ANN --images ev/images --weights demo-det"
R $EV --output full.json > full.txt || fail "clean eval: rc $?"
grep -q "Average Precision" full.txt || fail "clean eval printed no stats"

# one bad image: named, no stats, the 7 others kept, --resume runs only it
cp ev/images/synth_000003.jpg keep.jpg && : > ev/images/synth_000003.jpg
"$BIN" --threads 1 $EV --output r.json > st1.txt 2> err1.txt; rc=$?
[ $rc = 1 ] || fail "eval with a bad image: rc $rc, expected 1"
grep -q "synth_000003.jpg" err1.txt || fail "the bad image is not named: $(cat err1.txt)"
grep -q "Average Precision" st1.txt && fail "stats printed without the failed image"
grep -q -- "--resume" err1.txt || fail "no word about --resume: $(cat err1.txt)"
[ "$(n_ids r.json)" = 7 ] || fail "r.json does not hold the 7 good images' results"
[ -f r.shard.json ] || fail "no r.shard.json listing the images done"
cp keep.jpg ev/images/synth_000003.jpg
"$BIN" --threads 1 $EV --output r.json --resume > st2.txt 2> err2.txt || fail "--resume: rc $?"
grep -q "7 image(s) done.*1 to run" err2.txt || fail "--resume did not run only the missing image: $(cat err2.txt)"
cmp -s st2.txt full.txt || fail "--resume stats differ from a clean run: $(diff st2.txt full.txt | head -5)"
[ "$(n_ids r.json)" = 8 ] || fail "r.json after --resume does not hold 8 images"
[ -e r.shard.json ] && fail "r.shard.json left after the run completed"

# SIGTERM during eval coco --out: 143, the images done kept, no temporaries
R synth --task det --out-dir big --count 40 2> /dev/null || fail "synth 40"
"$BIN" --verbose --threads 1 eval coco --ann big/annotations/instances.json --images big/images --weights demo-det --output t.json > /dev/null 2> errt.txt & pid=$!
for i in $(seq 1 600); do [ "$(grep -c 'detections$' errt.txt)" -ge 3 ] && break; sleep 0.05; done
kill -TERM $pid; wait $pid; rc=$?
[ $rc = 143 ] || fail "SIGTERM during eval: rc $rc, expected 143 ($(cat errt.txt))"
find . -name '*.ravlt-tmp.*' | grep -q . && fail "SIGTERM during eval left temporaries"
n=$(n_ids t.json)
[ "$n" -gt 0 ] && [ "$n" -lt 40 ] || fail "SIGTERM: t.json holds $n images"

# an output over an input (the annotation file) is refused before any work, unchanged
sum=$(md5sum < $ANN)
R $EV --output $ANN 2> err.txt && fail "eval --output ANN exited 0"
grep -q "is the input" err.txt || fail "eval --output ANN: $(cat err.txt)"
[ "$(md5sum < $ANN)" = "$sum" ] || fail "eval overwrote its annotation file"

# eval ade20k --weights: the same (areas of the images done kept, --resume completes them)
R synth --task seg --out-dir ade --count 6 2> /dev/null || fail "synth seg"
AE="eval ade20k --root ade --weights demo"
R $AE > afull.txt || fail "clean ade20k eval: rc $?"
cp ade/images/validation/synth_000002.jpg k2.jpg && : > ade/images/validation/synth_000002.jpg
"$BIN" --threads 1 $AE --output pa.json > a1.txt 2> aerr.txt; rc=$?
[ $rc = 1 ] || fail "ade20k with a bad image: rc $rc"
grep -q "synth_000002.jpg" aerr.txt || fail "ade20k: the bad image is not named: $(cat aerr.txt)"
grep -q "mIoU\|IoU" a1.txt && fail "ade20k printed metrics without the failed image"
cp k2.jpg ade/images/validation/synth_000002.jpg
"$BIN" --threads 1 $AE --output pa.json --resume > a2.txt 2> aerr.txt || fail "ade20k --resume: rc $?"
grep -q "5 image(s) done, 1 to run" aerr.txt || fail "ade20k --resume: $(cat aerr.txt)"
cmp -s a2.txt afull.txt || fail "ade20k --resume metrics differ from a clean run"

# merge: parts record their run; parts of two runs (another model), a results file that lost
# detections, and a part description naming another results file are refused
R $EV --shard 0/2 --output p0.json || fail "shard 0: rc $?"
R $EV --shard 1/2 --output p1.json || fail "shard 1: rc $?"
R merge --ann $ANN p0.json p1.json > m.txt || fail "merge of one run's parts: rc $?"
cmp -s m.txt full.txt || fail "merged stats differ from the one run"
RET="$FIX/e2e/retinanet/checkpoint.pth"
if [ -f "$RET" ]; then
  R eval coco --ann $ANN --images ev/images --weights "$RET" --shard 1/2 --output q1.json || fail "shard 1 of another model: rc $?"
  R merge --ann $ANN p0.json q1.json > /dev/null 2> err.txt && fail "merge of two runs' parts exited 0"
  grep -q "different runs" err.txt || fail "two runs' parts: $(cat err.txt)"
else
  fail "no $RET for a second model"
fi
python3 -c 'import json; d=json.load(open("p1.json")); json.dump(d[:-1], open("p1.json","w"))'
R merge --ann $ANN p0.json p1.json > /dev/null 2> err.txt && fail "merge with a part missing a detection exited 0"
grep -q "detections, its part description" err.txt || fail "part missing a detection: $(cat err.txt)"
R $EV --shard 1/2 --output p1.json || fail "shard 1 again: rc $?"
cp p1.json other.json && sed 's/"results": "p1.json"/"results": "p0.json"/' p1.shard.json > other.shard.json
R merge --ann $ANN p0.json other.json > /dev/null 2> err.txt && fail "merge read a results file other than the one given"
grep -q "names another results file" err.txt || fail "other.json: $(cat err.txt)"

# --resume from another run's results is refused
R $EV --output rr.json > /dev/null 2>&1
: > ev/images/synth_000005.jpg
R $EV --output rr.json > /dev/null 2>&1
cp keep.jpg ev/images/synth_000005.jpg   # any valid image of the right size will do for the refusal
R eval coco --ann $ANN --images ev/images --weights "$RET" --output rr.json --resume > /dev/null 2> err.txt && fail "--resume with other weights exited 0"
grep -q "another run" err.txt || fail "--resume from another run: $(cat err.txt)"

[ $fails = 0 ] && echo "test_outputs_eval: all passed"
exit $((fails > 0))
