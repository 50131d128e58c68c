#!/usr/bin/env bash
# docs/embedding.md's C example (the ```c block after '<!-- embedding-example -->'), as
# written: the same text as examples/shared_model.c; built against this build's library and
# run with 3 workers sharing the e2e Mask R-CNN fixture under OMP_NUM_THREADS=2: every worker
# prints the same detection count, each call on 1 or 2 threads (never more than the budget).
#   bash tests/cli/test_embedding.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -euo pipefail
BIN=$(readlink -f "$1"); FIX=$(readlink -f "$2")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(dirname "$BIN")
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fail() { echo "test_embedding: FAIL: $*" >&2; exit 1; }

awk '/<!-- embedding-example -->/{f=1; next} f && /^```c$/{g=1; next} g && /^```$/{exit} g{print}' \
  "$ROOT/docs/embedding.md" > "$W/example.c"
[ -s "$W/example.c" ] || fail "no C example after <!-- embedding-example --> in docs/embedding.md"
diff "$W/example.c" "$ROOT/examples/shared_model.c" > "$W/diff" ||
  { cat "$W/diff"; fail "docs/embedding.md's example differs from examples/shared_model.c"; }

# linked as the ravlt executable is (the static library and its link line: sanitizer builds too)
[ -f "$BUILD/libravlt.a" ] && [ -f "$BUILD/CMakeFiles/ravlt.dir/link.txt" ] || fail "no libravlt.a in $BUILD"
LIBS=$(sed 's/.* libravlt\.a//' "$BUILD/CMakeFiles/ravlt.dir/link.txt")
SAN=$( (grep -o -- '-fsanitize=[^ ]*' "$BUILD/CMakeFiles/ravlt.dir/link.txt" || true) | sort -u | tr '\n' ' ')
# shellcheck disable=SC2086
${CC:-cc} -std=c11 -Wall -Wextra -Werror $SAN -I "$ROOT/include" -I "$BUILD/include" "$W/example.c" \
  -o "$W/shared_model" "$BUILD/libravlt.a" $LIBS -lstdc++ -lpthread || fail "the example does not build"

ck=$FIX/e2e/mask_rcnn/checkpoint.pth img=$FIX/e2e/mask_rcnn/image.jpg
OMP_NUM_THREADS=2 "$W/shared_model" "$ck" "$img" 3 > "$W/out" 2> "$W/err" || { cat "$W/err"; fail "the example failed"; }
cat "$W/out"
[ "$(wc -l < "$W/out")" -eq 3 ] || fail "expected 3 result lines"
[ "$(cut -d, -f1 "$W/out" | sort -u | wc -l)" -eq 1 ] || fail "the workers' results differ"
grep -Eq '^result [1-9][0-9]*, threads' "$W/out" || fail "no detections"
while read -r line; do
  t=$(sed -E 's/.* threads ([0-9]+)$/\1/' <<< "$line")
  [ "$t" -ge 1 ] && [ "$t" -le 2 ] || fail "a call ran on $t threads with a budget of 2: $line"
done < "$W/out"
echo "test_embedding: the docs example ran: $(head -1 "$W/out")"
