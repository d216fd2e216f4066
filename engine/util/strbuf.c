/* strbuf.c: the growable byte string (strbuf.h). */
#include "strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int mt_sb_reserve(mt_sbuf *b, size_t extra)
{
    if (extra > SIZE_MAX / 2 - b->n)
        return -1;
    if (b->n + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int mt_sb_add(mt_sbuf *b, const void *s, size_t n)
{
    if (mt_sb_reserve(b, n + 1))
        return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}
