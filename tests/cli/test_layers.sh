#!/usr/bin/env bash
# Layering (DESIGN.md "Layers"): tools/check_layers.py finds no upward include and no include
# cycle in the sources, and no upward call and no call cycle in the layer libraries of this
# build (besides tools/check_layers.known), and it does find them in a small tree and small
# libraries made to have one of each.
# usage: bash test_layers.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR (the build folder: RAVLT_BIN's)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
fails=0
ok() { echo "ok: $1"; }
bad() { fails=$((fails + 1)); echo "FAIL: $1"; }

build=$(dirname "$(readlink -f "$1")")
out=$(python3 "$root/tools/check_layers.py" "$root" --build "$build") && ok "the sources and libraries are layered" ||
  bad "the sources and libraries: $out"
echo "$out" | tail -1
echo "$out" | tail -1 | grep -q "^0 upward includes, 0 include cycles, 0 upward calls, 0 call cycles" &&
  ok "all four counts 0" || bad "counts: $(echo "$out" | tail -1)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/core" "$tmp/heads" "$tmp/models" "$tmp/necks" "$tmp/kernels/ref" "$tmp/formats"
printf '#include "core/b.h"\n' > "$tmp/core/a.c"
printf '#include "core/a.h"\n' > "$tmp/core/b.c"
printf '#include "models/m.h"\n#include "necks/n.h"\n#include "core/a.h"\n' > "$tmp/heads/h.c"
printf '#include "heads/h.h"\n' > "$tmp/models/m.c"
printf '#include "formats/f.h"\n#include "core/a.h"\n' > "$tmp/kernels/ref/k.c"
printf '#include "kernels/k.h"\n' > "$tmp/formats/f.c"
out=$(python3 "$root/tools/check_layers.py" "$tmp"); rc=$?
[ $rc -eq 1 ] && ok "a made-up tree fails" || bad "a made-up tree: exit $rc"
echo "$out" | grep -q "upward include: heads/h.c:1: includes models/m.h" && ok "upward include named" || bad "upward include not named: $out"
echo "$out" | grep -q "upward include: heads/h.c:2: includes necks/n.h" && ok "sideways include in the model tier named" || bad "sideways include not named: $out"
echo "$out" | grep -q "upward include: kernels/ref/k.c:1: includes formats/f.h" && ok "sideways include kernels -> formats named" || bad "kernels -> formats not named: $out"
echo "$out" | grep -q "upward include: formats/f.c:1: includes kernels/k.h" && ok "sideways include formats -> kernels named" || bad "formats -> kernels not named: $out"
echo "$out" | grep -q "include cycle: core/a <-> core/b" && ok "cycle named" || bad "cycle not named: $out"
echo "$out" | grep -q "include cycle: heads/h <-> models/m" && ok "cycle across layers named" || bad "cycle across layers not named: $out"
echo "$out" | grep -q "core/a.c" && bad "a downward include reported" || ok "downward includes pass"

# libraries made to have an upward call and a call cycle (the archives of a build, small)
lib="$tmp/build"
mkdir -p "$lib"
cc=${CC:-cc}
printf 'int b(void);\nint a(void) { return b(); }\n' > "$tmp/a.c"
printf 'int a(void);\nint b(void) { return a() + 1; }\n' > "$tmp/b.c"
printf 'int m(void);\nint h(void) { return m(); }\n' > "$tmp/h.c"
printf 'int a(void);\nint m(void) { return a(); }\n' > "$tmp/m.c"
for f in a b h m; do "$cc" -c "$tmp/$f.c" -o "$tmp/$f.c.o" || bad "cc $f.c"; done
for l in core kernels formats nn backbone necks heads eval datasets models cli; do ar rc "$lib/libravlt_$l.a"; done
ar rc "$lib/libravlt_core.a" "$tmp/a.c.o" "$tmp/b.c.o"
ar rc "$lib/libravlt_heads.a" "$tmp/h.c.o"
ar rc "$lib/libravlt_models.a" "$tmp/m.c.o"
mkdir -p "$tmp/empty"
out=$(python3 "$root/tools/check_layers.py" "$tmp/empty" --build "$lib"); rc=$?
[ $rc -eq 1 ] && ok "made-up libraries fail" || bad "made-up libraries: exit $rc: $out"
echo "$out" | grep -q "upward call: heads/h uses m of models/m" && ok "upward call named" || bad "upward call not named: $out"
echo "$out" | grep -q "call cycle: core/a <-> core/b" && ok "call cycle named" || bad "call cycle not named: $out"
echo "$out" | grep -q "models/m uses" && bad "a downward call reported" || ok "downward calls pass"
out=$(python3 "$root/tools/check_layers.py" "$tmp/empty" --build "$tmp/nothing"); rc=$?
[ $rc -eq 2 ] && ok "no libraries: exit 2" || bad "no libraries: exit $rc: $out"
[ $fails -eq 0 ]
