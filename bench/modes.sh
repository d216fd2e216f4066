#!/bin/bash
# bench/modes.sh: on en-fr, the server at 1 and 32 clients in each weights / K-V cache mode (batching
# on, twice each), the engine at batch 1 and 32 greedy with each K/V cache, and batch 1 greedy as
# a whole process (load included) against the PyTorch reference (bench/torch_translate.py), 3 runs.
# Prints one line per figure; BENCHMARKS.md quotes a run.  Needs build/ (make all, and
# build/bench/bench_engine build/bench/loadgen).
cd "$(dirname "$0")/.."
mkdir -p build/bench
L="./build/bench/loadgen --input tests/fixtures/tokenizer/inputs/test.en.txt --n 64 --beam 1 --max-length 256 --seconds 60"
echo "## date $(date -u '+%F %H:%M') load $(cut -d' ' -f1-3 /proc/loadavg) commit $(git rev-parse --short HEAD)"
for mode in "--weights f32" "--weights f32 --kv-cache f16" "--weights int8" "--weights int8 --kv-cache f16" "--weights f16 --kv-cache f16"; do
  PORT=$((20000 + RANDOM % 10000))
  ./build/mtserve serve --model models/en-fr --host 127.0.0.1 --port $PORT --no-access-log --web "" --queue 1024 --batching on $mode >build/bench/modes-server-$PORT.log 2>&1 &
  P=$!
  for i in $(seq 100); do curl -sf http://127.0.0.1:$PORT/health >/dev/null && break; sleep 0.1; done
  U="--url http://127.0.0.1:$PORT/translate"
  $L $U --clients 4 --requests 64 >/dev/null
  for rep in 1 2; do
    for c in 1 32; do echo "server [$mode] rep $rep $($L $U --clients $c --requests $((c<16?256:16*c)))"; done
  done
  kill -TERM $P; wait $P
done
for w in f32 int8; do for kv in f32 f16; do
  for cfg in 1:1 32:1; do
    echo "engine [$w kv $kv] $(./build/bench/bench_engine --model models/en-fr --input tests/fixtures/tokenizer/inputs/test.en.txt --n 256 --configs $cfg --weights $w --kv-cache $kv 2>/dev/null | grep '"engine"')"
  done
done; done
head -100 tests/fixtures/tokenizer/inputs/test.en.txt > build/bench/modes-whole-in.txt
for rep in 1 2 3; do
  t0=$(date +%s.%N); ./build/mtserve translate --model models/en-fr --beam 1 --threads 2 < build/bench/modes-whole-in.txt > build/bench/modes-whole-c.txt; t1=$(date +%s.%N)
  /usr/bin/python3 bench/torch_translate.py --model models/en-fr --threads 2 < build/bench/modes-whole-in.txt > build/bench/modes-whole-t.txt; t2=$(date +%s.%N)
  echo "whole rep $rep: C $(echo "$t1 - $t0" | bc) s, torch $(echo "$t2 - $t1" | bc) s, equal lines $(paste -d'\t' build/bench/modes-whole-c.txt build/bench/modes-whole-t.txt | awk -F'\t' '$1==$2' | wc -l)"
done
echo "## end $(date -u '+%H:%M') load $(cut -d' ' -f1-3 /proc/loadavg)"
