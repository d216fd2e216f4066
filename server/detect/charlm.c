/* charlm: character n-gram language models (charlm.h has the model, the text's
 * normalization and the file format; models/recipe/charlm.py writes the files
 * and is the reference scorer tests/test_detect.c compares with). */
#include "charlm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/strbuf.h"
#include "util/utf8.h"

enum {
    HEADER = 64,
    TRAILER = 4,
    CONTEXT_ONLY = 0xffff,          /* nlp of an entry that is only a context */
    BUCKET = 4,                     /* entries per directory slot, on average */
    MAX_DIR_BITS = 20,
};
#define SCALE 2048.0                /* stored logs are in 1/SCALE nat */
#define MAGIC "MTCHARLM"

/* The entries of one order: sorted keys, their -log p and back-off weights, and
 * a directory of the keys' top bits (dir[b] = the first entry whose top dir_bits
 * bits are >= b) that leaves a few entries to search. */
typedef struct {
    uint32_t  n;
    uint32_t *key;
    uint16_t *nlp;
    int16_t  *bow;                  /* NULL for the top order */
    uint32_t *dir;                  /* [2^dir_bits + 1] */
    int       dir_bits;
} table;

struct srv_charlm {
    char     lang[16];
    int      order;
    uint64_t seed;
    double   unk;                   /* ln p of an unseen character */
    table    t[SRV_CHARLM_MAX_ORDER + 1];
    size_t   bytes;
};

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t fnv1a32(const unsigned char *p, size_t n)
{
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x01000193u;
    return h;
}

/* ---- normalization and keys ---- */

/* What the model reads of c: 0 for a separator, else c lowercased / '0' (charlm.h). */
static uint32_t fold(uint32_t c)
{
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || mt_utf8_is_space(c))
        return 0;
    if ((c >= 'A' && c <= 'Z') || (c >= 0xc0 && c <= 0xde && c != 0xd7))
        return c + 0x20;
    if (c >= '0' && c <= '9')
        return '0';
    if (((c >= 0x100 && c <= 0x137) || (c >= 0x14a && c <= 0x177)) && c % 2 == 0 && c != 0x130)
        return c + 1;
    if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) && c % 2 == 1)
        return c + 1;
    return c == 0x178 ? 0xff : c;
}

static uint32_t gram_key(uint64_t seed, const uint32_t *g, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ seed;
    for (int i = 0; i < n; i++)
        h = mt_hash_mix64(h ^ g[i]);
    return (uint32_t)(h >> 32);
}

/* The index of key in t, or -1. */
static long find(const table *t, uint32_t key)
{
    uint32_t b = t->dir_bits ? key >> (32 - t->dir_bits) : 0;
    uint32_t lo = t->dir[b], hi = t->dir[b + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->key[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->dir[b + 1] && t->key[lo] == key ? (long)lo : -1;
}

/* ln p(w | h): h the N-1 code points before w (oldest first).  At most 0: back-off
 * weights above 1 (a positive bow) are legitimate, but a file whose weights do not
 * fit its probabilities (damaged, checksum and all) could sum past 0; a probability
 * is never above 1 (fuzz_charlm found such a file). */
static double cond_log_prob(const srv_charlm *m, const uint32_t *h, uint32_t w)
{
    uint32_t g[SRV_CHARLM_MAX_ORDER];
    int N = m->order;
    double acc = 0, lp = 0;
    int found = 0;
    for (int k = N; k >= 1 && !found; k--) {
        memcpy(g, h + (N - k), sizeof *g * (size_t)(k - 1));   /* the last k-1 of h, then w */
        g[k - 1] = w;
        long i = find(&m->t[k], gram_key(m->seed, g, k));
        if (i >= 0 && m->t[k].nlp[i] != CONTEXT_ONLY)
            lp = acc - m->t[k].nlp[i] / SCALE, found = 1;
        else if (k > 1 && (i = find(&m->t[k - 1], gram_key(m->seed, g, k - 1))) >= 0)
            acc += m->t[k - 1].bow[i] / SCALE;
    }
    if (!found)
        lp = acc + m->unk;
    return lp < 0 ? lp : 0;
}

/* Predicts w after the context h (N-1 code points, oldest first), then shifts it in. */
static double step(const srv_charlm *m, uint32_t *h, uint32_t w)
{
    double lp = cond_log_prob(m, h, w);
    if (m->order > 1) {
        memmove(h, h + 1, sizeof *h * (size_t)(m->order - 2));
        h[m->order - 2] = w;
    }
    return lp;
}

double srv_charlm_log_prob(const srv_charlm *m, const char *text, size_t len, size_t *n_chars)
{
    uint32_t h[SRV_CHARLM_MAX_ORDER];              /* the context: N-1 spaces at the start */
    for (int i = 0; i < m->order - 1; i++)
        h[i] = ' ';
    int any = 0, sep = 0;
    size_t n = 0;
    double lp = 0;
    for (size_t i = 0; i < len;) {
        uint32_t c = 0;
        size_t k = mt_utf8_decode((const uint8_t *)text + i, len - i, &c);
        i += k ? k : 1;
        c = k ? fold(c) : 0;                       /* a malformed byte is a separator */
        if (c == 0) {
            sep = any;                             /* none before the first character */
            continue;
        }
        if (sep) {
            lp += step(m, h, ' ');
            n++;
            sep = 0;
        }
        lp += step(m, h, c);
        n++;
        any = 1;
    }
    if (any) {                                     /* the end */
        lp += step(m, h, ' ');
        n++;
    }
    if (n_chars)
        *n_chars = n;
    return lp;
}

/* ---- loading ---- */

/* t's arrays from the file's bytes at p (keys, nlp, bow when with_bow); the
 * directory built.  0, or -1 when out of memory. */
static int table_read(table *t, const unsigned char *p, uint32_t n, int with_bow)
{
    t->n = n;
    t->dir_bits = 0;
    while (t->dir_bits < MAX_DIR_BITS && ((uint32_t)BUCKET << t->dir_bits) < n)
        t->dir_bits++;
    size_t slots = ((size_t)1 << t->dir_bits) + 1;
    t->key = malloc(sizeof *t->key * n);
    t->nlp = malloc(sizeof *t->nlp * n);
    t->bow = with_bow ? malloc(sizeof *t->bow * n) : NULL;
    t->dir = malloc(sizeof *t->dir * slots);
    if (!t->key || !t->nlp || (with_bow && !t->bow) || !t->dir)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        t->key[i] = rd32(p + 4 * (size_t)i);
        t->nlp[i] = rd16(p + 4 * (size_t)n + 2 * (size_t)i);
        if (with_bow)
            t->bow[i] = (int16_t)rd16(p + 6 * (size_t)n + 2 * (size_t)i);
    }
    uint32_t at = 0;
    for (size_t b = 0; b + 1 < slots; b++) {
        while (at < n && (t->dir_bits ? t->key[at] >> (32 - t->dir_bits) : 0) < b)
            at++;
        t->dir[b] = at;
    }
    t->dir[slots - 1] = n;
    return 0;
}

/* The header's fields checked; the file's expected size into *size. */
static mt_status check_header(const unsigned char *p, size_t len, uint32_t count[], size_t *size, mt_err *err)
{
    if (len < HEADER + TRAILER)
        return mt_err_set(err, MT_ERR_FORMAT, "not a character language model: %zu bytes, shorter than a header", len);
    if (memcmp(p, MAGIC, 8) != 0)
        return mt_err_set(err, MT_ERR_FORMAT, "not a character language model (no \"" MAGIC "\" at its start)");
    uint32_t version = rd32(p + 8), order = rd32(p + 12);
    if (version != 1)
        return mt_err_set(err, MT_ERR_FORMAT, "character language model of version %u: this server reads version 1",
                          version);
    if (order < 1 || order > SRV_CHARLM_MAX_ORDER)
        return mt_err_set(err, MT_ERR_FORMAT, "order %u: a model's order is 1 to %d", order, SRV_CHARLM_MAX_ORDER);
    uint32_t unk = rd32(p + 20);
    if (unk == 0 || unk > 100 * (uint32_t)SCALE)
        return mt_err_set(err, MT_ERR_FORMAT, "unseen characters' -log p is %u/2048 nat: not in 1..%u", unk,
                          100 * (uint32_t)SCALE);
    const unsigned char *lang = p + 24;
    size_t n = strnlen((const char *)lang, 16);
    int ok = n > 0 && n < 16;
    for (size_t i = 0; i < 16; i++) {
        unsigned char c = lang[i];
        ok &= i < n ? (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
                    : c == 0;
    }
    if (!ok)
        return mt_err_set(err, MT_ERR_FORMAT, "its language is not a tag of letters, digits and '-' (16 bytes, NUL-padded)");
    size_t need = HEADER + TRAILER;
    for (uint32_t k = 1; k <= SRV_CHARLM_MAX_ORDER; k++) {
        count[k] = rd32(p + 40 + 4 * (k - 1));
        if (k <= order && (count[k] == 0 || count[k] > SRV_CHARLM_MAX_COUNT))
            return mt_err_set(err, MT_ERR_FORMAT, "order %u has %u entries: 1 to %u", k, count[k], SRV_CHARLM_MAX_COUNT);
        if (k > order && count[k] != 0)
            return mt_err_set(err, MT_ERR_FORMAT, "order %u has entries in a model of order %u", k, order);
        need += (size_t)count[k] * (k < order ? 8 : 6);
    }
    if (len != need)
        return mt_err_set(err, MT_ERR_FORMAT, "%s: %zu bytes, its header says %zu", len < need ? "truncated" : "too long",
                          len, need);
    if (fnv1a32(p, len - TRAILER) != rd32(p + len - TRAILER))
        return mt_err_set(err, MT_ERR_FORMAT, "checksum mismatch: the file is damaged");
    *size = need;
    return MT_OK;
}

mt_status srv_charlm_parse(const void *data, size_t len, srv_charlm **out, mt_err *err)
{
    const unsigned char *p = data;
    uint32_t count[SRV_CHARLM_MAX_ORDER + 1];
    size_t size = 0;
    *out = NULL;
    mt_status st = check_header(p, len, count, &size, err);
    if (st != MT_OK)
        return st;
    srv_charlm *m = calloc(1, sizeof *m);
    if (!m)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    memcpy(m->lang, p + 24, 16);
    m->order = (int)rd32(p + 12);
    m->seed = rd32(p + 16);
    m->unk = -(double)rd32(p + 20) / SCALE;
    m->bytes = sizeof *m;
    size_t at = HEADER;
    for (int k = 1; k <= m->order; k++) {
        table *t = &m->t[k];
        if (table_read(t, p + at, count[k], k < m->order) != 0) {
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
            goto fail;
        }
        for (uint32_t i = 1; i < t->n; i++)
            if (t->key[i] <= t->key[i - 1]) {
                st = mt_err_set(err, MT_ERR_FORMAT, "order %d: keys not in increasing order at entry %u", k, i);
                goto fail;
            }
        at += (size_t)count[k] * (k < m->order ? 8 : 6);
        m->bytes += (size_t)t->n * (k < m->order ? 8 : 6) + sizeof *t->dir * (((size_t)1 << t->dir_bits) + 1);
    }
    *out = m;
    return MT_OK;
fail:
    srv_charlm_free(m);
    return st;
}

mt_status srv_charlm_load(const char *path, srv_charlm **out, mt_err *err)
{
    mt_sbuf b = { 0 };
    *out = NULL;
    mt_status st = mt_sb_read_file(&b, path, err);
    if (st != MT_OK)
        return st;
    mt_err e = { 0 };
    if ((st = srv_charlm_parse(b.p, b.n, out, &e)) != MT_OK)
        mt_err_set(err, st, "%s: %s", path, e.msg);
    free(b.p);
    return st;
}

void srv_charlm_free(srv_charlm *m)
{
    if (!m)
        return;
    for (int k = 1; k <= SRV_CHARLM_MAX_ORDER; k++) {
        free(m->t[k].key);
        free(m->t[k].nlp);
        free(m->t[k].bow);
        free(m->t[k].dir);
    }
    free(m);
}

const char *srv_charlm_lang(const srv_charlm *m)
{
    return m->lang;
}

int srv_charlm_order(const srv_charlm *m)
{
    return m->order;
}

size_t srv_charlm_bytes(const srv_charlm *m)
{
    return m->bytes;
}
