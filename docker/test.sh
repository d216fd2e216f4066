#!/usr/bin/env bash
# docker/test.sh (`make docker-test`): builds docker/Dockerfile with a real Docker engine
# and checks the image as a user would.  Not part of `make check` (it needs root, a few
# minutes and Debian's package mirror).
#
#   - installs what is missing (docker.io, debootstrap, curl, docker-compose);
#   - starts a private dockerd (vfs, no iptables, no bridge) when none answers, and
#     stops it at the end;
#   - makes debian:bookworm-slim with debootstrap when the engine lacks it (the rootfs
#     tarball is cached as build/docker/bookworm-rootfs.tar);
#   - builds the image (--network host), then: /health and /translate, a mounted model
#     directory named by MTSERVE_MODEL, --read-only, uid 999, HEALTHCHECK healthy,
#     `docker stop` under load loses no reply and exits 0, image size (< 120 MB),
#     start-up time and memory;
#   - docker/docker-compose.replicas.yml: 3 replicas behind nginx on :8080 (ports
#     8080-8083 must be free); one replica killed under load loses no request, and the
#     restarted replica (restart: unless-stopped) serves again through nginx.
# Every container uses --network host and a free port.  Every wait is bounded.
# Last line: "docker-test: N passed, N failed"; exit status 0 when nothing failed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
IMAGE=${IMAGE:-mtserve:test}
WORK=$ROOT/build/docker
mkdir -p "$WORK"
TMP=$(mktemp -d /tmp/docker_test.XXXXXX)
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "ok    $*"; }
bad() { fail=$((fail + 1)); echo "FAIL  $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
note() { echo "      $*"; }

DOCKERD_PID="" CONTAINERS=()
cleanup() {
    for c in "${CONTAINERS[@]}"; do docker rm -f "$c" >/dev/null 2>&1; done
    if [ -n "$DOCKERD_PID" ]; then
        kill "$DOCKERD_PID" 2>/dev/null
        for _ in $(seq 1 30); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 1; done
        kill -9 "$DOCKERD_PID" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
finish() {
    echo "docker-test: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}

# ---- packages ----
missing=""
for p in docker.io debootstrap curl docker-compose; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "installing:$missing"
    $SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing \
        || { bad "install$missing"; finish; }
fi

# ---- the engine: an existing one, or a private dockerd ----
if ! timeout 10 docker info >/dev/null 2>&1; then
    echo "starting a private dockerd (log: $WORK/dockerd.log)"
    $SUDO dockerd --storage-driver=vfs --iptables=false --bridge=none >"$WORK/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    for _ in $(seq 1 60); do timeout 5 docker info >/dev/null 2>&1 && break; sleep 1; done
fi
timeout 10 docker info >/dev/null 2>&1 || { bad "docker engine answers (see $WORK/dockerd.log)"; finish; }
ok "docker engine answers ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"

# ---- the base image ----
if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
    tarball=$WORK/bookworm-rootfs.tar
    if [ ! -s "$tarball" ]; then
        echo "debootstrap --variant=minbase bookworm (a few minutes)"
        rootfs=$TMP/rootfs
        if ! $SUDO timeout 900 debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian \
                >"$WORK/debootstrap.log" 2>&1; then
            bad "debootstrap (see $WORK/debootstrap.log)"; finish
        fi
        # what the official slim image does: no documentation, man pages or locales
        # from later installs, no apt lists or caches
        cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
        $SUDO find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
        $SUDO rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/var/lib/apt/lists/* \
            "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log
        find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
        $SUDO tar -C "$rootfs" -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
        $SUDO rm -rf "$rootfs"
    fi
    docker import "$tarball" debian:bookworm-slim >/dev/null || { bad "docker import of the base image"; finish; }
fi
ok "base image debian:bookworm-slim ($(docker image inspect -f '{{.Size}}' debian:bookworm-slim) bytes)"

# ---- build ----
# without the buildx plugin, the classic builder (BuildKit needs buildx in recent clients)
docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=0
t0=$(date +%s)
if docker build --network host -f docker/Dockerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1; then
    ok "docker build ($(( $(date +%s) - t0 )) s, log: $WORK/build.log)"
else
    bad "docker build (last lines below)"; tail -n 20 "$WORK/build.log" | sed 's/^/      /'; finish
fi
size=$(docker image inspect -f '{{.Size}}' "$IMAGE")
check "image size $size bytes ($(( size / 1000000 )) MB) < 120 MB" [ "$size" -lt 120000000 ]
docker history --format '{{.Size}}\t{{.CreatedBy}}' "$IMAGE" | cut -c1-110 | sed 's/^/      /'
# what the image holds, library by library (docker/README.md's table): its file system
# exported from a created (never started) container
if cid=$(docker create "$IMAGE" 2>/dev/null); then
    mkdir -p "$TMP/image-root"
    docker export "$cid" | tar -C "$TMP/image-root" -xf - 2>/dev/null
    docker rm "$cid" >/dev/null
    bash docker/lib_sizes.sh "$TMP/image-root" >"$WORK/lib_sizes.md" && sed 's/^/      /' "$WORK/lib_sizes.md"
    rm -rf "$TMP/image-root"
fi


# ---- helpers ----
free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$(( 20000 + RANDOM % 20000 ))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
    echo 0
}
# run NAME PORT [docker run options...]: a detached container of the image on the host network
run() {
    local name=$1 port=$2; shift 2
    CONTAINERS+=("$name")
    docker rm -f "$name" >/dev/null 2>&1
    docker run -d --name "$name" --network host -e MTSERVE_PORT="$port" "$@" "$IMAGE" >/dev/null
}
# wait_ready PORT SECONDS [T0]: /health answers 200; prints the seconds since T0 (default: now)
wait_ready() {
    local t0=${3:-$(date +%s.%N)} code
    for _ in $(seq 1 $(( $2 * 10 ))); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/health")
        if [ "$code" = 200 ]; then echo "$(date +%s.%N) $t0" | awk '{printf "%.2f", $1 - $2}'; return 0; fi
        sleep 0.1
    done
    return 1
}
translate() {  # PORT -> the reply body, fails unless 200
    curl -sf --max-time 30 "http://127.0.0.1:$1/translate" -H 'Content-Type: application/json' \
        -d '{"text":"Hello, how are you?"}'
}

# ---- serves /health and /translate ----
port=$(free_port); c=mtserve-test-main
t0=$(date +%s.%N)
run "$c" "$port" --health-interval=2s --health-start-period=60s
if ready=$(wait_ready "$port" 60 "$t0"); then
    ok "docker run: /health 200 ${ready} s after \`docker run\` began (port $port)"
    reply=$(translate "$port"); rc=$?
    check "/translate with the baked-in model: ${reply:0:120}" \
        bash -c '[ "$1" -eq 0 ] && grep -q "\"translations\"" <<<"$2" && grep -q "\"text\": *\"[^\"]" <<<"$2"' _ "$rc" "$reply"
    # the process's real and effective uid, seen from the host (the image has no `id`)
    pid=$(docker inspect -f '{{.State.Pid}}' "$c")
    uids=$(awk '/^Uid:/ {print $2 " " $3}' "/proc/$pid/status" 2>/dev/null)
    user=$(docker image inspect -f '{{.Config.User}}' "$IMAGE")
    check "runs as uid 999 (User '$user', process Uid ${uids:-?})" [ "$uids" = "999 999" ]
    # memory: the container's process (VmRSS) and docker stats
    rss=$(awk '/^VmRSS/ {print $2 " " $3}' "/proc/$pid/status" 2>/dev/null)
    stats=$(timeout 20 docker stats --no-stream --format '{{.MemUsage}}' "$c" 2>/dev/null)
    note "memory after one request: VmRSS ${rss:-?}; docker stats ${stats:-?}"
    # HEALTHCHECK: the image's command, polled every 2 s here instead of 30 s
    status=""
    for _ in $(seq 1 60); do
        status=$(docker inspect -f '{{.State.Health.Status}}' "$c" 2>/dev/null)
        [ "$status" = healthy ] || [ "$status" = unhealthy ] && break
        sleep 1
    done
    check "HEALTHCHECK reaches healthy (status '$status')" [ "$status" = healthy ]
else
    bad "docker run: /health did not answer 200 within 60 s (logs below)"
    docker logs "$c" 2>&1 | tail -n 15 | sed 's/^/      /'
fi
docker rm -f "$c" >/dev/null 2>&1

# ---- a mounted model directory, named by MTSERVE_MODEL ----
port=$(free_port); c=mtserve-test-mount
run "$c" "$port" -v "$ROOT/models:/models:ro" -e MTSERVE_MODEL=en-fr=/models/en-fr,tiny=/models/tiny
if wait_ready "$port" 60 >/dev/null; then
    models=$(curl -s --max-time 5 "http://127.0.0.1:$port/models")
    reply=$(curl -s --max-time 30 "http://127.0.0.1:$port/translate" -H 'Content-Type: application/json' \
            -d '{"text":"Hello.","model":"tiny"}')
    check "MTSERVE_MODEL with a mounted /models: both listed, the mounted tiny model translates" \
        bash -c 'grep -q "\"tiny\"" <<<"$1" && grep -q "\"en-fr\"" <<<"$1" && grep -q "\"model\": *\"tiny\"" <<<"$2"' \
        _ "$models" "$reply"
else
    bad "mounted models: the service did not answer (logs below)"
    docker logs "$c" 2>&1 | tail -n 15 | sed 's/^/      /'
fi
docker rm -f "$c" >/dev/null 2>&1

# ---- read-only root file system ----
port=$(free_port); c=mtserve-test-ro
run "$c" "$port" --read-only
if wait_ready "$port" 60 >/dev/null && translate "$port" >/dev/null; then
    ok "--read-only: /health and /translate answer"
else
    bad "--read-only: the service did not answer (logs below)"
    docker logs "$c" 2>&1 | tail -n 15 | sed 's/^/      /'
fi
docker rm -f "$c" >/dev/null 2>&1

# ---- docker stop under load ----
# 4 clients loop on /translate.  Each request's outcome is logged with the time it
# ended: HTTP 200 is fine; "refused" (curl exit 7, nothing was sent) is fine only when
# it happened after `docker stop` began; anything else (a reset, an empty reply, a 5xx,
# a timeout) is a lost reply.
port=$(free_port); c=mtserve-test-stop
run "$c" "$port"
if wait_ready "$port" 60 >/dev/null; then
    client() {  # ID: loops until refused or 120 s
        local end=$(( $(date +%s) + 120 )) code rc
        while [ "$(date +%s)" -lt "$end" ]; do
            code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 "http://127.0.0.1:$port/translate" \
                -H 'Content-Type: application/json' -d '{"text":"The weather is nice today, so we will walk to the station."}')
            rc=$?
            echo "$(date +%s.%N) $rc $code" >>"$TMP/load.$1"
            [ "$rc" = 7 ] && break
        done
    }
    pids=()
    for i in 1 2 3 4; do client "$i" & pids+=($!); done
    sleep 3
    stop_at=$(date +%s.%N)
    timeout 60 docker stop -t 40 "$c" >/dev/null
    stopped=$(date +%s.%N)
    for p in "${pids[@]}"; do
        # each client ends at its first refused connection, at the latest within 120 s
        wait "$p"
    done
    cat "$TMP"/load.* >"$TMP/load"
    total=$(wc -l <"$TMP/load")
    n200=$(awk '$2 == 0 && $3 == 200' "$TMP/load" | wc -l)
    refused_after=$(awk -v t="$stop_at" '$2 == 7 && $1 >= t' "$TMP/load" | wc -l)
    lost=$(awk -v t="$stop_at" '!($2 == 0 && $3 == 200) && !($2 == 7 && $1 >= t)' "$TMP/load" | wc -l)
    exit_code=$(docker inspect -f '{{.State.ExitCode}}' "$c")
    note "load: $total requests, $n200 x 200, $refused_after refused after stop began, $lost lost;" \
         "docker stop took $(echo "$stopped $stop_at" | awk '{printf "%.2f", $1 - $2}') s"
    check "docker stop under load: no reply lost ($lost lost of $total, $n200 answered 200)" \
        bash -c '[ "$1" -eq 0 ] && [ "$2" -gt 0 ]' _ "$lost" "$n200"
    check "container exits 0 on docker stop (exit code $exit_code)" [ "$exit_code" = 0 ]
else
    bad "docker stop under load: the service did not start"
fi
docker rm -f "$c" >/dev/null 2>&1

# ---- 3 replicas behind nginx (docker/docker-compose.replicas.yml) ----
# The same topology as tests/test_lb.c, in containers: 8 clients loop on POST /translate
# through nginx on :8080; after 3 s one replica's process is SIGKILLed, its restart
# policy brings it back; every request must end in 200.  Then, once nginx's
# fail_timeout has passed, requests must reach the restarted replica again (its /metrics
# count of /translate grows).
if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); else COMPOSE=(docker-compose); fi
CF=docker/docker-compose.replicas.yml
busy=""
for p in 8080 8081 8082 8083 6390; do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && busy="$busy $p"; done
if [ -n "$busy" ]; then
    bad "compose replicas: ports$busy are in use (the compose file's nginx, replicas and redis need 8080-8083, 6390)"
elif ! "${COMPOSE[@]}" -p mtserve-test -f "$CF" up -d --build >"$WORK/compose.log" 2>&1; then
    bad "compose replicas: ${COMPOSE[*]} up (last lines below)"; tail -n 15 "$WORK/compose.log" | sed 's/^/      /'
else
    up=1
    for p in 8081 8082 8083; do wait_ready "$p" 60 >/dev/null || up=0; done
    for _ in $(seq 1 50); do curl -sf --max-time 2 http://127.0.0.1:8080/lb-health >/dev/null && break; sleep 0.2; done
    if [ "$up" -eq 1 ] && translate 8080 >/dev/null; then
        ok "compose replicas: 3 replicas and nginx up, /translate through nginx answers"
        check "compose replicas: each replica shares its limits through the redis service (/health)" \
            bash -c 'for p in 8081 8082 8083; do curl -s --max-time 2 "http://127.0.0.1:$p/health" | grep -q "\"state\":\"up\"" || exit 1; done'
        client() {  # ID SECONDS: POST /translate through nginx in a loop
            local end=$(( $(date +%s) + $2 )) code
            while [ "$(date +%s)" -lt "$end" ]; do
                code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 "http://127.0.0.1:8080/translate" \
                    -H 'Content-Type: application/json' -d '{"text":"The package is not installed, so it can be removed."}')
                echo "$code" >>"$TMP/lb.$1"
            done
        }
        rm -f "$TMP"/lb.*
        pids=()
        for i in 1 2 3 4 5 6 7 8; do client "$i" 10 & pids+=($!); done
        sleep 3
        # a crash, not `docker kill` (Docker does not restart what a user stopped):
        # SIGKILL to the replica's process from the host
        victim=$("${COMPOSE[@]}" -p mtserve-test -f "$CF" ps -q mtserve-2)
        kill -KILL "$(docker inspect -f '{{.State.Pid}}' "$victim")"
        for p in "${pids[@]}"; do wait "$p"; done
        cat "$TMP"/lb.* >"$TMP/lb"
        total=$(wc -l <"$TMP/lb"); n200=$(grep -cx 200 "$TMP/lb")
        check "compose replicas: a replica killed under load, $n200 of $total requests answered 200" \
            bash -c '[ "$1" -gt 0 ] && [ "$1" -eq "$2" ]' _ "$n200" "$total"
        # back in: restarted by its policy, taken back by nginx after fail_timeout (5 s)
        if wait_ready 8082 60 >/dev/null; then
            sleep 6
            before=$(curl -s http://127.0.0.1:8082/metrics | awk '/^mtserve_requests_total.*translate.*200/ {s += $NF} END {print s + 0}')
            for _ in $(seq 1 30); do translate 8080 >/dev/null; done
            after=$(curl -s http://127.0.0.1:8082/metrics | awk '/^mtserve_requests_total.*translate.*200/ {s += $NF} END {print s + 0}')
            check "compose replicas: the restarted replica serves again through nginx ($((after - before)) of 30)" \
                [ "$after" -gt "$before" ]
        else
            bad "compose replicas: the killed replica did not come back (restart: unless-stopped)"
        fi
    else
        bad "compose replicas: not all of nginx and 3 replicas answered"
        "${COMPOSE[@]}" -p mtserve-test -f "$CF" logs --tail 10 2>&1 | sed 's/^/      /'
    fi
    "${COMPOSE[@]}" -p mtserve-test -f "$CF" down -v -t 40 >>"$WORK/compose.log" 2>&1
fi

finish
