/* alloc_count.h: test-only malloc interposition, for the tests that prove a
 * decode step allocates nothing (test_engine.c, test_decode.c).  Include it in
 * one file of a test binary: it defines malloc & co. for the whole process.
 *
 * The definitions forward to glibc's __libc_* entry points, counting calls
 * while `counting` is set.  Every allocation in the process goes through here
 * (engine, jansson, OpenBLAS), so the count is honest.  Disabled under
 * AddressSanitizer and ThreadSanitizer, which own malloc (TSan calls it during
 * its own start-up, before our counters exist): HAVE_ALLOC_COUNTER is 0 there. */
#ifndef MT_TEST_ALLOC_COUNT_H
#define MT_TEST_ALLOC_COUNT_H

#include <errno.h>
#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HAVE_ALLOC_COUNTER 0
#else
#define HAVE_ALLOC_COUNTER 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void  __libc_free(void *);
static _Atomic long n_allocs;
static _Atomic int  counting;
void *malloc(size_t n) { if (counting) n_allocs++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { if (counting) n_allocs++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { if (counting) n_allocs++; return __libc_realloc(p, n); }
void  free(void *p) { __libc_free(p); }
void *aligned_alloc(size_t al, size_t n) { if (counting) n_allocs++; return __libc_memalign(al, n); }
void *memalign(size_t al, size_t n) { if (counting) n_allocs++; return __libc_memalign(al, n); }
int posix_memalign(void **p, size_t al, size_t n)
{
    if (counting)
        n_allocs++;
    *p = __libc_memalign(al, n);
    return *p ? 0 : ENOMEM;
}
#endif

#endif
