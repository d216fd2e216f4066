#!/bin/bash
# detect_load.sh: POST /detect's latency with the decoders idle and with every decoder
# row busy translating (issue 48), against the real server, from the repository root:
#
#   bash bench/detect_load.sh            # or: make detect-load
#
# Three servers, one after the other, each `mtserve serve --model en-fr=... --model
# fr-en=... --max-batch 8 --cache-mb 0` (8 decoder rows a model; no translation cache,
# so that repeated lines are decoded again): the shipped models with their detection
# language models (en.charlm, fr.charlm: CLD2 then the character models), and the
# same models without them (links to every other file: CLD2 alone, as before issue
# 48).  Against each, bench/detect_load.c: 1000 /detect probes idle, then the same
# while DETECT_CLIENTS (24) clients translate in a closed loop, half into each model
# (12 clients for 8 rows: every row busy and requests queued; the mean rows per step
# and the queue depth it prints show it).  The shipped models once per value of
# DETECT_NICES (default "5 0": the default --decode-nice, below the HTTP threads, and
# the same priority), the control at the first value.
# DETECT_LOAD_ARGS are passed on to the probe, DETECT_SERVER_ARGS to each server.
# DETECT_PIN=1, a demonstration (not what the server does by itself): the HTTP threads
# (MHD-worker) and the client on CPU 1, every other thread (the decoders) on CPU 0, so
# that detection has a core that decoding does not use.
# DETECT_RT_PROBE=1: the probe thread alone in SCHED_RR priority 1 (--probe-rt 1; needs
# CAP_SYS_NICE), its translating clients in SCHED_OTHER.  This client shares the server's
# 2 cores, so its own wake-ups would wait behind decoders too; a remote client would not
# share the server's cores: with it, only the server's side of the wait is measured
# (DETECT_SERVER_ARGS="--http-sched rr" against the default, BENCHMARKS.md issue 48).
set -e
cd "$(dirname "$0")/.."
B=${B:-build}
make --no-print-directory B="$B" "$B/mtserve" "$B/bench/detect_load" >/dev/null
CLIENTS=${DETECT_CLIENTS:-24}
TMP=$(mktemp -d /tmp/detect_load.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
for m in en-fr fr-en; do                            # the models without their .charlm files
    mkdir -p "$TMP/$m"
    for f in models/$m/*; do
        case "$f" in *.charlm) ;; *) ln -s "$PWD/$f" "$TMP/$m/";; esac
    done
done
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo "detect_load: $(date +%F), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null), --max-batch 8, $CLIENTS clients, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| server, phase | /detect requests | right | mean ms | p50 | p90 | p99 | max | translations meanwhile | rows/step | queue depth |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
CFGS=() NICES=${DETECT_NICES:-5 0}
for n in $NICES; do
    CFGS+=("models:$n:CLD2 + .charlm (shipped), --decode-nice $n")
done
CFGS+=("$TMP:${NICES%% *}:CLD2 alone (no .charlm), --decode-nice ${NICES%% *}")
for cfg in "${CFGS[@]}"; do
    dir=${cfg%%:*} rest=${cfg#*:}
    nice=${rest%%:*} label=${rest#*:}
    port=$(free_port)
    "$B/mtserve" serve --model "en-fr=$dir/en-fr" --model "fr-en=$dir/fr-en" --host 127.0.0.1 --port "$port" \
        --max-batch 8 --cache-mb 0 --decode-nice "$nice" $DETECT_SERVER_ARGS 2> "$TMP/server.log" &
    PID=$!
    for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.5; done
    PROBE=("$B/bench/detect_load")
    if [ -n "$DETECT_PIN" ]; then                   # the HTTP threads and this client on CPU 1, the rest on CPU 0
        for t in /proc/$PID/task/*; do
            if [ "$(cat "$t/comm")" = MHD-worker ]; then cpu=1; else cpu=0; fi
            taskset -pc "$cpu" "$(basename "$t")" >/dev/null
        done
        PROBE=(taskset -c 1 "$B/bench/detect_load")
        label="$label, decoding on CPU 0, HTTP on CPU 1"
    fi
    if [ -n "$DETECT_RT_PROBE" ]; then
        PROBE+=(--probe-rt 1)
        label="$label, probe in SCHED_RR"
    fi
    "${PROBE[@]}" --url "http://127.0.0.1:$port" --clients "$CLIENTS" --label "$label" $DETECT_LOAD_ARGS
    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
done
