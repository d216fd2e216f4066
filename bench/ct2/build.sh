#!/bin/bash
# bench/ct2/build.sh: CTranslate2 v4.8.1 (oneDNN 3.1.1 backend) for CPU, outside
# the repository, plus bench/ct2/ct2_bench against it.  Used by `make bench-ct2`.
#
#   MIRROR=/work/.mirror WORK=/work/ct2 nice -n 19 bash bench/ct2/build.sh > /work/ct2/build.log 2>&1 &
#
# MIRROR holds bare git mirrors named OWNER+NAME/repo; WORK is scratch (~3 GB).
# Pinned commits (the public repositories; with network the same as
# `git clone --recursive --branch v4.8.1 https://github.com/OpenNMT/CTranslate2`
# and `git clone --branch v3.1.1 https://github.com/oneapi-src/oneDNN`):
#   OpenNMT/CTranslate2     0d8bcd362ac75ef860ef161d6f0efad0ae439ff0  v4.8.1
#   gabime/spdlog           76fb40d95455f249bd70824ecfcae7a8f0930fa3  v1.10.0 (third_party/spdlog)
#   google/cpu_features     8a494eb1e158ec2050e5f699a504fbc9b896a43b  v0.7.0  (third_party/cpu_features)
#   jarro2783/cxxopts       c74846a891b3cc3bfa992d588b1295f528d43039  v3.0.0  (third_party/cxxopts)
#   oneapi-src/oneDNN       64f6bcbcbab628e96f33a62c3e975f8535a7bde4  v3.1.1
# oneDNN: static, the options of CTranslate2's own release build
# (python/tools/prepare_build_environment_linux.sh).  CTranslate2:
# -DWITH_DNNL=ON -DWITH_MKL=OFF -DWITH_OPENBLAS=ON -DBUILD_CLI=ON
# -DOPENMP_RUNTIME=COMP, Release, CPU dispatch on (its default).  With DNNL
# compiled in, its float32 and int8 GEMMs go to oneDNN.
# Every step is skipped when its output exists, so a rerun only rebuilds the driver.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
MIRROR=${MIRROR:?MIRROR: folder of the OWNER+NAME/repo bare mirrors}
WORK=${WORK:?WORK: scratch folder for the build}
JOBS=${JOBS:-2}
mkdir -p "$WORK"; cd "$WORK"
t0=$(date +%s)
say() { echo "[$(date -u +%H:%M:%S) +$(( $(date +%s) - t0 ))s] $*"; }

for p in cmake g++ libopenblas-dev; do
    dpkg -s "$p" >/dev/null 2>&1 || { echo "missing Debian package $p (apt-get install -y cmake g++ libopenblas-dev)"; exit 1; }
done

src() {  # OWNER+NAME commit dest
    [ -d "$3" ] && [ -n "$(ls -A "$3" 2>/dev/null)" ] && return 0
    mkdir -p "$3"
    git --git-dir="$MIRROR/$1/repo" archive --format=tar "$2" | tar -x -C "$3"
}
say "sources"
src OpenNMT+CTranslate2 0d8bcd362ac75ef860ef161d6f0efad0ae439ff0 src/CTranslate2
src gabime+spdlog       76fb40d95455f249bd70824ecfcae7a8f0930fa3 src/CTranslate2/third_party/spdlog
src google+cpu_features 8a494eb1e158ec2050e5f699a504fbc9b896a43b src/CTranslate2/third_party/cpu_features
src jarro2783+cxxopts   c74846a891b3cc3bfa992d588b1295f528d43039 src/CTranslate2/third_party/cxxopts
src oneapi-src+oneDNN   64f6bcbcbab628e96f33a62c3e975f8535a7bde4 src/oneDNN

if [ ! -f dnnl/lib/libdnnl.a ]; then
    say "oneDNN 3.1.1"
    cmake -S src/oneDNN -B obj/oneDNN -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$WORK/dnnl" \
        -DCMAKE_INSTALL_LIBDIR=lib -DONEDNN_LIBRARY_TYPE=STATIC -DONEDNN_BUILD_EXAMPLES=OFF \
        -DONEDNN_BUILD_TESTS=OFF -DONEDNN_ENABLE_WORKLOAD=INFERENCE \
        -DONEDNN_ENABLE_PRIMITIVE="CONVOLUTION;REORDER" -DONEDNN_BUILD_GRAPH=OFF
    cmake --build obj/oneDNN -j "$JOBS" --target install
fi
if [ ! -f ct2/lib/libctranslate2.so ]; then
    say "CTranslate2 4.8.1"
    cmake -S src/CTranslate2 -B obj/CTranslate2 -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$WORK/ct2" \
        -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_PREFIX_PATH="$WORK/dnnl" \
        -DWITH_DNNL=ON -DWITH_MKL=OFF -DWITH_OPENBLAS=ON -DBUILD_CLI=ON -DOPENMP_RUNTIME=COMP
    cmake --build obj/CTranslate2 -j "$JOBS" --target install
fi
if [ -f "$HERE/ct2_bench.cc" ]; then
    say "ct2_bench"
    g++ -O2 -std=c++17 -Wall "$HERE/ct2_bench.cc" -I"$WORK/ct2/include" -L"$WORK/ct2/lib" \
        -lctranslate2 -Wl,-rpath,"$WORK/ct2/lib" -o "$WORK/ct2/bin/ct2_bench"
fi
say "done: $WORK/ct2"
