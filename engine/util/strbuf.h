/* strbuf: a growable byte string, the tokenizer files' output buffer
 * (spm.c, spm_norm.c, tokenizer.c) and the server's /metrics text (server/common/metrics.c).
 *
 * p[0..n) is the content, cap the allocation; a zeroed mt_sbuf is empty.
 * The owner frees p.  mt_sb_add keeps p NUL-terminated. */
#ifndef MT_STRBUF_H
#define MT_STRBUF_H

#include <stddef.h>

#include "status.h"

typedef struct {
    char  *p;
    size_t n, cap;
} mt_sbuf;

/* Room for extra more bytes (capacity doubles from 64): 0, or -1 on overflow or no memory. */
int mt_sb_reserve(mt_sbuf *b, size_t extra);
/* Append s[0..n) and a NUL (not counted in b->n): 0, or -1. */
int mt_sb_add(mt_sbuf *b, const void *s, size_t n);
/* A whole file into b (NUL-terminated, the NUL not counted): MT_OK, or
 * MT_ERR_IO / MT_ERR_NOMEM naming path (b is then freed and zeroed). */
mt_status mt_sb_read_file(mt_sbuf *b, const char *path, mt_err *err);

#endif
