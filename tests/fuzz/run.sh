#!/bin/sh
# tests/fuzz/run.sh TARGET...: what `make fuzz` runs after building (see fuzz.mk).
# For each target: replay tests/fuzz/crashers/<target>/* (each must pass now),
# then fuzz for $FUZZ_SECONDS from the committed seeds plus the corpus evolved by
# earlier runs.  A fuzzer is one thread: $FUZZ_JOBS of them (default: the cores)
# run at once, each for its own $FUZZ_SECONDS.  One report a target, in the order
# given, then `fuzz: N passed, N failed`; exits 1 when any target failed.
#   run.sh --one TARGET   one target (what the parallel runs call): its report in
#                         $B/logs/TARGET.report, "ok" or "failed" in TARGET.status
B=${FUZZ_B:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-60}
OPTS="-rss_limit_mb=2048 -timeout=10"
mkdir -p "$B/logs"
if [ "$1" != "--one" ]; then
    jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
    printf '%s\n' "$@" | xargs -P "$jobs" -n 1 sh "$0" --one
    pass=0
    fail=0
    for t in "$@"; do
        cat "$B/logs/$t.report"
        if [ "$(cat "$B/logs/$t.status" 2>/dev/null)" = ok ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    done
    echo "fuzz: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
fi
t=$2
report="$B/logs/$t.report"
: > "$report"
echo failed > "$B/logs/$t.status"
{
    bin="$B/fuzz_$t"
    log="$B/logs/$t.log"
    : > "$log"
    mkdir -p "$B/corpus/$t" "$B/crashes/$t"
    seeds=tests/fuzz/corpus/$t
    [ -d "$seeds" ] || seeds=
    dict=
    [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"

    # 1. regressions: every committed crasher runs once and must not fail
    crashers=$(find "tests/fuzz/crashers/$t" -type f ! -name '.*' 2>/dev/null | sort)
    if [ -n "$crashers" ]; then
        n=$(echo "$crashers" | wc -l)
        # shellcheck disable=SC2086
        if ! "$bin" $OPTS $crashers >> "$log" 2>&1; then
            echo "fuzz $t: FAILED replaying tests/fuzz/crashers/$t ($n inputs); see $log"
            exit 0
        fi
        replayed=", $n crashers replayed"
    else
        replayed=
    fi

    # 2. fuzzing; a crash, leak, timeout or OOM exits non-zero and leaves the input in $B/crashes/$t/
    # shellcheck disable=SC2086
    "$bin" $OPTS $dict -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
        -artifact_prefix="$B/crashes/$t/" "$B/corpus/$t" $seeds >> "$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    corp=$(ls "$B/corpus/$t" | wc -l)
    stats="${execs:-?} execs, ${rate:-?} exec/s, cov ${cov:-?}, ft ${ft:-?}, corpus $corp$replayed"
    if [ "$rc" -eq 0 ]; then
        echo "fuzz $t: ok ($stats)"
        echo ok > "$B/logs/$t.status"
    else
        art=$(ls -t "$B/crashes/$t" 2>/dev/null | head -n 1)
        echo "fuzz $t: FAILED, exit $rc ($stats); input: $B/crashes/$t/$art; log: $log"
        grep -m 3 -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*invariant failed)' "$log" | sed 's/^/    /'
        # what the target printed of the difference, and the input itself when small, so
        # that a CI log alone is enough to reproduce (base64 -d > crash; $bin crash)
        grep -m 1 -A 6 'differs' "$log" | cut -c 1-300 | sed 's/^/    /'
        if [ -n "$art" ] && [ "$(wc -c < "$B/crashes/$t/$art")" -le 4096 ]; then
            echo "    input (base64): $(base64 -w 0 "$B/crashes/$t/$art")"
        fi
    fi
} > "$report"
