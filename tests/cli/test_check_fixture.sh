#!/usr/bin/env bash
# CLI: `ravlt check-fixture` on the backbone fixtures (safetensors and .pth), and its
# failure modes (missing folder, unknown kind, mismatching reference, broken config).
# usage: bash test_check_fixture.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -u
BIN=$1
FIX=$2
fails=0
passes=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { passes=$((passes + 1)); echo "ok: $1"; }
bad() { fails=$((fails + 1)); echo "FAIL: $1"; }

for d in tiny tiny_b2 d64; do
  dir="$FIX/backbone/$d"
  if [ ! -d "$dir" ]; then bad "fixture $dir missing"; continue; fi
  for opt in "" "--pth"; do
    if out=$("$BIN" check-fixture $opt "$dir" 2>&1); then
      if echo "$out" | grep -q "checks, 0 failed" && ! echo "$out" | grep -q " FAIL"; then
        ok "check-fixture $opt $d"
      else
        bad "check-fixture $opt $d: exit 0 but output: $out"
      fi
    else
      bad "check-fixture $opt $d exited non-zero: $out"
    fi
  done
done

# tiny checks its intermediate traces too
out=$("$BIN" check-fixture "$FIX/backbone/tiny" 2>&1)
n=$(echo "$out" | grep -c "PASS")
if [ "$n" -ge 22 ] && echo "$out" | grep -q "s2b0.attn_out" && echo "$out" | grep -q "s1.down"; then
  ok "tiny traces ($n comparisons)"
else
  bad "tiny traces: only $n PASS lines"
fi

expect_fail() { # name, expected exit (non-zero), grep pattern, command...
  local name=$1 pat=$2
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && echo "$out" | grep -q -- "$pat"; then ok "$name (exit $rc)"; else bad "$name: exit $rc, output: $out"; fi
}

expect_fail "missing folder" "config.json" "$BIN" check-fixture "$tmp/nope"
expect_fail "no argument" "missing fixture folder" "$BIN" check-fixture
expect_fail "unknown option" "unknown option" "$BIN" check-fixture --bogus "$FIX/backbone/tiny"

# unknown kind
mkdir -p "$tmp/kind"
cp "$FIX/backbone/tiny/"* "$tmp/kind/"
chmod u+w "$tmp/kind/"*
sed -i 's/"kind": "backbone"/"kind": "teleporter"/' "$tmp/kind/config.json"
expect_fail "unknown kind" "not supported" "$BIN" check-fixture "$tmp/kind"

# references that do not match: tiny model, d64 inputs and outputs -> FAIL lines, exit 1
mkdir -p "$tmp/mismatch"
cp "$FIX/backbone/tiny/config.json" "$FIX/backbone/tiny/weights.safetensors" "$tmp/mismatch/"
cp "$FIX/backbone/d64/io.safetensors" "$tmp/mismatch/"
expect_fail "mismatching references" " FAIL" "$BIN" check-fixture "$tmp/mismatch"

# config that does not match the weights: clear model error naming a key
mkdir -p "$tmp/cfg"
cp "$FIX/backbone/tiny/"* "$tmp/cfg/"
chmod u+w "$tmp/cfg/"*
sed -i '/"depths"/,/\]/c\ "depths": [1, 2, 2, 2],' "$tmp/cfg/config.json"
expect_fail "config/weights mismatch" "unexpected key" "$BIN" check-fixture "$tmp/cfg"

# no weights at all
mkdir -p "$tmp/now"
cp "$FIX/backbone/tiny/config.json" "$FIX/backbone/tiny/io.safetensors" "$tmp/now/"
expect_fail "no weights" "weights.safetensors" "$BIN" check-fixture "$tmp/now"

# corrupt io file
mkdir -p "$tmp/corrupt"
cp "$FIX/backbone/tiny/config.json" "$FIX/backbone/tiny/weights.safetensors" "$tmp/corrupt/"
head -c 100 "$FIX/backbone/tiny/io.safetensors" > "$tmp/corrupt/io.safetensors"
expect_fail "truncated io.safetensors" "io.safetensors" "$BIN" check-fixture "$tmp/corrupt"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
