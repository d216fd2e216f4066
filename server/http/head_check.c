/* head_check: the raw request head's framing (head_check.h). */
#include "head_check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The end of the head: the index just past CRLF CRLF, or 0. */
static size_t head_end(const char *buf, size_t n)
{
    for (size_t i = 3; i < n; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
            return i + 1;
    return 0;
}

static int is_control(unsigned char c)
{
    return (c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f;
}

/* s[0..n) trimmed of spaces and tabs. */
static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t'))
        (*s)++, (*n)--;
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

static void copy_cut(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
}

static size_t fail(srv_head_verdict *v, size_t len, int status, const char *msg)
{
    v->status = status;
    snprintf(v->msg, sizeof v->msg, "%s", msg);
    return len;
}

/* The first chunk-size line at p[0..n) (the bytes after the head): 0 fine or
 * not all there yet, else a status with v->msg. */
static int chunk_size(const char *p, size_t n, size_t max_body, srv_head_verdict *v)
{
    size_t i = 0, digits = 0;
    uint64_t size = 0;
    while (i < n) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                               : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            break;
        if (++digits > 16) {
            snprintf(v->msg, sizeof v->msg, "a chunk size of more than 16 hex digits");
            return 400;
        }
        size = size << 4 | (uint64_t)d;
        i++;
    }
    if (i == n)
        return 0;                   /* the line goes on past what has come */
    if (digits == 0) {
        snprintf(v->msg, sizeof v->msg, "a chunk size that is not a hex number");
        return 400;
    }
    if (size > max_body) {
        snprintf(v->msg, sizeof v->msg, "a chunk of %llu bytes: over the body limit of %zu bytes",
                 (unsigned long long)size, max_body);
        return 413;
    }
    return 0;
}

size_t srv_head_check(const char *buf, size_t n, srv_head_limit_fn limit, void *ctx, srv_head_verdict *v)
{
    memset(v, 0, sizeof *v);
    size_t len = head_end(buf, n);
    if (!len)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (is_control((unsigned char)buf[i]))
            return fail(v, len, 400, i < (size_t)((const char *)memchr(buf, '\n', len) - buf)
                                         ? "the request line has a control character"
                                         : "a header has a control character (only HTAB is allowed)");
    /* the request line: METHOD SP target SP version */
    const char *eol = memchr(buf, '\n', len);
    const char *sp = memchr(buf, ' ', (size_t)(eol - buf));
    if (sp) {
        const char *t = sp + 1;
        size_t tn = 0;
        while (t + tn < eol && t[tn] != ' ' && t[tn] != '?' && t[tn] != '\r')
            tn++;
        copy_cut(v->path, sizeof v->path, t, tn);
    }
    size_t max_body = limit ? limit(ctx, v->path) : SIZE_MAX;
    int chunked = 0, has_length = 0;
    for (const char *line = eol + 1; line < buf + len;) {
        const char *end = memchr(line, '\n', (size_t)(buf + len - line));
        size_t ln = (size_t)(end - line);
        if (ln && line[ln - 1] == '\r')
            ln--;
        const char *colon = memchr(line, ':', ln);
        if (colon) {
            size_t kn = (size_t)(colon - line);
            const char *val = colon + 1;
            size_t vn = ln - kn - 1;
            trim(&val, &vn);
            if (kn == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
                has_length = 1;
                size_t d = 0;
                while (d < vn && val[d] >= '0' && val[d] <= '9')
                    d++;
                if (d == 0 || d != vn)
                    return fail(v, len, 400, "Content-Length is not a number");
                /* more digits than any length libmicrohttpd can hold: over every limit.
                 * (A length it can hold but over the limit is http.c's: it reads the
                 * body's first bytes for the error's shape before answering.) */
                if (d > 19) {
                    snprintf(v->msg, sizeof v->msg, "the request body is over the limit of %zu bytes", max_body);
                    v->status = 413;
                    return len;
                }
            } else if (kn == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
                chunked = vn == 7 && strncasecmp(val, "chunked", 7) == 0;
            } else if (kn == 12 && strncasecmp(line, "Content-Type", 12) == 0) {
                copy_cut(v->content_type, sizeof v->content_type, val, vn);
            }
        }
        line = end + 1;
    }
    if (chunked && !has_length) {
        int st = chunk_size(buf + len, n - len, max_body, v);
        if (st)
            v->status = st;
    }
    return len;
}
