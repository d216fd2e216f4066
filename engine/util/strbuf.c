/* strbuf.c: the growable byte string (strbuf.h). */
#include "strbuf.h"
#include "check.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mt_sb_reserve(mt_sbuf *b, size_t extra)
{
    if (extra > SIZE_MAX / 2 - b->n)
        return -1;
    return mt_grow(&b->p, &b->cap, b->n + extra, 1, 64);
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

mt_status mt_sb_read_file(mt_sbuf *b, const char *path, mt_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return mt_err_set(err, MT_ERR_IO, "%s: %s", path, strerror(errno));
    char buf[1 << 16];
    size_t k;
    mt_status st = MT_OK;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        if (mt_sb_add(b, buf, k)) {
            st = mt_err_set(err, MT_ERR_NOMEM, "%s: out of memory reading the file", path);
            break;
        }
    if (st == MT_OK && ferror(f))
        st = mt_err_set(err, MT_ERR_IO, "%s: read error", path);
    fclose(f);
    if (st != MT_OK) {
        free(b->p);
        *b = (mt_sbuf){ 0 };
    }
    return st;
}
