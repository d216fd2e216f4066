/* pipeline: split -> tokenize once -> decode -> detokenize -> join (pipeline.h). */
#include "pipeline.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protect.h"
#include "splitter.h"
#include "text/placeholders.h"
#include "title_case.h"
#include "util/check.h"
#include "word_align.h"

typedef struct {
    int      text;          /* which input text */
    size_t   start, len;    /* the sentence is texts[text][start .. start+len) */
    int32_t *ids;           /* its source tokens, </s> included: tokenized once */
    int      n_ids;
    mt_hyp  *hyps;          /* [n_best], decoded, then with text */
    int32_t *prefix;        /* its text's target prefix, tokenized (NULL: none) */
    mt_decode_params dp;    /* its own decoding parameters (its prefix, its seed, its terms) */
    mt_constraint cons[MT_MAX_CONSTRAINTS];   /* its glossary terms as the engine takes them */
    srv_term_match terms[MT_MAX_CONSTRAINTS]; /* ... and where they are in the sentence */
    int      n_cons;
    int32_t *cons_ids;      /* their target ids, one term after the other */
    char    *key;           /* its cache key (NULL: not cached) */
    size_t   key_len;
    int      cached;        /* 1: ids and hyps came from the cache */
    size_t   out_at;        /* where its best translation starts in the joined text */
    srv_protected ph;       /* its placeholders kept out of the model (ph.n == 0: none) */
    char    *folded;        /* NULL, or what the model reads in sentence case (title_case.h) */
    int      recap;         /* 1: folded is a lone word lowered; its translations' first letter goes up */
    char   **filled;        /* [n_filled] with ph.n: each hypothesis with the placeholders back */
    int      n_filled;
    long    *tmap;          /* the best one's code points -> filled[0]'s (protect.h) */
    size_t  *ph_at;         /* [ph.n] each placeholder's byte offset in filled[0] */
    mt_stop_match *stop;    /* srv_tr_params.stop watched in its output (NULL: none) */
    int      stopped;       /* its decoding ended at a stop string (the decoder's thread writes it) */
} sentence;

typedef struct {
    sentence *v;
    int       n;
    size_t    cap;
} sentence_list;

struct srv_tr {
    srv_tr_model       m;
    srv_tr_params      p;
    const char *const *texts;
    int                n_texts;
    int               *first;       /* [n_texts + 1]: each text's first sentence */
    sentence_list      l;
    srv_seq_req       *items;       /* [n_items]: the sentences to decode (not cached) */
    int               *item_sent;   /* [n_items]: item -> sentence */
    int                n_items;
    mt_hyp            *hyps;        /* [l.n][n_best] */
    srv_decode_job     job;
    long               src_tokens;
};

static void sentences_free(sentence_list *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->v[i].ids);
        free(l->v[i].prefix);
        free(l->v[i].cons_ids);
        free(l->v[i].key);
        srv_protected_free(&l->v[i].ph);
        free(l->v[i].folded);
        for (int k = 0; k < l->v[i].n_filled; k++)
            free(l->v[i].filled[k]);
        free(l->v[i].filled);
        free(l->v[i].tmap);
        free(l->v[i].ph_at);
        mt_stop_match_free(l->v[i].stop);
    }
    free(l->v);
}

/* Sentence s as written: its text, or that text without its placeholders. */
static const char *written_text(const srv_tr *t, const sentence *s, size_t *len)
{
    if (s->ph.n) {
        *len = s->ph.len;
        return s->ph.text;
    }
    *len = s->len;
    return t->texts[s->text] + s->start;
}

/* What the model sees of sentence s: written_text, in sentence case when it
 * was in Title Case (the same bytes long: every offset holds in both). */
static const char *model_text(const srv_tr *t, const sentence *s, size_t *len)
{
    const char *text = written_text(t, s, len);
    return s->folded ? s->folded : text;
}

/* ---- split ------------------------------------------------------------------------ */

static int push_sentence(sentence_list *l, int text, const char *t, size_t start, size_t len)
{
    if (MT_GROW(l->v, l->cap, (size_t)l->n + 1))
        return -1;
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

/* Sentences joined where a placeholder runs across their boundary (an ICU
 * message with a full stop inside, a URL): it must be in one sentence whole. */
static int join_across(const char *t, size_t len, mt_span *spans, int n)
{
    int m = 0;
    size_t i = 0;
    for (int k = 0; k < n; k++) {
        if (m > 0) {
            size_t end = spans[m - 1].start + spans[m - 1].len;
            for (; i < end;) {                  /* the placeholders up to the previous sentence's end */
                char kind;
                size_t w = srv_ph_at(t, i, len, 0, &kind);
                if (w && i + w > end)
                    break;
                i += w ? w : 1;
            }
            if (i < end) {                      /* one starting at i crosses it */
                spans[m - 1].len = spans[k].start + spans[k].len - spans[m - 1].start;
                continue;
            }
        }
        spans[m++] = spans[k];
    }
    return m;
}

static int split_text(sentence_list *l, int text, const char *t, int split, int placeholders)
{
    size_t len = strlen(t);
    int n = split ? mt_split_sentences(t, len, NULL, 0) : 0;
    if (n <= 0)
        return push_whole(l, text, t, len);
    mt_span *spans = malloc(sizeof *spans * (size_t)n);
    if (!spans)
        return -1;
    n = mt_split_sentences(t, len, spans, n);
    if (placeholders)
        n = join_across(t, len, spans, n);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = push_sentence(l, text, t, spans[i].start, spans[i].len);
    free(spans);
    return rc;
}

/* ---- join ------------------------------------------------------------------------------ */

static const char *hyp_text(const sentence *s, int n_best, int alt)
{
    int k = alt < n_best ? alt : n_best - 1;
    if (s->filled)
        return s->filled[k] ? s->filled[k] : "";
    const mt_hyp *h = &s->hyps[k];
    return h->text ? h->text : "";
}

/* Text t with sentences l->v[first .. first+count) replaced by hypothesis alt
 * (alt 0: each sentence's out_at is set). */
static char *join_text(const char *t, sentence_list *l, int first, int count, int n_best, int alt)
{
    size_t len = strlen(t), size = len + 1;
    for (int i = first; i < first + count; i++)
        size += strlen(hyp_text(&l->v[i], n_best, alt));
    char *out = malloc(size), *o = out;
    if (!out)
        return NULL;
    size_t pos = 0;
    for (int i = first; i < first + count; i++) {
        sentence *s = &l->v[i];
        const char *h = hyp_text(s, n_best, alt);
        memcpy(o, t + pos, s->start - pos);
        o += s->start - pos;
        if (alt == 0)
            l->v[i].out_at = (size_t)(o - out);
        memcpy(o, h, strlen(h));
        o += strlen(h);
        pos = s->start + s->len;
    }
    memcpy(o, t + pos, len - pos);
    o[len - pos] = 0;
    return out;
}

/* The best hypothesis' ids of sentences [first, first+count), </s> dropped
 * (and their log-probs when the hypotheses carry them). */
static int join_ids(int32_t eos, const sentence_list *l, int first, int count, srv_tr_result *r)
{
    int n = 0, with_lp = count > 0 && l->v[first].hyps[0].token_logp;
    for (int i = first; i < first + count; i++)
        n += l->v[i].hyps[0].n_ids;
    r->ids = malloc(sizeof *r->ids * (size_t)(n + 1));
    if (!r->ids || (with_lp && !(r->token_logp = malloc(sizeof(float) * (size_t)(n + 1)))))
        return -1;
    for (int i = first; i < first + count; i++) {
        const mt_hyp *h = &l->v[i].hyps[0];
        r->score += h->score;
        for (int k = 0; k < h->n_ids; k++)
            if (h->ids[k] != eos) {
                if (with_lp && h->token_logp)
                    r->token_logp[r->n_ids] = h->token_logp[k];
                r->ids[r->n_ids++] = h->ids[k];
            }
    }
    return 0;
}

/* Ids of a sentence around its pieces: before them (the language token,
 * unless it goes last) and after them (</s>, then the legacy language token). */
static int ids_before(const srv_tr *t) { return t->m.has_lang && !t->m.lang_after; }
static int ids_after(const srv_tr *t) { return 1 + (t->m.has_lang && t->m.lang_after); }

/* Hypothesis h's target ids without </s> into tgt, and each one's source piece
 * (an index into the sentence's pieces: ids past the language token, </s>
 * dropped; -1 none) into al: their count. */
static int hyp_tokens(const srv_tr *t, const sentence *s, const mt_hyp *h, int32_t *tgt, int32_t *al)
{
    int pre = ids_before(t), n_src = s->n_ids - pre - ids_after(t), k = 0;
    for (int j = 0; j < h->n_ids; j++) {
        if (h->ids[j] == t->m.eos_id)
            continue;
        int a = h->align ? h->align[j] - pre : -1;
        tgt[k] = h->ids[j];
        al[k++] = a >= 0 && a < n_src ? a : -1;
    }
    return k;
}

/* The word links of hypothesis h (its text ht) over the text the model saw
 * of sentence s, offsets from 0, into *out.  0, or -1 out of memory. */
static int model_links(const srv_tr *t, const sentence *s, const mt_hyp *h, const char *ht, srv_links *out)
{
    int pre = ids_before(t);
    int32_t *tgt = malloc(sizeof *tgt * (size_t)(h->n_ids + 1)), *al = malloc(sizeof *al * (size_t)(h->n_ids + 1));
    int rc = -1;
    if (tgt && al) {
        size_t len;
        const char *src = model_text(t, s, &len);
        int k = hyp_tokens(t, s, h, tgt, al);
        rc = srv_word_links(t->m.tok, src, len, s->ids + pre, s->n_ids - pre - ids_after(t), ht, strlen(ht), tgt, k, al, 0, 0,
                            out);
    }
    free(tgt);
    free(al);
    return rc;
}

/* The end of the span that code points [a, b) map to by m, up to the first gap
 * (a placeholder taken out between them): "read." of the model's "read %s."
 * is "read" of the sentence. */
static long run_end(const long *m, long a, long b)
{
    long k = a;
    while (k + 1 < b && m[k + 1] == m[k] + 1)
        k++;
    return m[k] + 1;
}

static int by_target(const void *a, const void *b)
{
    const long *x = a, *y = b;
    return x[2] != y[2] ? (x[2] > y[2]) - (x[2] < y[2]) : (x[0] > y[0]) - (x[0] < y[0]);
}

/* Sentence s's word links (placeholders taken out) moved from the model's text
 * to the sentence (s->ph.orig) and from the decoded text to the output
 * (s->tmap), each span cut where a placeholder was taken out of it, and each
 * placeholder linked to where it is in the output, in target order, plus
 * src_cp0 and tgt_cp0, onto out. */
static int protected_links(const srv_tr *t, const sentence *s, long src_cp0, long tgt_cp0, srv_links *out)
{
    const mt_hyp *h = &s->hyps[0];
    const char *src = t->texts[s->text] + s->start;
    srv_links local = { 0 };
    int rc = model_links(t, s, h, h->text ? h->text : "", &local), first = out->n;
    if (rc == 0 && mt_grow(&out->v, &out->cap, (size_t)(out->n + local.n + s->ph.n), sizeof(long) * 4, 32))
        rc = -1;
    for (int k = 0; rc == 0 && k < local.n; k++) {
        const long *l = local.v + 4 * k;
        long *v = out->v + 4 * (long)out->n++;
        v[0] = src_cp0 + s->ph.orig[l[0]];
        v[1] = src_cp0 + run_end(s->ph.orig, l[0], l[1]);
        v[2] = tgt_cp0 + s->tmap[l[2]];
        v[3] = tgt_cp0 + run_end(s->tmap, l[2], l[3]);
    }
    for (int k = 0; rc == 0 && k < s->ph.n; k++) {
        const srv_ph_point *p = &s->ph.pts[k];
        long *v = out->v + 4 * (long)out->n++, n = srv_cp_count(src + p->at, p->len);
        v[0] = src_cp0 + srv_cp_count(src, p->at);
        v[1] = v[0] + n;
        v[2] = tgt_cp0 + srv_cp_count(s->filled[0], s->ph_at[k]);
        v[3] = v[2] + n;
    }
    if (rc == 0)
        qsort(out->v + 4 * (long)first, (size_t)(out->n - first), sizeof(long) * 4, by_target);
    free(local.v);
    return rc;
}

/* Token and word links of sentences [first, first+count) of text t (alts[0]
 * already joined): source ids without </s> nor the language token, links
 * (index into src_ids, index into ids). */
static int join_align(const srv_tr *t, int text, int first, int count, srv_tr_result *r)
{
    const sentence_list *l = &t->l;
    int pre = ids_before(t), ns = 0, nt = 0, n_al = 0;
    for (int i = first; i < first + count; i++)
        ns += l->v[i].n_ids, nt += l->v[i].hyps[0].n_ids;
    r->src_ids = malloc(sizeof(int32_t) * (size_t)(ns + 1));
    r->align = malloc(sizeof(int) * 2 * (size_t)(nt + 1));
    if (!r->src_ids || !r->align)
        return -1;
    srv_links links = {0};
    int32_t *tgt = malloc(sizeof(int32_t) * (size_t)(nt + 1)), *al = malloc(sizeof(int32_t) * (size_t)(nt + 1));
    int rc = tgt && al ? 0 : -1, out_tok = 0;
    const char *src_text = t->texts[text], *out = r->alts[0];
    for (int i = first; i < first + count && rc == 0; i++) {
        const sentence *s = &l->v[i];
        const mt_hyp *h = &s->hyps[0];
        if (s->ph.verbatim)                 /* not decoded: no token, no link */
            continue;
        int src0 = r->n_src_ids, n_src = s->n_ids - pre - ids_after(t);  /* its pieces: ids[pre ..) */
        for (int j = 0; j < n_src; j++)
            r->src_ids[r->n_src_ids++] = s->ids[pre + j];
        int k = hyp_tokens(t, s, h, tgt, al);
        for (int j = 0; j < k; j++, out_tok++)
            if (al[j] >= 0) {
                r->align[2 * n_al] = src0 + al[j];
                r->align[2 * n_al++ + 1] = out_tok;
            }
        const char *ht = h->text ? h->text : "";
        long cp0s = srv_cp_count(src_text, s->start), cp0t = srv_cp_count(out, s->out_at);
        rc = s->ph.n ? protected_links(t, s, cp0s, cp0t, &links)
                     : srv_word_links(t->m.tok, src_text + s->start, s->len, s->ids + pre, n_src, ht, strlen(ht), tgt,
                                      k, al, cp0s, cp0t, &links);
    }
    r->n_align = n_al;
    r->words = links.v;
    r->n_words = links.n;
    free(tgt);
    free(al);
    return rc;
}

static int build_result(srv_tr *t, int text, srv_tr_result *r)
{
    int first = t->first[text], count = t->first[text + 1] - first, n_best = t->p.dp.n_best;
    memset(r, 0, sizeof *r);
    r->n_sentences = count;
    if (!(r->alts = calloc((size_t)n_best, sizeof *r->alts)))
        return -1;
    for (; r->n_alts < n_best; r->n_alts++)
        if (!(r->alts[r->n_alts] = join_text(t->texts[text], &t->l, first, count, n_best, r->n_alts)))
            return -1;
    if (join_ids(t->m.eos_id, &t->l, first, count, r))
        return -1;
    for (int i = first; i < first + count; i++)
        r->stopped |= t->l.v[i].stopped;
    return t->p.dp.alignment.enabled ? join_align(t, text, first, count, r) : 0;
}

void srv_tr_results_free(srv_tr_result *r, int n)
{
    for (int i = 0; r && i < n; i++) {
        for (int k = 0; k < r[i].n_alts; k++)
            free(r[i].alts[k]);
        free(r[i].alts);
        free(r[i].ids);
        free(r[i].token_logp);
        free(r[i].src_ids);
        free(r[i].align);
        free(r[i].words);
        memset(&r[i], 0, sizeof r[i]);
    }
}

/* ---- tokenize, once ------------------------------------------------------------------ */

/* The caller's ids (srv_tr_params.given_ids) as a sentence's. */
static mt_status given(const srv_tr *t, int32_t *ids, int max, int *n, mt_err *err)
{
    (void)err;
    *n = t->p.n_given;
    if (t->p.n_given > max)
        return MT_ERR_TOO_LONG;
    memcpy(ids, t->p.given_ids, sizeof *ids * (size_t)t->p.n_given);
    return MT_OK;
}

/* Every sentence's ids, kept for the decoder; the limits are checked on them. */
static mt_status tokenize(srv_tr *t, mt_err *err)
{
    int max = t->m.max_src_len;
    for (int i = 0; i < t->l.n; i++) {
        sentence *s = &t->l.v[i];
        if (s->cached) {
            t->src_tokens += s->n_ids;
            continue;
        }
        if (s->ph.verbatim)                 /* kept as written: never decoded */
            continue;
        if (!(s->ids = malloc(sizeof *s->ids * (size_t)max)))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        /* a multilingual model's target-language token goes first, as the
         * Hugging Face tokenizer puts a leading ">>fra<<" */
        int pre = ids_before(t), post = ids_after(t) - 1;
        if (pre)
            s->ids[0] = t->m.lang_id;
        size_t len;
        const char *text = model_text(t, s, &len);
        mt_status st;
        if (t->p.given_ids)
            st = given(t, s->ids + pre, max - pre - post, &s->n_ids, err);
        else if (t->m.prompt)
            st = mt_prompt_encode_codes(t->m.prompt, t->m.src_name, t->m.src_code[0] ? t->m.src_code : NULL,
                                        t->m.tgt_name, t->m.tgt_code[0] ? t->m.tgt_code : NULL, text, len, s->ids,
                                        max, &s->n_ids, err);
        else
            st = mt_tokenizer_encode(t->m.tok, text, len, 0, s->ids + pre, max - pre - post, &s->n_ids, err);
        s->n_ids += pre;
        if (st == MT_OK && post)            /* legacy_behaviour: [</s>, code] closes the source */
            s->ids[s->n_ids++] = t->m.lang_id;
        else
            s->n_ids += post;               /* too long: the count it would have, for the message */
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

/* Each prefixed text's target prefix as ids, held by its (only) sentence as
 * [count, ids...]; checked against the decoder length: the prefix, then at
 * least </s>. */
static mt_status tokenize_prefixes(srv_tr *t, mt_err *err)
{
    int max_length = t->p.dp.lengths.max_length;
    for (int i = 0; i < t->n_texts; i++) {
        const srv_prefix *pf = &t->p.prefix[i];
        if (pf->n_ids <= 0 && !pf->text)
            continue;
        sentence *s = &t->l.v[t->first[i]];
        int cap = max_length + 1, n = pf->n_ids;
        if (!(s->prefix = malloc(sizeof(int32_t) * (size_t)(cap + 1))))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        if (n > 0) {
            if (n <= cap)
                memcpy(s->prefix + 1, pf->ids, sizeof(int32_t) * (size_t)n);
        } else {
            mt_status st = mt_tokenizer_encode(t->m.tok, pf->text, strlen(pf->text), 1, s->prefix + 1, cap, &n, err);
            if (st != MT_OK && st != MT_ERR_TOO_LONG)
                return st;
            n--;                                    /* its </s> */
        }
        if (n > max_length - 2)
            return mt_err_set(err, MT_ERR_INPUT, "field 'target_prefix': text %d's prefix has %d tokens; max_length %d "
                              "leaves room for %d", i, n, max_length, max_length - 2);
        s->prefix[0] = n;
        if (n == 0) {                               /* an empty prefix: none */
            free(s->prefix);
            s->prefix = NULL;
        }
    }
    return MT_OK;
}

/* Sentence s's glossary terms as constraints: each match's source span (the
 * pieces of its words) and its target term's ids (the term tokenized as a
 * target text, its </s> dropped), all of them within max_length - 2. */
static mt_status match_terms(srv_tr *t, sentence *s, mt_err *err)
{
    size_t len;
    const char *text = written_text(t, s, &len);     /* a term's case as the user wrote it */
    int n = s->ph.verbatim ? 0 : srv_glossary_match(t->p.glossary, text, len, s->terms, MT_MAX_CONSTRAINTS);
    if (n > MT_MAX_CONSTRAINTS)
        return mt_err_set(err, MT_ERR_INPUT, "field 'glossary': a sentence of text %d holds %d glossary terms; "
                          "the limit is %d per sentence", s->text, n, MT_MAX_CONSTRAINTS);
    s->n_cons = n > 0 ? n : 0;
    return MT_OK;
}

static mt_status constrain(srv_tr *t, sentence *s, mt_err *err)
{
    size_t len;
    const char *text = model_text(t, s, &len);
    int n = s->n_cons;
    s->n_cons = 0;
    if (n <= 0 || s->cached)
        return MT_OK;
    int cap = t->p.dp.lengths.max_length, pre = ids_before(t), used = s->prefix ? (int)s->prefix[0] : 0;
    if (!(s->cons_ids = malloc(sizeof(int32_t) * (size_t)(cap + 1))))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const char *tgt = srv_glossary_target(t->p.glossary, s->terms[i].entry);
        int k = 0, a, b;
        mt_status st = mt_tokenizer_encode(t->m.tok, tgt, strlen(tgt), 1, s->cons_ids + used, cap + 1 - used, &k, err);
        if (st == MT_ERR_TOO_LONG || (st == MT_OK && k - 1 > t->p.dp.lengths.max_length - 2 - used))
            return mt_err_set(err, MT_ERR_INPUT, "field 'glossary': the target terms of a sentence of text %d do not "
                              "fit in max_length %d", s->text, t->p.dp.lengths.max_length);
        if (st != MT_OK)
            return st;
        if (srv_token_span(t->m.tok, text, len, s->ids + pre, s->n_ids - pre - ids_after(t), s->terms[i].start,
                           s->terms[i].end, &a, &b) != 0)
            a = s->n_ids - ids_after(t) - pre, b = a + 1;   /* no piece found: only the deadline places it */
        s->cons[i] = (mt_constraint){.src_start = a + pre, .src_end = b + pre, .ids = s->cons_ids + used,
                                     .n_ids = k - 1};
        used += k - 1;
    }
    s->n_cons = n;
    return MT_OK;
}

/* ---- the cache ------------------------------------------------------------------------ */
/* Keys and values are flat bytes: a growable buffer of them. */
typedef struct { char *p; size_t n, cap; int oom; } bytes;

static void put(bytes *b, const void *x, size_t n)
{
    if (b->oom || n == 0)
        return;
    if (n > SIZE_MAX - b->n || mt_grow(&b->p, &b->cap, b->n + n, 1, 256)) {
        b->oom = 1;
        return;
    }
    memcpy(b->p + b->n, x, n);
    b->n += n;
}

static void put_i32(bytes *b, int32_t x) { put(b, &x, sizeof x); }

/* Everything sentence i's translation depends on: the model, the decoding
 * fields that change an output, the sentence's prefix, terms and seed (when
 * it samples), then its text.  Returned fields that are only asked for
 * (token scores, alignments) count too: an entry holds what was asked. */
static char *cache_key(const srv_tr *t, int i, size_t *len)
{
    const sentence *s = &t->l.v[i];
    const mt_decode_params *d = &t->p.dp;
    bytes b = {0};
    put(&b, t->m.cache_ns, strlen(t->m.cache_ns) + 1);
    if (t->m.prompt) {                      /* the prompt names both languages (TranslateGemma's by code too) */
        put(&b, t->m.src_name, strlen(t->m.src_name) + 1);
        put(&b, t->m.tgt_name, strlen(t->m.tgt_name) + 1);
        put(&b, t->m.src_code, strlen(t->m.src_code) + 1);
        put(&b, t->m.tgt_code, strlen(t->m.tgt_code) + 1);
    } else {
        put(&b, "", 1);                     /* a raw continuation, or Marian */
    }
    int32_t ints[] = { t->m.has_lang ? t->m.lang_id : -1, d->beam_size, d->lengths.max_length, d->n_best,
                       d->lengths.min_length, d->penalties.no_repeat_ngram_size, d->sampling.enabled,
                       d->sampling.top_k, d->token_scores, d->alignment.enabled || s->ph.n, d->alignment.layer,
                       d->alignment.heads, t->m.has_bos ? t->m.bos_id : d->forced_bos.enabled ? d->forced_bos.id : -1,
                       d->penalties.loop_no_repeat, d->penalties.copy_guard };
    float floats[] = { d->length_penalty, d->penalties.repetition, d->sampling.temperature, d->sampling.top_p,
                       d->lengths.max_length_factor };
    uint64_t seed = d->sampling.enabled ? d->sampling.seed + (uint64_t)i : 0;
    put(&b, ints, sizeof ints);
    put(&b, floats, sizeof floats);
    put(&b, &seed, sizeof seed);
    put_i32(&b, t->p.n_stop);                   /* decoding ends at them */
    for (int k = 0; k < t->p.n_stop; k++)
        put(&b, t->p.stop[k], strlen(t->p.stop[k]) + 1);
    int np = s->prefix ? (int)s->prefix[0] : 0;
    put_i32(&b, np);
    put(&b, s->prefix ? s->prefix + 1 : NULL, sizeof(int32_t) * (size_t)np);
    put_i32(&b, s->n_cons);
    for (int k = 0; k < s->n_cons; k++) {
        const char *tgt = srv_glossary_target(t->p.glossary, s->terms[k].entry);
        put_i32(&b, (int32_t)s->terms[k].start);
        put_i32(&b, (int32_t)s->terms[k].end);
        put(&b, tgt, strlen(tgt) + 1);
    }
    size_t n;
    const char *text = model_text(t, s, &n);
    put_i32(&b, s->recap);                      /* the cached text is the one given out */
    put(&b, text, n);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.n;
    return b.p;
}

/* The value: the source ids, then each hypothesis' ids, score, log-probs,
 * alignments and text. */
static int cache_value(const srv_tr *t, const sentence *s, bytes *b)
{
    put_i32(b, s->n_ids);
    put(b, s->ids, sizeof(int32_t) * (size_t)s->n_ids);
    for (int k = 0; k < t->p.dp.n_best; k++) {
        const mt_hyp *h = &s->hyps[k];
        int32_t head[4] = { h->n_ids, h->token_logp != NULL, h->align != NULL,
                            h->text ? (int32_t)strlen(h->text) : 0 };
        put(b, head, sizeof head);
        put(b, &h->score, sizeof h->score);
        put(b, h->ids, sizeof(int32_t) * (size_t)h->n_ids);
        if (h->token_logp)
            put(b, h->token_logp, sizeof(float) * (size_t)h->n_ids);
        if (h->align)
            put(b, h->align, sizeof(int32_t) * (size_t)h->n_ids);
        put(b, h->text, (size_t)head[3]);
    }
    return b->oom ? -1 : 0;
}

/* Reading a value back: each take checks the bytes are there. */
typedef struct { const char *p; size_t left; } reader;

static void *take(reader *r, size_t n)
{
    if (n > r->left)
        return NULL;
    void *x = malloc(n ? n : 1);
    if (x) {
        memcpy(x, r->p, n);
        r->p += n, r->left -= n;
    }
    return x;
}

static int take_into(reader *r, void *out, size_t n)
{
    if (n > r->left)
        return -1;
    memcpy(out, r->p, n);
    r->p += n, r->left -= n;
    return 0;
}

/* Sentence s from a cached value (0), or -1 (then it is decoded as usual). */
static int restore(const srv_tr *t, sentence *s, const char *val, size_t len)
{
    reader r = { val, len };
    int32_t n;
    if (take_into(&r, &n, sizeof n) || n < 1 || n > t->m.max_src_len ||
        !(s->ids = malloc(sizeof(int32_t) * (size_t)t->m.max_src_len)) ||
        take_into(&r, s->ids, sizeof(int32_t) * (size_t)n))
        return -1;
    s->n_ids = n;
    for (int k = 0; k < t->p.dp.n_best; k++) {
        mt_hyp *h = &s->hyps[k];
        int32_t head[4];
        if (take_into(&r, head, sizeof head) || head[0] < 0 || head[3] < 0 || take_into(&r, &h->score, sizeof h->score))
            return -1;
        h->n_ids = head[0];
        if (!(h->ids = take(&r, sizeof(int32_t) * (size_t)h->n_ids)) ||
            (head[1] && !(h->token_logp = take(&r, sizeof(float) * (size_t)h->n_ids))) ||
            (head[2] && !(h->align = take(&r, sizeof(int32_t) * (size_t)h->n_ids))) ||
            !(h->text = malloc((size_t)head[3] + 1)) || take_into(&r, h->text, (size_t)head[3]))
            return -1;
        h->text[head[3]] = 0;
    }
    return 0;
}

/* Every sentence looked up; a hit is neither tokenized nor decoded. */
static mt_status lookup(srv_tr *t, mt_err *err)
{
    for (int i = 0; i < t->l.n; i++) {
        sentence *s = &t->l.v[i];
        void *val;
        size_t len;
        if (s->ph.verbatim)
            continue;
        if (!(s->key = cache_key(t, i, &s->key_len)))
            return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        if (!srv_cache_get(t->m.cache, s->key, s->key_len, &val, &len)) {
            if (!srv_rcache_get(t->m.cache2, s->key, s->key_len, &val, &len))
                continue;
            srv_cache_put(t->m.cache, s->key, s->key_len, val, len);   /* another replica's: here too now */
        }
        s->hyps = t->hyps + (long)i * t->p.dp.n_best;
        if (restore(t, s, val, len) == 0) {
            s->cached = 1;
        } else {                        /* cannot happen with our own values: decode it */
            mt_hyps_free(s->hyps, t->p.dp.n_best);
            free(s->ids);
            s->ids = NULL;
        }
        free(val);
    }
    return MT_OK;
}

/* After srv_tr_finish: each decoded sentence into the cache. */
static void store(srv_tr *t)
{
    bytes b = {0};
    for (int i = 0; i < t->l.n; i++) {
        sentence *s = &t->l.v[i];
        if (!s->key || s->cached)
            continue;
        b.n = 0;
        if (cache_value(t, s, &b) == 0) {
            srv_cache_put(t->m.cache, s->key, s->key_len, b.p, b.n);
            srv_rcache_put(t->m.cache2, s->key, s->key_len, b.p, b.n);
        }
    }
    free(b.p);
}

/* ---- API ----------------------------------------------------------------------------- */

static int prefixed(const srv_tr *t, int text)
{
    return t->p.prefix && (t->p.prefix[text].n_ids > 0 || t->p.prefix[text].text);
}

/* Text i's placeholders are kept out of the model: asked, a model with
 * alignments, no prefix (the output must start with it as given). */
static int protecting(const srv_tr *t, int text)
{
    return t->p.placeholders && !t->m.no_align && !prefixed(t, text);
}

/* Text i's Title Case sentences are given to the model in sentence case:
 * asked, a Marian model (where it was measured: README "Title Case"; NLLB
 * and M2M-100, which force a target-language token, and prompted models
 * read the text as written), no prefix (the output must go on from it as
 * given). */
static int folding(const srv_tr *t, int text)
{
    return !t->p.keep_title_case && !t->m.prompt && !t->m.has_bos && !t->p.raw &&
           !t->p.given_ids && !prefixed(t, text);
}

/* Sentence s in sentence case when it is in Title Case (title_case.h): 0, or -1 out of memory. */
static int fold_title(const srv_tr *t, sentence *s)
{
    size_t len;
    const char *text = written_text(t, s, &len);
    if (s->ph.verbatim || len == 0)
        return 0;
    if (!(s->folded = malloc(len)))
        return -1;
    if (srv_title_fold(text, len, s->folded) == 0 && !(s->recap = srv_word_fold(text, len, s->folded))) {
        free(s->folded);
        s->folded = NULL;
    }
    return 0;
}

/* A hypothesis text of sentence s as decoded, its first letter up when the
 * model read s as a lone word lowered (title_case.h). */
static void recap(const sentence *s, char *text)
{
    if (s->recap && text)
        srv_title_capitalize(text, strlen(text));
}

/* The engine's stop callback of a sentence: its text so far holds a stop string. */
static int sentence_stop(void *data, const int32_t *ids, int n)
{
    sentence *s = data;
    return s->stopped = mt_stop_match_feed(s->stop, ids, n);
}

/* Sentence s's stop strings watched (srv_tr_params.stop), when its tokenizer
 * can be followed token by token; otherwise nothing ends early. */
static mt_status watch_stops(const srv_tr *t, sentence *s, mt_err *err)
{
    const mt_hf_tokenizer *hf = mt_tokenizer_hf(t->m.tok);
    if (!t->p.n_stop || !hf)
        return MT_OK;
    mt_err e = { 0 };
    mt_status st = mt_stop_match_new(hf, t->p.stop, t->p.n_stop, &s->stop, &e);
    if (st == MT_ERR_UNSUPPORTED)
        return MT_OK;
    if (st != MT_OK && err)
        *err = e;
    if (st == MT_OK) {
        s->dp.stop_callback = sentence_stop;
        s->dp.stop_callback_data = s;
    }
    return st;
}

/* The copy guard's ids of sentence s (mt_decode_params.copy; the engine
 * applies the guard when the request or the model's default turns it on):
 * its source pieces as the source tokenizer encoded them, without the
 * language token and </s>.  Measured on the UI test set, they are the ids of
 * every output equal to its source that the source encoded by the target
 * tokenizer matches, and cost no second tokenization (engine/decode/README.md).
 * Only where a source id is that target piece: a Marian model with one
 * vocabulary; not a decoder-only model, nor NLLB / M2M-100 (a tokenizer of
 * their own, the target language generated first).  With the model's gate,
 * only for a sentence holding a word of it (copy_gate.h: names and codes are
 * right copies, which the guard broke). */
static void copy_ids(const srv_tr *t, sentence *s)
{
    MT_ASSERT_OR(s->dp.penalties.copy_guard != 0, return);     /* resolved: the model's default said */
    if (s->dp.penalties.copy_guard < 0 || !mt_tokenizer_joint(t->m.tok) || t->m.prompt || t->m.has_bos)
        return;
    size_t len;
    const char *text = written_text(t, s, &len);
    if (t->m.copy_gate && !srv_copy_gate_arms(t->m.copy_gate, text, len))
        return;
    int pre = ids_before(t);
    s->dp.copy.ids = s->ids + pre;
    s->dp.copy.n_ids = s->n_ids - pre - ids_after(t);
}

/* Each sentence to decode: its own parameters (its prefix, its seed, its
 * terms, its stop strings) and its item of the decode job. */
static mt_status item_params(srv_tr *t, mt_err *err)
{
    const mt_decode_params *dp = &t->p.dp;
    mt_status st = MT_OK;
    for (int i = 0; i < t->l.n && st == MT_OK; i++) {
        sentence *s = &t->l.v[i];
        s->hyps = t->hyps + (long)i * t->p.dp.n_best;
        if (s->cached || s->ph.verbatim)
            continue;
        s->dp = *dp;
        s->dp.alignment.enabled |= s->ph.n > 0;     /* the placeholders go back by it */
        s->dp.sampling.seed = dp->sampling.seed + (uint64_t)i;
        s->dp.prefix = s->prefix;
        s->dp.n_prefix = s->prefix ? (int)s->prefix[0] : 0;
        if (s->prefix)
            s->dp.prefix = s->prefix + 1;
        s->dp.constraints = s->n_cons ? s->cons : NULL;
        s->dp.n_constraints = s->n_cons;
        s->dp.end_ids = t->p.end_ids ? t->p.end_ids : t->m.end_ids;
        s->dp.shortlist = t->m.shortlist;
        s->dp.lang_vocab = t->m.lang_vocab;
        if (t->m.has_bos) {                         /* the target language, generated first */
            s->dp.forced_bos.enabled = 1;
            s->dp.forced_bos.id = t->m.bos_id;
        }
        copy_ids(t, s);
        st = watch_stops(t, s, err);
        t->item_sent[t->n_items] = i;
        t->items[t->n_items++] = (srv_seq_req){ .src = s->ids, .n_src = s->n_ids, .hyps = s->hyps, .dp = &s->dp };
    }
    return st;
}

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
    t->texts = texts;
    t->n_texts = n;
    mt_status st = MT_OK;
    for (int i = 0; i < n && st == MT_OK; i++) {
        t->first[i] = t->l.n;
        if (split_text(&t->l, i, texts[i], p->split && !prefixed(t, i), protecting(t, i)))
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    t->first[n] = t->l.n;
    for (int i = 0; st == MT_OK && i < t->l.n; i++)
        if (protecting(t, t->l.v[i].text))
            st = srv_protect(texts[t->l.v[i].text] + t->l.v[i].start, t->l.v[i].len, &t->l.v[i].ph, err);
    for (int i = 0; st == MT_OK && i < t->l.n; i++)
        if (folding(t, t->l.v[i].text) && fold_title(t, &t->l.v[i]))
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    long nb = (long)t->l.n * t->p.dp.n_best;
    if (st == MT_OK && (!(t->items = calloc((size_t)t->l.n + 1, sizeof *t->items)) ||
                        !(t->item_sent = calloc((size_t)t->l.n + 1, sizeof *t->item_sent)) ||
                        !(t->hyps = calloc((size_t)nb + 1, sizeof *t->hyps))))
        st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (st == MT_OK && p->prefix)                /* the prefixes' ids and the terms: in the cache key */
        st = tokenize_prefixes(t, err);
    for (int i = 0; st == MT_OK && p->glossary && i < t->l.n; i++)
        st = match_terms(t, &t->l.v[i], err);
    if (st == MT_OK && m->cache && p->cache)
        st = lookup(t, err);
    if (st == MT_OK)
        st = tokenize(t, err);
    for (int i = 0; st == MT_OK && p->glossary && i < t->l.n; i++)
        st = constrain(t, &t->l.v[i], err);
    if (st != MT_OK) {
        srv_tr_free(t);
        return st;
    }
    if ((st = item_params(t, err)) != MT_OK) {
        srv_tr_free(t);
        return st;
    }
    srv_decode_job_init(&t->job, t->items, t->n_items, &t->p.dp);
    *out = t;
    return MT_OK;
}

srv_decode_job *srv_tr_job(srv_tr *t)
{
    return &t->job;
}

/* A prompted translation's text: up to the prompt's stop string, without
 * the whitespace around it (in place). */
static void prompt_output(const struct mt_prompt *p, char *text)
{
    size_t n = mt_prompt_keep(p, text, strlen(text)), a = 0;
    while (a < n && (text[a] == ' ' || text[a] == '\t' || text[a] == '\n' || text[a] == '\r'))
        a++;
    memmove(text, text + a, n - a);
    text[n - a] = '\0';
}

/* Hypothesis k of sentence s (which had placeholders) as its text's result
 * holds it: the placeholders back in its text, or the sentence as written
 * when verbatim; *map (NULL: not wanted) the hypothesis text's code points ->
 * the output's.  Its text is decoded here when srv_tr_finish has not yet
 * (a stream).  NULL: out of memory. */
static char *fill_hyp(const srv_tr *t, const sentence *s, int k, long **map, size_t *at)
{
    const char *src = t->texts[s->text] + s->start;
    if (s->ph.verbatim)
        return strndup(src, s->len);
    const mt_hyp *h = &s->hyps[k];
    char *raw = NULL, *out = NULL;
    mt_err err = { 0 };
    if (!h->text && mt_tokenizer_decode(t->m.tok, h->ids, h->n_ids, &raw, &err) != MT_OK)
        return NULL;
    recap(s, raw);
    const char *ht = h->text ? h->text : raw;
    srv_links l = { 0 };
    if (model_links(t, s, h, ht, &l) == 0)
        srv_unprotect(&s->ph, src, ht, strlen(ht), l.v, l.n, &out, map, at);
    free(l.v);
    free(raw);
    return out;
}

/* Every hypothesis of the sentences with placeholders filled: 0, or -1 out of memory. */
static int fill_sentences(srv_tr *t)
{
    int nb = t->p.dp.n_best;
    for (int i = 0; i < t->l.n; i++) {
        sentence *s = &t->l.v[i];
        if (!s->ph.n)
            continue;
        if (!(s->filled = calloc((size_t)nb, sizeof *s->filled)) ||
            !(s->ph_at = malloc(sizeof *s->ph_at * (size_t)s->ph.n)))
            return -1;
        s->n_filled = nb;
        for (int k = 0; k < nb; k++)
            if (!(s->filled[k] = fill_hyp(t, s, k, k == 0 && !s->ph.verbatim ? &s->tmap : NULL,
                                          k == 0 ? s->ph_at : NULL)))
                return -1;
    }
    return 0;
}

mt_status srv_tr_finish(srv_tr *t, srv_tr_result *out, mt_err *err)
{
    memset(out, 0, sizeof *out * (size_t)t->n_texts);
    for (int i = 0; i < t->l.n; i++)
        for (int k = 0; k < t->p.dp.n_best && !t->l.v[i].ph.verbatim; k++) {
            mt_hyp *h = &t->l.v[i].hyps[k];
            int fresh = !h->text;
            mt_status st = h->text ? MT_OK : mt_tokenizer_decode(t->m.tok, h->ids, h->n_ids, &h->text, err);
            if (st != MT_OK)
                return st;
            if (fresh && t->m.prompt)
                prompt_output(t->m.prompt, h->text);
            if (fresh)
                recap(&t->l.v[i], h->text);
        }
    if (t->m.cache && t->p.cache)
        store(t);
    if (fill_sentences(t))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
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
        mt_hyps_free(t->hyps, t->l.n * t->p.dp.n_best);
    free(t->hyps);
    free(t->items);
    free(t->item_sent);
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
        n += t->l.v[i].cached ? 0 : t->l.v[i].hyps[0].n_ids;
    return n;
}

int srv_tr_cached(const srv_tr *t, int i)
{
    return t->l.v[i].cached;
}

int srv_tr_whole(const srv_tr *t, int i)
{
    return t->l.v[i].ph.n > 0 || t->l.v[i].recap;
}

char *srv_tr_sentence_text(const srv_tr *t, int i)
{
    const sentence *s = &t->l.v[i];
    if (s->filled)
        return strdup(s->filled[0]);
    if (s->ph.n)
        return fill_hyp(t, s, 0, NULL, NULL);
    char *text = NULL;
    mt_err err = { 0 };
    if (s->hyps[0].text)
        return strdup(s->hyps[0].text);
    if (mt_tokenizer_decode(t->m.tok, s->hyps[0].ids, s->hyps[0].n_ids, &text, &err) != MT_OK)
        return NULL;
    recap(s, text);
    return text;
}

int srv_tr_item_sentence(const srv_tr *t, int item)
{
    return t->item_sent[item];
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
