#!/bin/bash
# tests/html/with_server.sh CMD [ARGS...]: runs CMD with a fresh mtserve ($B/mtserve, B
# defaults to build) listening on a free loopback port and serving models/en-fr and
# models/fr-en; "{url}" in ARGS becomes its base URL (also exported as URL).  Then stops
# the server (SIGTERM: it drains and exits) and exits with CMD's status.  MTSERVE_ARGS:
# more `mtserve serve` flags (e.g. "--max-tokens 20000 --max-html-depth 256").
set -u
B=${B:-build}
log=$(mktemp)
# shellcheck disable=SC2086
"$B/mtserve" serve --model en-fr=models/en-fr --model fr-en=models/fr-en --host 127.0.0.1 --port 0 \
    --no-access-log ${MTSERVE_ARGS:-} >"$log" 2>&1 &
pid=$!
url=
for _ in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "with_server: mtserve exited:" >&2
        cat "$log" >&2
        rm -f "$log"
        exit 1
    fi
    url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$log" | head -1)
    if [ -n "$url" ] && curl -sf "$url/health" >/dev/null 2>&1; then
        break
    fi
    sleep 0.1
done
if [ -z "$url" ]; then
    echo "with_server: mtserve did not come up" >&2
    kill "$pid"
    rm -f "$log"
    exit 1
fi
args=()
for a in "$@"; do
    args+=("${a//\{url\}/$url}")
done
URL=$url "${args[@]}"
rc=$?
kill "$pid" 2>/dev/null
wait "$pid"
rm -f "$log"
exit $rc
