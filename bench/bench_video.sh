#!/usr/bin/env bash
# `ravlt video` throughput on Debian's opencv-doc vtest.avi (768x576, 10 fps): frames per
# second of the whole pipeline (decode + inference + draw + encode, concurrently) for a
# segmentation and a detection checkpoint, at the checkpoints' official test scale and at
# reduced inference scales (--size), with the share of wall time the inference stage was
# not busy (1 - inference time / wall time; the goal is under 5%). Not a test: minutes.
#
#   bash bench/bench_video.sh [BUILD_DIR=build] [--frames N] [--threads N]
#        [--seg CKPT] [--det CKPT] [--sizes "official 480x640 240x320"] [--no-output]
#        [--ext mp4|avi]
#
# Defaults: the small e2e fixture checkpoints (../shared/fixtures/e2e/{semantic_fpn,
# mask_rcnn}/checkpoint.pth: tiny backbones, official heads and test pipelines), 40 frames,
# overlay written to an .mp4 (H.264 when OpenCV's FFmpeg has it) and JSON lines to a
# temporary folder. Pass real RAVLT checkpoints with --seg / --det for representative
# numbers. The H.264 encoder buffers frames (lookahead) and encodes them when the file is
# closed, after the last inference: with few frames that tail dominates the share outside
# inference (--ext avi writes MJPG, which has no such tail).
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then B=$1; shift; fi
FRAMES=40 THREADS= SIZES="official 480x640 240x320" OUTPUT=1 EXT=mp4
SEG=../shared/fixtures/e2e/semantic_fpn/checkpoint.pth
DET=../shared/fixtures/e2e/mask_rcnn/checkpoint.pth
VIDEO=/usr/share/doc/opencv-doc/examples/data/vtest.avi
while [ $# -gt 0 ]; do
  case $1 in
    --frames) FRAMES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --seg) SEG=$2; shift 2 ;;
    --det) DET=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --no-output) OUTPUT=0; shift ;;
    --ext) EXT=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$B/ravlt" ] || { echo "build first: cmake -S . -B $B && cmake --build $B" >&2; exit 1; }
[ -f "$VIDEO" ] || { echo "$VIDEO missing (Debian package opencv-doc)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $FRAMES frames of vtest.avi 768x576"
printf "%-6s %-28s %-10s %8s %9s %9s %8s %10s\n" task checkpoint scale fps lat_mean lat_p95 wall_s outside_%
for task in seg det; do
  ck=$SEG; [ $task = det ] && ck=$DET
  for size in $SIZES; do
    args=(--max-frames "$FRAMES" --json "$TMP/o.jsonl")
    [ "$size" != official ] && args+=(--size "$size")
    [ "$OUTPUT" = 1 ] && args+=(--output "$TMP/o.$EXT")
    [ -n "$THREADS" ] && args+=(--threads "$THREADS")
    line=$("$B/ravlt" video --weights "$ck" "$VIDEO" "${args[@]}" 2>&1 | grep 'frame(s) read' || true)
    [ -n "$line" ] || { echo "$task $size: ravlt video failed" >&2; continue; }
    fps=$(echo "$line" | sed -n 's/.*; \([0-9.]*\) fps;.*/\1/p')
    lm=$(echo "$line" | sed -n 's/.*latency mean \([0-9.]*\) s.*/\1/p')
    lp=$(echo "$line" | sed -n 's/.*p95 \([0-9.]*\) s.*/\1/p')
    wall=$(echo "$line" | sed -n 's/.*; \([0-9.]*\) s wall.*/\1/p')
    out=$(echo "$line" | sed -n 's/.*wall, \([0-9.]*\)% outside.*/\1/p')
    printf "%-6s %-28s %-10s %8s %9s %9s %8s %10s\n" $task "$(basename "$(dirname "$ck")")/$(basename "$ck")" \
      "$size" "$fps" "$lm" "$lp" "$wall" "$out"
  done
done
