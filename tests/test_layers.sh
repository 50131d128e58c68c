#!/usr/bin/env bash
# Layering (DESIGN.md "Layers"): tools/check_layers.py finds no upward include and no include
# cycle in the sources (besides tools/check_layers.known), and it does find them in a small
# tree made to have one of each.
# usage: bash test_layers.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR (arguments unused)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
fails=0
ok() { echo "ok: $1"; }
bad() { fails=$((fails + 1)); echo "FAIL: $1"; }

out=$(python3 "$root/tools/check_layers.py" "$root") && ok "the sources are layered" || bad "the sources: $out"
echo "$out" | tail -1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/core" "$tmp/heads" "$tmp/models" "$tmp/necks"
printf '#include "core/b.h"\n' > "$tmp/core/a.c"
printf '#include "core/a.h"\n' > "$tmp/core/b.c"
printf '#include "models/m.h"\n#include "necks/n.h"\n#include "core/a.h"\n' > "$tmp/heads/h.c"
printf '#include "heads/h.h"\n' > "$tmp/models/m.c"
out=$(python3 "$root/tools/check_layers.py" "$tmp"); rc=$?
[ $rc -eq 1 ] && ok "a made-up tree fails" || bad "a made-up tree: exit $rc"
echo "$out" | grep -q "upward include: heads/h.c:1: includes models/m.h" && ok "upward include named" || bad "upward include not named: $out"
echo "$out" | grep -q "upward include: heads/h.c:2: includes necks/n.h" && ok "sideways include in the model tier named" || bad "sideways include not named: $out"
echo "$out" | grep -q "include cycle: core/a <-> core/b" && ok "cycle named" || bad "cycle not named: $out"
echo "$out" | grep -q "include cycle: heads/h <-> models/m" && ok "cycle across layers named" || bad "cycle across layers not named: $out"
echo "$out" | grep -q "core/a.c" && bad "a downward include reported" || ok "downward includes pass"
[ $fails -eq 0 ]
