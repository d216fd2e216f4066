#!/usr/bin/env bash
# ab.sh: two builds of mtserve side by side in one run, alternating A B A B,
# so that a change's cost is a ratio measured under the same machine load.
#
#   bench/ab.sh OLD_BUILD_DIR NEW_BUILD_DIR [--model DIR] [--reps 3] [--seconds 8] [--n 64]
#
# Each build dir holds mtserve and bench/bench_engine (make all
# $B/bench/bench_engine $B/bench/loadgen).  For each of --reps rounds, in turn
# for A then B:
#   engine  bench_engine --configs 1:1,32:1,32:4 (batch:beam) on the first --n
#           sentences of the test split: target tokens/s
#   server  the server on a free loopback port (batching on, defaults), one
#           sentence per request, greedy, closed loop (loadgen): requests/s at
#           1 and 32 clients for --seconds each
#   process mtserve translate --beam 1 on the same sentences, load included: seconds
# Prints one line per measurement and, at the end, the median of each figure
# per build and the ratio B/A.
set -euo pipefail
A=${1:?old build dir}; Bd=${2:?new build dir}; shift 2
MODEL=models/en-fr REPS=3 SECS=8 N=64
while [ $# -gt 0 ]; do
    case $1 in
        --model) MODEL=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --seconds) SECS=$2; shift 2 ;;
        --n) N=$2; shift 2 ;;
        *) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
INPUT=tests/fixtures/tokenizer/inputs/test.en.txt
LOADGEN=$Bd/bench/loadgen          # the client is the same program for both
OUT=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$OUT"' EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Each measurement as one line: LABEL FIGURE... VALUE (read back at the end).
PARSE_ENGINE='
import json, os, sys
for l in sys.stdin:
    o = json.loads(l)
    if "tok_per_s" in o:
        print(os.environ["LABEL"], "engine b%dxbeam%d tok/s" % (o["batch"], o["beam"]), round(o["tok_per_s"]))'
PARSE_LOAD='
import json, os, sys
o = json.loads(sys.stdin.readline())
print(os.environ["LABEL"], "server c%s req/s" % os.environ["C"], o["req_per_s"])
if o["errors"]: print(os.environ["LABEL"], "server c%s errors" % os.environ["C"], o["errors"])'

engine() {   # build label
    "$1/bench/bench_engine" --model "$MODEL" --input "$INPUT" --n "$N" --configs 1:1,32:1,32:4 |
        LABEL=$2 /usr/bin/python3 -c "$PARSE_ENGINE"
}

server() {   # build label
    local port; port=$(free_port)
    "$1/mtserve" serve --model "$MODEL" --host 127.0.0.1 --port "$port" >"$OUT/srv.log" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do curl -sf "127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
    "$LOADGEN" --url "http://127.0.0.1:$port/translate" --input "$INPUT" --n "$N" --clients 4 --requests 64 >/dev/null
    for c in 1 32; do
        "$LOADGEN" --url "http://127.0.0.1:$port/translate" --input "$INPUT" --n "$N" --clients $c \
            --requests 1000000 --seconds "$SECS" | LABEL=$2 C=$c /usr/bin/python3 -c "$PARSE_LOAD"
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
}

process() {  # build label
    head -n "$N" "$INPUT" > "$OUT/in.txt"
    local t0 t1; t0=$(date +%s.%N)
    "$1/mtserve" translate --model "$MODEL" --beam 1 < "$OUT/in.txt" > "$OUT/out-$2.txt"
    t1=$(date +%s.%N)
    echo "$2 process translate s $(echo "$t1 - $t0" | bc -l | cut -c1-6)"
}

for r in $(seq "$REPS"); do
    for pair in "$A A" "$Bd B"; do
        set -- $pair
        engine "$1" "$2"; server "$1" "$2"; process "$1" "$2"
    done
done | tee "$OUT/all.txt"
cmp -s "$OUT/out-A.txt" "$OUT/out-B.txt" && echo "process outputs: identical" || echo "process outputs: DIFFER"
/usr/bin/python3 - "$OUT/all.txt" <<'EOF'
import re, statistics, sys
fig = {}
for l in open(sys.argv[1]):
    w = l.split()
    if len(w) < 3 or w[0] not in ("A", "B"):
        continue
    label, key, val = w[0], " ".join(w[1:-1]), float(w[-1])
    fig.setdefault(key, {}).setdefault(label, []).append(val)
print(f"{'figure':34} {'A median':>10} {'B median':>10} {'B/A':>6}")
for k, v in fig.items():
    a, b = statistics.median(v.get("A", [0])), statistics.median(v.get("B", [0]))
    print(f"{k:34} {a:10.1f} {b:10.1f} {b / a if a else 0:6.3f}")
EOF
