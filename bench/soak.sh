#!/usr/bin/env bash
# soak: the default server under wrk for a long time, its memory sampled.
#
#   bench/soak.sh [--bin build/mtserve] [--duration 600] [--connections 64] [--md build/soak.md]
#
# Builds nothing.  From the repository root (models/en-fr is the default
# model's path), starts `BIN serve` with its default settings on a free
# loopback port (--port 0; the port is read from the log), waits for /health,
# then runs
#   wrk -t2 -cCONNECTIONS -dDURATIONs --latency --timeout 10s -s <lua> .../translate
# with a Lua script that POSTs JSON bodies in rotation: one to three sentences
# of tests/fixtures/tokenizer/inputs/test.en.txt, greedy and beam 4 in turn.
# VmRSS of the server is sampled every 10 s into <md>.csv (seconds,rss_kb).
# At the end it prints requests, req/s, p50/p99 latency, non-2xx replies,
# socket errors, RSS at start/10%/50%/end, whether the server still runs and
# its exit status on SIGTERM, and writes the same as Markdown to --md.
# Files: <md> (Markdown), <md>.csv (RSS), <md>.wrk.txt (wrk's output),
# <md>.server.log (the server's stderr).
# Exit status 0 if the server survived, answered only 2xx without socket
# errors, exited 0 on SIGTERM and logged no sanitizer report; 1 otherwise;
# 2 on a usage or setup error.
set -u

BIN=build/mtserve DURATION=600 CONNECTIONS=64 MD=build/soak.md
usage() { sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --bin) BIN=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --md) MD=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "soak: unknown argument '$1'" >&2; usage ;;
    esac
done
case $DURATION$CONNECTIONS in *[!0-9]*|'') echo "soak: --duration and --connections take integers" >&2; exit 2 ;; esac
[ "$DURATION" -ge 10 ] && [ "$CONNECTIONS" -ge 2 ] || { echo "soak: --duration >= 10, --connections >= 2" >&2; exit 2; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
abspath() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
BIN=$(abspath "$BIN")
MD=$(abspath "$MD")
cd "$ROOT" || exit 2
[ -x "$BIN" ] || { echo "soak: $BIN is not an executable (build it first: make)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "soak: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
command -v curl >/dev/null || { echo "soak: curl is not installed" >&2; exit 2; }
mkdir -p "$(dirname "$MD")"
CSV=$MD.csv WRK_OUT=$MD.wrk.txt LOG=$MD.server.log
TMP=$(mktemp -d /tmp/soak.XXXXXX)
PID=
SAMPLER=
cleanup() {
    [ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

# ---- the request bodies: the test set's sentences that end with a full stop
# and are 25-110 bytes long, 24 texts of 1, 2, 3 of them, each greedy and beam 4.
INPUTS=tests/fixtures/tokenizer/inputs/test.en.txt
awk -v want=48 '
    { sub(/\r$/, "") }
    length($0) >= 25 && length($0) <= 110 && /\.$/ && !/^[*-]/ { s[n++] = $0 }
    END {
        stride = int(n / want); at = 0
        for (i = 0; i < 24; i++) {
            k = 1 + i % 3; text = ""
            for (j = 0; j < k; j++) text = text (j ? " " : "") s[(at + j) * stride]
            at += k
            gsub(/\\/, "\\\\", text); gsub(/"/, "\\\"", text)
            printf "  [==[{\"text\": \"%s\", \"beam_size\": 1}]==],\n", text
            printf "  [==[{\"text\": \"%s\", \"beam_size\": 4}]==],\n", text
        }
    }' "$INPUTS" > "$TMP/bodies.lua"
[ "$(wc -l < "$TMP/bodies.lua")" -eq 48 ] || { echo "soak: could not build the bodies from $INPUTS" >&2; exit 2; }

LUA=$TMP/soak.lua
{
    echo 'wrk.method = "POST"'
    echo 'wrk.headers["Content-Type"] = "application/json"'
    echo 'local bodies = {'
    cat "$TMP/bodies.lua"
    echo '}'
    cat <<'EOF'
local threads, n_threads = {}, 0
function setup(thread)
  thread:set("id", n_threads)
  n_threads = n_threads + 1
  table.insert(threads, thread)
end
function init(args)
  i = id * 7           -- each thread starts elsewhere in the rotation
  non2xx = 0
  statuses = ""
end
function request()
  i = i + 1
  return wrk.format(nil, nil, nil, bodies[(i % #bodies) + 1])
end
function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if #statuses < 200 then statuses = statuses .. status .. " " end
  end
end
function done(summary, latency, requests)
  local n, st = 0, ""
  for _, t in ipairs(threads) do
    n = n + t:get("non2xx")
    st = st .. t:get("statuses")
  end
  local e = summary.errors
  io.write(string.format("SOAK requests %d\nSOAK duration_us %d\nSOAK non2xx %d\nSOAK statuses %s\n",
    summary.requests, summary.duration, n, st == "" and "-" or st))
  io.write(string.format("SOAK errors connect %d read %d write %d status %d timeout %d\n",
    e.connect, e.read, e.write, e.status, e.timeout))
  io.write(string.format("SOAK p50_ms %.1f\nSOAK p99_ms %.1f\nSOAK max_ms %.1f\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
EOF
} > "$LUA"

# ---- the server
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
alive() { [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null && [ "$(awk '{ print $3 }' "/proc/$PID/stat" 2>/dev/null)" != Z ]; }

: > "$LOG"
"$BIN" serve --host 127.0.0.1 --port 0 2> "$LOG" &
PID=$!
PORT=
for _ in $(seq 600); do        # 60 s to listen
    PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$LOG" | head -1)
    [ -n "$PORT" ] && break
    alive || break
    sleep 0.1
done
[ -n "$PORT" ] || { echo "soak: the server did not start; see $LOG" >&2; exit 2; }
URL=http://127.0.0.1:$PORT
for _ in $(seq 1200); do       # 120 s to load the model
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health")" = 200 ] && break
    alive || break
    sleep 0.1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health")" = 200 ] ||
    { echo "soak: /health never answered 200; see $LOG" >&2; exit 2; }
CONFIG=$(sed -n 's/.*listening on [^ ]* (\(.*\))$/\1/p' "$LOG" | head -1)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "soak: $BIN serve (defaults) on $URL, pid $PID: $CONFIG"
echo "soak: wrk -t2 -c$CONNECTIONS -d${DURATION}s --latency --timeout 10s, RSS every 10 s into $CSV"

# ---- RSS every 10 s (second 0 is before the load)
echo "seconds,rss_kb" > "$CSV"
START=$(date +%s)
( next=0
  while kill -0 "$PID" 2>/dev/null && [ ! -e "$TMP/stop" ]; do
      now=$(( $(date +%s) - START ))
      if [ "$now" -ge "$next" ]; then
          r=$(rss_kb "$PID"); [ -n "$r" ] && echo "$now,$r" >> "$CSV"
          next=$(( next + 10 ))
      fi
      sleep 1
  done ) &
SAMPLER=$!

wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency --timeout 10s -s "$LUA" "$URL/translate" > "$WRK_OUT" 2>&1
WRK_RC=$?
sleep 1
ALIVE=no
alive && ALIVE=yes
r=$(rss_kb "$PID"); [ -n "$r" ] && echo "$(( $(date +%s) - START )),$r" >> "$CSV"
HWM=$(awk '/^VmHWM:/ { print $2 }' "/proc/$PID/status" 2>/dev/null)
touch "$TMP/stop"; wait "$SAMPLER" 2>/dev/null; SAMPLER=
grep -v '^SOAK' "$WRK_OUT"

# ---- stop: SIGTERM, 60 s to exit
EXIT=none
if [ "$ALIVE" = yes ]; then
    kill -TERM "$PID"
    for _ in $(seq 600); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$PID" 2>/dev/null; then
        kill -9 "$PID"; wait "$PID" 2>/dev/null; EXIT="killed (no exit 60 s after SIGTERM)"
    else
        wait "$PID"; EXIT=$?
    fi
else
    wait "$PID" 2>/dev/null; EXIT="died ($?)"
fi
PID=
SANITIZER=$(grep -c -E 'Sanitizer|runtime error:' "$LOG")

# ---- figures
val() { sed -n "s/^SOAK $1 //p" "$WRK_OUT" | head -1; }
REQS=$(val requests) DUR_US=$(val duration_us) NON2XX=$(val non2xx) STATUSES=$(val statuses)
P50=$(val p50_ms) P99=$(val p99_ms) PMAX=$(val max_ms) ERRS=$(val errors)
if [ -z "$REQS" ]; then
    echo "soak: wrk failed (exit $WRK_RC); see $WRK_OUT" >&2
    REQS=0 DUR_US=1 NON2XX=? P50=? P99=? PMAX=? ERRS="?"
fi
RPS=$(awk -v r="$REQS" -v d="$DUR_US" 'BEGIN { printf "%.1f", r / (d / 1e6) }')
SOCKET_ERRS=$(echo "$ERRS" | awk '{ print $2 + $4 + $6 + $10 }')
# the sample nearest to a fraction of the run
rss_at() { awk -F, -v t="$1" 'NR > 1 { d = $1 - t; if (d < 0) d = -d; if (best == "" || d < bd) { best = $2; bd = d } }
                               END { printf "%.1f", best / 1024 }' "$CSV"; }
RSS0=$(rss_at 0) RSS10=$(rss_at $((DURATION / 10))) RSS50=$(rss_at $((DURATION / 2)))
RSSEND=$(awk -F, 'NR > 1 { v = $2 } END { printf "%.1f", v / 1024 }' "$CSV")
RSSMAX=$(awk -F, 'NR > 1 && $2 > m { m = $2 } END { printf "%.1f", m / 1024 }' "$CSV")
HWM_MB=$(awk -v h="${HWM:-0}" 'BEGIN { printf "%.1f", h / 1024 }')
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

OK=1
[ "$ALIVE" = yes ] && [ "$EXIT" = 0 ] && [ "$NON2XX" = 0 ] && [ "$SOCKET_ERRS" = 0 ] && [ "$SANITIZER" = 0 ] || OK=0

cat <<EOF

soak summary ($DURATION s, $CONNECTIONS connections, wrk exit $WRK_RC)
  requests        $REQS ($RPS req/s)
  latency         p50 $P50 ms, p99 $P99 ms, max $PMAX ms
  non-2xx         $NON2XX${STATUSES:+ (statuses: $STATUSES)}
  socket errors   $SOCKET_ERRS ($ERRS)
  RSS MB          start $RSS0, 10% $RSS10, 50% $RSS50, end $RSSEND (max sampled $RSSMAX, VmHWM $HWM_MB)
  server alive    $ALIVE at the end; exit status on SIGTERM: $EXIT; sanitizer lines in log: $SANITIZER
  load average    $LOAD0 before, $LOAD1 after
  files           $MD, $CSV, $WRK_OUT, $LOG
  result          $([ $OK = 1 ] && echo PASS || echo FAIL)
EOF

cat > "$MD" <<EOF
### Soak: $DURATION s, $CONNECTIONS connections ($(date -u '+%Y-%m-%d %H:%M UTC'))

\`bench/soak.sh --duration $DURATION --connections $CONNECTIONS\` on commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'):
\`mtserve serve\` with its defaults ($CONFIG), \`wrk -t2 -c$CONNECTIONS -d${DURATION}s --latency --timeout 10s\`,
POST /translate bodies in rotation (24 texts of 1-3 sentences from the test set, greedy and beam 4).

| figure | value |
|---|---|
| requests | $REQS |
| requests/s | $RPS |
| latency p50 / p99 / max | $P50 / $P99 / $PMAX ms |
| non-2xx replies | $NON2XX |
| socket errors (connect, read, write, timeout) | $SOCKET_ERRS |
| RSS at start / 10% / 50% / end | $RSS0 / $RSS10 / $RSS50 / $RSSEND MB |
| RSS max sampled / VmHWM | $RSSMAX / $HWM_MB MB |
| server alive at the end | $ALIVE |
| exit status on SIGTERM | $EXIT |
| sanitizer lines in the log | $SANITIZER |
| load average before / after | $LOAD0 / $LOAD1 |

RSS sampled every 10 s: \`$(basename "$CSV")\`.
EOF
echo "soak: wrote $MD"
[ $OK = 1 ]
