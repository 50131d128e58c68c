#!/usr/bin/env bash
# Signals give the documented statuses everywhere (issue 43, docs/outputs.md): SIGINT,
# SIGTERM, SIGHUP exit 128 + N -- an exit, not a death by the signal -- from the moment the
# program's own code runs (before the libraries' initialisers, across the OpenMP re-exec,
# while a command loads, while it is blocked opening a FIFO that has no reader); SIGPIPE on
# standard output is a failed write: exit 1 with a message, the other outputs finalised (a
# playable video up to the last frame written).
# usage: test_signals.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
DATA=$(cd "$3" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
VID=/usr/share/doc/opencv-doc/examples/data/vtest.avi
PY=/usr/bin/python3

"$BIN" --quiet synth --task seg --out-dir seg --count 2 --size 64x64 2> /dev/null || fail "synth"
IMG=$(ls seg/images/validation/*.jpg | head -1)

# 1. start-up: the signal is sent the moment /proc shows our code has run (the stop signals
# caught, or blocked across the re-exec), then at later moments, into commands that write
# and commands that do not; without OMP_WAIT_POLICY, so that the re-exec happens. The
# returncode must be 128 + N (Python: positive), never -N.
env -u OMP_WAIT_POLICY "$PY" - "$BIN" "$IMG" "$VID" << 'PY' || fail "start-up signals (above)"
import os, signal, subprocess, sys, time
bin_, img, vid = sys.argv[1:4]
cmds = [[bin_, "-q", "info", "ravlt-s"],  # no handlers of its own
        [bin_, "-q", "video", vid, "--size", "32x32", "--max-frames", "3", "--json", "v.jsonl"]]
SIGS = {signal.SIGTERM: 143, signal.SIGINT: 130, signal.SIGHUP: 129}
def ours(pid, sig):
    """our code has run: the signal is caught (handlers) or blocked (during the re-exec)"""
    try:
        st = open(f"/proc/{pid}/status").read()
    except OSError:
        return True  # gone already
    bit = 1 << (sig - 1)
    fields = dict(l.split(":", 1) for l in st.splitlines() if ":" in l)
    return bool((int(fields["SigCgt"], 16) | int(fields["SigBlk"], 16)) & bit)
bad = 0
runs = 0
for cmd in cmds:
    for sig, want in SIGS.items():
        for delay in (0.0, 0.3):
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t0 = time.time()
            while not ours(p.pid, sig) and time.time() - t0 < 20:
                time.sleep(0.001)
            time.sleep(delay)
            p.send_signal(sig)
            rc = p.wait(60)
            runs += 1
            if rc != want and not (rc == 0 and delay > 0):  # a fast command may finish first
                print(f"FAIL: {' '.join(cmd[2:4])}: {signal.Signals(sig).name} {delay} s after start-up: "
                      f"returncode {rc}, expected {want}")
                bad += 1
print(f"start-up signals: {runs} runs, {bad} wrong")
sys.exit(1 if bad else 0)
PY

# 2. a FIFO output with no reader: blocked in open(2), then SIGTERM / SIGINT: 143 / 130
mkfifo fifo
for sig in TERM INT; do
  for cmd in "detect --no-draw --json fifo $IMG" "info ravlt-t --json fifo" \
             "video $VID --size 32x32 --max-frames 2 --json fifo" "convert $DATA/backbone/classifier.pth fifo"; do
    # shellcheck disable=SC2086
    "$BIN" --quiet $cmd 2> err.txt & pid=$!
    for i in $(seq 1 200); do   # blocked on the FIFO: the open(2) shows in wchan / syscall
      grep -q fifo /proc/$pid/wchan 2> /dev/null && break
      [ "$(cut -d' ' -f1 /proc/$pid/syscall 2> /dev/null)" = 257 ] && break
      sleep 0.05
    done
    sleep 0.2
    kill -$sig $pid
    wait $pid; rc=$?
    case $sig in TERM) want=143;; INT) want=130;; esac
    [ $rc = $want ] || fail "SIG$sig while ${cmd%% *} waits for a FIFO reader: rc $rc, expected $want: $(cat err.txt)"
  done
done

# 3. SIGPIPE / EPIPE on standard output: the video finalised (playable, the frames written),
# exit 1, a message naming standard output
"$BIN" --quiet --threads 1 video "$VID" --size 32x32 --output v.mp4 --json - --max-frames 40 2> err.txt | head -2 > /dev/null
rc=${PIPESTATUS[0]}
[ "$rc" = 1 ] || fail "video --json - | head -2: rc $rc, expected 1"
grep -q "standard output: write failed (Broken pipe)" err.txt || fail "video | head: no message: $(cat err.txt)"
[ -s v.mp4 ] || fail "video | head: v.mp4 not finalised"
ls -a | grep -q ravlt-tmp && fail "video | head: temporaries left: $(ls -a)"
"$BIN" --quiet video v.mp4 --size 32x32 --json n.jsonl || fail "v.mp4 does not read back"
n=$(wc -l < n.jsonl)
[ "$n" -ge 1 ] && [ "$n" -lt 40 ] || fail "v.mp4 holds $n frames, expected the few written before the pipe closed"
"$BIN" --quiet detect --no-draw --json - seg/images/validation/ 2> err.txt | true   # the reader is gone
rc=${PIPESTATUS[0]}
[ "$rc" = 1 ] || fail "detect --json - | true: rc $rc, expected 1"
grep -q "Broken pipe" err.txt || fail "detect | head: no message: $(cat err.txt)"

# a reader closed before the first write (no race with a fast command): every kind of
# standard-output writer -- a summary JSON, text printed as it goes, the help -- exits 1
# naming the reason, however long ago the failed write was
closed() { /usr/bin/python3 -c 'import os, subprocess, sys
r, w = os.pipe(); os.close(r)
sys.exit(subprocess.run(sys.argv[1:], stdout=w, stderr=open("err.txt", "w")).returncode)' "$@"; }
GTD=seg/annotations/validation
for cmd in "eval ade20k --pred-dir $GTD --gt-dir $GTD --json -" "classify --weights $DATA/backbone/classifier.pth $IMG" \
           "--help"; do
  # shellcheck disable=SC2086
  closed "$BIN" --quiet $cmd; rc=$?
  [ $rc = 1 ] || fail "ravlt $cmd > a closed pipe: rc $rc, expected 1"
  grep -q "standard output: write failed (Broken pipe)" err.txt || fail "ravlt $cmd > a closed pipe: $(cat err.txt)"
done

[ $fails = 0 ] && echo "test_signals: all passed"
exit $((fails > 0))
