#!/usr/bin/env bash
# Full disks (issue 43): every output kind written to a file system that fills up is an
# error (exit 1) whose message says "No space left on device", and leaves nothing under the
# final name and no temporary: videos (mp4, avi, mkv: OpenCV's writer reports nothing, the
# file must read back with every frame), label PNGs and overlays, results JSON, JSON lines,
# safetensors. The small file system is a tmpfs of a few hundred KiB mounted in a private
# mount namespace (unshare -m as root, unshare -rm otherwise); where neither works the test
# FAILS (a full disk cannot be simulated otherwise without touching the machine). Streams:
# /dev/full.
# usage: test_full_disk.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
DATA=$(cd "$3" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
VID=/usr/share/doc/opencv-doc/examples/data/vtest.avi

# in_full KIB CMD...: CMD in a mount namespace where $TMP/full is an empty KIB KiB tmpfs;
# CMD's status and output; a listing of what it left in full/ goes to left.txt
UNSHARE=
for u in "unshare -m" "unshare -rm"; do
  if $u sh -c "mount -t tmpfs -o size=64k tmpfs '$TMP' 2> /dev/null" 2> /dev/null; then UNSHARE=$u; break; fi
done
if [ -z "$UNSHARE" ]; then
  echo "FAIL: no private mount namespace (unshare -m / unshare -rm): a full file system cannot be made here"
  exit 1
fi
mkdir -p full
in_full() {
  local kib=$1
  shift
  $UNSHARE sh -c 'mount -t tmpfs -o size='"$kib"'k tmpfs "$0/full" || exit 99; cd "$0"; "$@"; rc=$?; ls -A full > left.txt; exit $rc' "$TMP" "$@"
}

"$BIN" --quiet synth --task det --out-dir det --count 3 2> /dev/null || fail "synth"
IMG=$(ls det/images/*.jpg | head -1)

# VIDEOS: three containers, too big for 200 KiB
for ext in mp4 avi mkv; do
  in_full 200 "$BIN" --quiet --threads 1 video "$VID" --size 32x32 --max-frames 60 --output full/v.$ext 2> err.txt; rc=$?
  [ $rc = 99 ] && { fail "mount -t tmpfs failed inside $UNSHARE"; break; }
  [ $rc = 1 ] || fail "video .$ext on a full disk: rc $rc, expected 1: $(cat err.txt)"
  grep -q "full/v.$ext: write failed (No space left on device)" err.txt || fail "video .$ext: message: $(cat err.txt)"
  [ -s left.txt ] && fail "video .$ext on a full disk left: $(cat left.txt)"
done
# the same videos where there is room: written, read back
for ext in mp4 avi; do
  in_full 8000 "$BIN" --quiet --threads 1 video "$VID" --size 32x32 --max-frames 5 --output full/v.$ext 2> err.txt \
    || fail "video .$ext with room: rc $?: $(cat err.txt)"
  grep -qx "v.$ext" left.txt || fail "video .$ext with room: left $(cat left.txt)"
done

# IMAGES: label PNGs and overlays (segment), drawn detections; JSON; JSON lines; safetensors
in_full 8 "$BIN" --quiet segment --out-dir full "$IMG" 2> err.txt; rc=$?
[ $rc = 1 ] || fail "segment on a full disk: rc $rc"
grep -q "No space left on device" err.txt || fail "segment: message: $(cat err.txt)"
grep -q "Input/output error" err.txt && fail "segment: 'Input/output error' for a full disk"
grep -q "ravlt-tmp" left.txt && fail "segment left temporaries: $(cat left.txt)"
in_full 8 sh -c 'head -c 8192 /dev/zero > full/fill 2> /dev/null; exec "$0" --quiet detect --no-draw --json full/r.json "$1"' "$BIN" "$IMG" 2> err.txt; rc=$?
[ $rc = 1 ] || fail "detect --json on a full disk: rc $rc"
grep -q "full/r.json: write failed (No space left on device)" err.txt || fail "detect --json: message: $(cat err.txt)"
grep -qx "r.json" left.txt && fail "detect --json: a results file under the final name on a full disk"
in_full 8 sh -c 'head -c 8192 /dev/zero > full/fill 2> /dev/null; exec "$0" --quiet video "$1" --size 32x32 --max-frames 3 --json full/v.jsonl' "$BIN" "$VID" 2> err.txt; rc=$?
[ $rc = 1 ] || fail "video --json on a full disk: rc $rc"
grep -q "No space left on device" err.txt || fail "video --json: message: $(cat err.txt)"
grep -q "ravlt-tmp\|v.jsonl" left.txt && fail "video --json on a full disk left: $(cat left.txt)"
in_full 100 "$BIN" --quiet convert "$DATA/backbone/classifier.pth" full/c.safetensors 2> err.txt; rc=$?
[ $rc = 1 ] || fail "convert on a full disk: rc $rc"
grep -q "full/c.safetensors: write failed.*No space left on device" err.txt || fail "convert: message: $(cat err.txt)"
[ -s left.txt ] && fail "convert on a full disk left: $(cat left.txt)"

in_full 64 "$BIN" --quiet synth --task seg --count 20 --size 64x64 --out-dir s --raw full/raw.bin 2> err.txt; rc=$?
[ $rc = 1 ] || fail "synth --raw on a full disk: rc $rc"
grep -q "full/raw.bin: write failed (No space left on device)" err.txt || fail "synth --raw: message: $(cat err.txt)"
[ -s left.txt ] && fail "synth --raw on a full disk left: $(cat left.txt)"

# STREAMS: /dev/full as a device output, and as standard output
"$BIN" --quiet info ravlt-t --json /dev/full 2> err.txt && fail "info --json /dev/full exited 0"
grep -q "/dev/full: write failed (No space left on device)" err.txt || fail "/dev/full: $(cat err.txt)"
"$BIN" --quiet detect --no-draw --json - "$IMG" > /dev/full 2> err.txt && fail "detect --json - > /dev/full exited 0"
grep -q "No space left on device" err.txt || fail "stdout on /dev/full: $(cat err.txt)"

[ $fails = 0 ] && echo "test_full_disk: all passed ($UNSHARE)"
exit $((fails > 0))
