/* constraints.c: the rules a sequence applies to a row's logits before its
 * token is chosen (mt_decode_params: repetition_penalty, no_repeat_ngram_size,
 * min_length), in that order, as Hugging Face's logits processors and
 * CTranslate2's do.  They act on the logits (before the log-softmax) for every
 * search: greedy, sampling and beam.  The row's output so far (its target
 * prefix included) is the history; the decoder start token is not part of it
 * (it is pad, never generated: an n-gram holding it can never recur, so HF,
 * which counts it, bans the same ids).  Pad itself is never a candidate.
 * Allocates nothing: the scratch is the session's.
 */
#include "model/mt_internal.h"

#include <math.h>

/* HF RepetitionPenaltyLogitsProcessor: each distinct id of the history once,
 * from its original logit (a repeated id is not penalized twice).  The new
 * values go to pen_v first, so a later duplicate still reads the original. */
static void repetition_penalty(const int32_t *hist, int n, float pen, float *lg, float *pen_v)
{
    for (int i = 0; i < n; i++) {
        float x = lg[hist[i]];
        pen_v[i] = x < 0 ? x * pen : x / pen;
    }
    for (int i = 0; i < n; i++)
        lg[hist[i]] = pen_v[i];
}

/* HF NoRepeatNGramLogitsProcessor: the last size-1 ids of the history, where
 * they occurred before followed by id x, ban x. */
static void no_repeat_ngram(const int32_t *hist, int n, int size, float *lg)
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

void mt_rules_apply(const mt_model *m, const mt_seq *q, const int32_t *hist, int n, float *lg, float *pen_v)
{
    if (q->rep_pen != 1.0f)
        repetition_penalty(hist, n, q->rep_pen, lg, pen_v);
    if (q->ngram > 0)
        no_repeat_ngram(hist, n, q->ngram, lg);
    /* HF MinLengthLogitsProcessor: cur_len = n + 1 decoder tokens (the start token included) */
    if (n + 1 < q->min_length)
        lg[m->info.eos_id] = -INFINITY;
}
