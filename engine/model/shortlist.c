/* shortlist.c: mt_shortlist, a lexical shortlist (mt.h): per source id the
 * target ids it may translate to, plus frequent ids.  Read from Marian's
 * binary or text format or CTranslate2's vmap (formats/shortlist_fmt.c does
 * the bytes; here the pieces become the model's ids and the lists are cut),
 * or made from arrays; written in Marian's binary format.  Immutable. */
#include "mt_internal.h"
#include "util/check.h"
#include "formats/shortlist_fmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SL_MAX_FILE (1L << 30)      /* 1 GB: a base model's table is ~10 MB */
#define SL_MARIAN_DEFAULT 100       /* Marian's firstNum and bestNum for a text table */

mt_shortlist_params mt_shortlist_default_params(void)
{
    return (mt_shortlist_params){.best = 0, .frequent = -1, .threshold = 0.0};
}

mt_status mt_shortlist_params_resolve(const mt_shortlist_params *in, mt_shortlist_params *out, mt_err *err)
{
    mt_shortlist_params p = in ? *in : mt_shortlist_default_params();
    if (p.best < 0 || p.best > 1000000)
        return mt_err_set(err, MT_ERR_INPUT, "field 'best': %d is outside [0, 1000000] (0: the file's)", p.best);
    if (p.frequent < -1 || p.frequent > 10000000)
        return mt_err_set(err, MT_ERR_INPUT, "field 'frequent': %d is outside [-1, 10000000] (-1: the file's)",
                          p.frequent);
    if (!(p.threshold >= 0.0 && p.threshold <= 1e300))
        return mt_err_set(err, MT_ERR_INPUT, "field 'threshold': must be a number >= 0");
    *out = p;
    return MT_OK;
}

void mt_shortlist_free(mt_shortlist *sl)
{
    if (!sl)
        return;
    free(sl->off);
    free(sl->ids);
    free(sl->freq);
    free(sl);
}

const mt_shortlist_info *mt_shortlist_get_info(const mt_shortlist *sl) { return &sl->info; }

const int32_t *mt_shortlist_list(const mt_shortlist *sl, int w, int *n)
{
    *n = w >= 0 && w < sl->n_src ? (int)(sl->off[w + 1] - sl->off[w]) : 0;
    return *n ? sl->ids + sl->off[w] : NULL;
}

const int32_t *mt_shortlist_frequent(const mt_shortlist *sl, int *n)
{
    *n = sl->n_freq;
    return sl->freq;
}

/* ---- building: (source, target, score) entries -> lists ------------------------------- */
typedef struct { int32_t src, tgt; double score; long seq; } sl_entry;
typedef struct {
    sl_entry *e;
    long n;
    size_t cap;
    int32_t *freq;
    int n_freq;
    size_t cap_freq;
    long skipped;
    const mt_model *m;
} sl_build;

static mt_status add_entry(sl_build *b, int32_t src, int32_t tgt, double score, mt_err *err)
{
    if (mt_grow(&b->e, &b->cap, (size_t)b->n + 1, sizeof *b->e, 4096) != 0)
        return mt_err_set(err, MT_ERR_NOMEM, "shortlist: out of memory at %ld entries", b->n);
    b->e[b->n] = (sl_entry){src, tgt, score, b->n};
    b->n++;
    return MT_OK;
}

static mt_status add_freq(sl_build *b, int32_t id, mt_err *err)
{
    if (mt_grow(&b->freq, &b->cap_freq, (size_t)b->n_freq + 1, sizeof *b->freq, 256) != 0)
        return mt_err_set(err, MT_ERR_NOMEM, "shortlist: out of memory");
    b->freq[b->n_freq++] = id;
    return MT_OK;
}

static int by_pair(const void *a, const void *b)      /* source, target, best score first, file order */
{
    const sl_entry *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->tgt != y->tgt) return x->tgt < y->tgt ? -1 : 1;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_rank(const void *a, const void *b)      /* source, best score first, file order */
{
    const sl_entry *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_id(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sorted unique ids of v[0..n) in place; returns the count. */
static int unique_ids(int32_t *v, int n)
{
    if (n > 1)                        /* qsort(NULL, 0) is undefined (UBSan) */
        qsort(v, (size_t)n, sizeof *v, by_id);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || v[i] != v[k - 1])
            v[k++] = v[i];
    return k;
}

static mt_shortlist *sl_alloc(const mt_model *m, int n_src, long n_ids, int n_freq)
{
    mt_shortlist *sl = calloc(1, sizeof *sl);
    if (!sl)
        return NULL;
    sl->off = calloc((size_t)n_src + 1, sizeof *sl->off);
    sl->ids = malloc(sizeof *sl->ids * (size_t)(n_ids ? n_ids : 1));
    sl->freq = malloc(sizeof *sl->freq * (size_t)(n_freq ? n_freq : 1));
    if (!sl->off || !sl->ids || !sl->freq) {
        mt_shortlist_free(sl);
        return NULL;
    }
    sl->n_src = n_src;
    sl->V = m->V;
    sl->V_src = m->V_src;
    sl->info.src_vocab = m->V_src;
    sl->info.tgt_vocab = m->V;
    return sl;
}

static void sl_finish(mt_shortlist *sl, const char *format)
{
    snprintf(sl->format, sizeof sl->format, "%s", format);
    sl->info.format = sl->format;
    sl->info.entries = sl->off[sl->n_src];
    sl->info.frequent = sl->n_freq;
    for (int w = 0; w < sl->n_src; w++) {
        int k = (int)(sl->off[w + 1] - sl->off[w]);
        sl->info.src_words += k > 0;
        sl->info.max_list = k > sl->info.max_list ? k : sl->info.max_list;
    }
}

/* The entries into lists: the best score of each pair, each source's `best`
 * best (0: all) at or above threshold, each list in ascending id order. */
static mt_status build_lists(sl_build *b, int best, double threshold, int frequent, const char *format,
                             mt_shortlist **out, mt_err *err)
{
    const mt_model *m = b->m;
    mt_status st = MT_OK;
    for (int i = 0; i < frequent && i < m->V && st == MT_OK; i++)
        st = add_freq(b, i, err);
    if (st != MT_OK)
        return st;
    if (b->n > 1)                     /* qsort / memcpy of NULL, 0 are undefined (UBSan) */
        qsort(b->e, (size_t)b->n, sizeof *b->e, by_pair);
    long k = 0;
    for (long i = 0; i < b->n; i++)
        if ((k == 0 || b->e[i].src != b->e[k - 1].src || b->e[i].tgt != b->e[k - 1].tgt) &&
            b->e[i].score >= threshold)
            b->e[k++] = b->e[i];
    if (k > 1)
        qsort(b->e, (size_t)k, sizeof *b->e, by_rank);
    int n_freq = unique_ids(b->freq, b->n_freq);
    mt_shortlist *sl = sl_alloc(m, m->V_src, k, n_freq);
    if (!sl)
        return mt_err_set(err, MT_ERR_NOMEM, "shortlist: out of memory");
    if (n_freq)
        memcpy(sl->freq, b->freq, sizeof *sl->freq * (size_t)n_freq);
    sl->n_freq = n_freq;
    long n = 0;
    for (long i = 0; i < k;) {
        long j = i;
        int32_t w = b->e[i].src;
        while (j < k && b->e[j].src == w)
            j++;
        long start = n;
        for (long t = i; t < j && (best == 0 || t - i < best); t++)
            sl->ids[n++] = b->e[t].tgt;
        qsort(sl->ids + start, (size_t)(n - start), sizeof *sl->ids, by_id);
        sl->off[w + 1] = n - start;
        i = j;
    }
    for (int w = 0; w < sl->n_src; w++)
        sl->off[w + 1] += sl->off[w];
    sl->info.skipped = b->skipped;
    sl_finish(sl, format);
    *out = sl;
    return MT_OK;
}

/* A piece of a text format, or -1 (skipped: the vocabulary lacks it). */
static int32_t piece_id(const mt_model *m, const char *p, size_t n)
{
    char buf[512];
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, p, n);
    buf[n] = 0;
    return mt_tokenizer_piece_id(m->tok, buf);
}

static mt_status on_lex(void *ctx, const char *trg, size_t trg_n, const char *src, size_t src_n, double prob,
                        long line, size_t at, mt_err *err)
{
    sl_build *b = ctx;
    int32_t s = piece_id(b->m, src, src_n), t = piece_id(b->m, trg, trg_n);
    if (s < 0 || t < 0 || s >= b->m->V_src || t >= b->m->V) {
        b->skipped++;
        return MT_OK;
    }
    return add_entry(b, s, t, prob, err);
}

static mt_status on_vmap(void *ctx, const char *src, size_t src_n, const char *trg, size_t trg_n, long line,
                         size_t at, mt_err *err)
{
    sl_build *b = ctx;
    int32_t t = piece_id(b->m, trg, trg_n);
    if (t < 0 || t >= b->m->V) {
        b->skipped++;
        return MT_OK;
    }
    if (src_n == 0)
        return add_freq(b, t, err);
    const char *sp = memchr(src, ' ', src_n);       /* an n-gram: its first token's list (a superset) */
    int32_t s = piece_id(b->m, src, sp ? (size_t)(sp - src) : src_n);
    if (s < 0 || s >= b->m->V_src) {
        b->skipped++;
        return MT_OK;
    }
    return add_entry(b, s, t, 1.0, err);
}

static mt_status from_binary(const mt_model *m, const uint8_t *buf, size_t n, const mt_shortlist_params *p,
                             mt_shortlist **out, mt_err *err)
{
    mt_lex_bin b;
    mt_status st = mt_lex_bin_parse(buf, n, (uint64_t)m->V, &b, err);
    if (st != MT_OK)
        return st;
    if (b.n_words > (uint64_t)m->V_src)
        return mt_err_set(err, MT_ERR_FORMAT, "binary shortlist: byte 32: %llu source words, the model's "
                          "source vocabulary has %d", (unsigned long long)b.n_words, m->V_src);
    uint64_t first = p->frequent >= 0 ? (uint64_t)p->frequent : b.first_num;
    int n_freq = first < (uint64_t)m->V ? (int)first : m->V;
    long total = 0;
    for (uint64_t w = 0; w < b.n_words; w++) {
        uint64_t k = mt_lex_offset(&b, w + 1) - mt_lex_offset(&b, w);
        total += (long)(p->best && k > (uint64_t)p->best ? (uint64_t)p->best : k);
    }
    mt_shortlist *sl = sl_alloc(m, m->V_src, total, n_freq);
    if (!sl)
        return mt_err_set(err, MT_ERR_NOMEM, "shortlist: out of memory");
    for (int i = 0; i < n_freq; i++)
        sl->freq[i] = i;
    sl->n_freq = n_freq;
    long at = 0;
    for (int w = 0; w < m->V_src; w++) {
        if ((uint64_t)w < b.n_words) {          /* Marian's lists are sorted by id: `best` keeps the first */
            uint64_t lo = mt_lex_offset(&b, (uint64_t)w), hi = mt_lex_offset(&b, (uint64_t)w + 1);
            for (uint64_t j = lo; j < hi && (p->best == 0 || j - lo < (uint64_t)p->best); j++)
                sl->ids[at++] = (int32_t)mt_lex_id(&b, j);
        }
        sl->off[w + 1] = at;
    }
    sl_finish(sl, "marian-binary");
    *out = sl;
    return MT_OK;
}

static mt_status read_all(const char *path, char **buf, size_t *n, mt_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return mt_err_set(err, MT_ERR_IO, "shortlist %s: cannot open", path);
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size < 0 || size > SL_MAX_FILE || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return mt_err_set(err, size > SL_MAX_FILE ? MT_ERR_TOO_LONG : MT_ERR_IO,
                          "shortlist %s: unreadable or over 1 GB", path);
    }
    *buf = malloc((size_t)size + 1);
    if (!*buf) {
        fclose(f);
        return mt_err_set(err, MT_ERR_NOMEM, "shortlist %s: out of memory", path);
    }
    *n = fread(*buf, 1, (size_t)size, f);
    int bad = *n != (size_t)size;
    fclose(f);
    if (bad) {
        free(*buf);
        return mt_err_set(err, MT_ERR_IO, "shortlist %s: short read", path);
    }
    return MT_OK;
}

mt_status mt_shortlist_load(const mt_model *m, const char *path, const mt_shortlist_params *params,
                            mt_shortlist **out, mt_err *err)
{
    mt_shortlist_params p;
    mt_status st = mt_shortlist_params_resolve(params, &p, err);
    if (st != MT_OK)
        return st;
    if (!m || !out || !path)
        return mt_err_set(err, MT_ERR_INPUT, "mt_shortlist_load: NULL argument");
    *out = NULL;
    if (m->arch != MT_ARCH_MARIAN)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "shortlist %s: decoder-only models take no shortlist", path);
    char *buf = NULL;
    size_t n = 0;
    if ((st = read_all(path, &buf, &n, err)) != MT_OK)
        return st;
    uint64_t magic = 0;
    for (int i = 7; i >= 0 && n >= 8; i--)
        magic = magic << 8 | (uint8_t)buf[i];
    size_t plen = strlen(path);
    int binary = magic == MT_LEX_MAGIC || memchr(buf, 0, n < 64 ? n : 64) ||     /* text has no NUL */
                 (plen >= 4 && !strcmp(path + plen - 4, ".bin"));
    if (binary) {
        st = from_binary(m, (const uint8_t *)buf, n, &p, out, err);
    } else {
        const char *nl = memchr(buf, '\n', n);
        int vmap = memchr(buf, '\t', nl ? (size_t)(nl - buf) : n) != NULL;
        sl_build b = {.m = m};
        st = vmap ? mt_vmap_parse(buf, n, on_vmap, &b, err) : mt_lex_text_parse(buf, n, on_lex, &b, err);
        if (st == MT_OK)
            st = build_lists(&b, vmap ? p.best : p.best ? p.best : SL_MARIAN_DEFAULT, p.threshold,
                             p.frequent >= 0 ? p.frequent : vmap ? 0 : SL_MARIAN_DEFAULT,
                             vmap ? "ct2-vmap" : "marian-text", out, err);
        free(b.e);
        free(b.freq);
    }
    free(buf);
    if (st != MT_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
        return mt_err_set(err, st, "%s: %s", path, msg);
    }
    return MT_OK;
}

mt_status mt_shortlist_new(const mt_model *m, int n_src, const long *off, const int32_t *ids,
                           const int32_t *freq, int n_freq, mt_shortlist **out, mt_err *err)
{
    if (!m || !out || n_src < 0 || n_src > m->V_src || (n_src > 0 && (!off || off[0] != 0)) || n_freq < 0 ||
        (n_freq > 0 && !freq))
        return mt_err_set(err, MT_ERR_INPUT, "mt_shortlist_new: bad arguments (n_src %d of %d, n_freq %d)", n_src,
                          m ? m->V_src : 0, n_freq);
    if (m->arch != MT_ARCH_MARIAN)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "mt_shortlist_new: decoder-only models take no shortlist");
    for (int w = 0; w < n_src; w++)
        if (off[w + 1] < off[w])
            return mt_err_set(err, MT_ERR_INPUT, "mt_shortlist_new: off[%d] < off[%d]", w + 1, w);
    long total = n_src ? off[n_src] : 0;
    for (long j = 0; j < total; j++)
        if (ids[j] < 0 || ids[j] >= m->V)
            return mt_err_set(err, MT_ERR_INPUT, "mt_shortlist_new: ids[%ld] = %d outside the vocabulary", j,
                              (int)ids[j]);
    for (int j = 0; j < n_freq; j++)
        if (freq[j] < 0 || freq[j] >= m->V)
            return mt_err_set(err, MT_ERR_INPUT, "mt_shortlist_new: freq[%d] = %d outside the vocabulary", j,
                              (int)freq[j]);
    mt_shortlist *sl = sl_alloc(m, m->V_src, total, n_freq);
    if (!sl)
        return mt_err_set(err, MT_ERR_NOMEM, "shortlist: out of memory");
    if (total)
        memcpy(sl->ids, ids, sizeof *ids * (size_t)total);
    for (int w = 0; w < m->V_src; w++) {
        sl->off[w + 1] = w < n_src ? off[w + 1] : total;
        qsort(sl->ids + sl->off[w], (size_t)(sl->off[w + 1] - sl->off[w]), sizeof *sl->ids, by_id);
    }
    memcpy(sl->freq, freq ? freq : ids, sizeof *freq * (size_t)n_freq);
    sl->n_freq = unique_ids(sl->freq, n_freq);
    sl_finish(sl, "built");
    *out = sl;
    return MT_OK;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

mt_status mt_shortlist_write(const mt_shortlist *sl, const char *path, mt_err *err)
{
    for (int i = 0; i < sl->n_freq; i++)
        if (sl->freq[i] != i)
            return mt_err_set(err, MT_ERR_INPUT, "shortlist: Marian's binary format holds frequent ids 0..k-1 only "
                              "(frequent id %d is %d)", i, (int)sl->freq[i]);
    int words = sl->n_src;
    while (words > 0 && sl->off[words] == sl->off[words - 1])      /* trailing empty lists: left out */
        words--;
    long entries = sl->off[words];
    size_t n = MT_LEX_HEADER + 8 * ((size_t)words + 1) + 4 * (size_t)entries;
    uint8_t *buf = calloc(1, n);
    if (!buf)
        return mt_err_set(err, MT_ERR_NOMEM, "shortlist: out of memory");
    int best = 0;
    for (int w = 0; w < words; w++)
        best = (int)(sl->off[w + 1] - sl->off[w]) > best ? (int)(sl->off[w + 1] - sl->off[w]) : best;
    put64(buf, MT_LEX_MAGIC);
    put64(buf + 16, (uint64_t)sl->n_freq);
    put64(buf + 24, (uint64_t)best);
    put64(buf + 32, (uint64_t)words + 1);
    put64(buf + 40, (uint64_t)entries);
    for (int w = 0; w <= words; w++)
        put64(buf + MT_LEX_HEADER + 8 * (size_t)w, (uint64_t)sl->off[w]);
    uint8_t *ids = buf + MT_LEX_HEADER + 8 * ((size_t)words + 1);
    for (long j = 0; j < entries; j++)
        for (int i = 0; i < 4; i++)
            ids[4 * j + i] = (uint8_t)((uint32_t)sl->ids[j] >> (8 * i));
    put64(buf + 8, mt_lex_checksum(buf, n));
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(buf, 1, n, f) == n;
    ok = f && fclose(f) == 0 && ok;
    free(buf);
    return ok ? MT_OK : mt_err_set(err, MT_ERR_IO, "shortlist: cannot write %s", path);
}

/* ---- building from a parallel corpus -------------------------------------------------- */
/* Pair counts: open addressing on key (s << 32 | t) + 1 (0: empty). */
typedef struct { uint64_t *key; uint32_t *count; size_t cap, n; } pair_map;

static size_t slot_of(const pair_map *h, uint64_t key)
{
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (h->cap - 1);
    while (h->key[i] && h->key[i] != key)
        i = (i + 1) & (h->cap - 1);
    return i;
}

static int pair_grow(pair_map *h)
{
    pair_map g = {.cap = h->cap ? 2 * h->cap : 1 << 16};
    g.key = calloc(g.cap, sizeof *g.key);
    g.count = calloc(g.cap, sizeof *g.count);
    if (!g.key || !g.count) {
        free(g.key);
        free(g.count);
        return -1;
    }
    for (size_t i = 0; i < h->cap; i++)
        if (h->key[i]) {
            size_t j = slot_of(&g, h->key[i]);
            g.key[j] = h->key[i];
            g.count[j] = h->count[i];
            g.n++;
        }
    free(h->key);
    free(h->count);
    *h = g;
    return 0;
}

/* Sorted unique ids of v[0..n) into u; the count. */
static int uniq_into(const int32_t *v, int n, int32_t *u)
{
    memcpy(u, v, sizeof *u * (size_t)n);
    return unique_ids(u, n);
}

mt_status mt_shortlist_build(const mt_model *m, int n, const int32_t *const *src, const int *src_len,
                             const int32_t *const *tgt, const int *tgt_len, const mt_shortlist_params *params,
                             int min_count, mt_shortlist **out, mt_err *err)
{
    mt_shortlist_params p;
    mt_status st = mt_shortlist_params_resolve(params, &p, err);
    if (st != MT_OK)
        return st;
    if (!m || !out || n < 0 || (n > 0 && (!src || !src_len || !tgt || !tgt_len)))
        return mt_err_set(err, MT_ERR_INPUT, "mt_shortlist_build: bad arguments");
    if (m->arch != MT_ARCH_MARIAN)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "mt_shortlist_build: decoder-only models take no shortlist");
    int best = p.best ? p.best : 50, frequent = p.frequent >= 0 ? p.frequent : SL_MARIAN_DEFAULT, longest = 1;
    for (int i = 0; i < n; i++) {
        if (src_len[i] < 0 || tgt_len[i] < 0)
            return mt_err_set(err, MT_ERR_INPUT, "mt_shortlist_build: pair %d has a negative length", i);
        longest = src_len[i] > longest ? src_len[i] : longest;
        longest = tgt_len[i] > longest ? tgt_len[i] : longest;
    }
    uint32_t *cs = calloc((size_t)m->V_src, sizeof *cs), *ct = calloc((size_t)m->V, sizeof *ct);
    int32_t *us = malloc(sizeof *us * (size_t)longest), *ut = malloc(sizeof *ut * (size_t)longest);
    pair_map h = {0};
    sl_build b = {.m = m};
    if (!cs || !ct || !us || !ut || pair_grow(&h) != 0)
        st = mt_err_set(err, MT_ERR_NOMEM, "shortlist: out of memory");
    int32_t eos = m->info.eos_id, pad = m->info.pad_id;
    for (int i = 0; i < n && st == MT_OK; i++) {
        int ns = uniq_into(src[i], src_len[i], us), nt = uniq_into(tgt[i], tgt_len[i], ut);
        for (int a = 0; a < ns && st == MT_OK; a++) {
            if (us[a] < 0 || us[a] >= m->V_src) {
                st = mt_err_set(err, MT_ERR_INPUT, "shortlist: pair %d: source id %d outside the vocabulary", i,
                                (int)us[a]);
                break;
            }
            cs[us[a]]++;
            for (int c = 0; c < nt; c++) {
                if (ut[c] < 0 || ut[c] >= m->V) {
                    st = mt_err_set(err, MT_ERR_INPUT, "shortlist: pair %d: target id %d outside the vocabulary",
                                    i, (int)ut[c]);
                    break;
                }
                if (ut[c] == eos || ut[c] == pad)
                    continue;
                if (h.n * 2 >= h.cap && pair_grow(&h) != 0) {
                    st = mt_err_set(err, MT_ERR_NOMEM, "shortlist: out of memory at %zu pairs", h.n);
                    break;
                }
                uint64_t key = ((uint64_t)us[a] << 32 | (uint32_t)ut[c]) + 1;
                size_t j = slot_of(&h, key);
                h.n += !h.key[j];
                h.key[j] = key;
                h.count[j]++;
            }
        }
        for (int c = 0; c < nt && st == MT_OK; c++)
            ct[ut[c]]++;
    }
    for (size_t j = 0; j < h.cap && st == MT_OK; j++) {
        if (!h.key[j] || h.count[j] < (uint32_t)(min_count > 1 ? min_count : 1))
            continue;
        int32_t s = (int32_t)((h.key[j] - 1) >> 32), t = (int32_t)((h.key[j] - 1) & 0xffffffffu);
        st = add_entry(&b, s, t, 2.0 * h.count[j] / ((double)cs[s] + (double)ct[t]), err);
    }
    for (long i = 0; i < b.n; i++)        /* ties: the lower id first, not the hash order */
        b.e[i].seq = b.e[i].tgt;
    if (st == MT_OK)
        st = build_lists(&b, best, p.threshold, frequent, "built", out, err);
    free(b.e);
    free(b.freq);
    free(h.key);
    free(h.count);
    free(cs);
    free(ct);
    free(us);
    free(ut);
    return st;
}
