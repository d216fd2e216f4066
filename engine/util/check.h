/* check.h: invariants (MT_ASSERT) and growing arrays (MT_GROW).
 *
 * MT_ASSERT(cond, err) states something that cannot be false unless the code
 * has a bug.  A broken one is never recovered silently:
 *   - in debug, sanitizer, valgrind and fuzz builds (compiled with
 *     -DMT_ASSERT_ABORT) it prints "file:line: assertion failed: cond" and
 *     aborts, so the bug stops where it is;
 *   - in a release build it prints the same line, counts it
 *     (mt_assert_failures, exported by /metrics) and makes the enclosing
 *     function return MT_ERR_INTERNAL with that text in err: the request
 *     that met it fails with HTTP 500, every other one goes on.
 * MT_ASSERT is for functions that return mt_status; MT_ASSERT_OR(cond, stmt)
 * runs stmt (a return of the function's own error value) instead. */
#ifndef MT_CHECK_H
#define MT_CHECK_H

#include <stddef.h>

#include "status.h"

#ifdef MT_ASSERT_ABORT
#define MT_ASSERT_ABORTS 1
#else
#define MT_ASSERT_ABORTS 0
#endif

/* Reports a broken invariant (aborts when aborts != 0); returns MT_ERR_INTERNAL,
 * with "internal error at file:line: expr" in err (may be NULL). */
mt_status mt_assert_fail(int aborts, const char *file, int line, const char *expr, mt_err *err);
/* Broken invariants met by this process so far (release builds). */
unsigned long mt_assert_failures(void);

#define MT_ASSERT(cond, err)                                                                     \
    do {                                                                                         \
        if (__builtin_expect(!(cond), 0))                                                        \
            return mt_assert_fail(MT_ASSERT_ABORTS, __FILE__, __LINE__, #cond, (err));           \
    } while (0)

#define MT_ASSERT_OR(cond, ...)                                                                  \
    do {                                                                                         \
        if (__builtin_expect(!(cond), 0)) {                                                      \
            mt_assert_fail(MT_ASSERT_ABORTS, __FILE__, __LINE__, #cond, NULL);                   \
            __VA_ARGS__;                                                                         \
        }                                                                                        \
    } while (0)

/* Room for `need` elements of es bytes in *pp, whose allocation holds *cap:
 * the capacity doubles from `min` until it holds need (one realloc).  0, or -1
 * when the bytes would overflow size_t or realloc fails; *pp and *cap are then
 * unchanged, so the caller's cleanup frees what it had.  pp is the address of
 * the caller's typed pointer (T **), passed as void *. */
int mt_grow(void *pp, size_t *cap, size_t need, size_t es, size_t min);
/* MT_GROW(p, cap, need): mt_grow for a typed pointer p and its size_t cap. */
#define MT_GROW(p, cap, need) mt_grow(&(p), &(cap), (need), sizeof *(p), 16)
/* The capacity mt_grow would choose (0 on overflow): for several arrays that share one cap. */
size_t mt_grow_cap(size_t cap, size_t need, size_t es, size_t min);

#endif
