/* decode_params.c: a decode's settings in one place.  mt_decode_limits is the
 * one table of the fields' limits and defaults (the JSON API, the CLI and the
 * served OpenAPI document read it too); mt_decode_params_resolve fills every
 * default and checks every field against it before a sequence starts.  An
 * error names the field as the JSON API spells it.
 */
#include "model/mt_internal.h"

#include <math.h>
#include <string.h>

mt_decode_params mt_decode_default_params(void)
{
    return (mt_decode_params){.beam_size = 0, .lengths.max_length = 0, .length_penalty = 1.0f, .n_best = 1,
                              .penalties.repetition = 1.0f, .sampling.temperature = 1.0f, .sampling.top_p = 1.0f,
                              .alignment.layer = -1};
}

#define F(field) offsetof(mt_decode_params, field)
#define STR_(x) #x
#define STR(x) STR_(x)

/* The resolver walks the rows in order: beam_size and max_length come before
 * the rows bounded by them (min_length). */
const mt_decode_limit mt_decode_limits[] = {
    {.name = "beam_size", .offset = F(beam_size), .type = MT_LIMIT_INT, .min = 1, .max_of = MT_BOUND_MAX_BEAM,
     .dflt_of = MT_BOUND_MODEL_BEAM, .doc = "hypotheses searched per step; 1 = greedy"},
    {.name = "max_length", .offset = F(lengths.max_length), .type = MT_LIMIT_INT, .min = 2,
     .max_of = MT_BOUND_MAX_TGT_LEN, .dflt_of = MT_BOUND_MODEL_MAX_LENGTH,
     .doc = "decoder length limit per sentence, start token included"},
    {.name = "min_length", .offset = F(lengths.min_length), .type = MT_LIMIT_INT, .max_of = MT_BOUND_MAX_LENGTH,
     .doc = "</s> banned while the decoder length (start token included) is below it"},
    {.name = "max_length_factor", .offset = F(lengths.max_length_factor), .type = MT_LIMIT_FLOAT, .min = 0,
     .min_open = 1, .max = MT_LENGTH_FACTOR_NONE, .dflt_of = MT_BOUND_MODEL_LENGTH_FACTOR,
     .doc = "encoder-decoders: a sentence's output at most ceil(factor x its source ids) + the model's "
            "max_length_extra ids; " STR(MT_LENGTH_FACTOR_NONE) " = no cap"},
    {.name = "repetition_penalty", .offset = F(penalties.repetition), .type = MT_LIMIT_FLOAT, .max = 100,
     .dflt = 1, .min_open = 1, .doc = "divides the logit of an id already in the output (> 1 discourages repeats)"},
    {.name = "no_repeat_ngram_size", .offset = F(penalties.no_repeat_ngram_size), .type = MT_LIMIT_INT,
     .max_of = MT_BOUND_MAX_TGT_LEN, .doc = "no n-gram of this size occurs twice in the output; 0 = off"},
    {.name = "loop_no_repeat_ngram_size", .offset = F(penalties.loop_no_repeat), .type = MT_LIMIT_INT, .min = -1,
     .max = 16, .doc = "encoder-decoders: an output that loops is decoded again with this no_repeat_ngram_size; "
                       "0 = the model's default, -1 = off"},
    {.name = "copy_guard", .offset = F(penalties.copy_guard), .type = MT_LIMIT_BOOL, .min = -1, .max = 1,
     .doc = "encoder-decoders: an output equal to its source is decoded again, banned from copying it; "
            "default: the model's"},
    {.name = "length_penalty", .offset = F(length_penalty), .type = MT_LIMIT_FLOAT, .min = -10, .max = 10,
     .dflt = 1, .doc = "beam score: sum of log p / (generated length incl. </s>)^length_penalty"},
    {.name = "sampling.temperature", .offset = F(sampling.temperature), .type = MT_LIMIT_FLOAT, .max = 100, .dflt = 1,
     .min_open = 1, .doc = "sampling: the draw is from softmax(logits / temperature)"},
    {.name = "sampling.top_k", .offset = F(sampling.top_k), .type = MT_LIMIT_INT, .max_of = MT_BOUND_VOCAB,
     .doc = "sampling: only the top_k most likely ids; 0 = every id"},
    {.name = "sampling.top_p", .offset = F(sampling.top_p), .type = MT_LIMIT_FLOAT, .max = 1, .dflt = 1, .min_open = 1,
     .doc = "sampling: then the fewest ids, most likely first, whose mass reaches top_p"},
    /* 53 bits: every JSON client reads a seed back exactly.  The engine takes
     * any 64-bit seed (the resolver does not check this row). */
    {.name = "sampling.seed", .offset = F(sampling.seed), .type = MT_LIMIT_U64, .max = 9007199254740991.0,
     .dflt_of = MT_BOUND_DRAWN, .doc = "sampling: sentence j of a request draws with seed + j"},
    {.name = "alignment_layer", .offset = F(alignment.layer), .type = MT_LIMIT_INT, .min_of = MT_BOUND_MINUS_DEC_LAYERS,
     .max_of = MT_BOUND_LAST_DEC_LAYER, .dflt = -1,
     .doc = "decoder layer whose cross-attention aligns; negative counts from the end"},
    {.name = "alignment_heads", .offset = F(alignment.heads), .type = MT_LIMIT_INT, .max_of = MT_BOUND_DEC_HEADS,
     .doc = "alignments average that layer's first alignment_heads heads; 0 = all"},
    {.name = NULL},
};

const mt_decode_limit *mt_decode_limit_find(const char *name)
{
    for (const mt_decode_limit *l = mt_decode_limits; l->name; l++)
        if (strcmp(l->name, name) == 0)
            return l;
    return NULL;
}

float mt_decode_limit_float(const mt_decode_limit *l, double x)
{
    float f = (float)x;
    if (l->min_open && x > l->min && f <= (float)l->min)
        f = nextafterf((float)l->min, INFINITY);
    return f;
}

const char *mt_decode_bound_name(mt_bound b)
{
    switch (b) {
    case MT_BOUND_MAX_BEAM:         return "min(" STR(MT_MAX_BEAM) ", limits.max_batch)";
    case MT_BOUND_MAX_TGT_LEN:      return "limits.max_length";
    case MT_BOUND_MAX_LENGTH:       return "max_length";
    case MT_BOUND_VOCAB:            return "config.vocab_size";
    case MT_BOUND_MINUS_DEC_LAYERS: return "-config.decoder_layers";
    case MT_BOUND_LAST_DEC_LAYER:   return "config.decoder_layers - 1";
    case MT_BOUND_DEC_HEADS:        return "config.decoder_heads";
    case MT_BOUND_MODEL_BEAM:       return "config.default_beam";
    case MT_BOUND_MODEL_MAX_LENGTH: return "config.default_max_length";
    case MT_BOUND_DRAWN:            return "drawn";
    case MT_BOUND_MODEL_LENGTH_FACTOR: return "config.default_length_factor";
    default:                        return "";
    }
}

/* The number bound b stands for; unknown (without m or sp): +-HUGE_VAL, as side says. */
static double bound(mt_bound b, double number, double side, const mt_model *m, const mt_session_params *sp,
                    const mt_decode_params *q)
{
    switch (b) {
    case MT_BOUND_CONST:
        return number;
    case MT_BOUND_MAX_BEAM:
        return sp && sp->max_batch < MT_MAX_BEAM ? sp->max_batch : MT_MAX_BEAM;
    case MT_BOUND_MAX_LENGTH:           /* without a request: the widest */
        return q ? q->lengths.max_length : bound(MT_BOUND_MAX_TGT_LEN, 0, side, m, sp, q);
    case MT_BOUND_MAX_TGT_LEN:
        return sp ? sp->max_tgt_len : side;
    default:
        break;
    }
    if (!m)
        return side;
    switch (b) {
    case MT_BOUND_VOCAB:            return m->info.vocab_size;
    case MT_BOUND_MINUS_DEC_LAYERS: return -m->info.dec_layers;
    case MT_BOUND_LAST_DEC_LAYER:   return m->info.dec_layers - 1;
    case MT_BOUND_DEC_HEADS:        return m->info.dec_heads;
    default:                        return side;
    }
}

void mt_decode_limit_bounds(const mt_decode_limit *l, const mt_model *m, const mt_session_params *sp,
                            const mt_decode_params *q, double *min, double *max)
{
    *min = bound(l->min_of, l->min, -HUGE_VAL, m, sp, q);
    *max = bound(l->max_of, l->max, HUGE_VAL, m, sp, q);
}

static int in_bounds(const mt_decode_limit *l, double x, double lo, double hi)
{
    return (l->min_open ? x > lo : x >= lo) && x <= hi;     /* NaN: never */
}

/* Row l's default for q (m and sp given: the resolver's). */
static double default_of(const mt_decode_limit *l, const mt_model *m, const mt_session_params *sp,
                         const mt_decode_params *q)
{
    switch (l->dflt_of) {
    case MT_BOUND_MODEL_BEAM: {         /* sampling draws one row; n_best needs as many beams */
        double b = q->sampling.enabled ? 1 : m->info.default_beam > q->n_best ? m->info.default_beam : q->n_best;
        double max = bound(MT_BOUND_MAX_BEAM, 0, 0, m, sp, q);
        return b < max ? b : max;
    }
    case MT_BOUND_MODEL_MAX_LENGTH:
        return m->info.default_max_length < sp->max_tgt_len ? m->info.default_max_length : sp->max_tgt_len;
    case MT_BOUND_MODEL_LENGTH_FACTOR:
        return m->info.default_length_factor > 0 ? m->info.default_length_factor : MT_LENGTH_FACTOR_NONE;
    default:
        return l->dflt;
    }
}

static double get(const mt_decode_params *q, const mt_decode_limit *l)
{
    const char *f = (const char *)q + l->offset;
    return l->type == MT_LIMIT_INT || l->type == MT_LIMIT_BOOL ? *(const int *)f
           : l->type == MT_LIMIT_FLOAT ? *(const float *)f : (double)*(const uint64_t *)f;
}

static void set(mt_decode_params *q, const mt_decode_limit *l, double x)
{
    char *f = (char *)q + l->offset;
    if (l->type == MT_LIMIT_INT || l->type == MT_LIMIT_BOOL)
        *(int *)f = (int)x;
    else if (l->type == MT_LIMIT_FLOAT)
        *(float *)f = (float)x;
}

static mt_status out_of_bounds(const mt_decode_limit *l, double lo, double hi, mt_err *err)
{
    if (l->type == MT_LIMIT_INT)
        return mt_err_set(err, MT_ERR_INPUT, "field '%s' must be an integer in [%d, %d]", l->name, (int)lo, (int)hi);
    if (l->type == MT_LIMIT_BOOL)
        return mt_err_set(err, MT_ERR_INPUT, "field '%s' must be 1 (on), -1 (off) or 0 (the default)", l->name);
    return mt_err_set(err, MT_ERR_INPUT, "field '%s' must be a number in %c%g, %g]", l->name,
                      l->min_open ? '(' : '[', lo, hi);
}

/* The target prefix (its ids are checked here, where the model is known). */
static mt_status check_prefix(const mt_model *m, const mt_decode_params *q, mt_err *err)
{
    if (q->n_prefix < 0 || (q->n_prefix > 0 && !q->prefix))
        return mt_err_set(err, MT_ERR_INPUT, "field 'target_prefix': %d ids without an array", q->n_prefix);
    int room = q->lengths.max_length - 2 - (q->forced_bos.enabled != 0);    /* the forced first id takes one */
    if (q->forced_bos.enabled && (q->forced_bos.id < 0 || q->forced_bos.id >= m->V || q->forced_bos.id == m->info.pad_id ||
                                  q->forced_bos.id == m->info.eos_id))
        return mt_err_set(err, MT_ERR_INPUT, "forced_bos: id %d is outside the vocabulary, pad or </s>",
                          (int)q->forced_bos.id);
    if (q->forced_bos.enabled && q->lengths.max_length < 3)
        return mt_err_set(err, MT_ERR_INPUT, "field 'max_length' must be at least 3 for a model whose first "
                          "generated token is its target language (the start token, that token, </s>)");
    if (q->n_prefix > room)
        return mt_err_set(err, MT_ERR_INPUT, "field 'target_prefix' has %d tokens; max_length %d leaves room for %d",
                          q->n_prefix, q->lengths.max_length, room);
    for (int i = 0; i < q->n_prefix; i++)
        if (q->prefix[i] < 0 || q->prefix[i] >= m->V || q->prefix[i] == m->info.pad_id ||
            q->prefix[i] == m->info.eos_id)
            return mt_err_set(err, MT_ERR_INPUT, "field 'target_prefix': id %d is outside the vocabulary, pad or </s>",
                              (int)q->prefix[i]);
    return MT_OK;
}

/* The lexical constraints: spans and ids (a span's end is checked against
 * the source where it is known, mt_seq_start). */
static mt_status check_constraints(const mt_model *m, const mt_decode_params *q, mt_err *err)
{
    if (q->n_constraints < 0 || q->n_constraints > MT_MAX_CONSTRAINTS || (q->n_constraints > 0 && !q->constraints))
        return mt_err_set(err, MT_ERR_INPUT, "field 'glossary': %d terms in a sentence; the limit is %d",
                          q->n_constraints, MT_MAX_CONSTRAINTS);
    int total = q->n_prefix + (q->forced_bos.enabled != 0);
    for (int i = 0; i < q->n_constraints; i++) {
        const mt_constraint *c = &q->constraints[i];
        if (c->src_start < 0 || c->src_end <= c->src_start || c->n_ids < 1 || !c->ids)
            return mt_err_set(err, MT_ERR_INPUT, "field 'glossary': term %d has an empty source span or no target ids",
                              i);
        for (int j = 0; j < c->n_ids; j++)
            if (c->ids[j] < 0 || c->ids[j] >= m->V || c->ids[j] == m->info.pad_id || c->ids[j] == m->info.eos_id)
                return mt_err_set(err, MT_ERR_INPUT, "field 'glossary': term %d: id %d is outside the vocabulary, "
                                  "pad or </s>", i, (int)c->ids[j]);
        total += c->n_ids;
    }
    if (total > q->lengths.max_length - 2)
        return mt_err_set(err, MT_ERR_INPUT, "field 'glossary': the terms and the prefix of a sentence have %d target "
                          "tokens; max_length %d leaves room for %d", total, q->lengths.max_length,
                          q->lengths.max_length - 2);
    return MT_OK;
}

/* The copy guard's ids: target ids, not pad or </s>. */
static mt_status check_copy(const mt_model *m, const mt_decode_params *q, mt_err *err)
{
    if (q->copy.n_ids < 0 || (q->copy.n_ids > 0 && !q->copy.ids))
        return mt_err_set(err, MT_ERR_INPUT, "copy guard: %d ids without an array", q->copy.n_ids);
    for (int i = 0; i < q->copy.n_ids; i++)
        if (q->copy.ids[i] < 0 || q->copy.ids[i] >= m->V || q->copy.ids[i] == m->info.pad_id ||
            q->copy.ids[i] == m->info.eos_id)
            return mt_err_set(err, MT_ERR_INPUT, "copy guard: id %d is outside the vocabulary, pad or </s>",
                              (int)q->copy.ids[i]);
    return MT_OK;
}

mt_status mt_decode_params_resolve(const mt_model *m, const mt_session_params *sp, const mt_decode_params *in,
                                   mt_decode_params *out, mt_err *err)
{
    mt_decode_params q = in ? *in : mt_decode_default_params();
    if (q.n_best == 0)
        q.n_best = 1;
    for (const mt_decode_limit *l = mt_decode_limits; l->name; l++) {
        double lo, hi, x = get(&q, l);
        mt_decode_limit_bounds(l, m, sp, &q, &lo, &hi);
        if (x == 0 && !in_bounds(l, 0, lo, hi))
            set(&q, l, x = default_of(l, m, sp, &q));
        if (l->type != MT_LIMIT_U64 && !in_bounds(l, x, lo, hi))
            return out_of_bounds(l, lo, hi, err);
    }
    if (!q.penalties.copy_guard)        /* the model's default, said: the server then skips the guard's work */
        q.penalties.copy_guard = m->info.default_copy_guard ? 1 : -1;
    if (q.n_best < 1 || q.n_best > q.beam_size)
        return mt_err_set(err, MT_ERR_INPUT, "n_best %d outside [1, beam_size %d]", q.n_best, q.beam_size);
    if (q.sampling.enabled && q.beam_size != 1)
        return mt_err_set(err, MT_ERR_INPUT, "field 'beam_size' must be 1 with 'sampling' (a draw per step), not %d",
                          q.beam_size);
    if (m->arch == MT_ARCH_LLM && q.alignment.enabled)     /* alignments are cross-attention's */
        return mt_err_set(err, MT_ERR_INPUT, "field 'alignments': a decoder-only model has no source alignment");
    if (m->arch == MT_ARCH_LLM && q.n_constraints)  /* placed by the alignment */
        return mt_err_set(err, MT_ERR_INPUT, "field 'glossary': lexical constraints need a source alignment, which "
                          "a decoder-only model has not");
    if (q.shortlist && (m->arch == MT_ARCH_LLM || q.shortlist->V != m->V || q.shortlist->V_src != m->V_src))
        return mt_err_set(err, MT_ERR_INPUT, "field 'shortlist': made for vocabularies of %d (source) and %d "
                          "(target) ids, not this model's %d and %d", q.shortlist->V_src, q.shortlist->V, m->V_src,
                          m->V);
    if (q.lang_vocab && (m->arch == MT_ARCH_LLM || mt_lang_vocab_vocab(q.lang_vocab) != m->V))
        return mt_err_set(err, MT_ERR_INPUT, "field 'lang_vocab': made for a target vocabulary of %d ids, not this "
                          "model's %d", mt_lang_vocab_vocab(q.lang_vocab), m->V);
    mt_status st = check_prefix(m, &q, err);
    if (st == MT_OK)
        st = check_constraints(m, &q, err);
    if (st == MT_OK)
        st = check_copy(m, &q, err);
    if (st != MT_OK)
        return st;
    if (q.alignment.enabled || q.n_constraints) {   /* constraints are placed by the alignment: explicit, the layer
                                                     * 0-based, the heads counted */
        if (q.alignment.layer < 0)
            q.alignment.layer += m->info.dec_layers;
        if (q.alignment.heads == 0)
            q.alignment.heads = m->info.dec_heads;
    }
    *out = q;
    return MT_OK;
}

/* The sequence API's check (generate.c): the session's own shape. */
mt_status mt_check_decode_params(const mt_session *s, const mt_decode_params *p, mt_decode_params *out,
                                 mt_err *err)
{
    return mt_decode_params_resolve(s->m, &s->p, p, out, err);
}
