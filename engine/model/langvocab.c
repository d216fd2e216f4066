/* langvocab.c: mt_lang_vocab (mt.h), a target-language vocabulary map: per
 * language of a multilingual model (M2M-100, NLLB-200) the target ids its
 * text uses, as a bit set over the vocabulary that decode/shortlist_step.c
 * gives a sequence whose forced first token is that language.  The file's
 * bytes are formats/langvocab_fmt.c's; here its codes become the model's
 * language ids and its pieces the model's ids, each error naming the line.
 * Immutable once made. */
#include "mt_internal.h"
#include "formats/langvocab_fmt.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LV_MAX_FILE (256L << 20)    /* 256 MB: 202 languages x 30,000 pieces is ~60 MB */

struct mt_lang_vocab {
    int V, words, n_lang;
    int32_t *lang;             /* [n_lang] the languages' token ids (the forced first ids) */
    long *line;                /* [n_lang] the line each was read from */
    int *count;                /* [n_lang] ids in its set */
    uint64_t *bits;            /* [n_lang][words] */
    mt_lang_vocab_info info;
};

typedef struct {
    const mt_model *m;
    const mt_multi_tokenizer *multi;
    mt_lang_vocab *lv;
    int cap;
    char piece[1024];
} lv_build;

void mt_lang_vocab_free(mt_lang_vocab *lv)
{
    if (!lv)
        return;
    free(lv->lang);
    free(lv->line);
    free(lv->count);
    free(lv->bits);
    free(lv);
}

static mt_status grow(lv_build *b, mt_err *err)
{
    mt_lang_vocab *lv = b->lv;
    int cap = b->cap ? 2 * b->cap : 16;
    int32_t *lang = realloc(lv->lang, sizeof *lang * (size_t)cap);
    if (lang)
        lv->lang = lang;
    long *line = realloc(lv->line, sizeof *line * (size_t)cap);
    if (line)
        lv->line = line;
    uint64_t *bits = realloc(lv->bits, sizeof *bits * (size_t)cap * (size_t)lv->words);
    if (bits)
        lv->bits = bits;
    if (!lang || !line || !bits)
        return mt_err_set(err, MT_ERR_NOMEM, "language vocabulary map: out of memory at %d languages", lv->n_lang);
    b->cap = cap;
    return MT_OK;
}

static mt_status on_lang(void *ctx, const char *code, size_t n, long line, size_t at, mt_err *err)
{
    lv_build *b = ctx;
    mt_lang_vocab *lv = b->lv;
    (void)at;
    snprintf(b->piece, sizeof b->piece, "%.*s", (int)(n < 200 ? n : 200), code);
    int32_t id = n < 200 ? mt_multi_lang_id(b->multi, b->piece) : -1;
    if (id < 0 || id >= lv->V)
        return mt_err_set(err, MT_ERR_FORMAT, "language vocabulary map: line %ld: '%s' is not a language code of "
                          "this model (%d codes, as \"%s\")", line, b->piece, mt_multi_n_langs(b->multi),
                          mt_multi_lang(b->multi, 0) ? mt_multi_lang(b->multi, 0) : "");
    for (int i = 0; i < lv->n_lang; i++)
        if (lv->lang[i] == id)
            return mt_err_set(err, MT_ERR_FORMAT, "language vocabulary map: line %ld: language '%s' again (line "
                              "%ld has it already)", line, b->piece, lv->line[i]);
    mt_status st = lv->n_lang < b->cap ? MT_OK : grow(b, err);
    if (st != MT_OK)
        return st;
    lv->lang[lv->n_lang] = id;
    lv->line[lv->n_lang] = line;
    memset(lv->bits + (size_t)lv->n_lang * (size_t)lv->words, 0, sizeof *lv->bits * (size_t)lv->words);
    lv->n_lang++;
    return MT_OK;
}

static mt_status on_piece(void *ctx, const char *p, size_t n, long line, size_t at, mt_err *err)
{
    lv_build *b = ctx;
    mt_lang_vocab *lv = b->lv;
    (void)at;
    int32_t id = -1;
    if (n < sizeof b->piece) {
        memcpy(b->piece, p, n);
        b->piece[n] = 0;
        id = mt_tokenizer_piece_id(b->m->tok, b->piece);
    }
    if (id < 0 || id >= lv->V)
        return mt_err_set(err, MT_ERR_FORMAT, "language vocabulary map: line %ld: piece '%.*s' is not in the "
                          "model's vocabulary", line, (int)(n < 100 ? n : 100), p);
    mt_bit_set(lv->bits + (size_t)(lv->n_lang - 1) * (size_t)lv->words, id);
    return MT_OK;
}

static void finish(mt_lang_vocab *lv)
{
    lv->count = calloc((size_t)(lv->n_lang ? lv->n_lang : 1), sizeof *lv->count);
    lv->info = (mt_lang_vocab_info){.languages = lv->n_lang, .vocab = lv->V};
    for (int i = 0; lv->count && i < lv->n_lang; i++) {
        const uint64_t *w = lv->bits + (size_t)i * (size_t)lv->words;
        for (int k = 0; k < lv->words; k++)
            lv->count[i] += __builtin_popcountll(w[k]);
        lv->info.ids += lv->count[i];
        lv->info.min_ids = i == 0 || lv->count[i] < lv->info.min_ids ? lv->count[i] : lv->info.min_ids;
        lv->info.max_ids = lv->count[i] > lv->info.max_ids ? lv->count[i] : lv->info.max_ids;
    }
}

/* The end of a build: the per-language counts on success, else lv freed;
 * *out = lv on success. */
static mt_status settle(mt_lang_vocab *lv, mt_status st, mt_lang_vocab **out, mt_err *err)
{
    if (st == MT_OK) {
        finish(lv);
        if (!lv->count)
            st = mt_err_set(err, MT_ERR_NOMEM, "language vocabulary map: out of memory");
    }
    if (st != MT_OK) {
        mt_lang_vocab_free(lv);
        return st;
    }
    *out = lv;
    return MT_OK;
}

mt_status mt_lang_vocab_parse(const mt_model *m, const char *buf, size_t n, mt_lang_vocab **out, mt_err *err)
{
    if (!m || !buf || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_lang_vocab_parse: NULL argument");
    *out = NULL;
    const mt_multi_tokenizer *multi = m->arch == MT_ARCH_MARIAN ? mt_tokenizer_multi(m->tok) : NULL;
    if (!multi || mt_multi_n_langs(multi) == 0)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "language vocabulary map: the model has no target languages of "
                          "its own (M2M-100 and NLLB-200 models have)");
    mt_lang_vocab *lv = calloc(1, sizeof *lv);
    if (!lv)
        return mt_err_set(err, MT_ERR_NOMEM, "language vocabulary map: out of memory");
    lv->V = m->V;
    lv->words = (m->V + 63) / 64;
    lv_build b = {.m = m, .multi = multi, .lv = lv};
    mt_langvocab_cb cb = {.lang = on_lang, .piece = on_piece, .ctx = &b};
    mt_status st = mt_langvocab_parse(buf, n, &cb, err);
    return settle(lv, st, out, err);
}

mt_status mt_lang_vocab_new(const mt_model *m, int n_lang, const int32_t *lang_ids, const long *off,
                            const int32_t *ids, mt_lang_vocab **out, mt_err *err)
{
    if (!m || !out || n_lang < 0 || (n_lang && (!lang_ids || !off || (off[n_lang] && !ids))))
        return mt_err_set(err, MT_ERR_INPUT, "mt_lang_vocab_new: NULL argument or negative count");
    *out = NULL;
    if (m->arch == MT_ARCH_LLM)
        return mt_err_set(err, MT_ERR_UNSUPPORTED, "language vocabulary map: a decoder-only model takes none");
    mt_lang_vocab *lv = calloc(1, sizeof *lv);
    if (!lv)
        return mt_err_set(err, MT_ERR_NOMEM, "language vocabulary map: out of memory");
    lv->V = m->V;
    lv->words = (m->V + 63) / 64;
    lv_build b = {.m = m, .lv = lv};
    mt_status st = MT_OK;
    for (int i = 0; i < n_lang && st == MT_OK; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= lang_ids[j] == lang_ids[i];
        if (lang_ids[i] < 0 || lang_ids[i] >= m->V || dup || off[i + 1] < off[i])
            st = mt_err_set(err, MT_ERR_INPUT, "language vocabulary map: language %d: id %d outside the vocabulary "
                            "of %d, repeated, or its offsets decrease", i, (int)lang_ids[i], m->V);
        else if ((st = lv->n_lang < b.cap ? MT_OK : grow(&b, err)) == MT_OK) {
            lv->lang[lv->n_lang] = lang_ids[i];
            lv->line[lv->n_lang] = 0;
            uint64_t *w = lv->bits + (size_t)lv->n_lang++ * (size_t)lv->words;
            memset(w, 0, sizeof *w * (size_t)lv->words);
            for (long j = off[i]; j < off[i + 1] && st == MT_OK; j++)
                if (ids[j] < 0 || ids[j] >= m->V)
                    st = mt_err_set(err, MT_ERR_INPUT, "language vocabulary map: language %d: id %d outside the "
                                    "vocabulary of %d", i, (int)ids[j], m->V);
                else
                    mt_bit_set(w, ids[j]);
        }
    }
    return settle(lv, st, out, err);
}

mt_status mt_lang_vocab_load(const mt_model *m, const char *path, mt_lang_vocab **out, mt_err *err)
{
    if (!m || !path || !out)
        return mt_err_set(err, MT_ERR_INPUT, "mt_lang_vocab_load: NULL argument");
    *out = NULL;
    mt_sbuf sb = {0};
    mt_status st = mt_sb_read_file(&sb, path, err);
    if (st != MT_OK)
        return st;
    if (sb.n > (size_t)LV_MAX_FILE)
        st = mt_err_set(err, MT_ERR_FORMAT, "%s: %zu bytes, more than a language vocabulary map's %ld MB", path, sb.n,
                        LV_MAX_FILE >> 20);
    else
        st = mt_lang_vocab_parse(m, sb.p ? sb.p : "", sb.n, out, err);
    free(sb.p);
    if (st != MT_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
        return mt_err_set(err, st, "%s: %s", path, msg);
    }
    return MT_OK;
}

const mt_lang_vocab_info *mt_lang_vocab_get_info(const mt_lang_vocab *lv) { return &lv->info; }

int mt_lang_vocab_count(const mt_lang_vocab *lv, int32_t lang_id)
{
    const uint64_t *b = mt_lang_vocab_bits(lv, lang_id);
    return b ? lv->count[(b - lv->bits) / lv->words] : -1;
}

int mt_lang_vocab_has(const mt_lang_vocab *lv, int32_t lang_id, int32_t id)
{
    const uint64_t *b = mt_lang_vocab_bits(lv, lang_id);
    return b && id >= 0 && id < lv->V && mt_bit_has(b, id);
}

const uint64_t *mt_lang_vocab_bits(const mt_lang_vocab *lv, int32_t lang_id)
{
    for (int i = 0; lv && i < lv->n_lang; i++)
        if (lv->lang[i] == lang_id)
            return lv->bits + (size_t)i * (size_t)lv->words;
    return NULL;
}

int mt_lang_vocab_vocab(const mt_lang_vocab *lv) { return lv->V; }
