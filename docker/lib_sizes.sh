#!/usr/bin/env bash
# docker/lib_sizes.sh DIR: the shared libraries of a root file system as a Markdown
# table (largest first, then the binary, the models and the total), for docker/README.md.
# DIR is the image's file system: docker/test.sh exports the built image into one
# (`docker export` of a created container) and writes the table to
# build/docker/lib_sizes.md; docker/rootfs.sh's output works too.  The Debian
# package of each library is looked up on this host by its path (dpkg -S).
set -eu
root=$1
[ -d "$root" ] || { echo "lib_sizes.sh: $root is not a directory" >&2; exit 1; }
mb() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1e6 }'; }
echo "| file | bytes | MB | Debian package |"
echo "|---|---:|---:|---|"
total=0
while read -r size path; do
    rel=/${path#"$root"/}
    pkg=$(dpkg -S "$rel" 2>/dev/null | head -n1 | cut -d: -f1 || true)
    [ -n "$pkg" ] || pkg=$(dpkg -S "/usr$rel" 2>/dev/null | head -n1 | cut -d: -f1 || true)
    echo "| \`$rel\` | $size | $(mb "$size") | ${pkg:--} |"
    total=$((total + size))
done < <(find "$root" -type f \( -name '*.so' -o -name '*.so.*' \) -printf '%s %p\n' | sort -rn)
echo "| **all shared libraries** | $total | **$(mb "$total")** | |"
for f in usr/local/bin/mtserve app/models app/web usr/share/doc; do
    [ -e "$root/$f" ] || continue
    b=$(du -sb "$root/$f" | cut -f1)
    echo "| \`/$f\` | $b | $(mb "$b") | |"
done
all=$(du -sb "$root" | cut -f1)
echo "| **the whole file system** (\`du -sb\`) | $all | **$(mb "$all")** | |"
