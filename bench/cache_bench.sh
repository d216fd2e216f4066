#!/bin/sh
# cache_bench: the translation cache under load (issue 29), one run.
#
#   bench/cache_bench.sh [SECONDS] [RSS_MINUTES] [RSS_CACHE_MB]     (make cache-bench)
#
# 1. Repeats: 32 clients (bench/loadgen, keep-alive) sending the first 100
#    lines of the test split in turn, for SECONDS (default 20), against the
#    same server binary with the cache on (--cache-mb 64, the default) and
#    off (--cache-mb 0); prints both lines and the ratio of requests/s.  Then
#    every one of the 100 sentences is asked once more of each server and the
#    replies compared (they must be identical).
#    SECONDS 0 skips this part.
# 2. Memory: RSS_MINUTES (default 10; 0 skips it) of 32 clients over every
#    line of the test, dev and hard inputs (6,600 distinct lines of at most
#    400 bytes, several times what --cache-mb RSS_CACHE_MB (default 2)
#    holds; 0 for the same load without a cache), RSS and the cache's bytes
#    and evictions sampled every 10 s; prints the first and largest RSS.
set -eu
SECONDS_RUN=${1:-20}
RSS_MIN=${2:-10}
RSS_CACHE_MB=${3:-2}
BIN=${MTSERVE_BIN:-build/mtserve}
LOADGEN=${LOADGEN:-build/bench/loadgen}
INPUTS=tests/fixtures/tokenizer/inputs
TMP=$(mktemp -d)
trap 'kill $(cat "$TMP"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$TMP"' EXIT

start() {   # name port args...
    name=$1 port=$2
    shift 2
    "$BIN" serve --model en-fr=models/en-fr --port "$port" --no-access-log "$@" 2>"$TMP/$name.log" &
    echo $! >"$TMP/$name.pid"
    for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "cache_bench: $name did not start" >&2
    cat "$TMP/$name.log" >&2
    exit 1
}

if [ "$SECONDS_RUN" -gt 0 ]; then
head -n 100 "$INPUTS/test.en.txt" >"$TMP/100.txt"
start on 18731
start off 18732 --cache-mb 0
echo "== 32 clients, 100 sentences repeated, ${SECONDS_RUN} s each (cache off, then on)"
"$LOADGEN" --url http://127.0.0.1:18732/translate --input "$TMP/100.txt" --n 100 --clients 32 \
    --requests 10000000 --seconds "$SECONDS_RUN" | tee "$TMP/off.json"
"$LOADGEN" --url http://127.0.0.1:18731/translate --input "$TMP/100.txt" --n 100 --clients 32 \
    --requests 10000000 --seconds "$SECONDS_RUN" | tee "$TMP/on.json"
/usr/bin/python3 - "$TMP" <<'EOF'
import json, sys, urllib.request
tmp = sys.argv[1]
off, on = (json.loads(open(f"{tmp}/{k}.json").read()) for k in ("off", "on"))
print(f"requests/s: cache on {on['req_per_s']:.1f}, off {off['req_per_s']:.1f}: "
      f"{on['req_per_s'] / off['req_per_s']:.1f}x")
def ask(port, text):
    body = json.dumps({"text": text}).encode()
    r = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/translate", body,
                                                      {"Content-Type": "application/json"}))
    j = json.loads(r.read())
    j.pop("timing_ms", None)
    return j
lines = open(f"{tmp}/100.txt").read().splitlines()
diff = sum(ask(18731, t) != ask(18732, t) for t in lines)
print(f"replies: {len(lines) - diff} of {len(lines)} identical with the cache on and off")
metrics = urllib.request.urlopen("http://127.0.0.1:18731/metrics").read().decode()
print("\n".join(l for l in metrics.splitlines() if l.startswith("mtserve_cache")))
sys.exit(1 if diff else 0)
EOF
kill "$(cat "$TMP/on.pid")" "$(cat "$TMP/off.pid")"
rm -f "$TMP/on.pid" "$TMP/off.pid"
fi

[ "$RSS_MIN" -gt 0 ] || exit 0
cat "$INPUTS/test.en.txt" "$INPUTS/dev.en.txt" "$INPUTS/hard.txt" | awk 'NF > 0 && length <= 400' >"$TMP/all.txt"
N=$(wc -l <"$TMP/all.txt")
start mem 18733 --cache-mb "$RSS_CACHE_MB"
PID=$(cat "$TMP/mem.pid")
echo "== ${RSS_MIN} min of 32 clients over $N distinct lines, --cache-mb $RSS_CACHE_MB"
"$LOADGEN" --url http://127.0.0.1:18733/translate --input "$TMP/all.txt" --n "$N" --clients 32 \
    --requests 100000000 --seconds $((RSS_MIN * 60)) >"$TMP/mem.json" &
LG=$!
while kill -0 $LG 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print $2}' /proc/"$PID"/status)
    m=$(curl -s http://127.0.0.1:18733/metrics | awk '/^mtserve_cache_(bytes|entries|evictions_total|hits_total) / {printf "%s=%s ", $1, $2}')
    echo "t=$(date +%s) rss_kb=$rss $m"
    sleep 10
done | tee "$TMP/rss.log"
cat "$TMP/mem.json"
awk '{for (i = 1; i <= NF; i++) if ($i ~ /^rss_kb=/) {split($i, a, "="); if (a[2] > m) m = a[2]; if (!f) f = a[2]}}
     END {printf "RSS: first sample %d kB, largest %d kB\n", f, m}' "$TMP/rss.log"
