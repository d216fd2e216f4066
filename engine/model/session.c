/* session.c: every mutable buffer of a request, sized once from
 * mt_session_params and carved out of one allocation.  Decoding never
 * allocates: all per-token state below lives here.  The allocation is a
 * page mapping (kernels/alloc.c) whose pages mt_session_trim gives back. */
#include "mt_internal.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN 64

static int imax(int a, int b) { return a > b ? a : b; }

mt_session_params mt_session_default_params(const mt_model *m)
{
    const mt_model_info *info = &m->info;
    mt_session_params p = {.max_batch = 8, .max_src_len = 256, .max_tgt_len = info->default_max_length};
    if (p.max_src_len > info->max_positions)
        p.max_src_len = info->max_positions;
    if (p.max_tgt_len > info->max_positions)
        p.max_tgt_len = info->max_positions;
    if (m->arch == MT_ARCH_LLM) {      /* prompt and generation share the positions: half each at most */
        if (p.max_src_len > info->max_positions / 2)
            p.max_src_len = info->max_positions / 2;
        if (p.max_tgt_len > info->max_positions - p.max_src_len + 1)
            p.max_tgt_len = info->max_positions - p.max_src_len + 1;
    }
    if (p.max_tgt_len < 2)
        p.max_tgt_len = 2;
    return p;
}

/* A two-pass carver: pass 1 (base NULL) only sums sizes; pass 2 hands out pointers. */
typedef struct { char *base; size_t at; } carver;

static void *carve(carver *c, size_t n, size_t elsize)
{
    size_t bytes = (n * elsize + ALIGN - 1) / ALIGN * ALIGN;
    void *p = c->base ? c->base + c->at : NULL;
    c->at += bytes;
    return p;
}

/* A decoder-only LM's buffers (llm.c): wider q|k|v rows (qd + 2 kvd), the
 * gate|up product [2F], the K/V cache per slot over the prompt and the
 * generated positions, no cross K/V, the RoPE tables. */
static void layout_llm(mt_session *s, carver *c)
{
    const mt_model *m = s->m;
    const mt_llm *n = m->llm;
    const mt_session_params *p = &s->p;
    size_t d = (size_t)n->d, B = (size_t)p->max_batch, S = (size_t)p->max_src_len, T = (size_t)p->max_tgt_len;
    size_t R = (size_t)s->rows_max, V = (size_t)m->V, NL = (size_t)n->L, W = (size_t)(n->qd + 2 * n->kvd);
    size_t sc = (size_t)n->H * R * R > B * (S + T) ? (size_t)n->H * R * R : B * (S + T);
    size_t widest = (size_t)(n->F > n->qd ? n->F : n->qd);
    s->x = carve(c, R * d, sizeof(float));
    s->qkv = carve(c, R * W, sizeof(float));
    s->ctx = carve(c, R * (size_t)n->qd, sizeof(float));
    s->h = carve(c, R * d, sizeof(float));
    s->ffn = carve(c, R * 2 * (size_t)n->F, sizeof(float));
    s->scores = carve(c, sc, sizeof(float));
    s->q8 = m->lm_pk.i8 ? carve(c, mt_k_q8_scratch_bytes((int)R, (int)(widest > d ? widest : d)), 1) : NULL;
    s->kv.self = carve(c, NL * B * (S + T) * 2 * (size_t)n->kvd, mt_kv_bytes(s));
    s->kv.cross = NULL;
    s->kv.cross_f32 = NULL;
    size_t tabs = (size_t)mt_llm_rope_tables(n);      /* Gemma 3: a global and a local table */
    s->rope_cos = carve(c, tabs * (S + T) * (size_t)(n->hd / 2), sizeof(float));
    s->rope_sin = carve(c, tabs * (S + T) * (size_t)(n->hd / 2), sizeof(float));
    s->llm_tok = carve(c, R, sizeof(int32_t));
    (void)V;
}

/* The Marian network's buffers: activations, attention scores, caches. */
static void layout_marian(mt_session *s, carver *c)
{
    const mt_model *m = s->m;
    const mt_session_params *p = &s->p;
    size_t d = (size_t)m->d, B = (size_t)p->max_batch, S = (size_t)p->max_src_len, T = (size_t)p->max_tgt_len;
    size_t R = (size_t)s->rows_max, L = (size_t)imax(p->max_src_len, p->max_tgt_len);
    size_t F = (size_t)imax(m->enc_ffn, m->dec_ffn), NL = (size_t)m->info.dec_layers;
    s->x = carve(c, R * d, sizeof(float));
    s->qkv = carve(c, R * 3 * d, sizeof(float));
    s->ctx = carve(c, R * d, sizeof(float));
    s->h = carve(c, R * d, sizeof(float));
    s->ffn = carve(c, R * F, sizeof(float));
    size_t H = (size_t)imax(m->enc_heads, m->dec_heads);
    s->scores = carve(c, H * L * (L > B ? L : B), sizeof(float));
    /* INT8 weights (every product is INT8 then): the widest product input is d or F */
    s->q8 = m->lm_pk.i8 ? carve(c, mt_k_q8_scratch_bytes((int)R, (int)(F > d ? F : d)), 1) : NULL;
    s->kv.cross = carve(c, NL * B * S * 2 * d, mt_kv_bytes(s));
    s->kv.self = carve(c, NL * B * T * 2 * d, mt_kv_bytes(s));
    s->kv.cross_f32 = p->kv_f16 ? carve(c, S * 2 * d, sizeof(float)) : NULL;
}

/* A hypothesis buffer of n entries: ids, log-probs, alignments. */
static mt_hyp_buf carve_hyp(carver *c, size_t n)
{
    mt_hyp_buf h;
    h.ids = carve(c, n, sizeof(int32_t));
    h.lp = carve(c, n, sizeof(float));
    h.al = carve(c, n, sizeof(int32_t));
    return h;
}

/* The per-row and per-step decoding state (generate.c, constraints.c, sampling.c). */
static void layout_rows(mt_session *s, carver *c)
{
    size_t B = (size_t)s->p.max_batch, T = (size_t)s->p.max_tgt_len;
    s->row.owner = carve(c, B, sizeof(int));
    s->row.slot = carve(c, B, sizeof(int));
    s->row.tok = carve(c, B, sizeof(int));
    s->row.score = carve(c, B, sizeof(float));
    s->row.gscore = carve(c, B, sizeof(double));
    s->row.glen = carve(c, B, sizeof(int));
    s->row.cst = carve(c, B, sizeof(mt_cstate));
    s->row.cst_next = carve(c, B, sizeof(mt_cstate));
    s->row.fin = carve(c, B, sizeof(mt_fin_slot));
    s->row.fin_next = carve(c, B, sizeof(mt_fin_slot));
    s->hist = carve_hyp(c, B * T);
    s->hist_next = carve_hyp(c, B * T);
    s->fin = carve_hyp(c, B * T);
    s->fin_next = carve_hyp(c, B * T);
    s->beam.top_v = carve(c, 2 * B, sizeof(float));
    s->beam.top_i = carve(c, 2 * B, sizeof(int));
    s->beam.old_slot = carve(c, 2 * B, sizeof(int));
    s->beam.claimed = carve(c, B, sizeof(int));
    s->step.tok = carve(c, B, sizeof(int32_t));
    s->step.pos = carve(c, B, sizeof(int));
    s->step.slot = carve(c, B, sizeof(int));
    s->step.src = carve(c, B, sizeof(int));
    s->step.al_layer = carve(c, B, sizeof(int));
    s->step.al_heads = carve(c, B, sizeof(int));
    s->step.al = carve(c, B, sizeof(int32_t));
    s->step.seq = carve(c, B, sizeof(int));
    s->step.seq_row = carve(c, B, sizeof(int));
}

/* Lexical shortlists (decode/shortlist_step.c, decoder.c mt_lm_head_step). */
static void layout_shortlist(mt_session *s, carver *c)
{
    const mt_model *m = s->m;
    size_t B = (size_t)s->p.max_batch, V = (size_t)m->V;
    size_t W = (V + 63) / 64, SL = (size_t)s->sl.max;
    s->sl.words = (int)W;
    s->sl.bits = carve(c, B * W, sizeof(uint64_t));
    s->sl.union_bits = carve(c, W, sizeof(uint64_t));
    s->sl.packed = carve(c, W, sizeof(uint64_t));
    s->sl.pk_valid = 0;
    s->sl.row = carve(c, B, sizeof(uint64_t *));
    s->sl.only = carve(c, B, 1);
    s->sl.ids = SL ? carve(c, SL, sizeof(int32_t)) : NULL;
    s->sl.bias = SL ? carve(c, SL, sizeof(float)) : NULL;
    const mt_packed *pk = &m->lm_pk;
    size_t pk_bytes = pk->i8 ? mt_k_q8_bytes(m->d, (int)SL) : mt_k_packed_bytes(m->d, (int)SL, pk->f16);
    s->sl.pk_data = SL ? carve(c, pk_bytes, 1) : NULL;
    /* a sequence's list and a row's logits for the search over candidates alone */
    int search = s->p.shortlist_search_max;
    int cap = search ? search : (int)(V < MT_SL_SEARCH_MAX ? V : MT_SL_SEARCH_MAX);
    s->sl.cap = m->arch == MT_ARCH_LLM || cap < 0 ? 0 : cap;
    s->sl.list = s->sl.cap ? carve(c, B * (size_t)s->sl.cap, sizeof(int32_t)) : NULL;
    s->sl.lg = s->sl.cap ? carve(c, B * (size_t)s->sl.cap, sizeof(float)) : NULL;
}

/* Every buffer: the network's (per architecture), then the decoding state. */
static void layout(mt_session *s, carver *c)
{
    const mt_model *m = s->m;
    const mt_session_params *p = &s->p;
    size_t B = (size_t)p->max_batch, S = (size_t)p->max_src_len, T = (size_t)p->max_tgt_len, V = (size_t)m->V;
    if (m->arch == MT_ARCH_LLM)
        layout_llm(s, c);
    else
        layout_marian(s, c);
    s->logits = carve(c, B * V, sizeof(float));
    s->lp = carve(c, B * V, sizeof(float));
    s->src_off = carve(c, B, sizeof(int));
    s->src_len = carve(c, B, sizeof(int));
    s->src_ids = carve(c, B * S, sizeof(int32_t));
    s->seqs = carve(c, B, sizeof(mt_seq));
    s->gen_src = carve(c, B, sizeof(int));
    layout_rows(s, c);
    /* decoding features (generate.c, constraints.c, sampling.c) */
    s->prefix = carve(c, B * T, sizeof(int32_t));
    s->copy = carve(c, B * T, sizeof(int32_t));
    s->cand = carve(c, B * V, sizeof(int));
    s->pen_v = carve(c, B * T, sizeof(float));
    s->cons = carve(c, B * MT_MAX_CONSTRAINTS, sizeof(mt_cons));
    s->cons_ids = carve(c, B * T, sizeof(int32_t));
    s->word_cont = carve(c, V, 1);
    s->word_long = carve(c, V, 1);
    layout_shortlist(s, c);
}

/* 1 for each target piece that goes on with the word before it: no U+2581
 * at its start, and a letter or digit first (constraints.c keeps such a
 * piece from gluing onto a forced term's last word). */
static void mark_word_cont(mt_session *s)
{
    for (int id = 0; s->m->tok && id < s->m->V; id++) {
        const unsigned char *p = (const unsigned char *)mt_tokenizer_piece(s->m->tok, id);
        int starts = p && strncmp((const char *)p, "\xe2\x96\x81", 3) == 0;
        s->word_cont[id] = p && p[0] && !starts &&
                           ((p[0] >= '0' && p[0] <= '9') || ((p[0] | 32) >= 'a' && (p[0] | 32) <= 'z') || p[0] >= 0xc3);
        long chars = 0;
        for (const unsigned char *x = starts ? p + 3 : NULL; x && *x; x++)
            chars += (*x & 0xc0) != 0x80;
        s->word_long[id] = chars >= 4;
    }
}

/* The state of a fresh session that is not zero bytes: every row free
 * (row_owner -1; the sequences are MT_SEQ_FREE, 0) and the word tables.
 * Everything else starts zeroed, as the mapping comes, and a trimmed
 * session starts here again. */
static void init_state(mt_session *s)
{
    for (int r = 0; r < s->p.max_batch; r++)
        s->row.owner[r] = -1;
    mark_word_cont(s);
    if (s->m->arch == MT_ARCH_LLM)
        mt_llm_rope_init(s);
}

void mt_kv_put(const mt_session *s, void *base, long at, const float *x, long n)
{
    if (s->p.kv_f16)
        mt_k_to_f16(x, (uint16_t *)base + at, n);
    else
        memcpy((float *)base + at, x, sizeof(float) * (size_t)n);
}

static mt_status check_params(const mt_model *m, const mt_session_params *p, mt_err *err)
{
    int maxpos = m->info.max_positions;
    if (p->max_batch < 1 || p->max_batch > 4096)
        return mt_err_set(err, MT_ERR_INPUT, "session: max_batch %d outside [1, 4096]", p->max_batch);
    if (p->max_src_len < 1 || p->max_src_len > maxpos)
        return mt_err_set(err, MT_ERR_INPUT, "session: max_src_len %d outside [1, %d] (max_position_embeddings)",
                          p->max_src_len, maxpos);
    if (p->max_tgt_len < 2 || p->max_tgt_len > maxpos)
        return mt_err_set(err, MT_ERR_INPUT, "session: max_tgt_len %d outside [2, %d] (max_position_embeddings)",
                          p->max_tgt_len, maxpos);
    /* a decoder-only LM's positions: the prompt's, then the generated ones */
    if (m->arch == MT_ARCH_LLM && p->max_src_len + p->max_tgt_len - 1 > maxpos)
        return mt_err_set(err, MT_ERR_INPUT, "session: max_src_len %d + max_tgt_len %d - 1 exceeds %d "
                          "(max_position_embeddings: the prompt and the generated ids share the positions)",
                          p->max_src_len, p->max_tgt_len, maxpos);
    if (p->kv_f16 != 0 && p->kv_f16 != 1)
        return mt_err_set(err, MT_ERR_INPUT, "session: kv_f16 %d is neither 0 nor 1", p->kv_f16);
    if (p->shortlist_max < -1 || p->shortlist_max > m->V)
        return mt_err_set(err, MT_ERR_INPUT, "session: shortlist_max %d outside [-1, %d] (-1: never, 0: default)",
                          p->shortlist_max, m->V);
    if (p->shortlist_from_packed != 0 && p->shortlist_from_packed != 1)
        return mt_err_set(err, MT_ERR_INPUT, "session: shortlist_from_packed %d is neither 0 nor 1",
                          p->shortlist_from_packed);
    if (p->shortlist_search_max < -1 || p->shortlist_search_max > m->V)
        return mt_err_set(err, MT_ERR_INPUT, "session: shortlist_search_max %d outside [-1, %d] (-1: never, 0: default)",
                          p->shortlist_search_max, m->V);
    return MT_OK;
}

mt_status mt_session_new(const mt_model *m, const mt_session_params *params, mt_session **out, mt_err *err)
{
    *out = NULL;
    if (m->card)
        return mt_err_set(err, MT_ERR_INPUT, "session: the model is a card (mt_model_load_card): it has no weights");
    mt_session_params p = params ? *params : mt_session_default_params(m);
    mt_status st = check_params(m, &p, err);
    if (st != MT_OK)
        return st;
    mt_session *s = calloc(1, sizeof *s);
    if (!s)
        return mt_err_set(err, MT_ERR_NOMEM, "session: out of memory");
    s->m = m;
    s->p = p;
    s->sl.max = m->arch == MT_ARCH_LLM || p.shortlist_max < 0 ? 0 : p.shortlist_max ? p.shortlist_max
                : mt_sl_default_max(m->V);
    s->rows_max = imax(imax(p.max_src_len, p.max_tgt_len), p.max_batch);
    if (m->arch == MT_ARCH_LLM)        /* a teacher-forced pass runs the prompt and the target as one sequence */
        s->rows_max = imax(p.max_src_len + p.max_tgt_len, p.max_batch);
    carver c = {0};
    layout(s, &c);
    s->bytes = c.at;
    /* Zeroed pages, only touched when used.  (Not huge pages: a session's
     * touched parts are spread over its layers' caches, and 2 MB pages made
     * each idle worker cost ~30 MB of RSS.) */
    if (c.at > ((size_t)1 << 36) || !(s->arena = mt_pages_alloc(c.at))) {
        free(s);
        return mt_err_set(err, MT_ERR_NOMEM, "session: cannot allocate %zu MB", c.at >> 20);
    }
    c = (carver){.base = s->arena};
    layout(s, &c);
    init_state(s);
    s->fresh_resident = mt_pages_resident(s->arena, s->bytes);
    *out = s;
    return MT_OK;
}

void mt_session_free(mt_session *s)
{
    if (!s)
        return;
    mt_pages_free(s->arena, s->bytes);
    free(s);
}

/* A burst of work leaves behind every page it touched (a batch of long
 * sentences: tens of MB of K/V caches and logits), and nothing else would
 * return them: they are not malloc's, so malloc_trim cannot.  Released pages
 * read as zeros, so after init_state the session is as mt_session_new left
 * it.  mincore first: when little was touched the session keeps its pages
 * (the next request would only fault them in again). */
mt_status mt_session_trim(mt_session *s, size_t min_bytes, mt_err *err)
{
    if (s->n_seqs > 0)
        return mt_err_set(err, MT_ERR_BUSY, "session: %d sequences in flight: not trimmed", s->n_seqs);
    size_t res = mt_pages_resident(s->arena, s->bytes);
    if (res <= s->fresh_resident || res - s->fresh_resident <= min_bytes)
        return MT_OK;
    if (mt_pages_release(s->arena, s->bytes) != 0)
        return mt_err_set(err, MT_ERR_INTERNAL, "session: madvise(MADV_DONTNEED) failed: not trimmed");
    init_state(s);
    return MT_OK;
}

size_t mt_session_resident(const mt_session *s) { return mt_pages_resident(s->arena, s->bytes); }

size_t mt_session_bytes(const mt_session *s) { return s ? s->bytes + sizeof *s : 0; }

void mt_hyp_copy(mt_hyp_buf dst, mt_hyp_buf src, int n)
{
    memcpy(dst.ids, src.ids, sizeof(int32_t) * (size_t)n);
    memcpy(dst.lp, src.lp, sizeof(float) * (size_t)n);
    memcpy(dst.al, src.al, sizeof(int32_t) * (size_t)n);
}
