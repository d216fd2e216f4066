#!/bin/sh
# bench/refusal_bench.sh: goodput (2xx replies per second) of POST /translate
# with 64 and with 1,024 connections from one address (127.0.0.1), wrk
# alternating between the two, REPS times each, in one run; prints each
# measurement and the medians (issue 30: refusals over --max-connections-per-ip
# must not take the CPU from the admitted requests).
#   sh bench/refusal_bench.sh [BIN] [SECONDS] [REPS] [extra serve args...]
# The translation cache is off (--cache-mb 0): every request decodes.
set -e
BIN=${1:-build/mtserve}
SECS=${2:-10}
REPS=${3:-3}
shift 3 2>/dev/null || shift $#
PORT=18631
command -v wrk >/dev/null || { echo "refusal_bench: wrk is missing (apt-get install wrk)"; exit 1; }
"$BIN" serve --model en-fr=models/en-fr --port $PORT --no-access-log --cache-mb 0 "$@" > /tmp/refusal_bench.log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null' EXIT
for i in $(seq 100); do curl -sf localhost:$PORT/health >/dev/null && break; sleep 0.2; done
out=/tmp/refusal_bench.tsv
: > $out
for r in $(seq "$REPS"); do
    for c in 64 1024; do
        sleep 2        # the last run's connections are gone (parked ones hold for a second)
        wrk -t2 -c$c -d${SECS}s --timeout 30s -s bench/translate.lua http://127.0.0.1:$PORT/translate > /tmp/refusal_wrk.txt 2>&1
        total=$(awk '/requests in/ {print $1}' /tmp/refusal_wrk.txt)
        bad=$(awk '/Non-2xx/ {print $5}' /tmp/refusal_wrk.txt)
        errs=$(awk '/Socket errors/ {print $0}' /tmp/refusal_wrk.txt)
        dur=$(awk '/requests in/ {sub("s,","",$4); print $4}' /tmp/refusal_wrk.txt)
        good=$(awk -v t="$total" -v b="${bad:-0}" -v d="$dur" 'BEGIN {printf "%.1f", (t - b) / d}')
        echo "$c	$good	${bad:-0}	$errs" | tee -a $out
    done
done
awk -F'\t' '{v[$1] = v[$1] " " $2} END {
    for (c in v) { n = split(v[c], a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                   m[c] = a[int((n + 1) / 2)]; printf "connections %s: median goodput %.1f 2xx/s\n", c, m[c] }
    printf "1024 / 64: %.2f\n", m[1024] / m[64] }' $out
curl -s localhost:$PORT/metrics | grep 'closed_total{reason="per_ip_limit"}'
