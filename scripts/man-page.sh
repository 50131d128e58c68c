#!/usr/bin/env bash
# ravlt(1), generated at build time (CMakeLists.txt) by help2man from the help text itself:
# `ravlt --help` and `ravlt --version` give NAME, SYNOPSIS and DESCRIPTION, and a COMMANDS
# section holds every command's `ravlt CMD --help` verbatim (the command list is read from
# `ravlt --help`, so a new command needs no edit here).
#   bash scripts/man-page.sh RAVLT_BIN OUT.1.gz
set -euo pipefail
bin=$1 out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# a sanitizer build's binary runs here too: leaks at exit are not the man page's business
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" OMP_NUM_THREADS=1
cmds=$("$bin" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}')
[ -n "$cmds" ] || { echo "man-page.sh: no commands in '$bin --help'" >&2; exit 1; }
{
  echo "[COMMANDS]"
  for c in $cmds; do
    echo ".SS \"ravlt $c\""
    echo ".nf"
    # roff: backslashes escaped, a leading . or ' made literal
    "$bin" "$c" --help | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
    echo ".fi"
  done
  echo "[SEE ALSO]"
  echo "The README and docs/ of the ravlt sources; the C API: <ravlt/ravlt.h> (pkg-config ravlt)."
} > "$tmp/commands.h2m"
help2man --no-info --no-discard-stderr --name "RAVLT dense prediction (segmentation, detection) on CPUs" \
  --include "$tmp/commands.h2m" --output "$tmp/ravlt.1" "$bin"
gzip -9n < "$tmp/ravlt.1" > "$out.tmp"
mv "$out.tmp" "$out"
