/* shortlist_step.c: a sequence's lexical shortlist (mt_decode_params.shortlist)
 * and its target language's vocabulary (mt_decode_params.lang_vocab) as the
 * decode step uses them.  At mt_seq_start the sequence's candidate ids
 * become a bit set over the target vocabulary (its row of s->sl.bits): the
 * lists of its source's ids and the frequent ids, or its language's list, or
 * the ids both hold; then eos, its forced first id, its prefix and its
 * constraints' ids.  Before each step, mt_sl_prepare gives every gathered
 * row its sequence's set (NULL: a sequence without one) and, when every row
 * has one and their union holds at most s->sl.max ids, lists the union:
 * the LM head then computes those logits alone (model/decoder.c
 * mt_lm_head_step).  A set of at most MT_SL_SEARCH_MAX ids is also listed
 * (s->sl.list), and generate.c's search runs over the list.  Everything lives
 * in the session: no allocation. */
#include "model/mt_internal.h"

#include <string.h>

/* The set as an ascending list for the search (shortlist.c's sets are small
 * beside the vocabulary): positions keep the ids' order, so the first of
 * equal maxima, top-k's ties and sampling's id order are the [V] row's. */
static void list_set(mt_session *s, int id, int count)
{
    mt_seq *q = &s->seqs[id];
    if (count > s->sl.cap)
        return;                                     /* searched over [V] rows */
    const uint64_t *b = s->sl.bits + (long)id * s->sl.words;
    int32_t *list = s->sl.list + (long)id * s->sl.cap, pad = s->m->info.pad_id;
    int k = 0;
    for (int w = 0; w < s->sl.words; w++)
        for (uint64_t x = b[w]; x; x &= x - 1) {
            int32_t t = w * 64 + __builtin_ctzll(x);
            if (t == pad)
                q->sl_pad = k;
            list[k++] = t;
        }
    q->sl_n = k;
}

/* The shortlist's ids for the source: its frequent ids and its source ids' lists. */
static void shortlist_set(uint64_t *b, const mt_shortlist *sl, const int32_t *src, int src_len)
{
    for (int i = 0; i < sl->n_freq; i++)
        mt_bit_set(b, sl->freq[i]);
    for (int i = 0; i < src_len; i++)
        if (src[i] >= 0 && src[i] < sl->n_src)
            for (long j = sl->off[src[i]]; j < sl->off[src[i] + 1]; j++)
                mt_bit_set(b, sl->ids[j]);
}

void mt_sl_seq_start(mt_session *s, int id, const mt_decode_params *q, const int32_t *src, int src_len)
{
    /* the target language's list (mt_lang_vocab): a language the map lists */
    const uint64_t *lang = q->lang_vocab && q->forced_bos.enabled ? mt_lang_vocab_bits(q->lang_vocab, q->forced_bos.id)
                                                                  : NULL;
    s->seqs[id].shortlist = q->shortlist != NULL || lang != NULL;
    s->seqs[id].sl_n = 0;
    s->seqs[id].sl_pad = -1;
    if (!s->seqs[id].shortlist)
        return;
    uint64_t *b = s->sl.bits + (long)id * s->sl.words;
    memset(b, 0, sizeof *b * (size_t)s->sl.words);
    if (q->shortlist)
        shortlist_set(b, q->shortlist, src, src_len);
    /* both: an id must be one the source may translate to AND one of the
     * language's text (README "Multilingual models"); one: its ids */
    for (int w = 0; lang && w < s->sl.words; w++)
        b[w] = q->shortlist ? b[w] & lang[w] : lang[w];
    /* what every sequence needs whatever the lists say */
    mt_bit_set(b, s->m->info.eos_id);
    for (int i = 0; i < q->n_prefix; i++)
        mt_bit_set(b, q->prefix[i]);
    if (q->forced_bos.enabled)
        mt_bit_set(b, q->forced_bos.id);
    for (int c = 0; c < q->n_constraints; c++)
        for (int i = 0; i < q->constraints[c].n_ids; i++)
            mt_bit_set(b, q->constraints[c].ids[i]);
    /* a beam keeps 2 x beam candidates a step: a set that small is widened
     * with the lowest ids it lacks (as Marian pads its sets to a multiple of
     * 8), so no -inf candidate is ever picked */
    int count = 0, need = 2 * q->beam_size + 1;
    for (int w = 0; w < s->sl.words; w++)
        count += __builtin_popcountll(b[w]);
    for (int32_t t = 0; count < need && t < s->m->V; t++)
        if (!mt_bit_has(b, t) && t != s->m->info.pad_id) {
            mt_bit_set(b, t);
            count++;
        }
    list_set(s, id, count);
}

void mt_sl_prepare(mt_session *s, int n, const int *row_src)
{
    int W = s->sl.words, all = 1, any = 0;
    for (int r = 0; r < n; r++) {
        const mt_seq *q = &s->seqs[row_src[r]];
        int on = q->shortlist;
        s->sl.row[r] = on ? s->sl.bits + (long)row_src[r] * W : NULL;
        /* its search and constraints read the list's ids alone, and its rules
         * the ids of its history (taken from the list) and eos */
        s->sl.only[r] = on && q->sl_n > 0;
        all &= on;
        any |= on;
    }
    s->sl.mask = any;
    s->sl.n = 0;
    if (!all || s->sl.max == 0)
        return;
    memset(s->sl.union_bits, 0, sizeof *s->sl.union_bits * (size_t)W);
    for (int r = 0; r < n; r++)
        if (r == 0 || s->sl.row[r] != s->sl.row[r - 1])       /* a beam's rows share one set */
            for (int w = 0; w < W; w++)
                s->sl.union_bits[w] |= s->sl.row[r][w];
    int count = 0;
    for (int w = 0; w < W; w++)
        count += __builtin_popcountll(s->sl.union_bits[w]);
    if (count > s->sl.max)
        return;                                              /* too many: the whole head, masked */
    /* The union changes only when a sequence joins or leaves: while it stays,
     * the head rows packed for it serve every step (packed once per batch). */
    s->sl.fresh = !s->sl.pk_valid || memcmp(s->sl.packed, s->sl.union_bits, sizeof *s->sl.union_bits * (size_t)W) != 0;
    if (s->sl.fresh) {
        int k = 0;
        for (int w = 0; w < W; w++)
            for (uint64_t x = s->sl.union_bits[w]; x; x &= x - 1)
                s->sl.ids[k++] = w * 64 + __builtin_ctzll(x);
        memcpy(s->sl.packed, s->sl.union_bits, sizeof *s->sl.union_bits * (size_t)W);
    }
    s->sl.n = count;
}
