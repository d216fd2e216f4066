/* generate.c: greedy and beam search (models/recipe/model.py greedy() and
 * beam(), HF v4.50+ rules) over sequences that join and leave a session
 * between decoder steps (continuous batching).
 *
 * A sequence is one source decoded with beam_size rows (1 = greedy).  Each
 * mt_step runs ONE decoder step for every row of every running sequence as
 * one batch (rows at different positions), then applies each sequence's own
 * greedy or beam rule to its rows' logits.  A sequence's rows share its cross
 * K/V (row_src); each row owns a physical self-attention slot (row_slot).
 * Beam reordering re-points slots and copies a cache only when a beam forks
 * (two children of one parent).  Sources started between two steps are
 * encoded together, as one batch, before the next decoder step
 * (mt_encode_started).  The decoder step allocates nothing; mt_generate is
 * a feed of the decode loop (decode_loop.c) over its sources.
 */
#include "model/mt_internal.h"
#include "kernels/parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NEG_BIG   (-1e9f)        /* model.py's "impossible" running score */

/* ---- helpers ------------------------------------------------------------------ */
/* What a sequence's search runs over this step: its shortlist's list (ids
 * ascending, shortlist_step.c), or the whole vocabulary (ids NULL). */
typedef struct {
    int n, skip;             /* places; pad's place (excluded from every sum and pick), -1 */
    const int32_t *ids;      /* [n] the id at each place; NULL: the place is the id */
} cand_view;

static cand_view view_of(const mt_session *s, const mt_seq *q)
{
    if (q->sl_n > 0)
        return (cand_view){q->sl_n, q->sl_pad, s->sl_list + (long)(q - s->seqs) * s->sl_cap};
    return (cand_view){s->m->V, s->m->info.pad_id, NULL};
}

static inline int32_t view_id(cand_view c, int i) { return c.ids ? c.ids[i] : i; }

/* A row's logits at the view's places: lg itself, or gathered into out [n]. */
static const float *view_gather(cand_view c, const float *lg, float *out)
{
    if (!c.ids)
        return lg;
    for (int i = 0; i < c.n; i++)
        out[i] = lg[c.ids[i]];
    return out;
}

/* The place of an id of the set (a forced one: the sets hold every prefix,
 * constraint and eos id); -1 when absent. */
static int view_place(cand_view c, int32_t id)
{
    if (!c.ids)
        return id;
    int lo = 0, hi = c.n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (c.ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c.n && c.ids[lo] == id ? lo : -1;
}

/* The id of a row's first maximum over the view (pad skipped); out: [n] scratch. */
static int32_t view_argmax(cand_view c, const float *lg, float *out)
{
    return view_id(c, mt_k_argmax_skip(view_gather(c, lg, out), c.n, c.skip));
}

/* eos, or one of the sequence's end ids (a prompt's end of turn, stop string). */
static inline int ends(const mt_seq *q, int32_t id, int32_t eos)
{
    return id == eos || (q->end_ids && q->end_ids[id]);
}

/* ---- greedy and sampling ------------------------------------------------------- */
/* One step of a one-row sequence q (row q->base; gathered row a of the step,
 * logits lg, in place): a forced prefix id, else the rules, then the argmax
 * or a draw, over the sequence's candidates (view_of).  1 while it runs. */
static int greedy_seq_step(mt_session *s, mt_seq *q, int a, float *lg)
{
    const mt_model *m = s->m;
    int V = m->V, T = s->p.max_tgt_len, r = q->base, t = q->cur - 1;
    int32_t pad = m->info.pad_id, eos = m->info.eos_id, *hist = s->hist + (long)r * T;
    int32_t tok = eos;                                   /* forced on the last step (logp 0) */
    int which = -1;                                      /* a constraint forcing tok */
    double lp = 0.0;
    if (t + 1 != q->max_length - 1) {
        int32_t forced = t < q->n_prefix ? -1 : mt_cons_forced(s, q, &s->cst[r], t, s->step_al[a], &which);
        int pick = 0;                                    /* 1: the argmax or a draw decides */
        cand_view c = view_of(s, q);
        float *gathered = c.ids ? s->sl_lg + (long)a * s->sl_cap : NULL;
        if (t < q->n_prefix) {
            tok = s->prefix[(long)(q - s->seqs) * T + t];
        } else if (forced >= 0) {
            tok = forced;
            if (s->cst[r].active != which)          /* a start: the model's own word for it is not said later */
                mt_cons_displaced(s, &s->cst[r], view_argmax(c, lg, gathered));
        } else {
            mt_rules_apply(m, q, hist, t, lg, s->pen_v + (long)a * T);
            tok = mt_cons_free(s, q, &s->cst[r], lg, c.ids, c.n, &which);
            pick = tok < 0;
        }
        const float *v = view_gather(c, lg, gathered);   /* lg is final: the candidates' logits */
        if (pick && q->sample) {
            tok = mt_sample_token(m, q, v, c.n, c.skip, c.ids, s->lp + (long)a * V, s->cand + (long)a * V);
        } else if (pick) {
            int i = mt_k_argmax_skip(v, c.n, c.skip);
            tok = v[i] > -INFINITY ? view_id(c, i) : pad == 0;   /* all banned: the [V] scan's first id, not pad */
        }
        s->cst[r] = mt_cons_advance(s, q, s->cst[r], tok, which);
        double lse = mt_k_logsumexp_skip(v, c.n, c.skip);
        lp = lse > -INFINITY ? (double)lg[tok] - lse : -INFINITY;     /* -inf: every id was banned */
        s->gscore[r] += lp;
    }
    s->hist_lp[(long)r * T + s->glen[r]] = (float)lp;
    s->hist_al[(long)r * T + s->glen[r]] = s->step_al[a];
    hist[s->glen[r]++] = tok;
    s->row_tok[r] = tok;
    return t < q->n_prefix ? tok != eos : !ends(q, tok, eos);     /* a forced prefix id is not an end */
}

/* ---- beam search ----------------------------------------------------------------- */
/* A hypothesis row: its ids with their log-probs and alignments, [T] each. */
typedef struct { int32_t *ids; float *lp; int32_t *al; } hyp_rows;

static hyp_rows rows_at(int32_t *ids, float *lp, int32_t *al, long row, int T)
{
    return (hyp_rows){ids + row * T, lp + row * T, al + row * T};
}

static void copy_hyp(hyp_rows dst, hyp_rows src, int n)
{
    memcpy(dst.ids, src.ids, sizeof(int32_t) * (size_t)n);
    memcpy(dst.lp, src.lp, sizeof(float) * (size_t)n);
    memcpy(dst.al, src.al, sizeof(int32_t) * (size_t)n);
}

/* Merge this step's finished candidates (the first Bm of the K that stop) into
 * the sequence's finished list: stable sort by score, keep Bm (model.py).
 * cand_pb, cand_id, cand_lp, cand_al: the candidates' parent beam, id, token
 * log-prob and alignment. */
static void update_finished(mt_session *s, const mt_seq *q, const int *stop, const int *cand_pb,
                            const int32_t *cand_id, const float *cand_lp, const int32_t *cand_al)
{
    int Bm = q->Bm, T = s->p.max_tgt_len, n = 0, base = q->base;
    mt_fin_slot *fin = s->fin + base;
    double sc[2 * MT_MAX_BEAM];
    int from[2 * MT_MAX_BEAM];                     /* >= 0: old slot j; < 0: candidate -(r+1) */
    for (int j = 0; j < Bm; j++) {
        sc[n] = fin[j].n >= 0 ? fin[j].score : -1e9;
        from[n++] = j;
    }
    for (int r = 0; r < Bm; r++)
        if (stop[r] && q->unsat) {
            sc[n] = (double)s->top_v[2 * base + r] / pow((double)q->cur, (double)q->lpen);
            from[n++] = -(r + 1);
        }
    if (n == Bm)
        return;
    for (int i = 1; i < n; i++)                 /* stable insertion sort, descending */
        for (int j = i; j > 0 && sc[j] > sc[j - 1]; j--) {
            double ts = sc[j]; sc[j] = sc[j - 1]; sc[j - 1] = ts;
            int tf = from[j]; from[j] = from[j - 1]; from[j - 1] = tf;
        }
    mt_fin_slot *nf = s->fin2 + base;
    for (int j = 0; j < Bm; j++) {
        int f = from[j];
        hyp_rows dst = rows_at(s->fin_ids2, s->fin_lp2, s->fin_al2, base + j, T);
        if (f >= 0) {
            nf[j] = fin[f];
            if (fin[f].n > 0)
                copy_hyp(dst, rows_at(s->fin_ids, s->fin_lp, s->fin_al, base + f, T), fin[f].n);
        } else {
            int r = -f - 1;
            copy_hyp(dst, rows_at(s->hist, s->hist_lp, s->hist_al, base + cand_pb[r], T), q->cur - 1);
            dst.ids[q->cur - 1] = cand_id[r];
            dst.lp[q->cur - 1] = cand_lp[r];
            dst.al[q->cur - 1] = cand_al[r];
            nf[j] = (mt_fin_slot){.score = sc[j], .n = q->cur};
        }
    }
    memcpy(fin, nf, sizeof *fin * (size_t)Bm);
    copy_hyp(rows_at(s->fin_ids, s->fin_lp, s->fin_al, base, T), rows_at(s->fin_ids2, s->fin_lp2, s->fin_al2, base, T),
             Bm * T);
}

/* Give row base+b the cache of its parent: the first child of a parent takes
 * the parent's slot; a second child gets a free slot of the sequence and a
 * copy of positions 0..cur-1 of every layer. */
static void reorder_slots(mt_session *s, const mt_seq *q, const int *parent)
{
    int Bm = q->Bm, base = q->base;
    int *old_slot = s->tmp_i + 2 * base, *claimed = s->slot_used + base;  /* the sequence's own scratch */
    for (int b = 0; b < Bm; b++) {
        old_slot[b] = s->row_slot[base + b];
        claimed[b] = 0;
    }
    int first[MT_MAX_BEAM];
    for (int b = 0; b < Bm; b++) {
        first[b] = !claimed[parent[b]];
        claimed[parent[b]] = 1;
        if (first[b])
            s->row_slot[base + b] = old_slot[parent[b]];
    }
    int free_i = 0;
    for (int b = 0; b < Bm; b++) {
        if (first[b])
            continue;
        while (claimed[free_i])                   /* an old row nobody continues */
            free_i++;
        int dst = old_slot[free_i++], src = old_slot[parent[b]];
        mt_self_cache_copy(s, (int)(q - s->seqs), dst, src, q->cur);   /* positions 0..cur-1 (model/decoder.c) */
        s->row_slot[base + b] = dst;
    }
}

/* One step of one sequence's beam search, after its rows' logits are in
 * s->logits rows [a, a+Bm): each row's log-probs plus its score at the
 * sequence's candidates (view_of: its rows share one set), then the top 2 x
 * beam over them all.  Returns 1 while the sequence is still running. */
static int beam_seq_step(mt_session *s, mt_seq *q, int a)
{
    const mt_model *m = s->m;
    int Bm = q->Bm, K = 2 * Bm, V = m->V, T = s->p.max_tgt_len, base = q->base, t = q->cur - 1;
    int32_t pad = m->info.pad_id, eos = m->info.eos_id;
    int forced_eos = q->cur == q->max_length - 1, forced = !forced_eos && t < q->n_prefix;
    cand_view c = view_of(s, q);
    int W = c.n;
    float *tot = s->lp + (long)a * V;                          /* [Bm][W] */
    double lse[MT_MAX_BEAM];                                   /* each row's log-softmax normalizer */
    int which[MT_MAX_BEAM];                                    /* each row's forcing constraint, -1 */
    for (int b = 0; b < Bm; b++) {
        float *row = tot + (long)b * W, run = s->run[base + b], *lg = s->logits + (long)(a + b) * V;
        int32_t cons_id = forced_eos || forced ? -1 : mt_cons_forced(s, q, &s->cst[base + b], t, s->step_al[a + b],
                                                                       &which[b]);
        if (forced_eos || forced)
            which[b] = -1;
        /* the forced ids (eos, the prefix's, the constraints') are in every set */
        if (forced_eos) {
            for (int v = 0; v < W; v++)
                row[v] = -INFINITY;
            row[view_place(c, eos)] = 0.0f;
        } else if (forced || cons_id >= 0) {                   /* the prefix or constraint id alone, at its log p */
            int32_t id = forced ? s->prefix[(long)(q - s->seqs) * T + t] : cons_id;
            if (!forced && s->cst[base + b].active != which[b])
                mt_cons_displaced(s, &s->cst[base + b], view_argmax(c, lg, row));
            lse[b] = mt_k_logsumexp_skip(view_gather(c, lg, row), W, c.skip);
            for (int v = 0; v < W; v++)
                row[v] = -INFINITY;
            row[view_place(c, id)] = (float)((double)lg[id] - lse[b]);
        } else {
            mt_rules_apply(m, q, s->hist + (long)(base + b) * T, t, lg, s->pen_v + (long)(a + b) * T);
            cons_id = mt_cons_free(s, q, &s->cst[base + b], lg, c.ids, c.n, &which[b]);
            const float *v = view_gather(c, lg, row);          /* lg is final: the candidates' logits */
            lse[b] = mt_k_logsumexp_skip(v, W, c.skip);
            if (cons_id >= 0) {                                /* </s> would win: the term goes in instead */
                for (int i = 0; i < W; i++)
                    row[i] = -INFINITY;
                row[view_place(c, cons_id)] = cons_id == pad ? -INFINITY : (float)((double)lg[cons_id] - lse[b]);
            } else {
                mt_k_log_softmax_shift(v, W, c.skip, lse[b], run, row);   /* log p + the beam's score (v may be row) */
                continue;
            }
        }
        for (int v = 0; v < W; v++)
            row[v] = row[v] + run;
    }
    float *top_v = s->top_v + 2 * base;                        /* the sequence's own scratch */
    int *top_i = s->top_i + 2 * base;
    mt_k_topk(tot, Bm * W, K, top_v, top_i);
    int stop[2 * MT_MAX_BEAM], all_stop = 1, parent[MT_MAX_BEAM], order[MT_MAX_BEAM];
    float alive[2 * MT_MAX_BEAM], run_new[MT_MAX_BEAM], cand_lp[2 * MT_MAX_BEAM];
    int32_t cand_al[2 * MT_MAX_BEAM], cand_id[2 * MT_MAX_BEAM];
    int cand_pb[2 * MT_MAX_BEAM];
    for (int k = 0; k < K; k++) {
        int pb = top_i[k] / W, id = view_id(c, top_i[k] % W);
        cand_pb[k] = pb;
        cand_id[k] = id;
        stop[k] = (forced ? id == eos : ends(q, id, eos)) || q->cur + 1 >= q->max_length;
        all_stop &= stop[k];
        alive[k] = top_v[k] + (stop[k] ? NEG_BIG : 0.0f);
        /* the id's own log p, as the log-softmax wrote it (forced </s>: 0) */
        cand_lp[k] = forced_eos ? 0.0f : (float)((double)s->logits[(long)(a + pb) * V + id] - lse[pb]);
        cand_al[k] = s->step_al[a + pb];
    }
    update_finished(s, q, stop, cand_pb, cand_id, cand_lp, cand_al);
    mt_k_topk(alive, K, Bm, run_new, order);
    for (int b = 0; b < Bm; b++) {                             /* new histories, built in hist2 */
        parent[b] = cand_pb[order[b]];
        hyp_rows h = rows_at(s->hist2, s->hist_lp2, s->hist_al2, base + b, T);
        copy_hyp(h, rows_at(s->hist, s->hist_lp, s->hist_al, base + parent[b], T), q->cur - 1);
        h.ids[q->cur - 1] = cand_id[order[b]];
        h.lp[q->cur - 1] = cand_lp[order[b]];
        h.al[q->cur - 1] = cand_al[order[b]];
        s->row_tok[base + b] = cand_id[order[b]];
        s->run[base + b] = run_new[b];
        s->cst2[base + b] = mt_cons_advance(s, q, s->cst[base + parent[b]], cand_id[order[b]], which[parent[b]]);
    }
    memcpy(s->cst + base, s->cst2 + base, sizeof *s->cst * (size_t)Bm);
    for (int b = 0; b < Bm; b++)                               /* ... then copied back to hist */
        copy_hyp(rows_at(s->hist, s->hist_lp, s->hist_al, base + b, T),
                 rows_at(s->hist2, s->hist_lp2, s->hist_al2, base + b, T), q->cur);
    reorder_slots(s, q, parent);
    /* early-stop heuristic (early_stopping=False), after cur += 1 */
    double best_possible = (double)run_new[0] / pow((double)q->cur, (double)q->lpen), worst = 1e300;
    for (int j = 0; j < Bm; j++) {
        const mt_fin_slot *f = &s->fin[base + j];
        if (f->n < 0) {
            worst = -1e9;
            break;
        }
        worst = f->score < worst ? f->score : worst;
    }
    q->unsat = q->unsat && best_possible > worst;
    return q->unsat && !all_stop;
}

/* ---- sequences ----------------------------------------------------------------- */
static mt_status check_source(const mt_session *s, const int32_t *src, int len, int i, mt_err *err)
{
    if (!src || len < 1)
        return mt_err_set(err, MT_ERR_INPUT, "source %d is empty (it must end with </s>)", i);
    if (len > s->p.max_src_len)
        return mt_err_set(err, MT_ERR_TOO_LONG, "source %d has %d tokens; the limit is %d", i, len,
                          s->p.max_src_len);
    for (int j = 0; j < len; j++)
        if (src[j] < 0 || src[j] >= s->m->V_src)
            return mt_err_set(err, MT_ERR_INPUT, "source %d: token id %d outside the vocabulary", i, (int)src[j]);
    return MT_OK;
}

/* Sequence id's constraints into the session: spans, and their ids one after
 * another in its cons_ids row (they fit: mt_decode_params_resolve checked). */
static void copy_constraints(mt_session *s, int id, const mt_decode_params *q)
{
    mt_cons *k = s->cons + (long)id * MT_MAX_CONSTRAINTS;
    int32_t *ids = s->cons_ids + (long)id * s->p.max_tgt_len;
    for (int i = 0, off = 0; i < q->n_constraints; i++) {
        const mt_constraint *c = &q->constraints[i];
        k[i] = (mt_cons){.start = c->src_start, .end = c->src_end, .off = off, .n = c->n_ids};
        memcpy(ids + off, c->ids, sizeof(int32_t) * (size_t)c->n_ids);
        off += c->n_ids;
    }
}

/* The constraints' source spans lie within the source (the rest of them is
 * checked by mt_decode_params_resolve). */
static mt_status check_spans(const mt_decode_params *q, int src_len, mt_err *err)
{
    for (int i = 0; i < q->n_constraints; i++)
        if (q->constraints[i].src_end > src_len)
            return mt_err_set(err, MT_ERR_INPUT, "field 'glossary': term %d's source span [%d, %d) is outside the "
                              "source's %d tokens", i, q->constraints[i].src_start, q->constraints[i].src_end, src_len);
    return MT_OK;
}

/* First fit: the lowest base of Bm consecutive free rows, or -1. */
static int find_rows(const mt_session *s, int Bm)
{
    int run = 0;
    for (int r = 0; r < s->p.max_batch; r++) {
        run = s->row_owner[r] < 0 ? run + 1 : 0;
        if (run == Bm)
            return r - Bm + 1;
    }
    return -1;
}

int mt_session_can_start(const mt_session *s, int beam_size)
{
    mt_decode_params q;                 /* 0: the default beam, as the resolver fills it */
    if (beam_size == 0)
        beam_size = mt_decode_params_resolve(s->m, &s->p, NULL, &q, NULL) == MT_OK ? q.beam_size : 0;
    return beam_size >= 1 && find_rows(s, beam_size) >= 0;
}

mt_status mt_seq_start(mt_session *s, const int32_t *src, int src_len, const mt_decode_params *params, int *seq,
                       mt_err *err)
{
    mt_decode_params q;
    mt_status st = mt_check_decode_params(s, params, &q, err);
    if (st != MT_OK)
        return st;
    if (!seq)
        return mt_err_set(err, MT_ERR_INPUT, "mt_seq_start: seq is NULL");
    if ((st = check_source(s, src, src_len, 0, err)) != MT_OK)
        return st;
    if ((st = check_spans(&q, src_len, err)) != MT_OK)
        return st;
    int base = find_rows(s, q.beam_size), id = 0;
    if (base < 0)
        return mt_err_set(err, MT_ERR_BUSY, "session: no %d free decoder rows (%d in use of %d)", q.beam_size,
                          mt_session_rows_used(s), s->p.max_batch);
    while (s->seqs[id].state != MT_SEQ_FREE)        /* fewer sequences than rows: one is free */
        id++;
    s->src_off[id] = id * s->p.max_src_len;
    s->src_len[id] = src_len;
    /* encoded by the next mt_encode_started (or mt_step), with every source started since the last */
    memcpy(s->src_ids + (long)id * s->p.max_src_len, src, sizeof(int32_t) * (size_t)src_len);
    int Bm = q.beam_size;
    for (int b = 0; b < Bm; b++) {
        int r = base + b;
        s->row_owner[r] = id;
        s->row_slot[r] = r;
        s->row_tok[r] = mt_start_token(s->m, src, src_len);
        s->run[r] = b == 0 ? 0.0f : NEG_BIG;
        s->fin[r] = (mt_fin_slot){.score = -1e9, .n = -1};
        s->glen[r] = 0;
        s->gscore[r] = 0.0;
        s->cst[r] = (mt_cstate){.active = -1};
    }
    s->seqs[id] = (mt_seq){.state = MT_SEQ_ENCODE, .base = base, .Bm = Bm, .max_length = q.max_length,
                           .n_best = q.n_best, .cur = 1, .unsat = 1, .lpen = q.length_penalty,
                           .n_prefix = q.n_prefix, .min_length = q.min_length, .ngram = q.no_repeat_ngram_size,
                           .sample = q.sample, .top_k = q.top_k, .token_scores = q.token_scores,
                           .align = q.alignments, .align_layer = q.align_layer, .align_heads = q.align_heads,
                           .rep_pen = q.repetition_penalty, .temperature = q.temperature, .top_p = q.top_p,
                           .n_cons = q.n_constraints, .end_ids = q.end_ids,
                           .progress = q.progress_callback, .progress_data = q.progress_callback_data};
    mt_rng_seed(s->seqs[id].rng, q.seed);
    if (q.n_prefix)
        memcpy(s->prefix + (long)id * s->p.max_tgt_len, q.prefix, sizeof(int32_t) * (size_t)q.n_prefix);
    copy_constraints(s, id, &q);
    mt_sl_seq_start(s, id, &q, src, src_len);
    s->n_seqs++;
    *seq = id;
    return MT_OK;
}

/* After the decoder step, each running sequence applies its own rule to its
 * rows' logits; sequences touch only their own rows, slots and scratch, so
 * they run in parallel over the compute pool (for greedy rows the log-sum-exp
 * over the vocabulary is most of the work, for beams the top-k). */
static void post_seq(void *ctx, int c)
{
    mt_session *s = ctx;
    mt_seq *q = &s->seqs[s->step_seq[c]];
    int a = s->step_row[c];
    int running = q->Bm == 1 ? greedy_seq_step(s, q, a, s->logits + (long)a * s->m->V) : beam_seq_step(s, q, a);
    q->cur++;
    if (!running)
        q->state = MT_SEQ_DONE;
}

/* The sources of the sequences started since the last step, encoded as few
 * batches as the session's rows allow (each at most rows_max positions):
 * requests admitted together share one pass over the encoder's weights. */
void mt_encode_started(mt_session *s)
{
    const int32_t *src[MT_ENC_MAX_PACK];
    int len[MT_ENC_MAX_PACK], off[MT_ENC_MAX_PACK], ids[MT_ENC_MAX_PACK], k = 0, rows = 0;
    for (int i = 0; i <= s->p.max_batch; i++) {
        const mt_seq *q = i < s->p.max_batch ? &s->seqs[i] : NULL;
        int n = q && q->state == MT_SEQ_ENCODE ? s->src_len[i] : 0;
        if (k > 0 && (!q || (n && (rows + n > s->rows_max || k == MT_ENC_MAX_PACK)))) {
            if (s->m->arch == MT_ARCH_LLM)
                mt_llm_prefill(s, k, ids);            /* the prompts' K/V caches (model/llm.c) */
            else
                mt_encode_sources(s, k, src, len, off);
            for (int j = 0; j < k; j++)
                s->seqs[ids[j]].state = MT_SEQ_RUN;
            k = rows = 0;
        }
        if (n) {
            src[k] = s->src_ids + (long)i * s->p.max_src_len;
            len[k] = n, off[k] = s->src_off[i], ids[k++] = i;
            rows += n;
        }
    }
}

int mt_step(mt_session *s)
{
    int n = 0, n_seq = 0, done = 0;
    mt_encode_started(s);
    for (int i = 0; i < s->p.max_batch; i++) {           /* gather every running row */
        const mt_seq *q = &s->seqs[i];
        if (q->state != MT_SEQ_RUN)
            continue;
        s->step_seq[n_seq] = i;
        s->step_row[n_seq++] = n;                        /* its rows' first index in this step */
        for (int b = 0; b < q->Bm; b++, n++) {
            int r = q->base + b;
            s->tok_in[n] = s->row_tok[r];
            s->step_pos[n] = q->cur - 1;
            s->step_slot[n] = s->row_slot[r];
            s->row_src[n] = i;
            s->step_al_layer[n] = q->align || q->n_cons ? q->align_layer : -1;
            s->step_al_heads[n] = q->align_heads;
        }
    }
    if (n == 0)
        return 0;
    mt_sl_prepare(s, n, s->row_src);                     /* the lexical shortlists' candidates */
    mt_decoder_step(s, n, s->tok_in, s->step_pos, s->step_slot, s->row_src);
    mt_par_for(n_seq, post_seq, s);
    for (int c = 0; c < n_seq; c++)
        done += s->seqs[s->step_seq[c]].state == MT_SEQ_DONE;
    return done;
}

int mt_seq_finished(const mt_session *s, int seq)
{
    return seq >= 0 && seq < s->p.max_batch && s->seqs[seq].state == MT_SEQ_DONE;
}

const int32_t *mt_seq_ids(const mt_session *s, int seq, int *n)
{
    *n = 0;
    if (seq < 0 || seq >= s->p.max_batch)
        return NULL;
    const mt_seq *q = &s->seqs[seq];
    if (q->Bm != 1 || (q->state != MT_SEQ_RUN && q->state != MT_SEQ_DONE))
        return NULL;
    *n = s->glen[q->base];
    return s->hist + (long)q->base * s->p.max_tgt_len;
}

int mt_session_rows_used(const mt_session *s)
{
    int n = 0;
    for (int r = 0; r < s->p.max_batch; r++)
        n += s->row_owner[r] >= 0;
    return n;
}

/* K/V bytes a step's attention reads for one row whose decoder length is cur
 * (positions 0..cur-1 of its self cache) over a source of src_len tokens. */
static size_t row_kv_bytes(const mt_session *s, int src_len, int cur)
{
    const mt_model *m = s->m;
    if (m->arch == MT_ARCH_LLM)         /* one cache: the prompt, then the generated positions */
        return (size_t)m->llm->L * (size_t)(src_len - 1 + cur) * 2 * (size_t)m->llm->kvd * mt_kv_bytes(s);
    return (size_t)m->info.dec_layers * (size_t)(cur + src_len) * 2 * (size_t)m->d * mt_kv_bytes(s);
}

size_t mt_session_kv_step_bytes(const mt_session *s, int add_src_len, int add_beam)
{
    size_t b = 0;
    for (int id = 0; id < s->p.max_batch; id++) {
        const mt_seq *q = &s->seqs[id];
        if (q->state == MT_SEQ_RUN || q->state == MT_SEQ_ENCODE)
            b += (size_t)q->Bm * row_kv_bytes(s, s->src_len[id], q->cur > 1 ? q->cur : 1);
    }
    if (add_beam > 0)                   /* mid-way: as many target positions as source tokens */
        b += (size_t)add_beam * row_kv_bytes(s, add_src_len, add_src_len);
    return b;
}

int mt_session_seqs(const mt_session *s) { return s->n_seqs; }

void mt_seq_cancel(mt_session *s, int seq)
{
    if (seq < 0 || seq >= s->p.max_batch || s->seqs[seq].state == MT_SEQ_FREE)
        return;
    mt_seq *q = &s->seqs[seq];
    for (int b = 0; b < q->Bm; b++)
        s->row_owner[q->base + b] = -1;
    q->state = MT_SEQ_FREE;
    s->n_seqs--;
}

/* ---- results ------------------------------------------------------------------- */
/* A hypothesis of n ids (rows.ids NULL: none) into h, with the token log-probs
 * and alignments when the sequence asked for them. */
static mt_status put_hyp(const mt_seq *q, mt_hyp *h, hyp_rows rows, int n, double score, mt_err *err)
{
    size_t k = (size_t)(n ? n : 1);
    h->ids = malloc(sizeof(int32_t) * k);
    h->token_logp = q->token_scores ? malloc(sizeof(float) * k) : NULL;
    h->align = q->align ? malloc(sizeof(int32_t) * k) : NULL;
    h->n_ids = n;
    h->score = (float)score;
    h->text = NULL;
    if (!h->ids || (q->token_scores && !h->token_logp) || (q->align && !h->align))
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (n && rows.ids) {
        memcpy(h->ids, rows.ids, sizeof(int32_t) * (size_t)n);
        if (h->token_logp)
            memcpy(h->token_logp, rows.lp, sizeof(float) * (size_t)n);
        if (h->align)
            memcpy(h->align, rows.al, sizeof(int32_t) * (size_t)n);
    }
    return MT_OK;
}

mt_status mt_seq_take(mt_session *s, int seq, mt_hyp *out, mt_err *err)
{
    if (!mt_seq_finished(s, seq))
        return mt_err_set(err, MT_ERR_INPUT, "mt_seq_take: sequence %d is not finished", seq);
    const mt_seq *q = &s->seqs[seq];
    int T = s->p.max_tgt_len, base = q->base;
    mt_status st = MT_OK;
    memset(out, 0, sizeof *out * (size_t)q->n_best);
    if (q->Bm == 1) {
        st = put_hyp(q, out, rows_at(s->hist, s->hist_lp, s->hist_al, base, T), s->glen[base], s->gscore[base], err);
    } else {
        for (int j = 0; j < q->n_best && st == MT_OK; j++) {
            const mt_fin_slot *f = &s->fin[base + j];
            st = f->n >= 0 ? put_hyp(q, out + j, rows_at(s->fin_ids, s->fin_lp, s->fin_al, base + j, T), f->n,
                                     f->score, err)
                           : put_hyp(q, out + j, (hyp_rows){0}, 0, -INFINITY, err);
        }
    }
    if (st != MT_OK)
        mt_hyps_free(out, q->n_best);
    mt_seq_cancel(s, seq);
    return st;
}

/* ---- batches of sources: a feed of the decode loop ------------------------------ */
/* Sources join as rows free up (a source's result does not depend on the rows
 * beside it), so a long source does not hold the others back.  s->gen_src maps
 * a sequence to its source. */
typedef struct {
    mt_session *s;
    const int32_t *const *src;
    const int *src_len;
    const mt_decode_params *const *each;   /* NULL: q for every source */
    const mt_decode_params *q;             /* resolved; its abort callback is asked before every step */
    int n, next, done;
    mt_hyp *out;                           /* [n][q->n_best] */
    mt_status st;                          /* a failed take, reported by the next start */
    mt_err take_err;
} gen_feed;

static int gen_start(void *data, mt_session *s, mt_err *err)
{
    gen_feed *g = data;
    if (g->st != MT_OK) {
        *err = g->take_err;
        return -1;
    }
    if (g->done == g->n)
        return 0;                                       /* every source decoded */
    if (g->q->abort_callback && g->q->abort_callback(g->q->abort_callback_data))
        return mt_err_set(err, MT_ERR_ABORTED, "mt_generate: aborted by the caller"), -1;
    while (g->next < g->n) {
        int id;
        mt_err busy;
        if (mt_seq_start(s, g->src[g->next], g->src_len[g->next], g->each ? g->each[g->next] : g->q, &id,
                         &busy) != MT_OK)
            break;                                      /* no rows: after the next step */
        s->gen_src[id] = g->next++;
    }
    if (s->n_seqs == 0)                                 /* cannot happen: beam <= max_batch */
        return mt_err_set(err, MT_ERR_INTERNAL, "mt_generate: no sequence could start"), -1;
    return 1;
}

static void gen_finished(void *data, int seq, mt_status st, mt_hyp *hyps, int n, const mt_err *err)
{
    gen_feed *g = data;
    int i = g->s->gen_src[seq];
    if (i < 0) {                                        /* not a source of ours (see mt.h): dropped */
        mt_hyps_free(hyps, n);
        return;
    }
    if (st == MT_OK)
        memcpy(g->out + (long)i * g->q->n_best, hyps, sizeof *hyps * (size_t)n);
    else if (g->st == MT_OK)
        g->st = st, g->take_err = *err;
    g->s->gen_src[seq] = -1;
    g->done++;
}

/* each (may be NULL: params for every source) [n]: each source's own parameters. */
static mt_status generate(mt_session *s, const int32_t *const *src, const int *src_len, int n,
                          const mt_decode_params *const *each, const mt_decode_params *params, mt_hyp *out,
                          mt_err *err)
{
    mt_decode_params q;
    mt_status st = mt_check_decode_params(s, params, &q, err);
    if (st != MT_OK)
        return st;
    if (n < 0 || (n > 0 && (!src || !src_len || !out)))
        return mt_err_set(err, MT_ERR_INPUT, "mt_generate: bad arguments");
    for (int i = 0; i < n; i++) {
        mt_decode_params qi;
        if ((st = check_source(s, src[i], src_len[i], i, err)) != MT_OK)
            return st;
        if (each && (st = mt_check_decode_params(s, each[i], &qi, err)) != MT_OK)
            return st;
        if ((st = check_spans(each ? &qi : &q, src_len[i], err)) != MT_OK)
            return st;
        if (each && qi.n_best != q.n_best)
            return mt_err_set(err, MT_ERR_INPUT, "mt_generate_each: source %d asks n_best %d, source 0 %d", i,
                              qi.n_best, q.n_best);
    }
    memset(out, 0, sizeof *out * (size_t)n * (size_t)q.n_best);
    for (int i = 0; i < s->p.max_batch; i++)
        s->gen_src[i] = -1;
    gen_feed g = {.s = s, .src = src, .src_len = src_len, .each = each, .q = &q, .n = n, .out = out};
    mt_decode_feed feed = {.start = gen_start, .finished = gen_finished, .data = &g};
    st = mt_decode_run(s, &feed, err);
    if (st != MT_OK) {                                  /* aborted or failed: every row freed */
        for (int id = 0; id < s->p.max_batch; id++)
            if (s->gen_src[id] >= 0) {
                mt_seq_cancel(s, id);
                s->gen_src[id] = -1;
            }
        mt_hyps_free(out, n * q.n_best);
    }
    return st;
}

mt_status mt_generate(mt_session *s, const int32_t *const *src, const int *src_len, int n,
                      const mt_decode_params *params, mt_hyp *out, mt_err *err)
{
    return generate(s, src, src_len, n, NULL, params, out, err);
}

mt_status mt_generate_each(mt_session *s, const int32_t *const *src, const int *src_len, int n,
                           const mt_decode_params *const *each, mt_hyp *out, mt_err *err)
{
    return generate(s, src, src_len, n, each, each && n > 0 ? each[0] : NULL, out, err);
}

void mt_hyps_free(mt_hyp *hyps, int n)
{
    if (!hyps)
        return;
    for (int i = 0; i < n; i++) {
        free(hyps[i].ids);
        free(hyps[i].text);
        free(hyps[i].token_logp);
        free(hyps[i].align);
        hyps[i].ids = NULL;
        hyps[i].text = NULL;
        hyps[i].token_logp = NULL;
        hyps[i].align = NULL;
        hyps[i].n_ids = 0;
    }
}
