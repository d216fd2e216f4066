#include "check.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one process-wide figure of this file: a count for /metrics, never read to decide anything. */
static atomic_ulong n_failed;

mt_status mt_assert_fail(int aborts, const char *file, int line, const char *expr, mt_err *err)
{
    fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, expr);
    if (aborts)
        abort();
    atomic_fetch_add_explicit(&n_failed, 1, memory_order_relaxed);
    return mt_err_set(err, MT_ERR_INTERNAL, "internal error at %s:%d: %s", file, line, expr);
}

unsigned long mt_assert_failures(void)
{
    return atomic_load_explicit(&n_failed, memory_order_relaxed);
}

size_t mt_grow_cap(size_t cap, size_t need, size_t es, size_t min)
{
    size_t c = cap ? cap : (min ? min : 1);
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return 0;
        c *= 2;
    }
    return es && c > SIZE_MAX / es ? 0 : c;
}

int mt_grow(void *pp, size_t *cap, size_t need, size_t es, size_t min)
{
    if (need <= *cap)
        return 0;
    size_t c = mt_grow_cap(*cap, need, es, min);
    if (!c)
        return -1;
    void *old;
    memcpy(&old, pp, sizeof old);
    void *p = realloc(old, c * es);
    if (!p)
        return -1;
    memcpy(pp, &p, sizeof p);
    *cap = c;
    return 0;
}
