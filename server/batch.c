/* batch: split -> check limits -> decode all sentences together -> join. */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "splitter.h"

typedef struct {
    int    text;            /* which input text */
    size_t start, len;      /* the sentence is texts[text][start .. start+len) */
    char  *s;               /* NUL-terminated copy for mt_translate */
    int    n_tokens;        /* source tokens, </s> included */
    mt_translation tr;      /* its translation */
} sentence;

typedef struct {
    sentence *v;
    int       n, cap;
} sentence_list;

int srv_default_beam(const srv_model *m)
{
    int b = m->info->default_beam > 0 ? m->info->default_beam : 1;
    if (b > SRV_MAX_BEAM)
        b = SRV_MAX_BEAM;
    return b > m->sparams.max_batch ? m->sparams.max_batch : b;
}

static void sentences_free(sentence_list *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->v[i].s);
        mt_translation_free(&l->v[i].tr, 1);
    }
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
    if (!(s->s = strndup(t + start, len)))
        return -1;
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

/* ---- limits ------------------------------------------------------------------------- */

static int count_tokens(srv_server *srv, const srv_model *m, sentence_list *l, long *total,
                        srv_response *resp)
{
    int max = m->sparams.max_src_len;
    int32_t *ids = malloc(sizeof *ids * (size_t)max);
    if (!ids)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    *total = 0;
    for (int i = 0; i < l->n; i++) {
        mt_err err = { 0 };
        sentence *s = &l->v[i];
        mt_status st = mt_tokenizer_encode(m->tok, s->s, s->len, 0, ids, max, &s->n_tokens, &err);
        if (st == MT_ERR_TOO_LONG) {
            free(ids);
            return srv_fail(resp, SRV_E_INPUT_TOO_LONG,
                            "a sentence of text %d has %d tokens; the limit is %d per sentence",
                            s->text, s->n_tokens, max);
        }
        if (st != MT_OK) {
            free(ids);
            return srv_fail_mt(resp, &err);
        }
        *total += s->n_tokens;
    }
    free(ids);
    if (*total > srv->opts.max_tokens)
        return srv_fail(resp, SRV_E_INPUT_TOO_LONG,
                        "the request has %ld source tokens; the limit is %d", *total,
                        srv->opts.max_tokens);
    return 0;
}

/* ---- decode --------------------------------------------------------------------------- */

/* (tokens, index) pairs, ordered by tokens then index. */
static int by_tokens(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : (x[1] > y[1]);
}

/* Sentence indices, shortest first, so that a chunk wastes little padding. */
static int *length_order(const sentence_list *l)
{
    int *pairs = malloc(sizeof *pairs * 2 * (size_t)l->n);
    int *order = malloc(sizeof *order * (size_t)l->n);
    if (!pairs || !order) {
        free(pairs);
        free(order);
        return NULL;
    }
    for (int i = 0; i < l->n; i++)
        pairs[2 * i] = l->v[i].n_tokens, pairs[2 * i + 1] = i;
    qsort(pairs, (size_t)l->n, sizeof *pairs * 2, by_tokens);
    for (int i = 0; i < l->n; i++)
        order[i] = pairs[2 * i + 1];
    free(pairs);
    return order;
}

/* All sentences with one session: one mt_translate call when they fit its
 * batch (max_batch / beam sentences), else one call per chunk of that size. */
static int decode_all(srv_model *m, sentence_list *l, const srv_tr_params *p, srv_response *resp)
{
    int group = m->sparams.max_batch / p->beam_size;
    if (group < 1)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "beam_size %d is over the session's batch of %d",
                        p->beam_size, m->sparams.max_batch);
    int *order = length_order(l);
    const char **texts = malloc(sizeof *texts * (size_t)group);
    mt_translation *tmp = calloc((size_t)group, sizeof *tmp);
    mt_session *session = NULL;
    int rc = -1;
    if (!order || !texts || !tmp) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        goto done;
    }
    if (srv_session_take(m->sessions, &session, resp))
        goto done;
    mt_decode_params dp = mt_decode_default_params();
    dp.beam_size = p->beam_size;
    dp.max_length = p->max_length;
    dp.n_best = p->n_best;
    rc = 0;
    for (int c0 = 0; c0 < l->n && rc == 0; c0 += group) {
        int k = l->n - c0 < group ? l->n - c0 : group;
        for (int j = 0; j < k; j++)
            texts[j] = l->v[order[c0 + j]].s;
        mt_err err = { 0 };
        if (mt_translate(session, texts, k, &dp, tmp, &err) != MT_OK) {
            rc = srv_fail_mt(resp, &err);
            break;
        }
        for (int j = 0; j < k; j++)
            l->v[order[c0 + j]].tr = tmp[j];
    }
    srv_sessions_put(m->sessions, session);
done:
    free(order);
    free(texts);
    free(tmp);
    return rc;
}

/* Batching on: every sentence goes to the model's scheduler as its own
 * sequence, decoded together with the sentences of every other request; this
 * thread waits (and watches its client: one that leaves frees its rows). */
static int decode_scheduled(srv_model *m, sentence_list *l, const srv_tr_params *p, srv_response *resp)
{
    int n = l->n, max = m->sparams.max_src_len, rc = -1;
    srv_seq_req *items = calloc((size_t)n + 1, sizeof *items);
    mt_hyp *hyps = calloc((size_t)n * (size_t)p->n_best + 1, sizeof *hyps);
    int32_t **ids = calloc((size_t)n + 1, sizeof *ids);
    if (!items || !hyps || !ids) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        mt_err err = { 0 };
        int n_ids = 0;
        if (!(ids[i] = malloc(sizeof(int32_t) * (size_t)max))) {
            srv_fail(resp, SRV_E_INTERNAL, "out of memory");
            goto done;
        }
        if (mt_tokenizer_encode(m->tok, l->v[i].s, l->v[i].len, 0, ids[i], max, &n_ids, &err) != MT_OK) {
            srv_fail_mt(resp, &err);
            goto done;
        }
        items[i] = (srv_seq_req){ .src = ids[i], .n_src = n_ids, .hyps = hyps + (long)i * p->n_best };
    }
    mt_decode_params dp = mt_decode_default_params();
    dp.beam_size = p->beam_size;
    dp.max_length = p->max_length;
    dp.n_best = p->n_best;
    srv_request *req = srv_current_request();
    mt_err err = { 0 };
    int gone = 0;
    mt_status st = srv_sched_run(m->sched, items, n, &dp, req ? req->client_gone : NULL, req ? req->conn : NULL,
                                 &gone, &err);
    if (gone) {
        srv_fail(resp, SRV_E_CLIENT_GONE, "the client went away");
        goto done;
    }
    if (st != MT_OK) {
        srv_fail_mt(resp, &err);
        goto done;
    }
    for (int i = 0; i < n; i++) {       /* each sentence takes its ids and hypotheses */
        mt_translation *tr = &l->v[i].tr;
        tr->src_ids = ids[i];
        tr->n_src = items[i].n_src;
        ids[i] = NULL;
        if (!(tr->hyps = malloc(sizeof *tr->hyps * (size_t)p->n_best))) {
            srv_fail(resp, SRV_E_INTERNAL, "out of memory");
            goto done;
        }
        memcpy(tr->hyps, hyps + (long)i * p->n_best, sizeof *tr->hyps * (size_t)p->n_best);
        memset(hyps + (long)i * p->n_best, 0, sizeof *hyps * (size_t)p->n_best);
        tr->n_hyps = p->n_best;
        for (int k = 0; k < p->n_best; k++)
            if (mt_tokenizer_decode(m->tok, tr->hyps[k].ids, tr->hyps[k].n_ids, &tr->hyps[k].text, &err) != MT_OK) {
                srv_fail_mt(resp, &err);
                goto done;
            }
    }
    rc = 0;
done:
    if (hyps)
        mt_hyps_free(hyps, n * p->n_best);
    for (int i = 0; ids && i < n; i++)
        free(ids[i]);
    free(ids);
    free(hyps);
    free(items);
    return rc;
}

/* ---- join ------------------------------------------------------------------------------ */

static const char *hyp_text(const sentence *s, int alt)
{
    if (s->tr.n_hyps <= 0)
        return "";
    const mt_hyp *h = &s->tr.hyps[alt < s->tr.n_hyps ? alt : s->tr.n_hyps - 1];
    return h->text ? h->text : "";
}

/* Text t with sentences l->v[first .. first+count) replaced by hypothesis alt. */
static char *join_text(const char *t, const sentence_list *l, int first, int count, int alt)
{
    size_t len = strlen(t), size = len + 1;
    for (int i = first; i < first + count; i++)
        size += strlen(hyp_text(&l->v[i], alt));
    char *out = malloc(size), *o = out;
    if (!out)
        return NULL;
    size_t pos = 0;
    for (int i = first; i < first + count; i++) {
        const sentence *s = &l->v[i];
        const char *h = hyp_text(s, alt);
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
static int join_ids(const srv_model *m, const sentence_list *l, int first, int count,
                    srv_tr_result *r)
{
    int n = 0;
    for (int i = first; i < first + count; i++)
        n += l->v[i].tr.n_hyps > 0 ? l->v[i].tr.hyps[0].n_ids : 0;
    r->ids = malloc(sizeof *r->ids * (size_t)(n + 1));
    if (!r->ids)
        return -1;
    for (int i = first; i < first + count; i++) {
        if (l->v[i].tr.n_hyps <= 0)
            continue;
        const mt_hyp *h = &l->v[i].tr.hyps[0];
        r->score += h->score;
        for (int k = 0; k < h->n_ids; k++)
            if (h->ids[k] != m->info->eos_id)
                r->ids[r->n_ids++] = h->ids[k];
    }
    return 0;
}

static int build_result(const srv_model *m, const char *t, const sentence_list *l, int first,
                        int count, int n_best, srv_tr_result *r)
{
    memset(r, 0, sizeof *r);
    r->n_sentences = count;
    if (!(r->alts = calloc((size_t)n_best, sizeof *r->alts)))
        return -1;
    for (; r->n_alts < n_best; r->n_alts++)
        if (!(r->alts[r->n_alts] = join_text(t, l, first, count, r->n_alts)))
            return -1;
    return join_ids(m, l, first, count, r);
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

/* ---- API ----------------------------------------------------------------------------- */

static long generated_tokens(const sentence_list *l)
{
    long n = 0;
    for (int i = 0; i < l->n; i++)
        n += l->v[i].tr.n_hyps > 0 ? l->v[i].tr.hyps[0].n_ids : 0;
    return n;
}

int srv_translate_texts(srv_server *srv, srv_model *m, const char *const *texts, int n,
                        const srv_tr_params *p, srv_tr_result *out, srv_response *resp)
{
    sentence_list l = { 0 };
    int *first = malloc(sizeof *first * (size_t)(n + 1));
    long src_tokens = 0;
    int rc = -1;
    memset(out, 0, sizeof *out * (size_t)n);
    if (!first) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        first[i] = l.n;
        if (split_text(&l, i, texts[i], p->split)) {
            srv_fail(resp, SRV_E_INTERNAL, "out of memory");
            goto done;
        }
    }
    first[n] = l.n;
    if (count_tokens(srv, m, &l, &src_tokens, resp) ||
        (m->sched ? decode_scheduled(m, &l, p, resp) : decode_all(m, &l, p, resp)))
        goto done;
    srv_metrics_tokens(m->index, src_tokens, generated_tokens(&l));
    for (int i = 0; i < n; i++)
        if (build_result(m, texts[i], &l, first[i], first[i + 1] - first[i], p->n_best, &out[i])) {
            srv_tr_results_free(out, i + 1);
            srv_fail(resp, SRV_E_INTERNAL, "out of memory");
            goto done;
        }
    rc = 0;
done:
    sentences_free(&l);
    free(first);
    return rc;
}
