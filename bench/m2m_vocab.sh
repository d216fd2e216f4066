#!/bin/sh
# m2m_vocab.sh OUT_DIR BENCH_ENGINE MODEL_DIR [LV_IDS] [N] [ROUNDS]: issue 49's target-language
# vocabulary map at the NLLB-200-distilled-600M shape (make bench-m2m-vocab, BENCHMARKS.md
# "Issue 49: NLLB-600M shape, target-language vocabulary map").  Batch-1 greedy, eng_Latn -> fra_Latn,
# the first N lines of tests/fixtures/tokenizer/inputs/dev.en.txt, max_length 48: F32 and INT8 on
# 1 and 2 threads, one process each; in each, ROUNDS rounds of the whole vocabulary then a map of
# LV_IDS ids (bench_engine --lang-vocab-ids: drawn uniformly, fixed seed), alternating.
set -e
out=$1 bench=$2 model=$3 ids=${4:-20000} n=${5:-2} rounds=${6:-2}
mkdir -p "$out"
res="$out/results-$ids.jsonl"
{
    echo "{\"date\": \"$(date -u +%FT%TZ)\", \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"lv_ids\": $ids, \"n\": $n, \"rounds\": $rounds}"
    for w in f32 int8; do
        for t in 1 2; do
            echo "{\"weights\": \"$w\", \"threads\": $t, \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
            "$bench" --model "$model" --input tests/fixtures/tokenizer/inputs/dev.en.txt --n "$n" --max-length 48 \
                --configs 1:1 --threads "$t" --weights "$w" --src-lang eng_Latn --tgt-lang fra_Latn \
                --lang-vocab-ids "$ids" --rounds "$rounds"
        done
    done
    echo "{\"end\": \"$(date -u +%FT%TZ)\", \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
} > "$res"
grep -h summary "$res"
