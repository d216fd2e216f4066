/* langvocab_fmt.c: the target-language vocabulary map's bytes (the format:
 * langvocab_fmt.h). */
#include "langvocab_fmt.h"

#include <string.h>

/* The line starting at buf + at: its end (without LF, nor a CR before it). */
static const char *line_end(const char *buf, size_t n, size_t at, const char **next)
{
    const char *p = buf + at, *nl = memchr(p, '\n', n - at), *end = nl ? nl : buf + n;
    *next = nl ? nl + 1 : buf + n;
    if (end > p && end[-1] == '\r')
        end--;
    return end;
}

/* One language line [p, end): its code, then its pieces. */
static mt_status language_line(const char *p, const char *end, const mt_langvocab_cb *cb, long line, size_t at,
                               mt_err *err)
{
    const char *tab = memchr(p, '\t', (size_t)(end - p));
    if (!tab)
        return mt_err_set(err, MT_ERR_FORMAT, "language vocabulary map: line %ld (byte %zu): no TAB after the "
                          "language code", line, at);
    if (tab == p || memchr(p, ' ', (size_t)(tab - p)))
        return mt_err_set(err, MT_ERR_FORMAT, "language vocabulary map: line %ld (byte %zu): the language code "
                          "before the TAB is empty or holds a space", line, at);
    if (memchr(tab + 1, '\t', (size_t)(end - tab - 1)))
        return mt_err_set(err, MT_ERR_FORMAT, "language vocabulary map: line %ld (byte %zu): a second TAB (pieces "
                          "are separated by spaces)", line, at);
    mt_status st = cb->lang(cb->ctx, p, (size_t)(tab - p), line, at, err);
    int pieces = 0;
    for (const char *q = tab + 1; st == MT_OK && q < end;) {
        while (q < end && *q == ' ')
            q++;
        const char *s = q;
        while (q < end && *q != ' ')
            q++;
        if (q > s) {
            pieces++;
            st = cb->piece(cb->ctx, s, (size_t)(q - s), line, at, err);
        }
    }
    if (st == MT_OK && !pieces)
        return mt_err_set(err, MT_ERR_FORMAT, "language vocabulary map: line %ld (byte %zu): '%.*s' lists no piece",
                          line, at, (int)(tab - p > 64 ? 64 : tab - p), p);
    return st;
}

mt_status mt_langvocab_parse(const char *buf, size_t n, const mt_langvocab_cb *cb, mt_err *err)
{
    const char *nul = memchr(buf, 0, n);
    if (nul)
        return mt_err_set(err, MT_ERR_FORMAT, "language vocabulary map: byte %zu: a NUL byte (a text file is "
                          "expected)", (size_t)(nul - buf));
    const char *next, *end = line_end(buf, n, 0, &next);
    size_t ml = strlen(MT_LANGVOCAB_MAGIC);
    if ((size_t)(end - buf) != ml || memcmp(buf, MT_LANGVOCAB_MAGIC, ml) != 0)
        return mt_err_set(err, MT_ERR_FORMAT, "language vocabulary map: line 1: the first line must be \"%s\"",
                          MT_LANGVOCAB_MAGIC);
    long line = 1;
    for (size_t at = (size_t)(next - buf); at < n; at = (size_t)(next - buf)) {
        const char *p = buf + at;
        line++;
        end = line_end(buf, n, at, &next);
        int blank = 1;
        for (const char *q = p; q < end && blank; q++)
            blank = *q == ' ' || *q == '\t';
        if (blank || *p == '#')
            continue;
        mt_status st = language_line(p, end, cb, line, at, err);
        if (st != MT_OK)
            return st;
    }
    return MT_OK;
}
