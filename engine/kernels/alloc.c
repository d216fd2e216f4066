/* alloc.c: the large, long-lived buffers (packed weights, session arenas).
 *
 * They are read in full at every decode step (weights) or scattered over by
 * every row's attention (KV caches): with 4 KB pages that is thousands of TLB
 * misses per step.  So they are mapped 2 MB-aligned and marked
 * MADV_HUGEPAGE (this machine's THP mode is "madvise": nothing else gets huge
 * pages).  Anonymous mappings come zeroed and are paged in only as touched,
 * as calloc's large blocks are. */
#include "kernels.h"

#include <stdint.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

static size_t round_up(size_t n) { return (n + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE; }

void *mt_huge_alloc(size_t bytes)
{
    size_t len = round_up(bytes ? bytes : 1), span = len + HUGE_PAGE;
    uint8_t *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
    if (p > raw)                                        /* trim to the aligned window */
        munmap(raw, (size_t)(p - raw));
    if (raw + span > p + len)
        munmap(p + len, (size_t)(raw + span - (p + len)));
    madvise(p, len, MADV_HUGEPAGE);                     /* advice: failure only costs speed */
    return p;
}

void mt_huge_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, round_up(bytes ? bytes : 1));
}
