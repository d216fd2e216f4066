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
#include "util/check.h"

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
        return (cand_view){q->sl_n, q->sl_pad, s->sl.list + (long)(q - s->seqs) * s->sl.cap};
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
static inline int ends(const mt_seq *seq, int32_t id, int32_t eos)
{
    return id == eos || (seq->end_ids && seq->end_ids[id]);
}

/* ---- the rules on a row's logits ------------------------------------------------
 * Greedy, sampling and beam rows go through the same ordered list (as
 * CTranslate2's logits processors): each rule may change the row's logits in
 * place and may force an id, which ends the list (the id's log p is then of
 * the logits as they stand).  None forced: the search picks.  The forced
 * prefix and the constraints' ids are exempt from the penalties, which run
 * in Hugging Face's order.  The shortlist's view (view_of) is the set all of
 * them read: a listed sequence's row holds its candidates' logits alone. */
typedef struct {
    mt_session *s;
    const mt_seq *seq;
    int row;                 /* logical row: s->row, s->hist */
    int at;                  /* gathered row of the step: s->step, s->logits, scratch */
    int t;                   /* generated position of the id chosen now (= ids in the history) */
    float *lg;               /* [V] the row's logits */
    cand_view view;
    float *scratch;          /* [view.n] (NULL with a [V] view: the logits are read in place) */
    int which;               /* the constraint forcing the id, -1 */
} row_ctx;

typedef int32_t (*row_rule)(row_ctx *x);     /* an id it forces, or -1 */

static int32_t rule_prefix(row_ctx *x)
{
    const mt_session *s = x->s;
    if (x->t >= x->seq->n_prefix)
        return -1;
    return s->prefix[(long)(x->seq - s->seqs) * s->p.max_tgt_len + x->t];
}

/* A constraint under way, or one this step starts (constraints.c); a start
 * displaces the model's own word for it, which is not said later. */
static int32_t rule_term_forced(row_ctx *x)
{
    mt_session *s = x->s;
    mt_cstate *cst = &s->row.cst[x->row];
    int32_t id = mt_cons_forced(s, x->seq, cst, x->t, s->step.al[x->at], &x->which);
    if (id >= 0 && cst->active != x->which)
        mt_cons_displaced(s, cst, view_argmax(x->view, x->lg, x->scratch));
    return id;
}

static const int32_t *hist_of(const row_ctx *x)
{
    return x->s->hist.ids + (long)x->row * x->s->p.max_tgt_len;
}

static int32_t rule_repetition(row_ctx *x)
{
    float pen = x->seq->rep_pen;
    if (pen != 1.0f)
        mt_rule_repetition(hist_of(x), x->t, pen, x->lg, x->s->pen_v + (long)x->at * x->s->p.max_tgt_len);
    return -1;
}

static int32_t rule_no_repeat(row_ctx *x)
{
    if (x->seq->ngram > 0)
        mt_rule_no_repeat(hist_of(x), x->t, x->seq->ngram, x->lg);
    return -1;
}

/* The copy ban (mt.h copy): while the ids generated after the forced ones
 * are a proper prefix of the sequence's copy ids, the next copy id is
 * banned.  At most n_copy compares a step, only on a guarded second decode. */
static int32_t rule_no_copy(row_ctx *x)
{
    const mt_seq *seq = x->seq;
    int len = x->t - seq->n_prefix;                 /* generated ids after the forced ones */
    if (!seq->copy_ban || len < 0 || len >= seq->n_copy)
        return -1;
    const int32_t *copy = x->s->copy + (long)(seq - x->s->seqs) * x->s->p.max_tgt_len;
    if (memcmp(hist_of(x) + seq->n_prefix, copy, sizeof *copy * (size_t)len) == 0)
        x->lg[copy[len]] = -INFINITY;
    return -1;
}

/* HF MinLengthLogitsProcessor: cur_len = t + 1 decoder tokens (the start token included) */
static int32_t rule_min_length(row_ctx *x)
{
    if (x->t + 1 < x->seq->min_length)
        x->lg[x->s->m->info.eos_id] = -INFINITY;
    return -1;
}

/* A free choice under constraints: a missing term instead of </s>, bans (constraints.c). */
static int32_t rule_term_free(row_ctx *x)
{
    return mt_cons_free(x->s, x->seq, &x->s->row.cst[x->row], x->lg, x->view.ids, x->view.n, &x->which);
}

static const row_rule ROW_RULES[] = {
    rule_prefix, rule_term_forced, rule_repetition, rule_no_repeat, rule_no_copy, rule_min_length, rule_term_free,
};

/* The rules in order on row x: the id the first forcing one forces, or -1. */
static int32_t apply_rules(row_ctx *x)
{
    x->which = -1;
    for (size_t i = 0; i < sizeof ROW_RULES / sizeof *ROW_RULES; i++) {
        int32_t id = ROW_RULES[i](x);
        if (id >= 0)
            return id;
    }
    return -1;
}

static row_ctx row_ctx_of(mt_session *s, const mt_seq *seq, int b, int at, float *scratch)
{
    cand_view view = view_of(s, seq);
    return (row_ctx){.s = s, .seq = seq, .row = seq->base + b, .at = at, .t = seq->cur - 1,
                     .lg = s->logits + (long)at * s->m->V, .view = view, .scratch = view.ids ? scratch : NULL,
                     .which = -1};
}

/* ---- greedy and sampling ------------------------------------------------------- */
/* A free choice over the view's logits v (final): a draw, or the argmax. */
static int32_t greedy_pick(mt_session *s, mt_seq *seq, int at, cand_view view, const float *v)
{
    const mt_model *model = s->m;
    long V = model->V;
    if (seq->sample)
        return mt_sample_token(model, seq, v, view.n, view.skip, view.ids, s->lp + at * V, s->cand + at * V);
    int i = mt_k_argmax_skip(v, view.n, view.skip);
    int32_t first_free = model->info.pad_id == 0 ? 1 : 0;   /* the [V] scan's first id that is not pad */
    return v[i] > -INFINITY ? view_id(view, i) : first_free;   /* every id banned */
}

/* One step of a one-row sequence (row seq->base; gathered row `at` of the
 * step): the rules, then the argmax or a draw, over the sequence's
 * candidates (view_of).  1 while it runs. */
static int greedy_seq_step(mt_session *s, mt_seq *seq, int at)
{
    int row = seq->base, t = seq->cur - 1;
    int32_t eos = s->m->info.eos_id;
    int32_t tok = eos;                                   /* forced on the last step (logp 0) */
    double lp = 0.0;
    if (t + 1 != seq->max_length - 1) {
        row_ctx x = row_ctx_of(s, seq, 0, at, s->sl.lg + (long)at * s->sl.cap);
        tok = apply_rules(&x);
        const float *v = view_gather(x.view, x.lg, x.scratch);   /* the logits are final: the candidates' */
        if (tok < 0)
            tok = greedy_pick(s, seq, at, x.view, v);
        s->row.cst[row] = mt_cons_advance(s, seq, s->row.cst[row], tok, x.which);
        double lse = mt_k_logsumexp_skip(v, x.view.n, x.view.skip);
        lp = lse > -INFINITY ? (double)x.lg[tok] - lse : -INFINITY;     /* -inf: every id was banned */
        if (t == 0 && seq->bos_lp0)
            lp = 0.0;                                    /* a forced_bos: every other id at -inf */
        s->row.gscore[row] += lp;
    }
    mt_hyp_put(mt_hyp_row(s->hist, row, s->p.max_tgt_len), s->row.glen[row]++, tok, (float)lp, s->step.al[at]);
    s->row.tok[row] = tok;
    return t < seq->n_prefix ? tok != eos : !ends(seq, tok, eos);     /* a forced prefix id is not an end */
}

/* ---- beam search ----------------------------------------------------------------- */
/* A step's 2 x beam best candidates (parent beam, id, its own log p and
 * alignment, whether it stops the hypothesis, its score as a live one). */
typedef struct {
    int     n;
    int     parent[2 * MT_MAX_BEAM], stop[2 * MT_MAX_BEAM];
    int32_t id[2 * MT_MAX_BEAM], al[2 * MT_MAX_BEAM];
    float   lp[2 * MT_MAX_BEAM], alive[2 * MT_MAX_BEAM];
} beam_cands;

/* Merge this step's finished candidates (the first beam of the 2 x beam that
 * stop) into the sequence's finished list: stable sort by score, keep beam
 * (model.py). */
static void update_finished(mt_session *s, const mt_seq *seq, const beam_cands *c)
{
    int beam = seq->beam, T = s->p.max_tgt_len, n = 0, base = seq->base, len = seq->cur;
    mt_fin_slot *fin = s->row.fin + base;
    double sc[2 * MT_MAX_BEAM];
    int from[2 * MT_MAX_BEAM];                     /* >= 0: old slot j; < 0: candidate -(k+1) */
    for (int j = 0; j < beam; j++) {
        sc[n] = fin[j].n >= 0 ? fin[j].score : -1e9;
        from[n++] = j;
    }
    for (int k = 0; k < beam; k++)
        if (c->stop[k] && seq->unsat) {
            sc[n] = (double)s->beam.top_v[2 * base + k] / pow((double)len, (double)seq->lpen);
            from[n++] = -(k + 1);
        }
    if (n == beam)
        return;
    for (int i = 1; i < n; i++)                 /* stable insertion sort, descending */
        for (int j = i; j > 0 && sc[j] > sc[j - 1]; j--) {
            double ts = sc[j]; sc[j] = sc[j - 1]; sc[j - 1] = ts;
            int tf = from[j]; from[j] = from[j - 1]; from[j - 1] = tf;
        }
    mt_fin_slot *next = s->row.fin_next + base;
    for (int j = 0; j < beam; j++) {
        int f = from[j];
        mt_hyp_buf dst = mt_hyp_row(s->fin_next, base + j, T);
        if (f >= 0) {
            next[j] = fin[f];
            if (fin[f].n > 0)
                mt_hyp_copy(dst, mt_hyp_row(s->fin, base + f, T), fin[f].n);
        } else {
            int k = -f - 1;
            mt_hyp_copy(dst, mt_hyp_row(s->hist, base + c->parent[k], T), len - 1);
            mt_hyp_put(dst, len - 1, c->id[k], c->lp[k], c->al[k]);
            next[j] = (mt_fin_slot){.score = sc[j], .n = len};
        }
    }
    memcpy(fin, next, sizeof *fin * (size_t)beam);
    mt_hyp_copy(mt_hyp_row(s->fin, base, T), mt_hyp_row(s->fin_next, base, T), beam * T);
}

/* Give row base+b the cache of its parent: the first child of a parent takes
 * the parent's slot; a second child gets a free slot of the sequence and a
 * copy of positions 0..cur-1 of every layer. */
static void reorder_slots(mt_session *s, const mt_seq *seq, const int *parent)
{
    int beam = seq->beam, base = seq->base;
    int *old_slot = s->beam.old_slot + 2 * base, *claimed = s->beam.claimed + base;  /* the sequence's own scratch */
    for (int b = 0; b < beam; b++) {
        old_slot[b] = s->row.slot[base + b];
        claimed[b] = 0;
    }
    int first[MT_MAX_BEAM];
    for (int b = 0; b < beam; b++) {
        first[b] = !claimed[parent[b]];
        claimed[parent[b]] = 1;
        if (first[b])
            s->row.slot[base + b] = old_slot[parent[b]];
    }
    int free_i = 0;
    for (int b = 0; b < beam; b++) {
        if (first[b])
            continue;
        while (claimed[free_i])                   /* an old row nobody continues */
            free_i++;
        int dst = old_slot[free_i++], src = old_slot[parent[b]];
        mt_self_cache_copy(s, (int)(seq - s->seqs), dst, src, seq->cur);   /* positions 0..cur-1 (model/decoder.c) */
        s->row.slot[base + b] = dst;
    }
}

/* Row b's log-probs plus its beam score at the sequence's candidates, into
 * out [view.n]; *lse: the log-softmax normalizer, *which: the constraint
 * forcing its id (-1).  A forced id (the last step's </s>, the rules') alone
 * has a finite value: the forced ids are in every candidate set. */
static void beam_score_row(mt_session *s, const mt_seq *seq, int b, int at, int forced_eos, float *out,
                           double *lse, int *which)
{
    row_ctx x = row_ctx_of(s, seq, b, at, out);
    int places = x.view.n;
    int32_t id = forced_eos ? x.s->m->info.eos_id : apply_rules(&x);
    float score = s->row.score[seq->base + b];
    *which = forced_eos ? -1 : x.which;
    if (!forced_eos) {
        const float *v = view_gather(x.view, x.lg, out);   /* the logits are final: the candidates' */
        *lse = mt_k_logsumexp_skip(v, places, x.view.skip);
        if (id < 0) {
            /* log p + the beam's score (v may be out) */
            mt_k_log_softmax_shift(v, places, x.view.skip, *lse, score, out);
            return;
        }
    }
    int lp0 = forced_eos || (x.t == 0 && seq->bos_lp0);       /* a forced </s> or forced_bos: log p 0 */
    float own = lp0 ? 0.0f : id == s->m->info.pad_id ? -INFINITY : (float)((double)x.lg[id] - *lse);
    for (int i = 0; i < places; i++)
        out[i] = -INFINITY;
    out[view_place(x.view, id)] = own;
    for (int i = 0; i < places; i++)
        out[i] = out[i] + score;
}

/* The 2 x beam best of every row's scores tot [beam][places] into c; 1 when
 * every one of them stops. */
static int beam_candidates(mt_session *s, const mt_seq *seq, int at, const float *tot, const double *lse,
                           int forced_eos, beam_cands *c)
{
    cand_view view = view_of(s, seq);
    int beam = seq->beam, places = view.n, base = seq->base, all_stop = 1;
    int forced = !forced_eos && seq->cur - 1 < seq->n_prefix;
    int32_t eos = s->m->info.eos_id;
    float *top_v = s->beam.top_v + 2 * base;                   /* the sequence's own scratch */
    int *top_i = s->beam.top_i + 2 * base;
    c->n = 2 * beam;
    mt_k_topk(tot, beam * places, c->n, top_v, top_i);
    for (int k = 0; k < c->n; k++) {
        int pb = top_i[k] / places, id = view_id(view, top_i[k] % places);
        c->parent[k] = pb;
        c->id[k] = id;
        c->stop[k] = (forced ? id == eos : ends(seq, id, eos)) || seq->cur + 1 >= seq->max_length;
        all_stop &= c->stop[k];
        c->alive[k] = top_v[k] + (c->stop[k] ? NEG_BIG : 0.0f);
        /* the id's own log p, as the log-softmax wrote it (forced </s>: 0) */
        c->lp[k] = forced_eos || (seq->cur == 1 && seq->bos_lp0) ? 0.0f
                                                                 : (float)((double)s->logits[(long)(at + pb) * s->m->V + id] - lse[pb]);
        c->al[k] = s->step.al[at + pb];
    }
    return all_stop;
}

/* The new beams: the best beam live candidates, their histories built in
 * hist_next then copied back, their constraint states, their caches. */
static void beam_advance(mt_session *s, const mt_seq *seq, const beam_cands *c, const int *which, float *score)
{
    int beam = seq->beam, base = seq->base, T = s->p.max_tgt_len, len = seq->cur;
    int order[MT_MAX_BEAM], parent[MT_MAX_BEAM];
    mt_k_topk(c->alive, c->n, beam, score, order);
    for (int b = 0; b < beam; b++) {
        const int k = order[b];
        parent[b] = c->parent[k];
        mt_hyp_buf h = mt_hyp_row(s->hist_next, base + b, T);
        mt_hyp_copy(h, mt_hyp_row(s->hist, base + parent[b], T), len - 1);
        mt_hyp_put(h, len - 1, c->id[k], c->lp[k], c->al[k]);
        s->row.tok[base + b] = c->id[k];
        s->row.score[base + b] = score[b];
        s->row.cst_next[base + b] = mt_cons_advance(s, seq, s->row.cst[base + parent[b]], c->id[k], which[parent[b]]);
    }
    memcpy(s->row.cst + base, s->row.cst_next + base, sizeof *s->row.cst * (size_t)beam);
    for (int b = 0; b < beam; b++)
        mt_hyp_copy(mt_hyp_row(s->hist, base + b, T), mt_hyp_row(s->hist_next, base + b, T), len);
    reorder_slots(s, seq, parent);
}

/* The early-stop heuristic (early_stopping=False), after cur += 1: the best
 * live score can still beat the worst finished one. */
static int beam_can_improve(const mt_session *s, const mt_seq *seq, float best_live)
{
    double best_possible = (double)best_live / pow((double)seq->cur, (double)seq->lpen), worst = 1e300;
    for (int j = 0; j < seq->beam; j++) {
        const mt_fin_slot *f = &s->row.fin[seq->base + j];
        if (f->n < 0) {
            worst = -1e9;                              /* an empty slot */
            break;
        }
        worst = f->score < worst ? f->score : worst;
    }
    return best_possible > worst;
}

/* One step of one sequence's beam search, after its rows' logits are in
 * s->logits rows [at, at + beam): each row's log-probs plus its score at the
 * sequence's candidates (view_of: its rows share one set), then the top 2 x
 * beam over them all.  Returns 1 while the sequence is still running. */
static int beam_seq_step(mt_session *s, mt_seq *seq, int at)
{
    int beam = seq->beam, places = view_of(s, seq).n;
    int forced_eos = seq->cur == seq->max_length - 1;
    float *tot = s->lp + (long)at * s->m->V;                   /* [beam][places] */
    double lse[MT_MAX_BEAM];                                   /* each row's log-softmax normalizer */
    int which[MT_MAX_BEAM];                                    /* each row's forcing constraint, -1 */
    for (int b = 0; b < beam; b++)
        beam_score_row(s, seq, b, at + b, forced_eos, tot + (long)b * places, &lse[b], &which[b]);
    beam_cands c;
    int all_stop = beam_candidates(s, seq, at, tot, lse, forced_eos, &c);
    update_finished(s, seq, &c);
    float score[MT_MAX_BEAM];
    beam_advance(s, seq, &c, which, score);
    seq->unsat = seq->unsat && beam_can_improve(s, seq, score[0]);
    int full = seq->early;                                     /* early_stopping: every finished slot taken */
    for (int j = 0; full && j < beam; j++)
        full = s->row.fin[seq->base + j].n >= 0;
    return seq->unsat && !all_stop && !full;
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

/* A sentence's decoder length limit (HF max_length, the start token
 * included): q's max_length, or less under the length cap (lengths.
 * max_length_factor, mt.h), never below what the forced ids (target
 * language, prefix, constraints) and min_length need. */
static int seq_max_length(const mt_model *m, const mt_decode_params *q, int src_len)
{
    double f = q->lengths.max_length_factor;
    if (m->arch == MT_ARCH_LLM || !(f > 0) || f >= MT_LENGTH_FACTOR_NONE)
        return q->lengths.max_length;
    double cap = ceil(f * src_len) + m->info.default_length_extra + 1;     /* + the start token */
    int need = 2 + (q->forced_bos.enabled != 0) + q->n_prefix;            /* start, forced ids, </s> */
    for (int i = 0; i < q->n_constraints; i++)
        need += q->constraints[i].n_ids;
    if (cap < need)
        cap = need;
    if (cap < q->lengths.min_length)
        cap = q->lengths.min_length;
    return cap < q->lengths.max_length ? (int)cap : q->lengths.max_length;
}

/* The loop guard's n-gram size for a sequence of q (mt.h penalties.loop_no_repeat): 0 when it does not apply. */
static int seq_loop_ngram(const mt_model *m, const mt_decode_params *q)
{
    int n = q->penalties.loop_no_repeat ? q->penalties.loop_no_repeat : m->info.default_loop_ngram;
    if (n <= 0 || m->arch == MT_ARCH_LLM || q->sampling.enabled || q->penalties.no_repeat_ngram_size ||
        q->progress_callback || q->stop_callback)
        return 0;
    return n;
}

/* The copy guard's ids for a sequence of q (mt.h penalties.copy_guard): how
 * many to keep, 0 when it does not apply (off, no ids, more than an output
 * can hold, or where the loop guard would not apply either). */
static int seq_copy_n(const mt_model *m, const mt_decode_params *q)
{
    int on = q->penalties.copy_guard ? q->penalties.copy_guard > 0 : m->info.default_copy_guard;
    if ((!on && !q->copy.ban) || q->copy.n_ids <= 0 || q->copy.n_ids > q->lengths.max_length - 2 ||
        m->arch == MT_ARCH_LLM || q->sampling.enabled || q->progress_callback || q->stop_callback)
        return 0;
    return q->copy.n_ids;
}

/* First fit: the lowest base of `beam` consecutive free rows, or -1. */
static int find_rows(const mt_session *s, int beam)
{
    int run = 0;
    for (int r = 0; r < s->p.max_batch; r++) {
        run = s->row.owner[r] < 0 ? run + 1 : 0;
        if (run == beam)
            return r - beam + 1;
    }
    return -1;
}

/* Rows [base, base + beam) at a sequence's start: the start token, no
 * output, the first beam alone live, no finished hypothesis. */
static void rows_start(mt_session *s, int base, int beam, int32_t start)
{
    for (int b = 0; b < beam; b++) {
        int r = base + b;
        s->row.slot[r] = r;
        s->row.tok[r] = start;
        s->row.score[r] = b == 0 ? 0.0f : NEG_BIG;
        s->row.fin[r] = (mt_fin_slot){.score = -1e9, .n = -1};
        s->row.glen[r] = 0;
        s->row.gscore[r] = 0.0;
        s->row.cst[r] = (mt_cstate){.active = -1};
    }
}

/* Sequence id starts on rows [base, base + beam): its source (encoded by the
 * next mt_encode_started or mt_step, with every source started since the
 * last), its rows' state, its settings from q (resolved), its prefix,
 * constraints and shortlist.  Every field a sequence reads is set here. */
static void seq_reset(mt_session *s, int id, int base, const mt_decode_params *q, const int32_t *src, int src_len)
{
    s->src_off[id] = id * s->p.max_src_len;
    s->src_len[id] = src_len;
    memcpy(s->src_ids + (long)id * s->p.max_src_len, src, sizeof(int32_t) * (size_t)src_len);
    for (int b = 0; b < q->beam_size; b++)
        s->row.owner[base + b] = id;
    rows_start(s, base, q->beam_size, mt_start_token(s->m, src, src_len));
    s->seqs[id] = (mt_seq){.state = MT_SEQ_ENCODE, .base = base, .beam = q->beam_size, .n_best = q->n_best,
                           .max_length = seq_max_length(s->m, q, src_len), .min_length = q->lengths.min_length,
                           .cur = 1, .unsat = 1, .lpen = q->length_penalty,
                           .n_prefix = q->n_prefix + (q->forced_bos.enabled != 0), .bos_lp0 = q->forced_bos.enabled != 0,
                           .early = s->m->info.early_stopping,
                           .rep_pen = q->penalties.repetition, .ngram = q->penalties.no_repeat_ngram_size,
                           .loop_ngram = seq_loop_ngram(s->m, q), .n_copy = seq_copy_n(s->m, q),
                           .sample = q->sampling.enabled, .top_k = q->sampling.top_k,
                           .temperature = q->sampling.temperature, .top_p = q->sampling.top_p,
                           .token_scores = q->token_scores, .align = q->alignment.enabled,
                           .align_layer = q->alignment.layer, .align_heads = q->alignment.heads,
                           .n_cons = q->n_constraints, .end_ids = q->end_ids,
                           .progress = q->progress_callback, .progress_data = q->progress_callback_data,
                           .stop = q->stop_callback, .stop_data = q->stop_callback_data};
    mt_rng_seed(s->seqs[id].rng, q->sampling.seed);
    int32_t *pf = s->prefix + (long)id * s->p.max_tgt_len;
    if (q->forced_bos.enabled)
        *pf++ = q->forced_bos.id;
    if (q->n_prefix)
        memcpy(pf, q->prefix, sizeof(int32_t) * (size_t)q->n_prefix);
    s->seqs[id].copy_ban = s->seqs[id].n_copy && q->copy.ban;
    if (s->seqs[id].n_copy)
        memcpy(s->copy + (long)id * s->p.max_tgt_len, q->copy.ids, sizeof(int32_t) * (size_t)s->seqs[id].n_copy);
    copy_constraints(s, id, q);
    mt_sl_seq_start(s, id, q, src, src_len);
    s->n_seqs++;
}

/* Sequence id (not FREE) gives back its rows and its slot; the rest of its
 * state stays as it ended (read by tests) until seq_reset starts the slot again. */
static void seq_release(mt_session *s, int id)
{
    mt_seq *seq = &s->seqs[id];
    for (int b = 0; b < seq->beam; b++)
        s->row.owner[seq->base + b] = -1;
    seq->state = MT_SEQ_FREE;
    s->n_seqs--;
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
    while (id < s->p.max_batch && s->seqs[id].state != MT_SEQ_FREE)
        id++;
    MT_ASSERT(id < s->p.max_batch, err);            /* fewer sequences than rows: one is free */
    seq_reset(s, id, base, &q, src, src_len);
    *seq = id;
    return MT_OK;
}

/* After the decoder step, each running sequence applies its own rule to its
 * rows' logits; sequences touch only their own rows, slots and scratch, so
 * they run in parallel over the compute pool (for greedy rows the log-sum-exp
 * over the vocabulary is most of the work, for beams the top-k). */
/* 1 when ids[0..n) loop: some 4-gram occurs 3 or more times (overlapping),
 * or one id 4 or more times in a row (models/recipe/repeats.py's rule, on
 * ids rather than words).  At most max_tgt_len ids, once a sequence. */
static int ids_loop(const int32_t *ids, int n)
{
    for (int i = 0, run = 1; i < n; i++) {
        run = i > 0 && ids[i] == ids[i - 1] ? run + 1 : 1;
        if (run >= 4)
            return 1;
    }
    for (int i = 0; i + 4 <= n; i++) {
        int seen = 1;
        for (int j = i + 1; j + 4 <= n && seen < 3; j++)
            seen += !memcmp(ids + i, ids + j, 4 * sizeof *ids);
        if (seen >= 3)
            return 1;
    }
    return 0;
}

/* The loop guard and the copy guard (mt.h penalties.loop_no_repeat,
 * copy_guard): a finished sequence whose best output loops, or is its copy
 * ids, starts over on its rows, its source as encoded, with the rule of each
 * guard that fired (both: one second decode with both rules); 1 when it did.
 * The second decode is the result, whatever it holds.  (Under copy.ban from
 * the start an output is never its copy ids.) */
static int seq_retry(mt_session *s, int id)
{
    mt_seq *seq = &s->seqs[id];
    int T = s->p.max_tgt_len, base = seq->base;
    if ((!seq->loop_ngram && !seq->n_copy) || seq->retried)
        return 0;
    int n = seq->beam == 1 ? s->row.glen[base] : s->row.fin[base].n;
    const int32_t *ids = (seq->beam == 1 ? mt_hyp_row(s->hist, base, T) : mt_hyp_row(s->fin, base, T)).ids;
    if (n > 0 && ids[n - 1] == s->m->info.eos_id)
        n--;
    int loops = seq->loop_ngram && n >= 4 && ids_loop(ids, n);
    int copies = seq->n_copy && !seq->copy_ban && n - seq->n_prefix == seq->n_copy &&
                 !memcmp(ids + seq->n_prefix, s->copy + (long)id * T, sizeof *ids * (size_t)seq->n_copy);
    if (!loops && !copies)
        return 0;
    rows_start(s, base, seq->beam, mt_start_token(s->m, s->src_ids + (long)id * s->p.max_src_len, s->src_len[id]));
    seq->cur = 1;
    seq->unsat = 1;
    if (loops)
        seq->ngram = seq->loop_ngram;
    seq->copy_ban |= copies;
    seq->retried = 1;
    return 1;
}

static void post_seq(void *ctx, int c)
{
    mt_session *s = ctx;
    int id = s->step.seq[c];
    mt_seq *seq = &s->seqs[id];
    int at = s->step.seq_row[c];
    int running = seq->beam == 1 ? greedy_seq_step(s, seq, at) : beam_seq_step(s, seq, at);
    seq->cur++;
    if (!running && !seq_retry(s, id))
        seq->state = MT_SEQ_DONE;
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

/* The rows of running sequence id, checked (the rows its own, their slots
 * its own), appended to the step's gathered rows from n. */
static mt_status gather_seq(mt_session *s, int id, int n, mt_err *err)
{
    const mt_seq *seq = &s->seqs[id];
    int base = seq->base;
    MT_ASSERT(seq->beam >= 1 && base >= 0 && base + seq->beam <= s->p.max_batch, err);
    MT_ASSERT(n + seq->beam <= s->p.max_batch, err);
    for (int b = 0; b < seq->beam; b++) {
        int r = base + b;
        MT_ASSERT(s->row.owner[r] == id, err);
        MT_ASSERT(s->row.slot[r] >= base && s->row.slot[r] < base + seq->beam, err);
        s->step.tok[n + b] = s->row.tok[r];
        s->step.pos[n + b] = seq->cur - 1;
        s->step.slot[n + b] = s->row.slot[r];
        s->step.src[n + b] = id;
        s->step.al_layer[n + b] = seq->align || seq->n_cons ? seq->align_layer : -1;
        s->step.al_heads[n + b] = seq->align_heads;
    }
    return MT_OK;
}

int mt_step(mt_session *s)
{
    int n = 0, n_seq = 0, done = 0;
    mt_encode_started(s);
    for (int id = 0; id < s->p.max_batch; id++) {        /* gather every running row */
        mt_seq *seq = &s->seqs[id];
        if (seq->state != MT_SEQ_RUN)
            continue;
        if (gather_seq(s, id, n, NULL) != MT_OK) {       /* a broken sequence ends, failed (mt_seq_take) */
            seq->broken = 1;
            seq->state = MT_SEQ_DONE;
            done++;
            continue;
        }
        s->step.seq[n_seq] = id;
        s->step.seq_row[n_seq++] = n;                    /* its rows' first index in this step */
        n += seq->beam;
    }
    if (n == 0)
        return done;
    mt_sl_prepare(s, n, s->step.src);                    /* the lexical shortlists' candidates */
    mt_decoder_step(s, n, s->step.tok, s->step.pos, s->step.slot, s->step.src);
    mt_par_for(n_seq, post_seq, s);
    for (int c = 0; c < n_seq; c++)
        done += s->seqs[s->step.seq[c]].state == MT_SEQ_DONE;
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
    if (q->beam != 1 || q->broken || (q->state != MT_SEQ_RUN && q->state != MT_SEQ_DONE))
        return NULL;
    *n = s->row.glen[q->base];
    return s->hist.ids + (long)q->base * s->p.max_tgt_len;
}

int mt_session_rows_used(const mt_session *s)
{
    int n = 0;
    for (int r = 0; r < s->p.max_batch; r++)
        n += s->row.owner[r] >= 0;
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
            b += (size_t)q->beam * row_kv_bytes(s, s->src_len[id], q->cur > 1 ? q->cur : 1);
    }
    if (add_beam > 0)                   /* mid-way: as many target positions as source tokens */
        b += (size_t)add_beam * row_kv_bytes(s, add_src_len, add_src_len);
    return b;
}

int mt_session_seqs(const mt_session *s) { return s->n_seqs; }

void mt_seq_stop(mt_session *s, int seq)
{
    if (seq >= 0 && seq < s->p.max_batch && s->seqs[seq].state == MT_SEQ_RUN && s->seqs[seq].beam == 1 &&
        !s->seqs[seq].broken)
        s->seqs[seq].state = MT_SEQ_DONE;
}

void mt_seq_cancel(mt_session *s, int seq)
{
    if (seq < 0 || seq >= s->p.max_batch || s->seqs[seq].state == MT_SEQ_FREE)
        return;
    seq_release(s, seq);
}

/* ---- results ------------------------------------------------------------------- */
/* A hypothesis of n ids (rows.ids NULL: none) into h, with the token log-probs
 * and alignments when the sequence asked for them. */
static mt_status put_hyp(const mt_seq *q, mt_hyp *h, mt_hyp_buf rows, int n, double score, mt_err *err)
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

/* A finished sequence's shape: its rows in the session, n_best of its beam
 * (at most MT_MAX_BEAM: the decode loop's hypotheses array). */
static mt_status check_finished(const mt_session *s, const mt_seq *q, mt_err *err)
{
    MT_ASSERT(q->beam >= 1 && q->beam <= MT_MAX_BEAM && q->n_best >= 1 && q->n_best <= q->beam, err);
    MT_ASSERT(q->base >= 0 && q->base + q->beam <= s->p.max_batch, err);
    return MT_OK;
}

mt_status mt_seq_take(mt_session *s, int seq, mt_hyp *out, mt_err *err)
{
    if (!mt_seq_finished(s, seq))
        return mt_err_set(err, MT_ERR_INPUT, "mt_seq_take: sequence %d is not finished", seq);
    const mt_seq *q = &s->seqs[seq];
    int T = s->p.max_tgt_len, base = q->base;
    mt_status st = MT_OK;
    if (q->broken || (st = check_finished(s, q, err)) != MT_OK) {    /* failed: mt_step or here */
        seq_release(s, seq);
        return q->broken ? mt_err_set(err, MT_ERR_INTERNAL, "sequence %d: internal error (an engine invariant "
                                      "failed)", seq) : st;
    }
    memset(out, 0, sizeof *out * (size_t)q->n_best);
    if (q->beam == 1) {
        st = put_hyp(q, out, mt_hyp_row(s->hist, base, T), s->row.glen[base], s->row.gscore[base], err);
    } else {
        for (int j = 0; j < q->n_best && st == MT_OK; j++) {
            const mt_fin_slot *f = &s->row.fin[base + j];
            st = f->n >= 0 ? put_hyp(q, out + j, mt_hyp_row(s->fin, base + j, T), f->n,
                                     f->score, err)
                           : put_hyp(q, out + j, (mt_hyp_buf){0}, 0, -INFINITY, err);
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

/* After gen_start's starts: a sequence runs (its beam fits the session's
 * rows, checked by the resolver, and the feed's sequences free theirs). */
static mt_status check_started(const mt_session *s, mt_err *err)
{
    MT_ASSERT(s->n_seqs > 0, err);
    return MT_OK;
}

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
    return check_started(s, err) == MT_OK ? 1 : -1;
}

static void gen_finished(void *data, int seq, mt_status st, mt_hyp *hyps, int n, const mt_err *err)
{
    gen_feed *g = data;
    MT_ASSERT_OR(seq >= 0 && seq < g->s->p.max_batch, mt_hyps_free(hyps, n); return);
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
