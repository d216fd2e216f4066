/* pipeline: split -> tokenize once -> decode -> detokenize -> join (pipeline.h). */
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "splitter.h"

typedef struct {
    int      text;          /* which input text */
    size_t   start, len;    /* the sentence is texts[text][start .. start+len) */
    int32_t *ids;           /* its source tokens, </s> included: tokenized once */
    int      n_ids;
    mt_hyp  *hyps;          /* [n_best], decoded, then with text */
} sentence;

typedef struct {
    sentence *v;
    int       n, cap;
} sentence_list;

struct srv_tr {
    srv_tr_model       m;
    srv_tr_params      p;
    const char *const *texts;
    int                n_texts;
    int               *first;       /* [n_texts + 1]: each text's first sentence */
    sentence_list      l;
    srv_seq_req       *items;       /* [l.n] */
    mt_hyp            *hyps;        /* [l.n][n_best] */
    srv_decode_job     job;
    long               src_tokens;
};

static void sentences_free(sentence_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i].ids);
    free(l->v);
}

/* ---- split ------------------------------------------------------------------------ */

static int push_sentence(sentence_list *l, int text, const char *t, size_t start, size_t len)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        sentence *v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    sentence *s = &l->v[l->n];
    memset(s, 0, sizeof *s);
    s->text = text;
    s->start = start;
    s->len = len;
    l->n++;
    return 0;
}

static int is_ascii_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* The whole text as one sentence, outer ASCII whitespace left in the gaps. */
static int push_whole(sentence_list *l, int text, const char *t, size_t len)
{
    size_t a = 0, b = len;
    while (a < b && is_ascii_space(t[a]))
        a++;
    while (b > a && is_ascii_space(t[b - 1]))
        b--;
    return push_sentence(l, text, t, a, b - a);
}

static int split_text(sentence_list *l, int text, const char *t, int split)
{
    size_t len = strlen(t);
    int n = split ? mt_split_sentences(t, len, NULL, 0) : 0;
    if (n <= 0)
        return push_whole(l, text, t, len);
    mt_span *spans = malloc(sizeof *spans * (size_t)n);
    if (!spans)
        return -1;
    n = mt_split_sentences(t, len, spans, n);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = push_sentence(l, text, t, spans[i].start, spans[i].len);
    free(spans);
    return rc;
}

/* ---- join ------------------------------------------------------------------------------ */

static const char *hyp_text(const sentence *s, int n_best, int alt)
{
    const mt_hyp *h = &s->hyps[alt < n_best ? alt : n_best - 1];
    return h->text ? h->text : "";
}

/* Text t with sentences l->v[first .. first+count) replaced by hypothesis alt. */
static char *join_text(const char *t, const sentence_list *l, int first, int count, int n_best, int alt)
{
    size_t len = strlen(t), size = len + 1;
    for (int i = first; i < first + count; i++)
        size += strlen(hyp_text(&l->v[i], n_best, alt));
    char *out = malloc(size), *o = out;
    if (!out)
        return NULL;
    size_t pos = 0;
    for (int i = first; i < first + count; i++) {
        const sentence *s = &l->v[i];
        const char *h = hyp_text(s, n_best, alt);
        memcpy(o, t + pos, s->start - pos);
        o += s->start - pos;
        memcpy(o, h, strlen(h));
        o += strlen(h);
        pos = s->start + s->len;
    }
    memcpy(o, t + pos, len - pos);
    o[len - pos] = 0;
    return out;
}

/* The best hypothesis' ids of sentences [first, first+count), </s> dropped. */
static int join_ids(int32_t eos, const sentence_list *l, int first, int count, srv_tr_result *r)
{
    int n = 0;
    for (int i = first; i < first + count; i++)
        n += l->v[i].hyps[0].n_ids;
    r->ids = malloc(sizeof *r->ids * (size_t)(n + 1));
    if (!r->ids)
        return -1;
    for (int i = first; i < first + count; i++) {
        const mt_hyp *h = &l->v[i].hyps[0];
        r->score += h->score;
        for (int k = 0; k < h->n_ids; k++)
            if (h->ids[k] != eos)
                r->ids[r->n_ids++] = h->ids[k];
    }
    return 0;
}

static int build_result(const srv_tr *t, int text, srv_tr_result *r)
{
    int first = t->first[text], count = t->first[text + 1] - first, n_best = t->p.n_best;
    memset(r, 0, sizeof *r);
    r->n_sentences = count;
    if (!(r->alts = calloc((size_t)n_best, sizeof *r->alts)))
        return -1;
    for (; r->n_alts < n_best; r->n_alts++)
        if (!(r->alts[r->n_alts] = join_text(t->texts[text], &t->l, first, count, n_best, r->n_alts)))
            return -1;
    return join_ids(t->m.eos_id, &t->l, first, count, r);
}

void srv_tr_results_free(srv_tr_result *r, int n)
{
    for (int i = 0; r && i < n; i++) {
        for (int k = 0; k < r[i].n_alts; k++)
            free(r[i].alts[k]);
        free(r[i].alts);
        free(r[i].ids);
        memset(&r[i], 0, sizeof r[i]);
    }
}

/* ---- tokenize, once ------------------------------------------------------------------ */

/* Every sentence's ids, kept for the decoder; the limits are checked on them. */
static mt_status tokenize(srv_tr *t, mt_err *err)
{
    int max = t->m.max_src_len;
    for (int i = 0; i < t->l.n; i++) {
        sentence *s = &t->l.v[i];
        if (!(s->ids = malloc(sizeof *s->ids * (size_t)max)))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        /* a multilingual model's target-language token goes first, as the
         * Hugging Face tokenizer puts a leading ">>fra<<" */
        int pre = t->m.has_lang;
        if (pre)
            s->ids[0] = t->m.lang_id;
        mt_status st = mt_tokenizer_encode(t->m.tok, t->texts[s->text] + s->start, s->len, 0, s->ids + pre,
                                           max - pre, &s->n_ids, err);
        s->n_ids += pre;
        if (st == MT_ERR_TOO_LONG)
            return mt_err_set(err, MT_ERR_TOO_LONG, "a sentence of text %d has %d tokens; the limit is %d per sentence",
                              s->text, s->n_ids, max);
        if (st != MT_OK)
            return st;
        t->src_tokens += s->n_ids;
    }
    if (t->m.max_tokens > 0 && t->src_tokens > t->m.max_tokens)
        return mt_err_set(err, MT_ERR_TOO_LONG, "the request has %ld source tokens; the limit is %ld",
                          t->src_tokens, t->m.max_tokens);
    return MT_OK;
}

/* ---- API ----------------------------------------------------------------------------- */

mt_status srv_tr_new(const srv_tr_model *m, const char *const *texts, int n, const srv_tr_params *p,
                     srv_tr **out, mt_err *err)
{
    *out = NULL;
    srv_tr *t = calloc(1, sizeof *t);
    if (!t || !(t->first = malloc(sizeof *t->first * (size_t)(n + 1)))) {
        free(t);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    t->m = *m;
    t->p = *p;
    if (t->p.n_best < 1)
        t->p.n_best = 1;
    t->texts = texts;
    t->n_texts = n;
    mt_status st = MT_OK;
    for (int i = 0; i < n && st == MT_OK; i++) {
        t->first[i] = t->l.n;
        if (split_text(&t->l, i, texts[i], p->split))
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    t->first[n] = t->l.n;
    if (st == MT_OK)
        st = tokenize(t, err);
    long nb = (long)t->l.n * t->p.n_best;
    if (st == MT_OK && (!(t->items = calloc((size_t)t->l.n + 1, sizeof *t->items)) ||
                        !(t->hyps = calloc((size_t)nb + 1, sizeof *t->hyps))))
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (st != MT_OK) {
        srv_tr_free(t);
        return st;
    }
    for (int i = 0; i < t->l.n; i++) {
        sentence *s = &t->l.v[i];
        s->hyps = t->hyps + (long)i * t->p.n_best;
        t->items[i] = (srv_seq_req){ .src = s->ids, .n_src = s->n_ids, .hyps = s->hyps };
    }
    mt_decode_params dp = mt_decode_default_params();
    dp.beam_size = t->p.beam_size;
    dp.max_length = t->p.max_length;
    dp.n_best = t->p.n_best;
    srv_decode_job_init(&t->job, t->items, t->l.n, &dp);
    *out = t;
    return MT_OK;
}

srv_decode_job *srv_tr_job(srv_tr *t)
{
    return &t->job;
}

mt_status srv_tr_finish(srv_tr *t, srv_tr_result *out, mt_err *err)
{
    memset(out, 0, sizeof *out * (size_t)t->n_texts);
    for (int i = 0; i < t->l.n; i++)
        for (int k = 0; k < t->p.n_best; k++) {
            mt_hyp *h = &t->l.v[i].hyps[k];
            mt_status st = mt_tokenizer_decode(t->m.tok, h->ids, h->n_ids, &h->text, err);
            if (st != MT_OK)
                return st;
        }
    for (int i = 0; i < t->n_texts; i++)
        if (build_result(t, i, &out[i])) {
            srv_tr_results_free(out, i + 1);
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        }
    return MT_OK;
}

void srv_tr_free(srv_tr *t)
{
    if (!t)
        return;
    if (t->hyps)
        mt_hyps_free(t->hyps, t->l.n * t->p.n_best);
    free(t->hyps);
    free(t->items);
    sentences_free(&t->l);
    free(t->first);
    free(t);
}

long srv_tr_src_tokens(const srv_tr *t)
{
    return t->src_tokens;
}

long srv_tr_gen_tokens(const srv_tr *t)
{
    long n = 0;
    for (int i = 0; t->hyps && i < t->l.n; i++)
        n += t->l.v[i].hyps[0].n_ids;
    return n;
}

const int32_t *srv_tr_source(const srv_tr *t, int i, int *n_src)
{
    *n_src = t->l.v[i].n_ids;
    return t->l.v[i].ids;
}

const mt_hyp *srv_tr_best(const srv_tr *t, int i)
{
    return &t->l.v[i].hyps[0];
}

void srv_tr_span(const srv_tr *t, int i, int *text, size_t *start, size_t *len)
{
    *text = t->l.v[i].text;
    *start = t->l.v[i].start;
    *len = t->l.v[i].len;
}

int srv_tr_texts(const srv_tr *t)
{
    return t->n_texts;
}

const char *srv_tr_text(const srv_tr *t, int i)
{
    return t->texts[i];
}

int srv_tr_sentences(const srv_tr *t)
{
    return t->l.n;
}
