/* generate.c: greedy and beam search over batches of sources
 * (models/recipe/model.py greedy() and beam(), HF v4.50+ rules).
 *
 * Rows are decoded in lock step (all at the same position t).  A source's
 * rows share its cross K/V (row_src); each row owns a physical self-attention
 * slot (row_slot).  Beam reordering re-points slots and copies a cache only
 * when a beam forks (two children of one parent).  Nothing here allocates
 * between the encoder and the copy of the results.
 */
#include "mt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BEAM  16
#define NEG_BIG   (-1e9f)        /* model.py's "impossible" running score */

mt_decode_params mt_decode_default_params(void)
{
    return (mt_decode_params){.beam_size = 0, .max_length = 0, .length_penalty = 1.0f, .n_best = 1};
}

mt_status mt_check_decode_params(const mt_session *s, const mt_decode_params *p, mt_decode_params *out,
                                 mt_err *err)
{
    const mt_model_info *info = &s->m->info;
    mt_decode_params q = p ? *p : mt_decode_default_params();
    if (q.beam_size == 0)
        q.beam_size = info->default_beam < MAX_BEAM ? info->default_beam : MAX_BEAM;
    if (q.beam_size < 1 || q.beam_size > MAX_BEAM)
        return mt_err_set(err, MT_ERR_INPUT, "beam_size %d outside [1, %d]", q.beam_size, MAX_BEAM);
    if (q.beam_size > s->p.max_batch)
        return mt_err_set(err, MT_ERR_INPUT, "beam_size %d exceeds the session's max_batch %d", q.beam_size,
                          s->p.max_batch);
    if (q.n_best == 0)
        q.n_best = 1;
    if (q.n_best < 1 || q.n_best > q.beam_size)
        return mt_err_set(err, MT_ERR_INPUT, "n_best %d outside [1, beam_size %d]", q.n_best, q.beam_size);
    if (q.max_length == 0)
        q.max_length = info->default_max_length < s->p.max_tgt_len ? info->default_max_length : s->p.max_tgt_len;
    if (q.max_length < 2 || q.max_length > s->p.max_tgt_len)
        return mt_err_set(err, MT_ERR_INPUT, "max_length %d outside [2, %d] (the session's max_tgt_len)",
                          q.max_length, s->p.max_tgt_len);
    if (!isfinite(q.length_penalty))
        return mt_err_set(err, MT_ERR_INPUT, "length_penalty is not finite");
    *out = q;
    return MT_OK;
}

/* ---- helpers ------------------------------------------------------------------ */
/* The k largest of v[0..n), sorted descending; ties keep the lower index first
 * (torch.topk on CPU).  Returns how many were found (min(n, k)). */
static int topk(const float *v, int n, int k, float *tv, int *ti)
{
    int cnt = 0;
    for (int i = 0; i < n; i++) {
        float x = v[i];
        if (x != x || (cnt == k && !(x > tv[k - 1])))
            continue;
        int p = cnt < k ? cnt++ : k - 1;
        while (p > 0 && x > tv[p - 1]) {
            tv[p] = tv[p - 1];
            ti[p] = ti[p - 1];
            p--;
        }
        tv[p] = x;
        ti[p] = i;
    }
    return cnt;
}

/* argmax over v != skip; first index wins ties. */
static int argmax_skip(const float *v, int n, int skip)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (i != skip && (best < 0 || v[i] > v[best]))
            best = i;
    return best;
}

/* ---- greedy ------------------------------------------------------------------- */
/* Rows 0..ng-1 = sources 0..ng-1, slot r.  Finished rows leave the batch. */
static void greedy(mt_session *s, int ng, int max_length)
{
    const mt_model *m = s->m;
    int V = m->V, T = s->p.max_tgt_len, na = ng;
    int32_t pad = m->info.pad_id, eos = m->info.eos_id;
    for (int r = 0; r < ng; r++) {
        s->act_rows[r] = r;
        s->row_tok[r] = m->info.decoder_start_id;
        s->glen[r] = 0;
        s->gscore[r] = 0.0;
    }
    for (int t = 0; t < max_length - 1 && na > 0; t++) {
        for (int i = 0; i < na; i++)
            s->tok_in[i] = s->row_tok[s->act_rows[i]];
        mt_decoder_step(s, na, s->tok_in, t, s->act_rows, s->act_rows);
        int keep = 0;
        for (int i = 0; i < na; i++) {
            int r = s->act_rows[i];
            const float *lg = s->logits + (long)i * V;
            int32_t tok = eos;                               /* forced on the last step (logp 0) */
            if (t + 1 != max_length - 1) {
                tok = argmax_skip(lg, V, pad);
                s->gscore[r] += (double)lg[tok] - mt_k_logsumexp_skip(lg, V, pad);
            }
            s->hist[(long)r * T + s->glen[r]++] = tok;
            s->row_tok[r] = tok;
            if (tok != eos)
                s->act_rows[keep++] = r;
        }
        na = keep;
    }
}

/* ---- beam search ----------------------------------------------------------------- */
typedef struct {
    int Bm, K, ng, max_length, cur;
    float lpen;
    int *alive, *unsat;            /* per source */
} beam_ctx;

/* Merge this step's finished candidates (the first Bm of the K that stop) into
 * the source's finished list: stable sort by score, keep Bm (model.py). */
static void update_finished(mt_session *s, const beam_ctx *c, int g, const int *stop)
{
    int Bm = c->Bm, T = s->p.max_tgt_len, V = s->m->V, n = 0;
    mt_fin_slot *fin = s->fin + g * Bm;
    int32_t *fids = s->fin_ids + (long)g * Bm * T;
    double sc[2 * MAX_BEAM];
    int from[2 * MAX_BEAM];                     /* >= 0: old slot j; < 0: candidate -(r+1) */
    for (int j = 0; j < Bm; j++) {
        sc[n] = fin[j].n >= 0 ? fin[j].score : -1e9;
        from[n++] = j;
    }
    for (int r = 0; r < Bm; r++)
        if (stop[r] && c->unsat[g]) {
            sc[n] = (double)s->top_v[r] / pow((double)c->cur, (double)c->lpen);
            from[n++] = -(r + 1);
        }
    if (n == Bm)
        return;
    for (int i = 1; i < n; i++)                 /* stable insertion sort, descending */
        for (int j = i; j > 0 && sc[j] > sc[j - 1]; j--) {
            double ts = sc[j]; sc[j] = sc[j - 1]; sc[j - 1] = ts;
            int tf = from[j]; from[j] = from[j - 1]; from[j - 1] = tf;
        }
    mt_fin_slot *nf = s->fin2 + g * Bm;
    int32_t *nids = s->fin_ids2 + (long)g * Bm * T;
    for (int j = 0; j < Bm; j++) {
        int f = from[j];
        if (f >= 0) {
            nf[j] = fin[f];
            if (fin[f].n > 0)
                memcpy(nids + (long)j * T, fids + (long)f * T, sizeof(int32_t) * (size_t)fin[f].n);
        } else {
            int r = -f - 1, flat = s->top_i[r], parent = g * Bm + flat / V;
            memcpy(nids + (long)j * T, s->hist + (long)parent * T, sizeof(int32_t) * (size_t)(c->cur - 1));
            nids[(long)j * T + c->cur - 1] = flat % V;
            nf[j] = (mt_fin_slot){.score = sc[j], .n = c->cur};
        }
    }
    memcpy(fin, nf, sizeof *fin * (size_t)Bm);
    memcpy(fids, nids, sizeof(int32_t) * (size_t)Bm * T);
}

/* Give row g*Bm+b the cache of its parent: the first child of a parent takes
 * the parent's slot; a second child gets a free slot of the group and a copy of
 * positions 0..cur-1 of every layer. */
static void reorder_slots(mt_session *s, const beam_ctx *c, int g, const int *parent)
{
    const mt_model *m = s->m;
    int Bm = c->Bm, base = g * Bm;
    int *old_slot = s->tmp_i, *claimed = s->slot_used;       /* claimed: by old row (group-local) */
    long per_slot = (long)s->p.max_tgt_len * 2 * m->d, bytes = (long)c->cur * 2 * m->d * (long)sizeof(float);
    for (int b = 0; b < Bm; b++) {
        old_slot[b] = s->row_slot[base + b];
        claimed[b] = 0;
    }
    int first[MAX_BEAM];
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
        for (int l = 0; l < m->info.dec_layers; l++) {
            float *cache = s->self_kv + (long)l * s->p.max_batch * per_slot;
            memcpy(cache + dst * per_slot, cache + src * per_slot, (size_t)bytes);
        }
        s->row_slot[base + b] = dst;
    }
}

/* One step of one source's beam search, after its rows' logits are in
 * s->logits rows [a, a+Bm).  Returns 1 while the source is still running. */
static int beam_source_step(mt_session *s, beam_ctx *c, int g, int a)
{
    const mt_model *m = s->m;
    int Bm = c->Bm, K = c->K, V = m->V, T = s->p.max_tgt_len, base = g * Bm;
    int32_t pad = m->info.pad_id, eos = m->info.eos_id;
    float *tot = s->lp + (long)a * V;                          /* [Bm][V] */
    for (int b = 0; b < Bm; b++) {
        float *row = tot + (long)b * V, run = s->run[base + b];
        if (c->cur == c->max_length - 1) {                     /* forced eos */
            for (int v = 0; v < V; v++)
                row[v] = -INFINITY;
            row[eos] = 0.0f;
        } else {
            mt_k_log_softmax_skip(s->logits + (long)(a + b) * V, V, pad, row);
        }
        for (int v = 0; v < V; v++)
            row[v] = row[v] + run;
    }
    topk(tot, Bm * V, K, s->top_v, s->top_i);
    int stop[2 * MAX_BEAM], all_stop = 1, parent[MAX_BEAM], order[MAX_BEAM];
    float alive[2 * MAX_BEAM], run_new[MAX_BEAM];
    for (int k = 0; k < K; k++) {
        stop[k] = s->top_i[k] % V == eos || c->cur + 1 >= c->max_length;
        all_stop &= stop[k];
        alive[k] = s->top_v[k] + (stop[k] ? NEG_BIG : 0.0f);
    }
    update_finished(s, c, g, stop);
    topk(alive, K, Bm, run_new, order);
    for (int b = 0; b < Bm; b++) {                             /* new histories */
        int flat = s->top_i[order[b]];
        parent[b] = flat / V;
        int32_t *h = s->hist2 + (long)(base + b) * T;
        memcpy(h, s->hist + (long)(base + parent[b]) * T, sizeof(int32_t) * (size_t)(c->cur - 1));
        h[c->cur - 1] = flat % V;
        s->row_tok[base + b] = flat % V;
        s->run[base + b] = run_new[b];
    }
    reorder_slots(s, c, g, parent);
    /* early-stop heuristic (early_stopping=False), after cur += 1 */
    double best_possible = (double)run_new[0] / pow((double)c->cur, (double)c->lpen), worst = 1e300;
    for (int j = 0; j < Bm; j++) {
        const mt_fin_slot *f = &s->fin[base + j];
        if (f->n < 0) {
            worst = -1e9;
            break;
        }
        worst = f->score < worst ? f->score : worst;
    }
    c->unsat[g] = c->unsat[g] && best_possible > worst;
    return c->unsat[g] && !all_stop;
}

static void beam_init(mt_session *s, beam_ctx *c)
{
    int Bm = c->Bm;
    for (int g = 0; g < c->ng; g++) {
        c->alive[g] = c->unsat[g] = 1;
        for (int b = 0; b < Bm; b++) {
            int r = g * Bm + b;
            s->run[r] = b == 0 ? 0.0f : NEG_BIG;
            s->row_slot[r] = r;
            s->row_tok[r] = s->m->info.decoder_start_id;
            s->fin[r] = (mt_fin_slot){.score = -1e9, .n = -1};
        }
    }
}

static void beam(mt_session *s, int ng, int Bm, int max_length, float lpen)
{
    int *alive = s->g_alive;
    beam_ctx c = {.Bm = Bm, .K = 2 * Bm, .ng = ng, .max_length = max_length, .lpen = lpen,
                  .alive = alive, .unsat = s->g_unsat};
    beam_init(s, &c);
    for (c.cur = 1; c.cur < max_length; c.cur++) {
        int na = 0;
        for (int g = 0; g < ng; g++)
            if (alive[g])
                for (int b = 0; b < Bm; b++, na++) {
                    s->act_rows[na] = g * Bm + b;
                    s->tok_in[na] = s->row_tok[g * Bm + b];
                    s->row_src[na] = g;
                    s->tmp_i[s->p.max_batch + na] = s->row_slot[g * Bm + b];
                }
        if (na == 0)
            break;
        mt_decoder_step(s, na, s->tok_in, c.cur - 1, s->tmp_i + s->p.max_batch, s->row_src);
        for (int a = 0; a < na; a += Bm) {
            int g = s->act_rows[a] / Bm;
            alive[g] = beam_source_step(s, &c, g, a);
        }
        int32_t *t = s->hist;                          /* rows of finished sources are never read again */
        s->hist = s->hist2;
        s->hist2 = t;
    }
}

/* ---- results ------------------------------------------------------------------- */
static mt_status put_hyp(mt_hyp *h, const int32_t *ids, int n, double score, mt_err *err)
{
    h->ids = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!h->ids)
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    if (n)
        memcpy(h->ids, ids, sizeof(int32_t) * (size_t)n);
    h->n_ids = n;
    h->score = (float)score;
    h->text = NULL;
    return MT_OK;
}

static mt_status collect(mt_session *s, int ng, const mt_decode_params *q, mt_hyp *out, mt_err *err)
{
    int T = s->p.max_tgt_len, Bm = q->beam_size;
    for (int g = 0; g < ng; g++) {
        mt_hyp *o = out + (long)g * q->n_best;
        mt_status st = MT_OK;
        if (Bm == 1) {
            st = put_hyp(o, s->hist + (long)g * T, s->glen[g], s->gscore[g], err);
        } else {
            for (int j = 0; j < q->n_best && st == MT_OK; j++) {
                const mt_fin_slot *f = &s->fin[g * Bm + j];
                st = f->n >= 0 ? put_hyp(o + j, s->fin_ids + ((long)g * Bm + j) * T, f->n, f->score, err)
                               : put_hyp(o + j, NULL, 0, -INFINITY, err);
            }
        }
        if (st != MT_OK)
            return st;
    }
    return MT_OK;
}

static mt_status check_source(const mt_session *s, const int32_t *src, int len, int i, mt_err *err)
{
    if (!src || len < 1)
        return mt_err_set(err, MT_ERR_INPUT, "source %d is empty (it must end with </s>)", i);
    if (len > s->p.max_src_len)
        return mt_err_set(err, MT_ERR_TOO_LONG, "source %d has %d tokens; the limit is %d", i, len,
                          s->p.max_src_len);
    for (int j = 0; j < len; j++)
        if (src[j] < 0 || src[j] >= s->m->V)
            return mt_err_set(err, MT_ERR_INPUT, "source %d: token id %d outside the vocabulary", i, (int)src[j]);
    return MT_OK;
}

mt_status mt_generate(mt_session *s, const int32_t *const *src, const int *src_len, int n,
                      const mt_decode_params *params, mt_hyp *out, mt_err *err)
{
    mt_decode_params q;
    mt_status st = mt_check_decode_params(s, params, &q, err);
    if (st != MT_OK)
        return st;
    if (n < 0 || (n > 0 && (!src || !src_len || !out)))
        return mt_err_set(err, MT_ERR_INPUT, "mt_generate: bad arguments");
    for (int i = 0; i < n; i++)
        if ((st = check_source(s, src[i], src_len[i], i, err)) != MT_OK)
            return st;
    memset(out, 0, sizeof *out * (size_t)n * (size_t)q.n_best);
    int group = s->p.max_batch / q.beam_size;                 /* sources decoded together */
    for (int g0 = 0; g0 < n; g0 += group) {
        int ng = n - g0 < group ? n - g0 : group;
        for (int g = 0; g < ng; g++) {
            s->src_off[g] = g * s->p.max_src_len;
            s->src_len[g] = src_len[g0 + g];
            mt_encode_source(s, src[g0 + g], src_len[g0 + g], s->src_off[g], NULL);
        }
        if (q.beam_size == 1)
            greedy(s, ng, q.max_length);
        else
            beam(s, ng, q.beam_size, q.max_length, q.length_penalty);
        if ((st = collect(s, ng, &q, out + (long)g0 * q.n_best, err)) != MT_OK) {
            mt_hyps_free(out, n * q.n_best);
            return st;
        }
    }
    return MT_OK;
}

void mt_hyps_free(mt_hyp *hyps, int n)
{
    if (!hyps)
        return;
    for (int i = 0; i < n; i++) {
        free(hyps[i].ids);
        free(hyps[i].text);
        hyps[i].ids = NULL;
        hyps[i].text = NULL;
        hyps[i].n_ids = 0;
    }
}
