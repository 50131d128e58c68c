#!/usr/bin/env bash
# `ravlt serve` under load (Debian's wrk), side by side with the CLI on the same images: the
# built-in demo models (segmentation on a 320x240 synthetic image, detection on another) and a
# whole model with random weights (Semantic FPN RAVLT-T, 150 classes, at its official test
# scale; written once with tools/seg_torch.py, so no checkpoint is needed). Not a test:
# minutes. For each model:
#   - the CLI: `ravlt segment --format png` / `ravlt detect --json --no-draw` on copies of
#     the image (cli_measure below: images/s and CPU time per image), right before each point
#     of the service (a busy machine changes from minute to minute);
#   - the service (one worker with the same threads, --queue 16): wrk for DURATION seconds at
#     1, 2, 4, 8 and 32 connections (keep-alive, POST of the image, ?format=json): images/s
#     answered 200, the ratio to the CLI, the server's CPU time per image answered (user +
#     system of all its threads: the HTTP layer's cost shows there even on a busy machine,
#     where images/s are noise), p50 / p99 latency, the statuses (503 share). wrk
#     runs at nice 19: it stands in for clients on other machines, whose CPU the service
#     does not pay for;
# and, for the demo segmentation model, the resident memory of the server after 100 and
# after SOAK requests (4 clients).
#
#   bash bench/bench_serve.sh [BUILD_DIR=build] [--duration S] [--soak N] [--clients "1 2 4 8 32"]
#        [--threads N] [--no-random]
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then B=$1; shift; fi
DURATION=20 SOAK=10000 CLIENTS="1 2 4 8 32" THREADS=$(nproc) RANDOM_MODEL=1
while [ $# -gt 0 ]; do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --soak) SOAK=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --no-random) RANDOM_MODEL=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
R=$(readlink -f "$B/ravlt")
[ -x "$R" ] || { echo "build first: cmake -S . -B $B && cmake --build $B --target ravlt" >&2; exit 1; }
command -v wrk > /dev/null || { echo "wrk missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
PY=/usr/bin/python3
TICKS=$(getconf CLK_TCK)
TMP=$(mktemp -d)
SRV=
cleanup() { [ -n "$SRV" ] && kill "$SRV" 2> /dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
export OMP_WAIT_POLICY=passive no_proxy='*' NO_PROXY='*'
unset http_proxy HTTP_PROXY

"$R" synth --task seg --out-dir "$TMP/seg" --count 1 -q
"$R" synth --task det --out-dir "$TMP/det" --count 1 -q
SEGIMG=$(ls "$TMP"/seg/images/validation/*.jpg)
DETIMG=$(ls "$TMP"/det/images/*.jpg)
MODELS="demo:segment:$SEGIMG:60 demo-det:detect:$DETIMG:60"
if [ "$RANDOM_MODEL" = 1 ]; then
  "$PY" - "$TMP/fpn_t_random.pth" <<'EOF'
import sys, torch
sys.path.insert(0, 'tools')
import seg_torch
torch.manual_seed(0)
m = seg_torch.make_segmentor('fpn-t')
seg_torch.randomize_bn(m, torch.Generator().manual_seed(1))
torch.save({'state_dict': {k: v for k, v in m.state_dict().items() if not k.endswith('num_batches_tracked')}}, sys.argv[1])
EOF
  MODELS="$MODELS fpn-t-random=$TMP/fpn_t_random.pth:segment:$SEGIMG:3"
fi

now() { date +%s.%N; }
# The CLI on K and on 2K copies of the image: its images/s from the per-image times it logs
# in the 2K run (--verbose: read, inference and output of each image; start-up and model
# loading are not in them), and its CPU time per image, (CPU of 2K - CPU of K) / K (user +
# system, all threads: what a busy machine changes least). Prints "IMG_PER_S CPU_MS_PER_IMG".
cli_measure() {  # weights cmd image k
  local w=$1 cmd=$2 img=$3 k=$4 n i cpu=() rate
  for n in "$k" $((2 * k)); do
    rm -rf "$TMP/in" "$TMP/out"; mkdir -p "$TMP/in" "$TMP/out"
    for i in $(seq 1 "$n"); do ln -s "$img" "$TMP/in/img_$i.${img##*.}"; done
    local args=(--format png --out-dir "$TMP/out")
    [ "$cmd" = detect ] && args=(--json "$TMP/out/d.json" --no-draw)
    local TIMEFORMAT='%U %S'
    { time "$R" -v --threads "$THREADS" "$cmd" --weights "$w" "${args[@]}" "$TMP/in" > "$TMP/cli.log" 2>&1; } 2> "$TMP/cli.time"
    cpu+=("$(awk '{print $1 + $2}' "$TMP/cli.time")")
  done
  rate=$(awk -v k=$((2 * k)) '/debug: .*img_[0-9]+\..* in [0-9.]+ s$/ { s += $(NF - 1); n++ }
               END { if (n != k) { print "cli_measure: " n " timed images, not " k > "/dev/stderr"; exit 1 } print n / s }' "$TMP/cli.log")
  echo "$rate $(echo "1000 * (${cpu[1]} - ${cpu[0]}) / $k" | bc -l)"
}
# the server's CPU time so far (user + system, all threads), in clock ticks
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SRV/stat"; }

start_server() {  # NAME=W
  "$R" serve --port 0 --weights "$1" --threads "$THREADS" --workers 1 --queue 16 2> "$TMP/serve.log" &
  SRV=$!
  for _ in $(seq 1 600); do
    PORT=$(sed -n 's|.*listening on http://[^ ]*:\([0-9]*\)/.*|\1|p' "$TMP/serve.log")
    [ -n "$PORT" ] && return 0
    sleep 0.1
  done
  cat "$TMP/serve.log" >&2; exit 1
}
stop_server() { kill -TERM "$SRV"; wait "$SRV" || true; SRV=; }
rss_kb() { awk '/VmRSS/{print $2}' "/proc/$SRV/status"; }

cat > "$TMP/post.lua" <<'EOF'
local f = assert(io.open(os.getenv("IMG"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/octet-stream"
local counts = {}
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) codes = {} end
function response(status, headers, body) codes[status] = (codes[status] or 0) + 1 end
function done(summary, latency, requests)
  local all = {}
  for _, t in ipairs(threads) do
    local c = t:get("codes")
    for k, v in pairs(c) do all[k] = (all[k] or 0) + v end
  end
  local s = "codes"
  for k, v in pairs(all) do s = s .. " " .. k .. ":" .. v end
  io.write(string.format("%s\np50_ms %.1f\np99_ms %.1f\nduration_s %.3f\n", s, latency:percentile(50) / 1000,
                         latency:percentile(99) / 1000, summary.duration / 1e6))
end
EOF

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "$THREADS thread(s), 1 worker, --queue 16, wrk ${DURATION}s per point, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| model | clients | CLI img/s | service img/s | service / CLI | CLI CPU ms/img | service CPU ms/img | CPU ratio | p50 ms | p99 ms | 503 share | other non-200 | load |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for spec in $MODELS; do
  IFS=: read -r w cmd img k <<< "$spec"
  name=${w%%=*}; file=${w#*=}
  start_server "$w"
  for i in 1 2 3; do curl -s -o /dev/null --data-binary @"$img" "http://127.0.0.1:$PORT/v1/models/$name/predict"; done
  for c in $CLIENTS; do
    # the CLI right before each point (the server idle): a busy machine changes from minute
    # to minute, so each ratio compares runs a few seconds apart
    read -r cli cli_cpu <<< "$(cli_measure "$file" "$cmd" "$img" "$k")"
    t=$((c < 2 ? c : 2))
    t0=$(cpu_ticks)
    out=$(IMG=$img nice -n 19 wrk -t "$t" -c "$c" -d "${DURATION}s" --timeout 120s -s "$TMP/post.lua" "http://127.0.0.1:$PORT/v1/models/$name/predict" 2>&1)
    t1=$(cpu_ticks)
    codes=$(echo "$out" | sed -n 's/^codes//p')
    dur=$(echo "$out" | sed -n 's/^duration_s //p')
    p50=$(echo "$out" | sed -n 's/^p50_ms //p'); p99=$(echo "$out" | sed -n 's/^p99_ms //p')
    ok=0 busy=0 other=0 total=0
    for kv in $codes; do
      s=${kv%%:*} n=${kv#*:}; total=$((total + n))
      case $s in 200) ok=$n ;; 503) busy=$n ;; *) other=$((other + n)) ;; esac
    done
    ips=$(echo "$ok / $dur" | bc -l)
    srv_cpu=$(echo "1000 * ($t1 - $t0) / $TICKS / ($ok + ($ok == 0))" | bc -l)
    printf "| %s | %d | %.2f | %.2f | %.3f | %.1f | %.1f | %.3f | %s | %s | %.1f%% | %d | %s |\n" "$name" "$c" "$cli" "$ips" \
      "$(echo "$ips / $cli" | bc -l)" "$cli_cpu" "$srv_cpu" "$(echo "$srv_cpu / $cli_cpu" | bc -l)" \
      "$p50" "$p99" "$(echo "100 * $busy / ($total + ($total == 0))" | bc -l)" "$other" "$(cut -d' ' -f1 /proc/loadavg)"
  done
  stop_server
done

# resident memory after 100 and after SOAK requests (demo segmentation model, 4 clients)
start_server demo
"$PY" - "$PORT" "$SEGIMG" "$SOAK" "$SRV" <<'EOF'
import http.client, sys, threading
port, img, soak, pid = int(sys.argv[1]), open(sys.argv[2], 'rb').read(), int(sys.argv[3]), sys.argv[4]
def rss():
    return int([l for l in open('/proc/%s/status' % pid) if l.startswith('VmRSS')][0].split()[1])
lock, done, bad = threading.Lock(), [0], []
def client(n):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
    for _ in range(n):
        c.request('POST', '/v1/models/demo/predict', body=img, headers={'Content-Type': 'image/jpeg'})
        r = c.getresponse(); r.read()
        if r.status != 200: bad.append(r.status)
def run(n):
    ts = [threading.Thread(target=client, args=(n // 4,)) for _ in range(4)]
    [t.start() for t in ts]; [t.join() for t in ts]
run(100)
a = rss()
run(soak - 100)
b = rss()
print('\nResident memory of the server (demo, 4 clients): %.1f MB after 100 requests, %.1f MB after %d (%+.1f%%); '
      'non-200 answers: %d' % (a / 1024, b / 1024, soak, 100.0 * (b - a) / a, len(bad)))
EOF
stop_server
