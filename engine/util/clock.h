/* clock.h: the one monotonic clock of the engine and the server.
 *
 * mt_now_s: seconds since an arbitrary point, never going back (request
 * timings, deadlines, queue timeouts).  mt_abstime_after_ms: the absolute
 * CLOCK_MONOTONIC time `ms` from now, for pthread_cond_timedwait on a
 * condition variable whose clock is CLOCK_MONOTONIC.
 */
#ifndef MT_CLOCK_H
#define MT_CLOCK_H

#include <time.h>

static inline double mt_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline struct timespec mt_abstime_after_ms(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

#endif
