/* copy_gate.c: the copy guard's word list and the words of a sentence (copy_gate.h). */
#include "translate/copy_gate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "translate/glossary.h"
#include "util/strbuf.h"
#include "util/utf8.h"

struct srv_copy_gate {
    char        *buf;   /* the file's bytes, each word's '\n' made NUL */
    const char **w;     /* [n] the words, sorted by bytes */
    uint8_t     *len;   /* [n] their lengths */
    long         n;
};

static int is_letter(uint32_t c)
{
    if (c < 0x80)
        return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    if (c < 0x100)
        return c == 0xaa || c == 0xb5 || c == 0xba || (c >= 0xc0 && c != 0xd7 && c != 0xf7);
    return !((c >= 0x2000 && c < 0x2c00) || (c >= 0x3000 && c < 0x3040) || c >= 0xe000);
}

static int is_sep(uint32_t c)
{
    return c == ',' || c == ';' || c == '/' || mt_utf8_is_space(c);
}

static int is_edge(uint32_t c)
{
    static const uint32_t edge[] = { '.', ',', ';', ':', '!', '?', '(', ')', '[', ']', '{', '}', '"', '\'',
                                     0xab, 0xbb, 0x201c, 0x201d, 0x2018, 0x2019, 0x2026 };
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        if (c == edge[i])
            return 1;
    return 0;
}

static int is_join(uint32_t c)
{
    return c == '-' || c == '\'' || c == 0x2019;
}

/* The code point at s[i] (of n) and its length. */
static size_t cp_at(const char *s, size_t n, size_t i, uint32_t *c)
{
    return mt_utf8_next(s + i, n - i, c);
}

/* A word's run s[a..b) folded into out (room SRV_COPY_GATE_MAX_WORD + 4): its
 * length, or 0 when longer than SRV_COPY_GATE_MAX_WORD. */
static size_t fold_run(const char *s, size_t a, size_t b, char *out)
{
    size_t k = 0;
    for (size_t i = a; i < b;) {
        uint32_t c;
        i += cp_at(s, b, i, &c);
        k += mt_utf8_encode(srv_glossary_fold(c), out + k);
        if (k > SRV_COPY_GATE_MAX_WORD)
            return 0;
    }
    return k;
}

/* fn on each word of token t[a..b) when the token is plain (copy_gate.h);
 * returns fn's first nonzero result, else 0. */
typedef int (*word_fn)(void *ctx, const char *w, size_t n);

static int token_words(const char *t, size_t a, size_t b, word_fn fn, void *ctx)
{
    uint32_t c;
    size_t l;
    while (a < b && is_edge((l = cp_at(t, b, a, &c), c)))    /* edge punctuation off */
        a += l;
    while (b > a) {
        size_t p = b - 1;
        while (p > a && ((unsigned char)t[p] & 0xc0) == 0x80)
            p--;
        cp_at(t, b, p, &c);
        if (!is_edge(c))
            break;
        b = p;
    }
    if (a == b)
        return 0;
    /* plain: letter runs joined by single joiners, a letter at both ends */
    size_t run = a;
    int prev_letter = 0;
    for (size_t i = a; i < b; i += l) {
        l = cp_at(t, b, i, &c);
        if (is_letter(c)) {
            prev_letter = 1;
            continue;
        }
        uint32_t next = 0;
        if (i + l < b)
            cp_at(t, b, i + l, &next);
        if (!is_join(c) || !prev_letter || !is_letter(next))
            return 0;
        prev_letter = 0;
    }
    char w[SRV_COPY_GATE_MAX_WORD + 4];
    for (size_t i = a; i <= b; i += l) {
        l = 1;
        if (i < b) {
            l = cp_at(t, b, i, &c);
            if (is_letter(c))
                continue;
        }
        size_t k = fold_run(t, run, i, w);
        int r = k ? fn(ctx, w, k) : 0;
        if (r)
            return r;
        run = i + l;
    }
    return 0;
}

static int each_word(const char *s, size_t n, word_fn fn, void *ctx)
{
    size_t start = 0;
    for (size_t i = 0; i <= n;) {
        uint32_t c = ' ';
        size_t l = 1;
        if (i < n)
            l = cp_at(s, n, i, &c);
        if (is_sep(c)) {
            int r = start < i ? token_words(s, start, i, fn, ctx) : 0;
            if (r)
                return r;
            start = i + l;
        }
        i += l;
    }
    return 0;
}

static int word_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int r = memcmp(a, b, an < bn ? an : bn);
    return r ? r : (an > bn) - (an < bn);
}

static int gate_has(const srv_copy_gate *g, const char *w, size_t n)
{
    long lo = 0, hi = g->n;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        int r = word_cmp(g->w[mid], g->len[mid], w, n);
        if (!r)
            return 1;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* One line of the list, s[0..n): a word as copy_gate.h says, or a message. */
static const char *check_word(const char *s, size_t n)
{
    if (n == 0)
        return "an empty line";
    if (n > SRV_COPY_GATE_MAX_WORD)
        return "a word over 64 bytes";
    if (!mt_utf8_valid(s, n))
        return "invalid UTF-8";
    for (size_t i = 0; i < n;) {
        uint32_t c;
        i += cp_at(s, n, i, &c);
        if (!is_letter(c))
            return "a character that is not a letter";
        if (srv_glossary_fold(c) != c)
            return "a letter not case-folded";
    }
    return NULL;
}

mt_status srv_copy_gate_parse(const char *buf, size_t n, srv_copy_gate **out, mt_err *err)
{
    *out = NULL;
    if (n > (size_t)SRV_COPY_GATE_MAX_FILE)
        return mt_err_set(err, MT_ERR_FORMAT, "copy gate: %zu bytes, over the %ld allowed", n,
                          SRV_COPY_GATE_MAX_FILE);
    if (n && buf[n - 1] != '\n')
        return mt_err_set(err, MT_ERR_FORMAT, "copy gate: the last line has no newline");
    mt_status st = MT_OK;
    srv_copy_gate *g = calloc(1, sizeof *g);
    long lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += buf[i] == '\n';
    if (!g || !(g->buf = malloc(n + 1)) || !(g->w = malloc(sizeof *g->w * (size_t)(lines + 1))) ||
        !(g->len = malloc((size_t)lines + 1))) {
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    memcpy(g->buf, buf, n);
    g->buf[n] = 0;
    long line = 0;
    int words = 0;
    for (size_t at = 0; at < n;) {
        char *s = g->buf + at, *nl = memchr(s, '\n', n - at);
        size_t len = (size_t)(nl - s);
        line++;
        at += len + 1;
        *nl = 0;
        if (!words && len && s[0] == '#')
            continue;
        words = 1;
        const char *why = check_word(s, len);
        if (!why && g->n && word_cmp(g->w[g->n - 1], g->len[g->n - 1], s, len) >= 0)
            why = "a word not after the one before it (sorted by bytes, no repeat)";
        if (why) {
            st = mt_err_set(err, MT_ERR_FORMAT, "copy gate line %ld: %s", line, why);
            goto fail;
        }
        g->w[g->n] = s;
        g->len[g->n++] = (uint8_t)len;
    }
    *out = g;
    return MT_OK;
fail:
    srv_copy_gate_free(g);
    return st;
}

mt_status srv_copy_gate_load(const char *path, srv_copy_gate **out, mt_err *err)
{
    mt_sbuf b = { 0 };
    *out = NULL;
    mt_status st = mt_sb_read_file(&b, path, err);
    if (st != MT_OK)
        return st;
    mt_err e = { 0 };
    if ((st = srv_copy_gate_parse(b.p, b.n, out, &e)) != MT_OK)
        mt_err_set(err, st, "%s: %s", path, e.msg);
    free(b.p);
    return st;
}

void srv_copy_gate_free(srv_copy_gate *g)
{
    if (!g)
        return;
    free(g->buf);
    free(g->w);
    free(g->len);
    free(g);
}

long srv_copy_gate_size(const srv_copy_gate *g)
{
    return g->n;
}

static int lookup(void *ctx, const char *w, size_t n)
{
    return gate_has(ctx, w, n);
}

int srv_copy_gate_arms(const srv_copy_gate *g, const char *text, size_t n)
{
    return each_word(text, n, lookup, (void *)g);
}

typedef struct {
    srv_copy_gate_word_cb cb;
    void *ctx;
    int n;
} word_list;

static int list_word(void *ctx, const char *w, size_t n)
{
    word_list *l = ctx;
    l->cb(l->ctx, w, n);
    l->n++;
    return 0;
}

int srv_copy_gate_words(const char *text, size_t n, srv_copy_gate_word_cb cb, void *ctx)
{
    word_list l = { cb, ctx, 0 };
    each_word(text, n, list_word, &l);
    return l.n;
}
