#!/usr/bin/env bash
# docker_check: checks docker/Dockerfile on a machine without a Docker engine.
#
#   - the stages are debian:bookworm-slim, the runtime stage is non-root, exposes 8080,
#     has a /health HEALTHCHECK whose tool is installed, and the expected ENTRYPOINT;
#   - every COPY source exists and gets through the top-level .dockerignore;
#   - every apt package named in the Dockerfile exists (apt-cache show);
#   - a clean clone of the committed tree builds with the Dockerfile's make command and ARCH default (no -march=native);
#   - the runtime packages (and their dependencies) provide every shared library the
#     binary links against;
#   - `mtserve serve` accepts the ENTRYPOINT arguments and knows every MTSERVE_* the
#     image sets (skipped, not passed, while `serve` is not implemented).
#
# Usage: tests/docker_check.sh      (run `apt-get update` once before)
# Last line: "N passed, N failed"; exit status 0 when nothing failed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DF=$ROOT/docker/Dockerfile
IGNORE=$ROOT/.dockerignore
TMP=$(mktemp -d /tmp/docker_check.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

pass=0 fail=0 skip=0
ok()   { pass=$((pass + 1)); echo "ok    $*"; }
bad()  { fail=$((fail + 1)); echo "FAIL  $*"; }
skip() { skip=$((skip + 1)); echo "skip  $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
not() { ! "$@"; }
finish() {
    [ "$skip" -gt 0 ] && echo "($skip skipped, not counted as passed)"
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}

if [ ! -f "$DF" ]; then
    bad "docker/Dockerfile exists"
    finish
fi

# ---- parse: one instruction per line, continuations joined, comments dropped ----
grep -v '^[[:space:]]*#' "$DF" | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' | grep -v '^[[:space:]]*$' > "$TMP/instr"
n_stages=$(grep -ci '^FROM ' "$TMP/instr")
# the runtime stage: everything from the last FROM on
awk 'toupper($1) == "FROM" { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' \
    "$TMP/instr" > "$TMP/runtime"

# "apt-get install ... PKG PKG && ..." -> the package names, one a line
apt_packages() {
    grep -o 'apt-get install[^&;]*' "$1" | sed 's/apt-get install//' | tr ' ' '\n' \
        | grep -v '^-' | grep -v '^$' | sort -u
}
apt_packages "$TMP/instr" > "$TMP/pkgs_all"
apt_packages "$TMP/runtime" > "$TMP/pkgs_runtime"

# ---- the image's shape ----
check "multi-stage build ($n_stages stages)" [ "$n_stages" -ge 2 ]
grep -i '^FROM ' "$TMP/instr" | grep -v '^FROM debian:bookworm-slim\( \|$\)' > "$TMP/other_bases"
check "every stage is FROM debian:bookworm-slim" not test -s "$TMP/other_bases"
check "runtime stage EXPOSE 8080" grep -Eq '^EXPOSE .*\b8080\b' "$TMP/runtime"
user=$(grep -i '^USER ' "$TMP/runtime" | tail -n1 | awk '{print $2}')
check "runtime stage runs as a non-root USER (${user:-none})" \
    bash -c '[ -n "$1" ] && [ "$1" != root ] && [ "$1" != 0 ] && [ "${1%%:*}" != 0 ]' _ "$user"
check "runtime stage creates user '${user:-?}'" grep -Eq "useradd .*\b${user:-@@}\b" "$TMP/runtime"
check "HEALTHCHECK probes /health" grep -Eq '^HEALTHCHECK .*/health' "$TMP/runtime"
hc_tool=$(grep '^HEALTHCHECK' "$TMP/runtime" | sed 's/.* CMD \[*"*//' | awk '{print $1}' | tr -d '",')
check "HEALTHCHECK tool '$hc_tool' is installed in the runtime stage" grep -qx "$hc_tool" "$TMP/pkgs_runtime"
entry=$(grep '^ENTRYPOINT' "$TMP/runtime" | tail -n1 | sed 's/^ENTRYPOINT[[:space:]]*//')
check "ENTRYPOINT is [\"mtserve\",\"serve\",\"--host\",\"0.0.0.0\"]" \
    [ "$(echo "$entry" | tr -d ' ')" = '["mtserve","serve","--host","0.0.0.0"]' ]
arch_default=$(grep -Eo '^ARG ARCH=.*' "$TMP/instr" | head -n1 | sed 's/^ARG ARCH=//')
check "builder passes ARCH to make (default '${arch_default}', not -march=native)" \
    bash -c 'grep -Eq "^RUN .*make .*ARCH=" "$1" && ! echo "$2" | grep -q native' _ "$TMP/instr" "$arch_default"

# ---- COPY sources exist and are not ignored ----
# .dockerignore here is a whitelist: "*" then "!path" lines.
ignored() {
    local src=${1%/}
    [ -f "$IGNORE" ] || return 1
    grep -qx '\*' "$IGNORE" || return 1
    grep -Eq "^!${src}/?\$" "$IGNORE" && return 1
    return 0
}
grep -i '^COPY ' "$TMP/instr" | grep -v -- '--from' | while read -r _ args; do
    set -- $args
    while [ $# -gt 1 ]; do echo "$1"; shift; done
done | grep -v '^--' > "$TMP/copies"
while read -r src; do
    check "COPY source '$src' exists" test -e "$ROOT/$src"
    check "COPY source '$src' passes .dockerignore" not ignored "$src"
done < "$TMP/copies"

# ---- apt packages exist in Debian 12 ----
apt_exists() { apt-cache show "$1" >/dev/null 2>&1; }
while read -r p; do
    check "apt package '$p' exists" apt_exists "$p"
done < "$TMP/pkgs_all"

# ---- clean clone builds portably ----
make_args=$(grep -Eo 'make [^&]*' "$TMP/instr" | head -n1 | sed "s/^make//; s/-j\"*\\\$(nproc)\"*//; s/ARCH=\"\\\$ARCH\"/ARCH=$arch_default/")
BIN=""
if git clone --quiet "$ROOT" "$TMP/src" 2>"$TMP/clone.log"; then
    ok "git clone of the committed tree"
    if (cd "$TMP/src" && nice -n 10 make -j2 $make_args) >"$TMP/make.log" 2>&1; then
        ok "clean clone: make$make_args"
        BIN=$TMP/src/build/mtserve
    else
        bad "clean clone: make$make_args (last lines below)"
        tail -n 15 "$TMP/make.log" | sed 's/^/      /'
    fi
    check "no -march=native in the build commands" not grep -q "march=native" "$TMP/make.log"
else
    bad "git clone of the committed tree"
fi

# ---- shared libraries come from the runtime packages ----
# allowed: the runtime packages and everything they depend on (libc6 included)
if [ -n "$BIN" ]; then
    apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
        --no-replaces --no-enhances $(cat "$TMP/pkgs_runtime") 2>/dev/null \
        | grep -v '^ ' | sed 's/:.*//' | sort -u > "$TMP/allowed"
    ldd "$BIN" | awk '/=> \// {print $3}' > "$TMP/libs"
    while read -r lib; do
        real=$(readlink -f "$lib")
        pkg=""
        for f in "$real" "${real#/usr}" "$lib" "/usr${lib}"; do
            pkg=$(dpkg -S "$f" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$pkg" ] && break
        done
        check "$(basename "$lib") comes from ${pkg:-an unknown package}, installed in the runtime stage" \
            grep -qx "${pkg:-@@}" "$TMP/allowed"
    done < "$TMP/libs"
else
    skip "shared libraries vs runtime packages: no binary was built"
fi

# ---- the ENTRYPOINT and the MTSERVE_* variables are accepted ----
if [ -z "$BIN" ]; then
    skip "'mtserve serve --host 0.0.0.0 --help': no binary was built"
else
    entry_args=$(echo "$entry" | tr -d '[]",' | awk '{$1=""; print}')
    out=$("$BIN" $entry_args --help 2>&1); rc=$?
    if echo "$out" | grep -qi 'not implemented\|unknown command'; then
        skip "'mtserve$entry_args --help': serve is not implemented yet"
    else
        check "'mtserve$entry_args --help' exits 0" [ "$rc" -eq 0 ]
        for v in $(grep -o 'MTSERVE_[A-Z_]*=' "$TMP/runtime" | tr -d = | sort -u); do
            check "the image's $v is a known variable (mtserve serve --help)" \
                grep -qw "$v" <<<"$out"
        done
    fi
fi

finish
