#!/bin/sh
# detect_eval.sh: build bench/detect_eval.c against the server library and run it
# from the repository root (the language-identification measurement of issue 27).
#
#   bash bench/detect_eval.sh              # objects in build-det/ (B=... to change)
#
# Needs libcld2-dev (the server's own dependency) and libexttextcat-dev (only this
# benchmark: the second candidate it compares).  Reads the shipped models
# (models/en-fr, models/fr-en: their tokenizers, and their weights for the
# decoder rows) and the OPUS-MT tokenizer fixtures.  Prints Markdown tables.
set -e
cd "$(dirname "$0")/.."
B=${B:-build-det}
make --no-print-directory B="$B" "$B/libmtserver.a" "$B/libmt.a" >/dev/null
mkdir -p "$B/bench"
PKGS="libmicrohttpd jansson openblas gumbo"
cc -O2 -march=native -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iengine -Iserver \
   $(pkg-config --cflags libexttextcat $PKGS) bench/detect_eval.c "$B/libmtserver.a" "$B/libmt.a" \
   -o "$B/bench/detect_eval" $(pkg-config --libs libexttextcat $PKGS) -lcld2 -lstdc++ -lm -pthread
"$B/bench/detect_eval" "one thread; $(date +%F)"
# CLD2 allocates its scoring buffers (about 160 KB) on every call; in a fresh
# process glibc gives that memory back to the kernel after each call (the heap top
# is trimmed), so each call pays brk and page faults: ~250 us of ~260.  A long-lived
# server whose heap stays grown does not pay it; this second run shows that case.
echo
echo "again, with glibc's heap trimming off (GLIBC_TUNABLES=glibc.malloc.trim_threshold=64 MiB):"
GLIBC_TUNABLES=glibc.malloc.trim_threshold=67108864 "$B/bench/detect_eval" "heap kept" --rows
