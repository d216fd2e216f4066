/* alloc.c: the large, long-lived buffers.
 *
 * Packed weights (mt_huge_alloc) are read in full at every decode step: with
 * 4 KB pages that is thousands of TLB misses per step.  So they are mapped
 * 2 MB-aligned and marked MADV_HUGEPAGE (this machine's THP mode is
 * "madvise": nothing else gets huge pages).  Session arenas (mt_pages_alloc,
 * below) keep 4 KB pages.  Anonymous mappings come zeroed and are paged in
 * only as touched, as calloc's large blocks are. */
#include "kernels.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* ---- page mappings: session arenas -------------------------------------------
 * Plain 4 KB pages (a session's touched parts are scattered over its caches:
 * huge pages would make each one cost megabytes), mapped directly rather
 * than calloc'd so the range is page-aligned: mt_pages_release can then give
 * back every page of it, and the pages read as zeros again, as when mapped. */

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }   /* glibc: no system call */

static size_t page_round(size_t n) { return (n + page_size() - 1) / page_size() * page_size(); }

void *mt_pages_alloc(size_t bytes)
{
    void *p = mmap(NULL, page_round(bytes ? bytes : 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void mt_pages_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, page_round(bytes ? bytes : 1));
}

int mt_pages_release(void *p, size_t bytes)
{
    return madvise(p, page_round(bytes ? bytes : 1), MADV_DONTNEED) == 0 ? 0 : -1;
}

size_t mt_pages_resident(const void *p, size_t bytes)
{
    /* mincore in slices of 4096 pages: a fixed vector on the stack, whatever the size */
    unsigned char vec[4096];
    size_t pg = page_size(), len = page_round(bytes ? bytes : 1), n = 0;
    for (size_t at = 0; at < len; at += sizeof vec * pg) {
        size_t part = len - at < sizeof vec * pg ? len - at : sizeof vec * pg;
        if (mincore((uint8_t *)p + at, part, vec) != 0)
            return len;                 /* unknown: say all of it, so a caller trims */
        for (size_t i = 0; i < part / pg; i++)
            n += vec[i] & 1;
    }
    return n * pg;
}
