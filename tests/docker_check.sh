#!/usr/bin/env bash
# docker_check: checks docker/Dockerfile on a machine without a Docker engine.
#
#   - the build stage is debian:bookworm-slim, the runtime stage FROM scratch holds what
#     docker/rootfs.sh assembles, runs as uid 999, exposes 8080, its HEALTHCHECK is
#     `mtserve health`, and the expected ENTRYPOINT;
#   - every COPY source exists and gets through the top-level .dockerignore;
#   - every apt package named in the Dockerfile exists (apt-cache show);
#   - a clean clone of the committed tree builds with the Dockerfile's make command and ARCH default (no -march=native);
#   - docker/rootfs.sh run on that binary gives a root file system in which, chrooted as
#     uid 999 (root only; skipped otherwise), `mtserve serve` loads the image's model,
#     `mtserve health` answers 0 and /translate answers: the image without an engine;
#   - `mtserve serve` accepts the ENTRYPOINT arguments and knows every MTSERVE_* the
#     image sets (skipped, not passed, while `serve` is not implemented);
#   - that root file system with the runtime stage's COPY lines applied and the binary
#     stripped (the image's files) is under docker/test.sh's 120 MB limit;
#   - docker/k8s/*.yaml parse as YAML (Debian's python3-yaml) and carry the required
#     fields: kind/apiVersion/metadata.name, the Deployment's /health probes, resources,
#     terminationGracePeriodSeconds > drain timeout + preStop sleep, the security
#     context; Service port = container port; HPA -> the Deployment; PDB selector.
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

# ---- the image's shape ----
check "multi-stage build ($n_stages stages)" [ "$n_stages" -ge 2 ]
# build stages on Debian; the runtime stage is FROM scratch (docker/rootfs.sh fills it)
grep -i '^FROM ' "$TMP/instr" | sed '$d' | grep -v '^FROM debian:bookworm-slim\( \|$\)' > "$TMP/other_bases"
check "every build stage is FROM debian:bookworm-slim" not test -s "$TMP/other_bases"
check "the runtime stage is FROM scratch" grep -Eq '^FROM scratch$' <(grep -i '^FROM ' "$TMP/instr" | tail -n1)
check "runtime stage EXPOSE 8080" grep -Eq '^EXPOSE .*\b8080\b' "$TMP/runtime"
user=$(grep -i '^USER ' "$TMP/runtime" | tail -n1 | awk '{print $2}')
check "runtime stage runs as a non-root numeric USER (${user:-none})" \
    bash -c '[[ "$1" =~ ^[0-9]+(:[0-9]+)?$ ]] && [ "${1%%:*}" != 0 ]' _ "$user"
check "docker/rootfs.sh names uid ${user%%:*} in /etc/passwd" \
    grep -Eq "^echo 'mtserve:x:${user%%:*}:${user##*:}:" "$ROOT/docker/rootfs.sh"
check "the build stage runs docker/rootfs.sh and the runtime stage copies its tree" \
    bash -c 'grep -Eq "^RUN bash docker/rootfs.sh build/mtserve /rootfs" "$1" && grep -Eq "^COPY --from=build /rootfs/? /$" "$2"' _ "$TMP/instr" "$TMP/runtime"
hc=$(grep '^HEALTHCHECK' "$TMP/runtime" | sed 's/.* CMD[[:space:]]*//' | tr -d '[]",')
check "HEALTHCHECK runs the image's own binary: '$hc'" grep -Eq '^mtserve health( |$)' <<<"$hc"
entry=$(grep '^ENTRYPOINT' "$TMP/runtime" | tail -n1 | sed 's/^ENTRYPOINT[[:space:]]*//')
check "ENTRYPOINT is [\"mtserve\",\"serve\",\"--host\",\"0.0.0.0\"]" \
    [ "$(echo "$entry" | tr -d ' ')" = '["mtserve","serve","--host","0.0.0.0"]' ]
arch_default=$(grep -Eo '^ARG ARCH=.*' "$TMP/instr" | head -n1 | sed 's/^ARG ARCH=//')
check "builder passes ARCH to make (default '${arch_default}', not -march=native)" \
    bash -c 'grep -Eq "^RUN .*make .*ARCH=" "$1" && ! echo "$2" | grep -q native' _ "$TMP/instr" "$arch_default"

# ---- Kubernetes manifests (docker/k8s/): parse as YAML, required fields ----
# Debian's /usr/bin/python3 with python3-yaml (DEB_TEST); one "ok|FAIL<TAB>what" line
# per check.  K8S_DIR overrides the directory (to try a broken copy).
K8S=${K8S_DIR:-$ROOT/docker/k8s}
image_name=$(grep -Eo 'docker build .*-t [^ ]+' "$DF" | head -n1 | sed 's/.*-t //')
drain_default=$(grep -Eo 'drain_s = [0-9]+;' "$ROOT/server/common/options.c" | grep -Eo '[0-9]+' | head -n1)
expose_port=$(grep -Eo '^EXPOSE [0-9]+' "$TMP/runtime" | awk '{print $2}' | head -n1)
if ! /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
    bad "k8s: /usr/bin/python3 has the yaml module (apt-get install python3-yaml)"
else
    /usr/bin/python3 - "$K8S" "${image_name:-mtserve}" "${drain_default:-30}" "${expose_port:-8080}" \
        > "$TMP/k8s.out" 2>&1 <<'EOF'
import os, re, sys, yaml

k8s, image_name, drain_default, expose_port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def check(ok, what):
    print(("ok" if ok else "FAIL") + "\t" + what)

def get(d, *path):
    for p in path:
        if isinstance(d, dict):
            d = d.get(p)
        elif isinstance(d, list) and isinstance(p, int) and p < len(d):
            d = d[p]
        else:
            return None
    return d

files = {"deployment.yaml": "Deployment", "service.yaml": "Service", "hpa.yaml": "HorizontalPodAutoscaler",
         "pdb.yaml": "PodDisruptionBudget", "configmap.yaml": "ConfigMap"}
api = {"Deployment": "apps/v1", "Service": "v1", "HorizontalPodAutoscaler": "autoscaling/v2",
       "PodDisruptionBudget": "policy/v1", "ConfigMap": "v1"}
docs = {}
check(os.path.isfile(os.path.join(k8s, "README.md")), "k8s: docker/k8s/README.md exists")
for f, kind in files.items():
    path = os.path.join(k8s, f)
    try:
        with open(path) as fh:
            loaded = [d for d in yaml.safe_load_all(fh) if d is not None]
        check(len(loaded) == 1 and isinstance(loaded[0], dict), f"k8s: {f} parses as one YAML mapping")
    except (OSError, yaml.YAMLError) as e:
        check(False, f"k8s: {f} parses as YAML ({str(e).splitlines()[0]})")
        continue
    d = loaded[0] if loaded and isinstance(loaded[0], dict) else {}
    docs[kind] = d
    check(d.get("kind") == kind and d.get("apiVersion") == api[kind],
          f"k8s: {f} is kind {kind}, apiVersion {api[kind]} (got {d.get('kind')}, {d.get('apiVersion')})")
    check(bool(get(d, "metadata", "name")), f"k8s: {f} has metadata.name")

dep = docs.get("Deployment", {})
spec = get(dep, "spec", "template", "spec") or {}
cs = spec.get("containers") or [{}]
c = cs[0] if isinstance(cs[0], dict) else {}
env = {e.get("name"): e.get("value") for e in (c.get("env") or []) if isinstance(e, dict)}
cm = get(docs.get("ConfigMap", {}), "data") or {}
check(get(dep, "spec", "replicas") == 2, "k8s: Deployment has 2 replicas")
img = str(c.get("image", ""))
check(img.split("/")[-1].split(":")[0].split("@")[0] == image_name,
      f"k8s: container image '{img}' is the image docker/ builds ('{image_name}')")
sel = get(dep, "spec", "selector", "matchLabels") or {}
tlabels = get(dep, "spec", "template", "metadata", "labels") or {}
check(bool(sel) and all(tlabels.get(k) == v for k, v in sel.items()),
      "k8s: Deployment selector matches its pod template's labels")
for probe in ("readinessProbe", "livenessProbe"):
    p = c.get(probe) or {}
    check(get(p, "httpGet", "path") == "/health", f"k8s: {probe} is httpGet /health")
lp = c.get("livenessProbe") or {}
# generous: at least 60 s of failures before a restart, and a start delay
check((lp.get("initialDelaySeconds") or 0) >= 30 and
      (lp.get("failureThreshold") or 3) * (lp.get("periodSeconds") or 10) >= 60,
      "k8s: livenessProbe is generous (initialDelaySeconds >= 30, failureThreshold x period >= 60 s)")
ports = [p for p in (c.get("ports") or []) if isinstance(p, dict)]
cport = ports[0].get("containerPort") if ports else None
check(cport == expose_port, f"k8s: containerPort {cport} = the Dockerfile's EXPOSE {expose_port}")
check(str(env.get("MTSERVE_PORT", cport)) == str(cport), "k8s: MTSERVE_PORT = containerPort")
check(env.get("MTSERVE_HOST") == "0.0.0.0", "k8s: MTSERVE_HOST=0.0.0.0")
check(str(env.get("MTSERVE_MAX_CONNECTIONS_PER_IP")) == "0", "k8s: MTSERVE_MAX_CONNECTIONS_PER_IP=0 (all traffic from one proxy address)")
res = c.get("resources") or {}
for k in ("requests", "limits"):
    check(bool(get(res, k, "cpu")) and bool(get(res, k, "memory")), f"k8s: resources.{k} sets cpu and memory")
def mib(q):
    m = re.fullmatch(r"(\d+)(Mi|Gi|M|G)?", str(q or ""))
    if not m: return 0
    n, u = int(m.group(1)), m.group(2) or ""
    return {"Mi": n, "Gi": n * 1024, "M": n * 1e6 / 2**20, "G": n * 1e9 / 2**20, "": n / 2**20}[u]
check(mib(get(res, "requests", "memory")) >= 95 * 1e6 / 2**20 and mib(get(res, "limits", "memory")) >= mib(get(res, "requests", "memory")),
      "k8s: memory request >= the measured ~95 MB RSS, limit >= request")
drain = int(env.get("MTSERVE_DRAIN_TIMEOUT") or cm.get("MTSERVE_DRAIN_TIMEOUT") or drain_default)
pre = get(c, "lifecycle", "preStop", "exec", "command") or []
pre_s = int(pre[-1]) if pre and str(pre[0]).endswith("sleep") and str(pre[-1]).isdigit() else \
        int(get(c, "lifecycle", "preStop", "sleep", "seconds") or 0)
check(pre_s > 0, f"k8s: preStop sleeps ({pre_s} s) so the Service stops routing before SIGTERM")
tg = spec.get("terminationGracePeriodSeconds") or 30
check(tg > drain + pre_s, f"k8s: terminationGracePeriodSeconds {tg} > drain timeout {drain} s + preStop {pre_s} s")
sc, psc = c.get("securityContext") or {}, spec.get("securityContext") or {}
def sec(k): return sc.get(k, psc.get(k))
check(sec("runAsNonRoot") is True, "k8s: runAsNonRoot: true")
uid = sec("runAsUser")
check(isinstance(uid, int) and uid > 0, f"k8s: runAsUser is a numeric non-root uid ({uid})")
check(sc.get("readOnlyRootFilesystem") is True, "k8s: readOnlyRootFilesystem: true")
check(sc.get("allowPrivilegeEscalation") is False, "k8s: allowPrivilegeEscalation: false")
check("ALL" in (get(sc, "capabilities", "drop") or []), "k8s: capabilities drop ALL")
# MTSERVE_MODEL: the live value and the documented two-model example are ID=DIR lists
# whose directories are the image's /app/models/... or under a mounted volume.
mounts = [m.get("mountPath", "") for m in (c.get("volumeMounts") or []) if isinstance(m, dict)]
def model_list_ok(v):
    entries = [e.strip() for e in str(v).split(",")]
    ids = [e.split("=", 1)[0] for e in entries]
    return bool(entries) and len(set(ids)) == len(ids) and all(
        re.fullmatch(r"[A-Za-z0-9._-]+=/\S+", e) and
        (e.split("=", 1)[1].startswith("/app/models/") or any(e.split("=", 1)[1].startswith(m.rstrip("/") + "/") for m in mounts))
        for e in entries)
live = env.get("MTSERVE_MODEL") or cm.get("MTSERVE_MODEL")
check(live is not None and model_list_ok(live), f"k8s: MTSERVE_MODEL '{live}' is an ID=DIR list of image or mounted dirs")
ex = []
for f in ("configmap.yaml", "deployment.yaml"):
    try:
        ex += re.findall(r'^\s*#\s*MTSERVE_MODEL:\s*"([^"]+)"', open(os.path.join(k8s, f)).read(), re.M)
    except OSError:
        pass
check(any(v.count(",") == 1 and model_list_ok(v) for v in ex),
      "k8s: the extra-model example MTSERVE_MODEL has two ID=DIR entries under the image / the volume mount")
svc = docs.get("Service", {})
sp = [p for p in (get(svc, "spec", "ports") or []) if isinstance(p, dict)]
tp = sp[0].get("targetPort") if sp else None
named = {p.get("name"): p.get("containerPort") for p in ports}
check(get(svc, "spec", "type") in (None, "ClusterIP"), "k8s: Service is ClusterIP")
check(bool(sp) and (named.get(tp) if isinstance(tp, str) else tp) == cport and sp[0].get("port") == cport,
      f"k8s: Service port/targetPort match the container port {cport}")
ssel = get(svc, "spec", "selector") or {}
check(bool(ssel) and all(tlabels.get(k) == v for k, v in ssel.items()), "k8s: Service selector matches the pod labels")
hpa = docs.get("HorizontalPodAutoscaler", {})
ref = get(hpa, "spec", "scaleTargetRef") or {}
check(ref.get("kind") == "Deployment" and ref.get("name") == get(dep, "metadata", "name"),
      f"k8s: HPA targets Deployment '{get(dep, 'metadata', 'name')}'")
check(get(hpa, "spec", "minReplicas") == 2 and get(hpa, "spec", "maxReplicas") == 8, "k8s: HPA min 2, max 8")
check(any(get(m, "resource", "name") == "cpu" and get(m, "resource", "target", "type") == "Utilization"
          for m in (get(hpa, "spec", "metrics") or [])), "k8s: HPA scales on CPU utilization")
pdb = docs.get("PodDisruptionBudget", {})
check(get(pdb, "spec", "minAvailable") == 1, "k8s: PDB minAvailable 1")
psel = get(pdb, "spec", "selector", "matchLabels") or {}
check(bool(psel) and all(tlabels.get(k) == v for k, v in psel.items()), "k8s: PDB selector matches the Deployment's pod labels")
EOF
    rc=$?
    while IFS=$'\t' read -r st what; do
        case $st in
            ok)   ok "$what" ;;
            FAIL) bad "$what" ;;
            *)    bad "k8s checker: $st $what" ;;
        esac
    done < "$TMP/k8s.out"
    [ "$rc" -eq 0 ] || bad "k8s checker exited $rc"
fi

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

# ---- clean clone builds portably, with the Dockerfile's own make command ----
# "make -j"$(nproc)" ARCH="$ARCH" BLAS_LIBS="$(pkg-config ...)" build/mtserve": run by the
# shell as the build stage does, with ARG ARCH's default in the environment
make_cmd=$(grep -Eo '^RUN make [^&]*' "$TMP/instr" | head -n1 | sed 's/^RUN //; s/-j"*\$(nproc)"*/-j2/')
BIN=""
if git clone --quiet "$ROOT" "$TMP/src" 2>"$TMP/clone.log"; then
    ok "git clone of the committed tree"
    if [ -n "$make_cmd" ] && (cd "$TMP/src" && export ARCH="$arch_default" && eval "nice -n 10 $make_cmd") \
            >"$TMP/make.log" 2>&1; then
        ok "clean clone: $make_cmd (ARCH=$arch_default)"
        BIN=$TMP/src/build/mtserve
    else
        bad "clean clone: '${make_cmd:-no RUN make line}' (last lines below)"
        tail -n 15 "$TMP/make.log" | sed 's/^/      /'
    fi
    check "no -march=native in the build commands" not grep -q "march=native" "$TMP/make.log"
else
    bad "git clone of the committed tree"
fi

# ---- the runtime root file system, without an engine ----
# docker/rootfs.sh with the Dockerfile's arguments, the runtime stage's COPY lines
# applied, then the ENTRYPOINT run chrooted as the image's USER with the image's ENV.
rootfs=$TMP/rootfs
rootfs_args=$(grep -Eo '^RUN bash docker/rootfs.sh build/mtserve /rootfs.*' "$TMP/instr" | head -n1 \
              | sed 's#^RUN bash docker/rootfs.sh build/mtserve /rootfs##')
if [ -n "$BIN" ] && (cd "$TMP/src" && bash docker/rootfs.sh build/mtserve "$rootfs" $rootfs_args) \
        >"$TMP/rootfs.log" 2>&1; then
    ok "docker/rootfs.sh build/mtserve /rootfs$rootfs_args ($(du -sm "$rootfs" | cut -f1) MB)"
    grep -i '^COPY ' "$TMP/runtime" | grep -v -- '--from' | while read -r _ src dst; do
        mkdir -p "$rootfs/$dst" && cp -r "$TMP/src/${src%/}/." "$rootfs/$dst"
    done
    # the image's size without an engine: this file system, the binary stripped as the
    # build stage strips it, against docker/test.sh's limit (which `make check` never runs)
    strip "$rootfs/usr/local/bin/mtserve"
    est=$(du -sb "$rootfs" | cut -f1)
    check "the image's files $est bytes ($(( est / 1000000 )) MB) < 120 MB, docker/test.sh's limit" [ "$est" -lt 120000000 ]
    for lib in $(ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'); do
        check "rootfs holds $(basename "$lib") and its package's copyright" \
            bash -c '[ -f "$1$2" ] && ls "$1"/usr/share/doc/*/copyright >/dev/null' _ "$rootfs" "$lib"
    done
elif [ -n "$BIN" ]; then
    bad "docker/rootfs.sh (last lines below)"; tail -n 5 "$TMP/rootfs.log" | sed 's/^/      /'
    BIN=""
fi
entry_args=$(echo "$entry" | tr -d '[]",')
# ENV lines: "ENV A=x B=y" -> one assignment a line
image_env=$(grep '^ENV ' "$TMP/runtime" | sed 's/^ENV //' | tr ' ' '\n' | grep '=')
if [ -z "$BIN" ]; then
    skip "the image's root file system: no binary was built"
elif [ "$(id -u)" != 0 ]; then
    skip "the image's root file system: chroot needs root"
else
    run_in_image() {  # [VAR=value...] -- COMMAND...: as the image's USER, env and root
        local envs=()
        while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
        env -i $image_env "${envs[@]}" "$(command -v chroot)" --userspec="$user" "$rootfs" "$@"
    }
    out=$(run_in_image -- $entry_args --help 2>&1); rc=$?
    check "chrooted as $user: '$entry_args --help' exits 0" [ "$rc" -eq 0 ]
    for v in $(grep -o 'MTSERVE_[A-Z_]*=' "$TMP/runtime" | tr -d = | sort -u); do
        check "the image's $v is a known variable (mtserve serve --help)" grep -qw "$v" <<<"$out"
    done
    port=$(( 20000 + RANDOM % 20000 ))
    # a simple command, so that $! is the server itself (bash execs it in the subshell)
    env -i $image_env MTSERVE_PORT=$port "$(command -v chroot)" --userspec="$user" "$rootfs" $entry_args \
        >"$TMP/serve.log" 2>&1 &
    serve_pid=$!
    healthy=1
    for _ in $(seq 1 100); do
        run_in_image MTSERVE_PORT=$port -- $hc >/dev/null 2>&1 && { healthy=0; break; }
        kill -0 "$serve_pid" 2>/dev/null || break
        sleep 0.1
    done
    check "chrooted: the ENTRYPOINT serves and the HEALTHCHECK ('$hc') answers 0" [ "$healthy" -eq 0 ]
    reply=$(curl -s --max-time 30 "http://127.0.0.1:$port/translate" -H 'Content-Type: application/json' \
            -d '{"text":"Hello, how are you?"}')
    check "chrooted: /translate with the image's model answers (${reply:0:80})" \
        grep -q '"translations"' <<<"$reply"
    kill -TERM "$serve_pid" 2>/dev/null; wait "$serve_pid"; rc=$?
    check "chrooted: SIGTERM stops the server with status 0 (got $rc)" [ "$rc" -eq 0 ]
    [ "$healthy" -eq 0 ] || tail -n 5 "$TMP/serve.log" | sed 's/^/      /'
fi

finish
