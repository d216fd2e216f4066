/* constraints.c: the rules a sequence applies to a row's logits before its
 * token is chosen (mt_decode_params: repetition_penalty, no_repeat_ngram_size,
 * min_length; generate.c's ROW_RULES lists them in that order), as Hugging
 * Face's logits processors and CTranslate2's do.  They act on the logits (before the log-softmax) for every
 * search: greedy, sampling and beam.  The row's output so far (its target
 * prefix included) is the history; the decoder start token is not part of it
 * (it is pad, never generated: an n-gram holding it can never recur, so HF,
 * which counts it, bans the same ids).  Pad itself is never a candidate.
 * Allocates nothing: the scratch is the session's.
 */
#include "model/mt_internal.h"

#include <float.h>
#include <math.h>

/* HF RepetitionPenaltyLogitsProcessor: each distinct id of the history once,
 * from its original logit (a repeated id is not penalized twice).  The new
 * values go to pen_v first, so a later duplicate still reads the original. */
void mt_rule_repetition(const int32_t *hist, int n, float pen, float *lg, float *pen_v)
{
    for (int i = 0; i < n; i++) {
        float x = lg[hist[i]], y = x < 0 ? x * pen : x / pen;
        pen_v[i] = isinf(y) ? copysignf(FLT_MAX, y) : y;    /* a tiny penalty is a huge factor */
    }
    for (int i = 0; i < n; i++)
        lg[hist[i]] = pen_v[i];
}

/* HF NoRepeatNGramLogitsProcessor: the last size-1 ids of the history, where
 * they occurred before followed by id x, ban x. */
void mt_rule_no_repeat(const int32_t *hist, int n, int size, float *lg)
{
    if (size < 1 || n + 1 < size)
        return;
    int k = size - 1;                        /* the window: hist[n-k .. n) */
    for (int i = 0; i + k < n; i++) {        /* the n-gram hist[i .. i+k] with i+k <= n-1 */
        int same = 1;
        for (int j = 0; j < k && same; j++)
            same = hist[i + j] == hist[n - k + j];
        if (same)
            lg[hist[i + k]] = -INFINITY;
    }
}


/* ---- lexical constraints (glossary terms) ----------------------------------------
 * The method: forced spans placed by the alignment.  Each sequence carries up
 * to MT_MAX_CONSTRAINTS (source span, target ids); each row tracks which are
 * met and which one is under way.  A constraint starts, and its ids are then
 * forced one per step, when
 *   - the row's step aligns into its source span, or past it (the model is
 *     translating those words now, or has gone by them),
 *   - the model would end the sentence (</s> would win) with it unmet, or
 *   - the steps left before the forced </s> only just hold what is unmet
 *     (so every finished hypothesis holds every constraint that fits).
 * A run of ids the model produces by itself is followed without forcing and
 * counts when complete; it is dropped at the first id that differs.  </s> is
 * banned while a constraint is unmet; after one is met, a piece that would
 * glue onto its last word is banned for a step; where a forced start
 * displaced the model's own (long) word, that word is banned from the row.
 * The cost per step is a few comparisons per constraint and row, whatever
 * their number (the cost Post & Vilar's dynamic beam allocation keeps flat),
 * and no beam row is set aside for constraint banks: measured on the term
 * test set, banks as in grid beam search cost up to 0.5 BLEU at beam 4 and
 * dropping the alignment trigger 5-8 (BENCHMARKS.md, "Issue 29").  Greedy
 * and beam both call mt_cons_forced, mt_cons_free and mt_cons_advance per row. */

static const mt_cons *cons_of(const mt_session *s, const mt_seq *q)
{
    return s->cons + (long)(q - s->seqs) * MT_MAX_CONSTRAINTS;
}

static int32_t cons_id(const mt_session *s, const mt_seq *q, const mt_cons *k, int i)
{
    return s->cons_ids[(long)(q - s->seqs) * s->p.max_tgt_len + k->off + i];
}

/* Ids still to come: the unmet constraints', less what the one under way has out. */
static int cons_left(const mt_seq *q, const mt_cons *k, const mt_cstate *c)
{
    int left = 0;
    for (int i = 0; i < q->n_cons; i++)
        if (!(c->met >> i & 1u))
            left += k[i].n - (c->active == i ? c->pos : 0);
    return left;
}

/* Whether the row is past constraint k's words: aligned after its span, not to
 * the source's last position (</s>, where pieces inside a word often look). */
static int passed(const mt_session *s, const mt_seq *q, const mt_cons *k, int al)
{
    return al >= k->end && al < s->src_len[q - s->seqs] - 1;
}

int32_t mt_cons_forced(const mt_session *s, const mt_seq *q, const mt_cstate *c, int t, int al, int *which)
{
    *which = -1;
    if (q->n_cons == 0)
        return -1;
    const mt_cons *k = cons_of(s, q);
    int slots = q->max_length - 2 - t;                /* ids that still fit before the forced </s> */
    int left = cons_left(q, k, c), i = -1;
    if (left == 0)
        return -1;
    if (c->active >= 0 && (c->forced || slots <= left))
        i = c->active;                                  /* under way (a followed run becomes forced) */
    else if (c->active >= 0)
        return -1;                                      /* the model is writing one by itself */
    for (int j = 0; i < 0 && j < q->n_cons; j++)      /* the step translates its source words ... */
        if (!(c->met >> j & 1u) && al >= k[j].start && al < k[j].end)
            i = j;
    for (int j = 0; i < 0 && j < q->n_cons; j++)      /* ... or has gone past them */
        if (!(c->met >> j & 1u) && passed(s, q, &k[j], al))
            i = j;
    for (int j = 0; i < 0 && slots <= left && j < q->n_cons; j++)   /* the deadline: the first unmet */
        if (!(c->met >> j & 1u))
            i = j;
    if (i < 0)
        return -1;
    *which = i;
    return cons_id(s, q, &k[i], c->active == i ? c->pos : 0);
}

int32_t mt_cons_free(const mt_session *s, const mt_seq *q, const mt_cstate *c, float *lg, const int32_t *ids,
                     int n, int *which)
{
    *which = -1;
    if (q->n_cons == 0)
        return -1;
    int32_t eos = s->m->info.eos_id, pad = s->m->info.pad_id;
    if (!ids)
        n = s->m->V;
    if (c->glued)
        for (int i = 0; i < n; i++) {
            int32_t v = ids ? ids[i] : i;
            if (s->word_cont[v])
                lg[v] = -INFINITY;
        }
    for (int i = 0; i < c->n_ban; i++)
        lg[c->ban[i]] = -INFINITY;
    if (c->met == (1u << q->n_cons) - 1u)
        return -1;
    int best = eos;                                     /* would </s> win? (pad never does) */
    for (int i = 0; i < n; i++) {                       /* ascending ids: the [V] scan's first maximum */
        int32_t v = ids ? ids[i] : i;
        if (v != pad && lg[v] > lg[best])
            best = v;
    }
    lg[eos] = -INFINITY;
    if (best != eos || c->active >= 0)
        return -1;
    const mt_cons *k = cons_of(s, q);
    for (int j = 0; j < q->n_cons; j++)
        if (!(c->met >> j & 1u)) {
            *which = j;
            return cons_id(s, q, &k[j], 0);
        }
    return -1;
}

mt_cstate mt_cons_advance(const mt_session *s, const mt_seq *q, mt_cstate c, int32_t id, int which)
{
    if (q->n_cons == 0)
        return c;
    const mt_cons *k = cons_of(s, q);
    c.glued = 0;
    if (which >= 0) {                                   /* forced: its constraint, started or going on */
        if (c.active != which)
            c = (mt_cstate){.met = c.met, .active = (int16_t)which, .pos = 0};
        c.pos++;
        c.forced = 1;
    } else if (c.active >= 0 && cons_id(s, q, &k[c.active], c.pos) == id) {
        c.pos++;                                        /* a followed run goes on */
    } else {
        c.active = -1, c.pos = 0, c.forced = 0;         /* a followed run the model left, or none */
        for (int j = 0; j < q->n_cons; j++)
            if (!(c.met >> j & 1u) && cons_id(s, q, &k[j], 0) == id) {
                c.active = (int16_t)j, c.pos = 1;
                break;
            }
        if (c.active < 0)
            return c;
    }
    if (c.pos == k[c.active].n) {          /* met: its last word ends here, forced or not */
        c.met |= 1u << c.active;
        c.glued = 1;
        c.active = -1, c.pos = 0, c.forced = 0;
    }
    return c;
}

void mt_cons_displaced(const mt_session *s, mt_cstate *c, int32_t natural)
{
    if (natural >= 0 && s->word_long[natural] && c->n_ban < MT_MAX_CONSTRAINTS)
        c->ban[c->n_ban++] = natural;
}
