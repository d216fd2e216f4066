#!/bin/sh
# redis_cache_bench: the shared translation cache (--redis-cache-mb, issue 51), one run.
#
#   bench/redis_cache_bench.sh [SECONDS] [SENTENCES] [CLIENTS]      (make redis-cache-bench)
#
# The same closed-loop load (bench/loadgen: CLIENTS clients, default 16,
# keep-alive, the first SENTENCES lines of the test split, default 200, sent
# in turn for SECONDS, default 20: every sentence repeated) against:
#   one     one replica, alone (its local cache, --cache-mb 64);
#   one-nginx  one replica with --redis behind nginx (the proxy's own cost);
#   three   three replicas behind Debian's nginx (least_conn, as
#           docker/nginx and tests/test_lb.c), --redis, no shared cache:
#           each replica decodes every sentence once for its own cache;
#   shared  the same three with --redis-cache-mb 64: a sentence decoded by
#           one is a hit on the others (mtserve_redis_cache_hits_total).
# Each with cold caches (fresh processes, Redis flushed).  Prints loadgen's
# line for each, the sentences decoded (misses of the local caches minus
# the shared cache's hits) and the shared cache's hits.  The replicas share
# the machine's cores: three replicas add no compute on a 2-core machine.
set -eu
SECONDS_RUN=${1:-20}
SENTENCES=${2:-200}
CLIENTS=${3:-16}
BIN=${MTSERVE_BIN:-build/mtserve}
LOADGEN=${LOADGEN:-build/bench/loadgen}
MODEL=${MODEL:-en-fr=models/en-fr}
TMP=$(mktemp -d)
cleanup() {
    for f in "$TMP"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
    sleep 0.5
    rm -rf "$TMP"
}
trap cleanup EXIT
RPORT=18761 NPORT=18760
head -n "$SENTENCES" tests/fixtures/tokenizer/inputs/test.en.txt >"$TMP/in.txt"

redis-server --port $RPORT --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" >"$TMP/redis.log" 2>&1 &
echo $! >"$TMP/redis.pid"
sleep 0.5

wait_up() {     # port name
    for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "redis_cache_bench: $2 did not start" >&2
    cat "$TMP/$2.log" >&2
    exit 1
}
start() {       # name port args...
    name=$1 port=$2
    shift 2
    "$BIN" serve --model "$MODEL" --port "$port" --no-access-log "$@" 2>"$TMP/$name.log" &
    echo $! >"$TMP/$name.pid"
    wait_up "$port" "$name"
}
stop() {        # names...
    for n in "$@"; do kill "$(cat "$TMP/$n.pid")"; wait "$(cat "$TMP/$n.pid")" 2>/dev/null || true; rm -f "$TMP/$n.pid"; done
}
nginx_start() { # ports...
    mkdir -p "$TMP/nginx"
    {
        echo "daemon off; master_process on; worker_processes 1;"
        [ "$(id -u)" = 0 ] && echo "user root;"
        echo "pid $TMP/nginx/nginx.pid; error_log $TMP/nginx/error.log warn;"
        echo "events { worker_connections 1024; }"
        echo "http { access_log off; client_body_temp_path $TMP/nginx/cb; proxy_temp_path $TMP/nginx/p;"
        echo "  fastcgi_temp_path $TMP/nginx/f; uwsgi_temp_path $TMP/nginx/u; scgi_temp_path $TMP/nginx/s;"
        echo "  upstream mtserve { least_conn;"
        for p in "$@"; do echo "    server 127.0.0.1:$p;"; done
        echo "    keepalive 32; }"
        echo "  server { listen 127.0.0.1:$NPORT; location / { include $(pwd)/docker/nginx/proxy.conf; } } }"
    } >"$TMP/nginx/nginx.conf"
    /usr/sbin/nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/error.log" &
    echo $! >"$TMP/nginx.pid"
    wait_up $NPORT nginx
}
metric() {      # port name: its value (0 when absent)
    curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2; f = 1 } END { if (!f) print 0 }'
}
run() {         # label port ports...
    label=$1 port=$2
    shift 2
    echo "== $label: $CLIENTS clients, $SENTENCES sentences repeated, ${SECONDS_RUN} s"
    "$LOADGEN" --url "http://127.0.0.1:$port/translate" --input "$TMP/in.txt" --n "$SENTENCES" \
        --clients "$CLIENTS" --requests 10000000 --seconds "$SECONDS_RUN" | tee "$TMP/$label.json"
    misses=0 hits=0
    for p in "$@"; do
        misses=$((misses + $(metric "$p" mtserve_cache_misses_total | cut -d. -f1)))
        hits=$((hits + $(metric "$p" mtserve_redis_cache_hits_total | cut -d. -f1)))
    done
    echo "   local-cache misses $misses, of them shared-cache hits $hits: $((misses - hits)) sentences decoded"
}

start one 18771
run one 18771 18771
stop one

for mode in one-nginx three shared; do
    redis-cli -p $RPORT FLUSHALL >/dev/null
    extra="" n=3
    [ "$mode" = shared ] && extra="--redis-cache-mb 64"
    [ "$mode" = one-nginx ] && n=1
    ports=""
    for i in $(seq 1 $n); do
        # shellcheck disable=SC2086
        start "r$i" $((18771 + i)) --redis "redis://127.0.0.1:$RPORT" --redis-timeout 250 $extra
        ports="$ports $((18771 + i))"
    done
    # shellcheck disable=SC2086
    nginx_start $ports
    # shellcheck disable=SC2086
    run "$mode" $NPORT $ports
    # shellcheck disable=SC2086
    stop nginx $(for i in $(seq 1 $n); do echo "r$i"; done)
done
