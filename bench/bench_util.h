/* bench_util: what every benchmark program under bench/ needs (test-side
 * code: never linked into mtserve). */
#ifndef MT_BENCH_UTIL_H
#define MT_BENCH_UTIL_H

#include <time.h>

/* Seconds on the monotonic clock. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
