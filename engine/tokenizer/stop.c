/* stop.c: stop strings watched in a decoder-only model's output, id by id
 * (tokenizer.h, "Stop strings").
 *
 * The text the server replies with is mt_hf_tokenizer_decode of the
 * generated ids, special tokens skipped.  Decoding it again after every
 * step would allocate and cost O(n) a step; instead each id's own bytes are
 * worked out through the decoder chain (the per-token steps: Replace,
 * Metaspace, ByteFallback's <0xNN>, ByteLevel's characters, Strip of each
 * token) into a fixed buffer, appended to the last (longest stop - 1) bytes
 * of the stream, and that window searched: a stop string that spans several
 * tokens is found when its last byte arrives.  What comes after Fuse (or
 * ByteLevel, which fuses too) acts on the whole text: a Strip there can only
 * take characters at its very start (followed) and end (not followed: the
 * end of a stream that goes on is unknown).  The bytes are searched before
 * the decoder's UTF-8 repair (U+FFFD for a broken sequence): a stop string is
 * valid UTF-8, so it is found in the repaired text exactly when it is in the
 * bytes, unless it holds U+FFFD itself (then it is found only in the final
 * text, as before this existed).  A chain we cannot follow token by token,
 * or HF's clean-up of spaces, is refused (MT_ERR_UNSUPPORTED): the caller
 * then stops nothing early.
 */
#include "hf_internal.h"

#include <stdlib.h>
#include <string.h>

#include "hf_unicode.h"
#include "util/utf8.h"

struct mt_stop_match {
    const mt_hf_tokenizer *tok;
    int       n_stop;
    char     *stop[MT_STOP_MAX];
    size_t    stop_len[MT_STOP_MAX];
    size_t    keep;             /* longest stop - 1: the stream's tail kept */
    int       n_tok;            /* the decoder steps applied to each token: dec[0..n_tok) */
    int       lead_strip;       /* a Strip after Fuse: its start count, its character */
    uint32_t  lead_char;
    int       space_join;       /* no decoder: tokens joined with spaces */
    size_t    cap;              /* of a token's piece through any step */
    char     *a, *b;            /* [cap] a token's piece, step by step */
    char     *win;              /* [keep + cap] the tail, then the piece */
    /* state */
    size_t    tail;             /* bytes of win held from before */
    int       seen;             /* ids read */
    int       kept;             /* tokens that gave text (not special) */
    int       stripped;         /* lead_strip characters taken */
    int       hit;
};

/* Which steps go token by token (0..*n_tok), and what comes after; 0, or -1
 * for a chain this cannot follow. */
static int plan(mt_stop_match *m)
{
    const mt_hf_tokenizer *tok = m->tok;
    int i = 0, bytes = 0;
    for (; i < tok->n_dec; i++) {
        const hf_dec *d = &tok->dec[i];
        if (d->kind == HF_DEC_FUSE)
            break;
        if (d->kind == HF_DEC_BYTE_LEVEL) {            /* per token, then one token: as Fuse */
            i++;
            break;
        }
        /* after ByteFallback a run of byte tokens is one token: Strip or
         * Replace of each would differ from ours */
        if (bytes && (d->kind == HF_DEC_STRIP || d->kind == HF_DEC_REPLACE || d->kind == HF_DEC_METASPACE))
            return -1;
        bytes |= d->kind == HF_DEC_BYTE_FALLBACK;
    }
    m->n_tok = i < tok->n_dec && tok->dec[i].kind == HF_DEC_FUSE ? i++ : i;
    for (; i < tok->n_dec; i++) {                      /* after Fuse: Strip only */
        const hf_dec *d = &tok->dec[i];
        if (d->kind != HF_DEC_STRIP)
            return -1;
        if (d->start > 0) {
            if (m->lead_strip && m->lead_char != d->strip_char)
                return -1;
            m->lead_strip += d->start;
            m->lead_char = d->strip_char;
        }
    }
    m->space_join = !tok->has_decoder;
    return 0;
}

/* The most bytes a token's piece can take at any step. */
static size_t piece_cap(const mt_stop_match *m)
{
    const mt_hf_tokenizer *tok = m->tok;
    size_t longest = 1;
    for (int32_t id = 0; id < tok->n_ids; id++)
        if (tok->tok[id] && tok->tok_len[id] > longest)
            longest = tok->tok_len[id];
    size_t grow = 1;
    for (int i = 0; i < m->n_tok; i++) {
        const hf_dec *d = &tok->dec[i];
        if ((d->kind == HF_DEC_REPLACE || d->kind == HF_DEC_METASPACE) && d->na && d->nb > d->na)
            grow *= (d->nb + d->na - 1) / d->na;
    }
    return longest * grow + 2;          /* + a joining space */
}

static void stop_free_all(mt_stop_match *m)
{
    for (int i = 0; i < m->n_stop; i++)
        free(m->stop[i]);
    free(m->a);
    free(m->b);
    free(m->win);
    free(m);
}

mt_status mt_stop_match_new(const mt_hf_tokenizer *tok, const char *const *stops, int n, mt_stop_match **out,
                            mt_err *err)
{
    if (!out || !tok || n < 1 || n > MT_STOP_MAX || !stops)
        return mt_err_set(err, MT_ERR_INPUT, "mt_stop_match_new: bad arguments");
    *out = NULL;
    for (int i = 0; i < n; i++)
        if (!stops[i] || !stops[i][0] || !mt_utf8_valid(stops[i], strlen(stops[i])))
            return mt_err_set(err, MT_ERR_INPUT, "stop string %d is empty or not valid UTF-8", i);
    if (tok->clean_up)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "stop strings: the tokenizer cleans up spaces when decoding "
                          "(clean_up_tokenization_spaces): not followed token by token");
    mt_stop_match *m = calloc(1, sizeof *m);
    if (!m)
        return mt_err_set(err, MT_ERR_NOMEM, "stop strings: out of memory");
    m->tok = tok;
    if (plan(m)) {
        free(m);
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "stop strings: the tokenizer's decoder chain is not followed "
                          "token by token");
    }
    for (int i = 0; i < n; i++) {
        m->stop_len[i] = strlen(stops[i]);
        if (!(m->stop[i] = strdup(stops[i]))) {
            stop_free_all(m);
            return mt_err_set(err, MT_ERR_NOMEM, "stop strings: out of memory");
        }
        m->n_stop++;
        if (m->stop_len[i] - 1 > m->keep)
            m->keep = m->stop_len[i] - 1;
    }
    m->cap = piece_cap(m);
    m->a = malloc(m->cap);
    m->b = malloc(m->cap);
    m->win = malloc(m->keep + m->cap);
    if (!m->a || !m->b || !m->win) {
        stop_free_all(m);
        return mt_err_set(err, MT_ERR_NOMEM, "stop strings: out of memory");
    }
    *out = m;
    return MT_OK;
}

void mt_stop_match_free(mt_stop_match *m)
{
    if (m)
        stop_free_all(m);
}

void mt_stop_match_reset(mt_stop_match *m)
{
    if (!m)
        return;
    m->tail = 0;
    m->seen = m->kept = m->stripped = m->hit = 0;
}

/* in[0..n) with every d->a made d->b into out (drop: removed instead). */
static size_t step_replace(const hf_dec *d, const char *in, size_t n, int drop, char *out)
{
    size_t o = 0;
    for (size_t j = 0; j < n;) {
        if (d->na && n - j >= d->na && !memcmp(in + j, d->a, d->na)) {
            if (!drop)
                memcpy(out + o, d->b, d->nb), o += d->nb;
            j += d->na;
        } else {
            out[o++] = in[j++];
        }
    }
    return o;
}

/* "<0xNN>" -> NN, or -1. */
static int byte_token(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>')
        return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int x = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (x < 0)
            return -1;
        v = v * 16 + x;
    }
    return v;
}

/* The byte a ByteLevel character stands for, or -1 (hf_bpe.c's byte_of). */
static int level_byte(uint32_t c)
{
    if ((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF))
        return (int)c;
    if (c >= 0x100 && c <= 0x120)
        return (int)(c - 0x100);
    if (c >= 0x121 && c <= 0x142)
        return (int)(0x7F + c - 0x121);
    return c == 0x143 ? 0xAD : -1;
}

static size_t step_byte_level(const char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t j = 0; j < n;) {
        uint32_t c;
        size_t k = mt_utf8_decode((const uint8_t *)in + j, n - j, &c);
        int byte = k ? level_byte(c) : -1;
        if (byte < 0) {                 /* a character outside the alphabet: the token as it is */
            memcpy(out, in, n);
            return n;
        }
        out[o++] = (char)byte;
        j += k;
    }
    return o;
}

/* Up to d->start leading and d->stop trailing d->strip_char of in[0..n), into out. */
static size_t step_strip(const hf_dec *d, const char *in, size_t n, char *out)
{
    size_t a, b = hf_strip_span(d, in, n, &a);
    memcpy(out, in + a, b - a);
    return b - a;
}

/* Token id's bytes in the decoded stream (first: the first token giving text), in m->a. */
static size_t piece(mt_stop_match *m, int32_t id, int first)
{
    const mt_hf_tokenizer *tok = m->tok;
    char *in = m->a, *out = m->b;
    size_t n = tok->tok_len[id];
    memcpy(in, tok->tok[id], n);
    for (int i = 0; i < m->n_tok; i++) {
        const hf_dec *d = &tok->dec[i];
        int v;
        switch (d->kind) {
        case HF_DEC_REPLACE:
        case HF_DEC_METASPACE:
            n = step_replace(d, in, n, d->kind == HF_DEC_METASPACE && d->prepend && first, out);
            break;
        case HF_DEC_BYTE_FALLBACK:
            if ((v = byte_token(in, n)) >= 0)
                out[0] = (char)v, n = 1;
            else
                memcpy(out, in, n);
            break;
        case HF_DEC_BYTE_LEVEL:
            n = step_byte_level(in, n, out);
            break;
        case HF_DEC_STRIP:
            n = step_strip(d, in, n, out);
            break;
        }
        char *t = in;
        in = out, out = t;
    }
    if (in != m->a)
        memcpy(m->a, in, n);
    return n;
}

/* A Strip after Fuse: the stream's first lead_strip lead_char go. */
static size_t lead(mt_stop_match *m, const char *p, size_t n)
{
    size_t a = 0;
    while (m->stripped < m->lead_strip && a < n) {
        uint32_t c;
        size_t k = mt_utf8_decode((const uint8_t *)p + a, n - a, &c);
        if (!k || c != m->lead_char) {
            m->stripped = m->lead_strip;        /* the text began: no more */
            break;
        }
        a += k;
        m->stripped++;
    }
    if (a < n)
        m->stripped = m->lead_strip;
    return a;
}

/* The window's new bytes [from, end) in place: a stop string ending in them? */
static int found(const mt_stop_match *m, size_t end)
{
    for (int i = 0; i < m->n_stop; i++)
        if (end >= m->stop_len[i] && memmem(m->win, end, m->stop[i], m->stop_len[i]))
            return 1;
    return 0;
}

int mt_stop_match_feed(mt_stop_match *m, const int32_t *ids, int n)
{
    if (!m || m->hit)
        return m ? 1 : 0;
    const mt_hf_tokenizer *tok = m->tok;
    for (; m->seen < n; m->seen++) {
        int32_t id = ids[m->seen];
        if (id < 0 || id >= tok->n_ids || !tok->tok[id] || tok->special[id])
            continue;                   /* no text (special tokens are skipped, as the reply's decode) */
        size_t k = piece(m, id, m->kept == 0), a = 0;
        char *w = m->win + m->tail;
        if (m->space_join && m->kept)
            *w++ = ' ';
        m->kept++;
        if (m->stripped < m->lead_strip)
            a = lead(m, m->a, k);
        memcpy(w, m->a + a, k - a);
        size_t end = (size_t)(w - m->win) + k - a;
        if (found(m, end)) {
            m->hit = 1;
            m->seen++;
            return 1;
        }
        size_t t = end < m->keep ? end : m->keep;       /* keep the last keep bytes */
        memmove(m->win, m->win + end - t, t);
        m->tail = t;
    }
    return 0;
}
