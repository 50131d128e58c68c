#!/usr/bin/env bash
# `ravlt convert`: every fixture checkpoint converts to a safetensors file whose data section
# is byte-identical to the fixture's weights.safetensors (same tensors, same order), with the
# meta in __metadata__; the result re-converts to itself; failures leave no file behind.
# usage: test_convert.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1 FIX=$2 DATA=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

hdr_len() { od -An -t u8 -N8 "$1" | tr -d ' '; }
data_of() { tail -c +$(($(hdr_len "$1") + 9)) "$1"; }
header_of() { head -c $(($(hdr_len "$1") + 8)) "$1" | tail -c +9; }

# every e2e checkpoint and one backbone checkpoint (test_pth reads all of them in-process;
# each CLI start costs ~0.4 s of shared-library loading, so this test keeps them few)
n=0
for ck in $(ls "$FIX"/backbone/*/checkpoint.pth 2> /dev/null | head -1) "$FIX"/e2e/*/checkpoint.pth; do
  [ -f "$ck" ] || continue
  d=$(dirname "$ck"); name=$(basename "$d")
  out="$TMP/$name.safetensors"
  if ! "$BIN" --quiet convert "$ck" "$out" 2> "$TMP/err"; then fail "$name: convert failed: $(cat "$TMP/err")"; continue; fi
  cmp -s <(data_of "$out") <(data_of "$d/weights.safetensors") || fail "$name: data section differs from weights.safetensors"
  h=$(header_of "$out")
  case "$h" in *'"backbone.'*) ;; *) fail "$name: no backbone tensors in the header";; esac
  case "$h" in *'"__metadata__"'*) ;; *) fail "$name: no __metadata__";; esac
  case "$h" in *num_batches_tracked*'"dtype":"I64","shape":[]'*) ;; *) fail "$name: no 0-d I64 num_batches_tracked";; esac
  case "$(basename "$(dirname "$d")")" in
    e2e)
      case "$h" in *'"config":"'*'model = dict('*) ;; *) fail "$name: config text missing from __metadata__";; esac
      case "$h" in *'"CLASSES":"[\"'*) ;; *) fail "$name: CLASSES missing from __metadata__";; esac
      case "$h" in *exp_avg*) fail "$name: optimizer state leaked into the output";; esac ;;
  esac
  last=$out
  n=$((n + 1))
done
# a safetensors input is copied unchanged
if [ "$n" -gt 0 ]; then
  "$BIN" --quiet convert "$last" "$TMP/again.safetensors" || fail "safetensors -> safetensors failed"
  cmp -s "$last" "$TMP/again.safetensors" || fail "re-conversion is not identical"
fi
[ "$n" -gt 0 ] || fail "no fixture checkpoints found under $FIX"

# --help, usage errors (exit 2)
"$BIN" convert --help | grep -q "usage: ravlt convert" || fail "--help"
"$BIN" convert > /dev/null 2>&1; [ $? -eq 2 ] || fail "no arguments should exit 2"
"$BIN" convert --bogus a b > /dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option should exit 2"

# failures: exit 1, one line on stderr, no output file and no temporary left behind
ck=$(ls "$FIX"/backbone/*/checkpoint.pth | head -1)
head -c 100000 "$ck" > "$TMP/trunc.pth"
for bad in "$TMP/missing.pth" "$TMP/trunc.pth" "$DATA/pth/bad_missing_storage.pth" \
           "$DATA/pth/bad_opcode.pth"; do
  rm -f "$TMP"/out.safetensors*
  "$BIN" convert "$bad" "$TMP/out.safetensors" 2> "$TMP/err"
  rc=$?
  [ $rc -eq 1 ] || fail "$(basename "$bad"): exit $rc, want 1"
  [ "$(wc -l < "$TMP/err")" -eq 1 ] || fail "$(basename "$bad"): want one line on stderr, got: $(cat "$TMP/err")"
  grep -q "^ravlt convert: .*$(basename "$bad")" "$TMP/err" || fail "$(basename "$bad"): message does not name the file: $(cat "$TMP/err")"
  ls "$TMP"/out.safetensors* > /dev/null 2>&1 && fail "$(basename "$bad"): left an output file"
done
# an unwritable destination
"$BIN" convert "$ck" "$TMP/no/such/dir/out.safetensors" 2> /dev/null; [ $? -eq 1 ] || fail "unwritable output should exit 1"
ls "$TMP/no" > /dev/null 2>&1 && fail "created a directory"
# an existing output is replaced only on success
echo keep > "$TMP/keep.safetensors"
"$BIN" convert "$DATA/pth/bad_opcode.pth" "$TMP/keep.safetensors" 2> /dev/null
[ "$(cat "$TMP/keep.safetensors")" = keep ] || fail "a failed conversion clobbered the existing output"

if [ $fails -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "ok: $n checkpoints converted"
