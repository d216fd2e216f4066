#!/usr/bin/env bash
# docker/rootfs.sh BINARY DIR [PACKAGE...]: the runtime image's root file system, in DIR.
#
# What the image needs to run BINARY and nothing else: the binary in /usr/local/bin,
# every shared library it loads (ldd, the dynamic loader included) at the path the
# loader looks for it, the copyright files of the Debian packages those libraries come
# from (and those of the PACKAGEs linked into BINARY statically), and /etc/passwd and /etc/group naming the unprivileged user mtserve (uid and
# gid 999, pinned: volumes and Kubernetes' runAsUser can rely on it).  No shell, no
# package manager: the image's HEALTHCHECK is `mtserve health`.
#
# Run by docker/Dockerfile's build stage, and by tests/docker_check.sh (which then runs
# the binary chrooted in DIR, without a Docker engine).
set -eu
bin=$1 root=$2
shift 2
[ -x "$bin" ] || { echo "rootfs.sh: $bin is not an executable" >&2; exit 1; }
mkdir -p "$root/usr/local/bin" "$root/etc" "$root/app" "$root/usr/share/doc"
cp "$bin" "$root/usr/local/bin/mtserve"

# "libx.so.1 => /lib/.../libx.so.1 (0x...)" and the loader's "/lib64/ld-linux-x86-64.so.2 (0x...)"
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
[ -n "$libs" ] || { echo "rootfs.sh: ldd found no libraries for $bin" >&2; exit 1; }
# glibc dlopens libgcc_s to unwind a thread on pthread_exit/pthread_cancel (a library may
# call them); ldd cannot see it, and without it the process aborts at that moment
gcc_s=$(ldconfig -p | awk '$1 == "libgcc_s.so.1" && $NF ~ /^\// { print $NF; exit }')
[ -n "$gcc_s" ] || { echo "rootfs.sh: libgcc_s.so.1 not found (ldconfig -p)" >&2; exit 1; }
libs="$libs $gcc_s"
copyright() {  # PACKAGE: its copyright file goes along with its code
    local doc=/usr/share/doc/$1/copyright src other
    if [ ! -f "$doc" ]; then
        # Some packages' doc directory is a symlink to a sibling's of the same source
        # (libgcc-s1 -> gcc-12-base), and slim images drop such symlinks: take the
        # copyright of an installed package built from the same source.
        src=$(dpkg-query -W -f='${source:Package}' "$1" 2>/dev/null)
        for other in $(dpkg-query -W -f='${Package} ${source:Package}\n' 2>/dev/null | awk -v s="$src" '$2 == s { print $1 }'); do
            [ -f "/usr/share/doc/$other/copyright" ] && { doc=/usr/share/doc/$other/copyright; break; }
        done
    fi
    [ -f "$doc" ] || { echo "rootfs.sh: no copyright file for $1" >&2; exit 1; }
    mkdir -p "$root/usr/share/doc/$1"
    cp "$doc" "$root/usr/share/doc/$1/"
}
for lib in $libs; do
    cp --parents -L "$lib" "$root/"
    # the owning package, looked up by the path dpkg recorded (/lib or /usr/lib: merged /usr)
    pkg=""
    for f in "$lib" "$(readlink -f "$lib")" "/usr$lib" "${lib#/usr}"; do
        pkg=$(dpkg -S "$f" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$pkg" ] && break
    done
    [ -n "$pkg" ] || { echo "rootfs.sh: no Debian package owns $lib" >&2; exit 1; }
    copyright "$pkg"
done
for pkg in "$@"; do copyright "$pkg"; done
# libcurl checks the Hugging Face Hub's TLS certificate (`mtserve pull`, --model org/name)
# against Debian's CA bundle, at the path Debian's libcurl was built to read
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    mkdir -p "$root/etc/ssl/certs"
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
    copyright ca-certificates
fi

echo 'mtserve:x:999:999:mtserve:/app:/nonexistent' > "$root/etc/passwd"
echo 'mtserve:x:999:' > "$root/etc/group"
