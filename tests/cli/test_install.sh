#!/usr/bin/env bash
# The installable library (issue 21): `cmake --install` of the build tree this test runs
# from (the folder of RAVLT_BIN) into a temporary prefix, then, as a user of the install:
#  - the files: libravlt.so.0.1.0 (SONAME libravlt.so.0) + libravlt.a, include/ravlt/,
#    bin/ravlt, ravlt.pc, ravltConfig.cmake, man page, bash completion;
#  - every public header compiles alone, as C and C++, with only -I<prefix>/include;
#  - examples/segment_classes.c built with `pkg-config --cflags --libs ravlt` only, linked
#    to the prefix's libravlt.so.0 (found through LD_LIBRARY_PATH: the .pc sets no rpath),
#    run on a fixture checkpoint: its classes and pixel counts equal the label PNG that the
#    installed `ravlt segment` writes (value k+1 = class k);
#  - the README's C example builds with pkg-config and runs;
#  - the same example built by a tiny CMake project with find_package(ravlt) and
#    ravlt::ravlt (CMake's build rpath), and statically with `pkg-config --static`;
#  - the exported dynamic symbols are exactly the RV_API declarations of include/ravlt/;
#  - the man page and the completion script (`ravlt seg<TAB>` -> segment).
# usage: test_install.sh RAVLT_BIN FIXTURES_DIR TESTS_DATA_DIR
set -euo pipefail
bin=$(readlink -f "$1") fix=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(dirname "$bin")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install: FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"  # sanitizer builds: the checks below are about files

p=$tmp/prefix
cmake --install "$build" --prefix "$p" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install $build"; }
libdir=$(dirname "$(find "$p" -name libravlt.so.0 | head -1)")
[ -d "$libdir" ] || fail "no libravlt.so.0 under $p"
ver=$(sed -n 's/^#define RAVLT_VERSION_STRING "\(.*\)"/\1/p' "$p/include/ravlt/version.h")
major=${ver%%.*}
for f in "$libdir/libravlt.so.$ver" "$libdir/libravlt.so.$major" "$libdir/libravlt.so" "$libdir/libravlt.a" \
         "$p/include/ravlt/ravlt.h" "$p/bin/ravlt" "$libdir/pkgconfig/ravlt.pc" \
         "$libdir/cmake/ravlt/ravltConfig.cmake" "$libdir/cmake/ravlt/ravltConfigVersion.cmake" \
         "$p/share/man/man1/ravlt.1.gz" "$p/share/bash-completion/completions/ravlt"; do
  [ -e "$f" ] || fail "$f not installed"
done
soname=$(readelf -d "$libdir/libravlt.so.$ver" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libravlt.so.$major" ] || fail "SONAME '$soname', expected libravlt.so.$major"
[ "$("$p/bin/ravlt" --version)" = "ravlt $ver" ] || fail "installed ravlt --version: $("$p/bin/ravlt" --version)"
ok "installed files, SONAME $soname, ravlt $ver"

# every header alone, C11 and C++17, only the prefix's include folder
for h in "$p"/include/ravlt/*.h; do
  n=ravlt/$(basename "$h")
  echo "#include <$n>" | cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$p/include" -x c - ||
    fail "<$n> does not compile alone (C)"
  echo "#include <$n>" | c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$p/include" -x c++ - ||
    fail "<$n> does not compile alone (C++)"
done
ok "headers compile alone with -I$p/include"

# exported symbols == RV_API declarations of the installed headers
nm -D --defined-only "$libdir/libravlt.so.$major" | awk '{print $NF}' | sort > "$tmp/exported"
grep -h '^RV_API ' "$p"/include/ravlt/*.h | sed -E 's/\(.*//; s/.*[ *]//' | sort > "$tmp/declared"
[ -s "$tmp/declared" ] || fail "no RV_API declaration found in $p/include/ravlt"
diff "$tmp/exported" "$tmp/declared" > "$tmp/sym.diff" ||
  { cat "$tmp/sym.diff"; fail "exported symbols ('<') differ from the RV_API declarations ('>')"; }
ok "$(wc -l < "$tmp/exported") exported symbols = the RV_API declarations (no internal rv_, no C++)"

# the example with pkg-config only
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c11 -Wall -Wextra -Werror "$src/examples/segment_classes.c" -o "$tmp/sc_pc" $(pkg-config --cflags --libs ravlt) ||
  fail "examples/segment_classes.c with pkg-config --cflags --libs ravlt"
readelf -d "$tmp/sc_pc" | grep "NEEDED.*\[libravlt.so.$major\]" > /dev/null || fail "example not linked to libravlt.so.$major"
resolved=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/sc_pc" | awk '$1 == "libravlt.so.'"$major"'" {print $3}')
[ "$(readlink -f "$resolved")" = "$(readlink -f "$libdir/libravlt.so.$major")" ] ||
  fail "libravlt.so.$major resolves to '$resolved', not the prefix's"
ok "pkg-config build, libravlt.so.$major from $libdir (LD_LIBRARY_PATH)"

ckpt=$fix/e2e/semantic_fpn/checkpoint.pth img=$fix/e2e/semantic_fpn/image.jpg
[ -f "$ckpt" ] && [ -f "$img" ] || fail "fixture $ckpt / $img missing"
LD_LIBRARY_PATH=$libdir "$tmp/sc_pc" "$ckpt" "$img" > "$tmp/classes.txt" || fail "the example failed"
cut -f1,2 "$tmp/classes.txt" > "$tmp/classes_counts.txt"
[ "$(wc -l < "$tmp/classes.txt")" -ge 2 ] || fail "the example found fewer than 2 classes: $(cat "$tmp/classes.txt")"
# the installed CLI's label PNG, counted by a second program over the installed library
OMP_NUM_THREADS=2 "$p/bin/ravlt" --quiet segment --weights "$ckpt" --format png --out-dir "$tmp/seg" "$img" ||
  fail "installed ravlt segment"
cat > "$tmp/histo.c" <<'C'
#include <ravlt/ravlt.h>
#include <stdio.h>
int main(int argc, char **argv) {  /* label PNG (value k+1 = class k) -> "k<TAB>pixels" */
  rv_ctx *ctx = rv_ctx_create();
  rv_image lab = {0};
  if (argc != 2 || rv_image_read_gray(argv[1], &lab, ctx) != RV_OK) { fprintf(stderr, "%s\n", rv_ctx_errmsg(ctx)); return 1; }
  size_t n[256] = {0};
  for (size_t i = 0; i < (size_t)lab.h * lab.w; i++) n[lab.data[i]]++;
  for (int v = 1; v < 256; v++) if (n[v]) printf("%d\t%zu\n", v - 1, n[v]);
  rv_image_free(&lab); rv_ctx_free(ctx);
  return n[0] != 0;  /* 0 is never written by the model */
}
C
cc "$tmp/histo.c" -o "$tmp/histo" $(pkg-config --cflags --libs ravlt) || fail "histogram helper"
LD_LIBRARY_PATH=$libdir "$tmp/histo" "$tmp/seg/image.png" > "$tmp/png_counts.txt" || fail "reading $tmp/seg/image.png"
diff "$tmp/classes_counts.txt" "$tmp/png_counts.txt" ||
  fail "the example's classes/pixel counts ('<') differ from ravlt segment's label PNG ('>')"
ok "example: $(wc -l < "$tmp/classes.txt") classes, the same pixel counts as 'ravlt segment'"

# the README's C example, compiled the way the README says
awk '/^```c$/ {on = 1; next} on && /^```$/ {exit} on' "$src/README.md" > "$tmp/readme.c"
[ -s "$tmp/readme.c" ] || fail "no \`\`\`c block in README.md"
cc "$tmp/readme.c" -o "$tmp/readme" $(pkg-config --cflags --libs ravlt) || fail "the README's C example does not build"
readme_out=$(LD_LIBRARY_PATH=$libdir "$tmp/readme" "$ckpt" "$img") || fail "the README's C example failed"
grep -q '^[^/]* / [^/]*$' <<< "$readme_out" || fail "the README's C example printed '$readme_out'"
ok "README example: $readme_out"

# static: pkg-config --static (Libs.private, Requires.private) with libravlt.a
cc "$src/examples/segment_classes.c" -o "$tmp/sc_static" $(pkg-config --cflags ravlt) \
  $(pkg-config --static --libs ravlt | sed 's/-lravlt\b/-l:libravlt.a/') || fail "static link with pkg-config --static"
if ldd "$tmp/sc_static" | grep libravlt > /dev/null; then fail "static example needs libravlt.so"; fi
"$tmp/sc_static" "$ckpt" "$img" > "$tmp/classes_static.txt" || fail "the static example failed"
diff "$tmp/classes.txt" "$tmp/classes_static.txt" || fail "static and shared examples differ"
ok "static link with pkg-config --static --libs ravlt"

# find_package(ravlt) from a tiny CMake project
mkdir -p "$tmp/cm"
cat > "$tmp/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.18)
project(uses_ravlt C)
find_package(ravlt $ver REQUIRED)
add_executable(segment_classes "$src/examples/segment_classes.c")
target_link_libraries(segment_classes PRIVATE ravlt::ravlt)
CM
(unset PKG_CONFIG_PATH; cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$p" > "$tmp/cm.log" 2>&1 &&
  cmake --build "$tmp/cm/build" >> "$tmp/cm.log" 2>&1) || { cat "$tmp/cm.log"; fail "find_package(ravlt) project"; }
"$tmp/cm/build/segment_classes" "$ckpt" "$img" > "$tmp/classes_cmake.txt" || fail "the find_package build failed to run"
diff "$tmp/classes.txt" "$tmp/classes_cmake.txt" || fail "find_package and pkg-config builds differ"
ok "find_package(ravlt) + ravlt::ravlt"

# man page
gzip -t "$p/share/man/man1/ravlt.1.gz" || fail "man page is not a valid gzip file"
page=$(MANWIDTH=100 man -l "$p/share/man/man1/ravlt.1.gz" 2>/dev/null || zcat "$p/share/man/man1/ravlt.1.gz")
for want in "ravlt segment" "ravlt detect" "ravlt eval" "--weights"; do
  grep -qF -- "$want" <<< "$page" || fail "man page lacks '$want'"
done
ok "man page ravlt(1)"

# bash completion, reading the installed binary's help
comp=$p/share/bash-completion/completions/ravlt
out=$(PATH=$p/bin:$PATH bash -c '
  source "$1" || exit 1
  t() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _ravlt; echo "${COMPREPLY[*]}"; }
  t ravlt seg; t ravlt --vers; t ravlt segment --we; t ravlt eval c' _ "$comp") || fail "sourcing $comp"
expect=$'segment\n--version\n--weights\ncoco'
[ "$out" = "$expect" ] || fail "completion gave '$out', expected '$expect'"
ok "bash completion"
echo "test_install: all checks passed"
