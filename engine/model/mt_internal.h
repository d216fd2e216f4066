/* mt_internal.h: the engine's private structures, shared by
 * engine/model (model.c, mha.c, encoder.c, decoder.c, session.c) and engine/decode.
 * Nothing outside engine/ includes this file.
 *
 * Shapes are written [dim][dim] (row-major); d = d_model, F = ffn dim,
 * V = vocab, H = heads, hd = d / H.  Linear weights are [out][in].
 */
#ifndef MT_INTERNAL_H
#define MT_INTERNAL_H

#include "kernels/kernels.h"
#include "mt.h"
#include "formats/safetensors.h"

typedef struct {
    const float *w;            /* [out][in] F32 as loaded; NULL once packed */
    const float *b;            /* [out] */
    mt_packed    pk;           /* the weights as the products use them (model.c prepare_weights) */
} mt_lin;

/* y [n][out] = act(x [n][in] W^T + b): every Linear, through its packed weights
 * (the order of each sum is fixed: a row's result does not depend on n).
 * INT8 weights need q8, scratch for the quantized inputs (mt_session.q8). */
static inline void mt_lin_apply(void *q8, const mt_lin *l, const float *x, int n, float *y, mt_act act)
{
    if (l->pk.i8)
        mt_k_linear_q8(x, n, &l->pk, l->b, y, act, q8);    /* q8: the session's scratch */
    else
        mt_k_linear_packed(x, n, &l->pk, l->b, y, act);
}
typedef struct { const float *g, *b; } mt_ln;       /* [d] each */

typedef struct {
    mt_lin qkv;        /* [3d][d]: q, k, v projections fused at load */
    mt_lin out;        /* [d][d] */
    mt_ln  attn_ln;
    mt_lin fc1;        /* [F][d] */
    mt_lin fc2;        /* [d][F] */
    mt_ln  ffn_ln;
} mt_enc_layer;

typedef struct {
    mt_lin self_qkv;   /* [3d][d] fused */
    mt_lin self_out;   /* [d][d] */
    mt_ln  self_ln;
    mt_lin cross_q;    /* [d][d] */
    mt_lin cross_kv;   /* [2d][d] fused k, v (applied once per source) */
    mt_lin cross_out;  /* [d][d] */
    mt_ln  cross_ln;
    mt_lin fc1, fc2;
    mt_ln  ffn_ln;
} mt_dec_layer;

/* The architecture a model directory holds, chosen at load from config.json
 * (model.c: "model_type"; llm_load.c).  The public API is the same for both:
 * for a decoder-only LM a "source" is the prompt's ids, "encoding" it is the
 * prefill (llm.c), and every decoder step extends each row's own K/V cache. */
typedef enum { MT_ARCH_MARIAN = 0, MT_ARCH_LLM } mt_arch;

/* A decoder-only layer (llm.c; Llama / Qwen2 / Qwen3 / Gemma 3, pre-norm).  qd =
 * heads x head_dim, kvd = kv_heads x head_dim, F = intermediate size.  Gemma 3's
 * RMSNorm weights are held as (1 + weight), computed once at load, so one
 * kernel serves every family. */
typedef struct {
    mt_lin qkv;                /* [qd + 2 kvd][d]: q, k, v fused at load; biases (Qwen2) or NULL */
    mt_lin o;                  /* [d][qd], no bias */
    mt_lin gate_up;            /* [2F][d]: gate then up, fused; no bias */
    mt_lin down;               /* [d][F] */
    const float *ln_in, *ln_post;     /* [d] RMSNorm weights before attention and before the MLP:
                                         input_layernorm, post_attention_layernorm (Gemma 3:
                                         pre_feedforward_layernorm) */
    const float *attn_out, *mlp_out;  /* [d] Gemma 3: post_attention_layernorm, post_feedforward_layernorm
                                         (on the attention / MLP output before the residual); else NULL */
    const float *q_norm, *k_norm;     /* [hd] per-head RMSNorm before RoPE (Qwen3, Gemma 3); NULL otherwise */
    int local;                        /* Gemma 3 sliding_attention: keys window-1 back at most, local RoPE */
} mt_llm_layer;

typedef enum { MT_LLM_LLAMA = 0, MT_LLM_QWEN2, MT_LLM_QWEN3, MT_LLM_GEMMA3 } mt_llm_family;

typedef struct mt_llm {
    mt_llm_family family;
    int L, d, H, KV, hd, F, V;        /* layers, hidden, query heads, K/V heads, head_dim, intermediate, vocab */
    int qd, kvd;                      /* H * hd, KV * hd */
    float eps;                        /* rms_norm_eps */
    double theta;                     /* rope_theta (Gemma 3: of the global layers) */
    double theta_local;               /* Gemma 3: rope_local_base_freq, the sliding layers' RoPE base */
    double rope_factor;               /* Gemma 3: rope_scaling linear factor of the global layers (else 1) */
    int window;                       /* Gemma 3: sliding_window (keys q-window < k <= q); 0 none */
    float emb_scale;                  /* Gemma 3: sqrt(hidden) in the published dtype; else 1 */
    float attn_scale;                 /* query_pre_attn_scalar^-0.5 (Gemma 3), else head_dim^-0.5 */
    float final_cap;                  /* final_logit_softcapping (cap * tanh(logit / cap)); 0 none */
    int geglu;                        /* MLP gelu_pytorch_tanh(gate) * up (Gemma 3), else SwiGLU */
    int tied;                         /* lm_head = embed_tokens */
    mt_llm_layer *layers;             /* [L] */
    const float *emb;                 /* [V][d] F32 (NULL with MT_WEIGHTS_F16) */
    const uint16_t *emb16;            /* [V][d] MT_WEIGHTS_F16: the table rounded to F16 */
    const float *norm;                /* [d] model.norm */
    mt_wfile **shards;                /* the mappings (one, or an index's shards) */
    int n_shards;
} mt_llm;

struct mt_model {
    mt_model_info info;
    mt_arch arch;
    mt_llm *llm;               /* MT_ARCH_LLM: the network; the Marian fields below are unused */
    mt_tokenizer *tok;
    mt_wfile   *st;            /* the mapping; F32 tensors point into it */
    int d, enc_heads, dec_heads, enc_ffn, dec_ffn;
    int V;                       /* target vocabulary (logits, decoder embeddings) */
    int V_src;                   /* source vocabulary (encoder embeddings); = V unless separate */
    mt_act act;
    int shared_emb, tied_head;   /* config switches (spec 2.3) */
    float embed_scale;           /* sqrt(d) when scale_embedding */
    int emb_ln;                  /* normalize_embedding: a LayerNorm after embedding + position */
    mt_ln enc_emb_ln, dec_emb_ln;
    /* M2M-100 / NLLB-200 (config model_type "m2m_100", docs/M2M100.md): pre-LN
     * layers (each block normalizes its input and adds its output to the
     * residual), a LayerNorm closing each stack, fairseq positions. */
    int prenorm;
    mt_ln enc_final_ln, dec_final_ln;   /* model.encoder.layer_norm, model.decoder.layer_norm */
    const float *enc_emb;        /* [V_src][d] */
    const float *dec_emb;        /* [V][d] */
    const float *lm_head;        /* [V][d], = dec_emb when tied */
    const float *final_bias;     /* [V] (zeros when absent) */
    mt_packed    lm_pk;          /* lm_head packed for the step product */
    void        *packed;         /* every packed matrix, one huge-page mapping (alloc.c) */
    size_t       packed_bytes;
    const uint16_t *enc_emb16, *dec_emb16;  /* MT_WEIGHTS_F16: the tables in F16 (the F32 ones NULL) */
    float        *pos;           /* [max_positions][d], computed: row i is position i of a stack
                                  * (Marian's table; M2M-100's row padding_idx + 1 + i) */
    mt_enc_layer *enc;           /* [enc_layers] */
    mt_dec_layer *dec;           /* [dec_layers] */
    void  **owned;               /* malloc'd float arrays (converted, fused, positions) */
    int     n_owned;
    size_t  cap_owned;
    char act_name[16], src_lang[64], tgt_lang[64], dtype[8], held[8], weights_file[256];
    int     card;                /* 1: mt_model_load_card: config and tokenizer, no weights */
};

/* Attention weights capture for mt_attention_run (NULL on the normal path). */
typedef struct {
    float *enc;     /* [enc_layers][H][S][S] */
    float *dec;     /* [dec_layers][H][T][T] */
    float *cross;   /* [dec_layers][H][T][S] */
} mt_capture;

/* Per-source beam state lives in the session (sized for max_batch rows). */
typedef struct {
    double score;
    int    n;            /* ids in this slot; -1 = empty */
} mt_fin_slot;

/* A hypothesis buffer: [rows][max_tgt_len] ids, each with its log-prob and
 * its alignment (a source position), as the three parallel arrays every
 * history and finished list keeps.  mt_hyp_row views one row (T =
 * max_tgt_len): the same three pointers, offset to its first id. */
typedef struct {
    int32_t *ids;
    float   *lp;
    int32_t *al;
} mt_hyp_buf;

static inline mt_hyp_buf mt_hyp_row(mt_hyp_buf b, long row, int T)
{
    return (mt_hyp_buf){b.ids + row * T, b.lp + row * T, b.al + row * T};
}

/* The first n entries of src's row view into dst's. */
void mt_hyp_copy(mt_hyp_buf dst, mt_hyp_buf src, int n);

/* Entry i of a row view: id, log-prob and alignment set together. */
static inline void mt_hyp_put(mt_hyp_buf row, int i, int32_t id, float lp, int32_t al)
{
    row.ids[i] = id;
    row.lp[i] = lp;
    row.al[i] = al;
}

/* A lexical constraint as a sequence holds it: source span, its ids at
 * s->cons_ids[id * max_tgt_len + off]. */
typedef struct { int start, end, off, n; } mt_cons;

/* A row's progress on its sequence's constraints (constraints.c): met ones
 * as bits; the one under way (-1: none), how many of its ids are out, and
 * whether it is forced (started by the alignment or the deadline) or only
 * followed (the model produced its first ids by itself: dropped on a miss). */
typedef struct {
    uint32_t met;
    int16_t  active, pos;
    int16_t  forced;           /* the one under way is forced */
    int16_t  glued;            /* one was met at the last id: the next may not go on with its word */
    int32_t  n_ban;
    int32_t  ban[MT_MAX_CONSTRAINTS];   /* the model's own word where a term was forced: not said again */
} mt_cstate;

/* A sequence decoding in a session (generate.c): one source, beam_size rows.
 * Its rows are the contiguous logical rows [base, base + beam); its physical
 * self-attention slots are the same set of indices (reorder_slots only
 * permutes them within the sequence); its cross K/V is source slot `id`. */
enum { MT_SEQ_FREE = 0, MT_SEQ_ENCODE, MT_SEQ_RUN, MT_SEQ_DONE };   /* ENCODE: started, source not yet encoded */
typedef struct {
    int   state;
    int   base, beam;        /* rows; beam = beam size (1 = greedy) */
    int   max_length, n_best;
    int   cur;               /* decoder length so far, start token included: the next step is at position cur-1 */
    int   unsat;             /* beam: the early-stop heuristic still allows improvement */
    int   broken;            /* 1: mt_step met a broken invariant in it: DONE, its take fails */
    float lpen;
    /* decoding features (mt_decode_params; resolved by mt_decode_params_resolve, decode_params.c) */
    int   n_prefix;          /* forced ids, in s->prefix row `id` (a forced_bos first, then the prefix) */
    int   bos_lp0;           /* 1: s->prefix's first id is a forced_bos: its log p is 0 (HF's processor) */
    int   early;             /* beam: HF early_stopping=True, done once beam hypotheses are finished */
    int   min_length, ngram, sample, top_k, token_scores, align, align_layer, align_heads;
    int   loop_ngram;        /* > 0: an output that loops (mt_ids_loop) is decoded once more, from the
                              * start, with no_repeat_ngram_size loop_ngram (generate.c seq_retry) */
    int   retried;           /* 1: that second decode is under way (the guard fires once) */
    int   n_copy;            /* > 0: the copy guard's ids, s->copy row `id` (generate.c seq_retry) */
    int   copy_ban;          /* 1: rule_no_copy bans going on with them (the second decode, or copy.ban) */
    float rep_pen, temperature, top_p;
    int   n_cons;            /* lexical constraints, in s->cons row `id` (constraints.c) */
    const uint8_t *end_ids;  /* NULL, or [V]: nonzero ids end the sequence as eos does */
    int   shortlist;         /* 1: its candidate ids are s->sl.bits row `id` (shortlist_step.c) */
    int   sl_n, sl_pad;      /* > 0: those ids listed, ascending, in s->sl.list row `id` (the search
                              * runs over them alone); sl_pad: pad's place in the list, -1 */
    uint64_t rng[4];         /* xoshiro256** state: the sequence's own stream */
    void (*progress)(void *data, const int32_t *ids, int n, int final);   /* mt_decode_run calls it */
    void *progress_data;
    int  (*stop)(void *data, const int32_t *ids, int n);                  /* and this (stop_callback) */
    void *stop_data;
} mt_seq;

/* The K/V caches (both F32, or F16 with p.kv_f16: mt_kv_put, mt_kv_bytes). */
typedef struct {
    void  *cross;              /* [dec_layers][max_batch * max_src_len][2d]: k | v per source position */
    void  *self;               /* [dec_layers][max_batch][max_tgt_len][2d]: per physical slot.
                                * MT_ARCH_LLM: [layers][max_batch][max_src_len + max_tgt_len][2 kvd]
                                * (the prompt's positions, then the generated ones) */
    float *cross_f32;          /* kv_f16: one source's cross K/V widened for whole-sequence attention,
                                  [max_src_len][2d] */
} mt_kv_state;

/* The decoding state of the logical rows [max_batch] (a sequence owns
 * beam of them, from its base). */
typedef struct {
    int   *owner;              /* the sequence holding the row, -1 = free */
    int   *slot;               /* its physical self-attention slot */
    int   *tok;                /* the id it feeds at the next step */
    float *score;              /* beam: the running score (sum of log p) */
    double *gscore;            /* greedy: the sum of log p */
    int   *glen;               /* greedy: ids generated */
    mt_cstate *cst, *cst_next; /* constraint progress (cst_next: built by a beam reorder) */
    mt_fin_slot *fin, *fin_next;   /* beam: the finished slots (fin_next: built by a merge) */
} mt_row_state;

/* One decoder step's gathered rows [max_batch] (mt_step fills, the decoder
 * and the search read): a step gathers every row of every running sequence. */
typedef struct {
    int32_t *tok;              /* per gathered row: the id it feeds */
    int     *pos;              /* its position */
    int     *slot;             /* its physical self-attention slot */
    int     *src;              /* its sequence, = its cross K/V source slot */
    int     *al_layer;         /* the layer to align on, -1 */
    int     *al_heads;         /* heads averaged (>= 1) */
    int32_t *al;               /* the argmax source position found by decoder.c's align_capture */
    int     *seq, *seq_row;    /* per running sequence of the step: its id, its first gathered row */
} mt_step_rows;

/* A beam search's scratch, each sequence's at its rows' offset. */
typedef struct {
    float *top_v;              /* [2 * max_batch] the step's best candidates' scores */
    int   *top_i;              /* [2 * max_batch] their places */
    int   *old_slot;           /* [2 * max_batch] reorder_slots: the slots before the reorder */
    int   *claimed;            /* [max_batch] reorder_slots: old rows some new row continues */
} mt_beam_scratch;

/* Lexical shortlists (decode/shortlist_step.c fills, model/decoder.c reads). */
typedef struct {
    int       words;           /* uint64 words of a [V] bit set */
    int       max;             /* p.shortlist_max resolved: candidates a step may gather (0: never) */
    uint64_t *bits;            /* [max_batch][words] per sequence id: its candidate ids */
    uint64_t *union_bits;      /* [words] the step's union */
    const uint64_t **row;      /* [max_batch] per gathered row of a step: its sequence's bits, NULL: every id */
    uint8_t  *only;            /* [max_batch] per gathered row: 1: its [V] row holds its candidates' logits
                                * alone, the rest left as it was (a listed sequence: its search, rules
                                * and constraints read no other id; generate.c) */
    int32_t  *ids;             /* [max] the step's candidates, ascending */
    float    *bias;            /* [max] their final_logits_bias */
    void     *pk_data;         /* their head rows packed (mt_k_pack_rows / mt_k_pack_select) */
    mt_packed pk;              /* pk_data as a packed matrix (valid with pk_valid) */
    uint64_t *packed;          /* [words] the union whose rows pk_data holds */
    int       pk_valid;        /* 1 once pk_data holds the rows of the union `packed` */
    int       fresh;           /* this step: the union differs from `packed`: pack it again */
    int       n;               /* this step: candidates gathered (0: the whole head) */
    int       mask;            /* this step: some row has a shortlist */
    int       cap;             /* a sequence's candidates listed for the search up to this many */
    int32_t  *list;            /* [max_batch][cap] per sequence id: its candidate ids, ascending */
    float    *lg;              /* [max_batch][cap] per gathered row: its candidates' logits */
} mt_sl_state;

struct mt_session {
    const mt_model *m;
    mt_session_params p;
    size_t bytes;
    void  *arena;              /* one page mapping of `bytes` (kernels/alloc.c mt_pages_alloc) */
    size_t fresh_resident;     /* bytes of it resident once mt_session_new had set it up */
    int rows_max;              /* max(max_src_len, max_tgt_len, max_batch); a decoder-only LM: max(max_src_len + max_tgt_len, max_batch) */
    /* activations [rows_max][.] */
    float *x, *qkv, *ctx, *h, *ffn;
    float *scores;             /* attention weights, [H][L][max(L, B)] (L = max(S,T)): a whole
                                  sequence uses [H][nq][nk] (heads in parallel); in a decode
                                  step row r's scratch is scores + r * H * L */
    float *logits;             /* [max_batch][V] */
    void  *q8;                 /* INT8 weights: the quantized inputs of a product, [rows_max][in] */
    float *lp;                 /* [max_batch][V] log-probs (beam) */
    mt_kv_state kv;
    int   *src_off, *src_len;  /* [max_batch] per source: offset (positions) into kv.cross, length */
    int32_t *src_ids;          /* [max_batch][max_src_len] a started sequence's source, until mt_step encodes it */
    mt_row_state row;          /* per logical row [max_batch] */
    /* [max_batch][max_tgt_len] per row: generated ids with their log p and
     * alignment (hist), a beam's finished hypotheses (fin); the *_next twins
     * are built by a beam reorder, then copied back */
    mt_hyp_buf hist, hist_next, fin, fin_next;
    mt_beam_scratch beam;
    /* sequences (generate.c) [max_batch]: seq i uses cross-K/V source slot i */
    mt_seq *seqs;
    mt_step_rows step;
    int   *gen_src;            /* [max_batch] mt_generate: sequence -> its source index, -1 */
    int    n_seqs;             /* sequences not FREE */
    /* decoding features */
    int32_t *prefix;           /* [max_batch][max_tgt_len] per sequence id: its target prefix */
    int32_t *copy;             /* [max_batch][max_tgt_len] per sequence id: its copy guard's ids */
    int     *cand;             /* [max_batch][V] per gathered row: sampling's candidate heap */
    float   *pen_v;            /* [max_batch][max_tgt_len] per gathered row: repetition penalty scratch */
    mt_cons *cons;             /* [max_batch][MT_MAX_CONSTRAINTS] per sequence id */
    int32_t *cons_ids;         /* [max_batch][max_tgt_len] per sequence id: its constraints' ids */
    /* MT_ARCH_LLM: RoPE angles per position [max_src_len + max_tgt_len][hd/2] */
    float *rope_cos, *rope_sin;
    int32_t *llm_tok;          /* [rows_max] the ids of a prefill's rows */
    mt_sl_state sl;            /* lexical shortlists */
    uint8_t *word_cont;        /* [V] 1: the target piece goes on with the word before it (session.c) */
    uint8_t *word_long;        /* [V] 1: the target piece starts a word of 4 or more characters */
};

/* mt_huge_alloc, mt_huge_free: kernels/kernels.h (alloc.c). */

/* shortlist.c: mt_shortlist (mt.h); CSR lists over the source vocabulary. */
struct mt_shortlist {
    mt_shortlist_info info;
    int      V, V_src, n_src;
    long    *off;              /* [n_src + 1] */
    int32_t *ids;              /* [off[n_src]] each list ascending */
    int32_t *freq;             /* [n_freq] ascending */
    int      n_freq;
    char     format[16];
};

/* langvocab.c: the set of language lang_id (the language's token id), [words
 * = (V + 63) / 64] bits over the target vocabulary; NULL when not listed. */
const uint64_t *mt_lang_vocab_bits(const mt_lang_vocab *lv, int32_t lang_id);
int             mt_lang_vocab_vocab(const mt_lang_vocab *lv);

/* model.c */
/* Row `id` of the positional table at position pos, [d]. */
static inline const float *mt_pos_row(const mt_model *m, int pos) { return m->pos + (long)pos * m->d; }

/* mha.c: multi-head attention of nq queries over nk keys.
 *   q [nq][ldq] (head h at columns h*hd), k and v [nk][ldkv], out [nq][ldo].
 *   causal: query i sees keys 0..i (nq == nk).  cap (may be NULL): [H][nq][nk]. */
void mt_attend(mt_session *s, const float *q, int ldq, int nq, const float *k, const float *v, int ldkv,
               int nk, int heads, int causal, float *out, int ldo, float *cap);

/* One query per call, for decode steps run in parallel over rows: the scores
 * go to the caller's scratch sc [nk] instead of s->scores.  kv: nk cached
 * rows of the session's K/V cache, [nk][2d] = k | v, in its precision. */
void mt_attend_step(const mt_session *s, const float *q, const void *kv, int nk, int heads, float *out, float *sc);

/* The shortlist's [V] bit sets (sl.bits, sl.union_bits, sl.packed). */
static inline void mt_bit_set(uint64_t *b, int32_t id) { b[id >> 6] |= 1ull << (id & 63); }
static inline int mt_bit_has(const uint64_t *b, int32_t id) { return (int)(b[id >> 6] >> (id & 63)) & 1; }
/* mt_session_params.shortlist_search_max's default (s->sl.cap): a sequence
 * whose set holds at most this many ids keeps them as a list, and its search
 * runs over them alone.  The shipped shortlists give 539-554 ids per sentence
 * on average, 2,247 at most. */
#define MT_SL_SEARCH_MAX 4096
/* mt_session_params.shortlist_max's default: min(vocab, 4096), or vocab / 8
 * over a vocabulary of more than 65,536 ids (NLLB-200's 256,206: 32,025), where
 * a target language's list of 10-30k ids still costs a fraction of the whole
 * head (BENCHMARKS.md, issue 49); Marian's vocabularies keep 4096. */
static inline int mt_sl_default_max(int V) { return V > 65536 ? V / 8 : V < 4096 ? V : 4096; }

/* session.c: the K/V caches' element size (4, or 2 with kv_f16), and a store
 * of n floats into them at element `at` of base, in their precision. */
static inline size_t mt_kv_bytes(const mt_session *s) { return s->p.kv_f16 ? 2 : 4; }
void mt_kv_put(const mt_session *s, void *base, long at, const float *x, long n);

/* encoder.c: encode one source (n tokens) and fill its cross K/V rows at
 * cross offset `off` for every decoder layer. cap may be NULL. */
void mt_encode_source(mt_session *s, const int32_t *src, int n, int off, float *cap_enc);
/* encoder.c: k <= MT_ENC_MAX_PACK sources as one batch, lengths summing to at
 * most rows_max; source j's cross K/V at cross offset off[j]. */
#define MT_ENC_MAX_PACK 64
void mt_encode_sources(mt_session *s, int k, const int32_t *const *src, const int *len, const int *off);

/* encoder.c: a block's input and its end, as the architecture puts its
 * LayerNorm ln.  Marian (post-LN): the block reads the residual stream s->x
 * and ends with x = LN(x + h).  M2M-100 (pre-LN): it reads h = LN(x) (in
 * s->h, which the block's first product consumes before its last one writes
 * h again) and ends with x = x + h.  n rows. */
const float *mt_block_in(mt_session *s, const mt_ln *ln, int n);
void         mt_block_out(mt_session *s, const mt_ln *ln, int n);

/* encoder.c: x[i] = E[id_i] * embed_scale + PE[pos0 + i] ([n][d]), decoder or encoder table. */
void mt_embed_tokens(const mt_model *m, int decoder, const int32_t *ids, int n, int pos0, float *x);

/* decoder.c */
/* One incremental step for n rows: row r feeds tok[r] at position pos[r] (its
 * self-cache holds positions 0..pos[r]-1), owns self-cache slot row_slot[r]
 * and attends to source slot row_src[r].  Writes logits [n][V] into s->logits. */
void mt_decoder_step(mt_session *s, int n, const int32_t *tok, const int *pos, const int *row_slot,
                     const int *row_src);
/* Teacher-forced pass over tgt_in [T] (start token first) for source 0 with the
 * causal mask; leaves the final hidden states [T][d] in s->x. */
void mt_decoder_full(mt_session *s, const int32_t *tgt_in, int T, mt_capture *cap);
/* The same for k <= MT_ENC_MAX_PACK sequences packed as rows (sum of T[j] <=
 * rows_max): tgt_in holds their inputs one after another, sequence j attends
 * to source slot src[j]; products over all rows, attention per sequence, so
 * each one's hidden states are the bits of its pass alone.  cap: k == 1 only. */
void mt_decoder_full_packed(mt_session *s, int k, const int32_t *tgt_in, const int *T, const int *src,
                            mt_capture *cap);
/* logits[n][V] = h[n][d] E^T + bias. */
void mt_lm_head(const mt_model *m, const float *h, int n, float *logits, void *q8);
/* A decode step's head (decoder.c): the whole head, or with s->sl.n > 0 only
 * the candidates s->sl.ids; then each row with a shortlist (s->sl.row) -inf
 * outside its own candidates. */
void mt_lm_head_step(mt_session *s, int n);

/* constraints.c: rules on one row's logits lg [V], in place, given the row's
 * output so far hist [n] (generate.c's ROW_RULES applies them): the
 * repetition penalty pen (pen_v: [n] scratch), no repeated n-gram of size. */
void mt_rule_repetition(const int32_t *hist, int n, float pen, float *lg, float *pen_v);
void mt_rule_no_repeat(const int32_t *hist, int n, int size, float *lg);
/* Lexical constraints (constraints.c) of sequence q, row r at step t (the
 * id at generated position t), whose step aligned to source position al:
 * the id forced now and *which its constraint, or -1 for a free choice
 * (mt_cons_free).  mt_cons_advance: the row state after id (which: the
 * forced constraint, or -1). */
int32_t   mt_cons_forced(const mt_session *s, const mt_seq *q, const mt_cstate *c, int t, int al, int *which);
/* After the rules, for a free choice: the id of the first unmet constraint
 * when </s> would win (the model ends where a term is still missing: it goes
 * in there), else -1 with </s> banned while a constraint is unmet and the
 * pieces that would glue onto a forced term banned right after it.  It reads
 * and writes lg at the row's candidates alone: ids [n] ascending (a
 * shortlist's list, the ban list's ids among them), or every id (ids NULL). */
int32_t   mt_cons_free(const mt_session *s, const mt_seq *q, const mt_cstate *c, float *lg, const int32_t *ids,
                       int n, int *which);
mt_cstate mt_cons_advance(const mt_session *s, const mt_seq *q, mt_cstate c, int32_t id, int which);
/* A forced start displaced natural (the model's argmax there): a word of its
 * own for the same source words, banned from the row from then on. */
void      mt_cons_displaced(const mt_session *s, mt_cstate *c, int32_t natural);
/* sampling.c */
void    mt_rng_seed(uint64_t st[4], uint64_t seed);
double  mt_rng_uniform(uint64_t st[4]);             /* [0, 1) with 53 bits */
/* One draw from lg [n] (ruled logits; lg[skip], pad's, excluded) under q's
 * temperature, top_k, top_p; w [n] and cand [n] scratch.  Returns the id:
 * ids[i] for lg[i] (NULL: i), eos when every id is banned.  Consumes
 * exactly one uniform. */
int32_t mt_sample_token(const mt_model *m, mt_seq *q, const float *lg, int n, int skip, const int32_t *ids,
                        float *w, int *cand);

/* A sequence's first decoder input: Marian's decoder start token; a
 * decoder-only LM's last prompt id (the prefill caches the ones before it). */
static inline int32_t mt_start_token(const mt_model *m, const int32_t *src, int n)
{
    return m->arch == MT_ARCH_LLM ? src[n - 1] : m->info.decoder_start_id;
}

/* decoder.c: a beam fork: slot dst of every layer's self cache gets the
 * first positions of slot src (sequence seq, decoder length cur). */
void mt_self_cache_copy(mt_session *s, int seq, int dst, int src, int cur);

/* load_util.c: what both loaders do alike. */
struct json_t;
void     *mt_model_own(mt_model *m, size_t bytes, mt_err *err);      /* zeroed; freed with m */
int       mt_model_disown(mt_model *m, const void *p);                /* 1: p was m's, now freed */
void      mt_release_pages(const void *p, size_t bytes);              /* the whole pages of a read-once range */
void      mt_release_tensor(const mt_tensor *t);                      /* the same for a tensor's bytes */
/* dst [n] = t as F32 (F16/BF16 widened); a transposed 2-D t (Marian's [in][out]) turned to [out][in]. */
void      mt_tensor_to_f32(const mt_tensor *t, float *dst, size_t n);
/* t (named name in file) is F32, F16 or BF16 of shape [d0][d1], or [d0] when d1
 * is 0 ([1][d0] too when row_ok); else MT_ERR_FORMAT saying what it is. */
mt_status mt_check_tensor(const char *file, const char *name, const mt_tensor *t, int64_t d0, int64_t d1,
                          int row_ok, mt_err *err);
size_t    mt_held_bytes(mt_weights held, int in, int out);            /* one packed matrix, 64-byte rounded */
void      mt_held_pack(mt_weights held, mt_q8_isa isa, long l2, const float *w, int in, int out, void *dst,
                       mt_packed *pk);
int       mt_path_exists(const char *dir, const char *name, char *path, size_t cap);   /* path = dir/name */
/* A JSON object file; missing: MT_ERR_IO when required, else *out NULL and MT_OK. */
mt_status mt_read_json_object(const char *path, int required, struct json_t **out, mt_err *err);

/* m2m.c: M2M-100 / NLLB-200 (model_type "m2m_100") beside Marian in model.c.
 * mt_m2m_check_config refuses, naming the key, what M2M100's network does
 * not run (NLLB-MoE's keys, unshared tables, ...); mt_m2m_refusal_hint is
 * the reason added when model_type names a relative this code does not run
 * ("" otherwise); mt_m2m_positions fills pe [n][d] with fairseq's sinusoids
 * for the stack positions 0..n-1 (their padding offset applied). */
mt_status   mt_m2m_check_config(const char *file, struct json_t *cfg, mt_err *err);
const char *mt_m2m_refusal_hint(const char *model_type);
void        mt_m2m_positions(int d, int pad, int n, float *pe);

/* llm_load.c: 1 when a directory's config.json (cfg, parsed once by model.c:
 * it may be a pipe) is a decoder-only LM's (model_type llama, qwen2, qwen3,
 * or an architecture *ForCausalLM): mt_llm_load loads the directory. */
int       mt_llm_detect(const struct json_t *cfg);
/* Loads dir into m (arch, info, llm; weights held as `held`) with its config
 * cfg (borrowed); card: config and tokenizer only. */
mt_status mt_llm_load(mt_model *m, const char *dir, const struct json_t *cfg, mt_weights held, mt_q8_isa isa, long l2, int card,
                      mt_err *err);
void      mt_llm_free(mt_model *m);

/* llm.c */
/* The session's RoPE tables (session.c init_state). */
void mt_llm_rope_init(mt_session *s);
int  mt_llm_rope_tables(const struct mt_llm *n);   /* 2 with Gemma 3's local RoPE base, else 1 */
/* The prefill of k started sequences (ids[j]: their sequence ids): every
 * prompt position but the last through every layer as one batch of rows,
 * its rotated K and V into the slot of each of the sequence's rows. */
void mt_llm_prefill(mt_session *s, int k, const int *ids);
/* One incremental step for n rows (mt_decoder_step's arguments): row r feeds
 * tok[r] at position src_len[row_src[r]] - 1 + pos[r] of slot row_slot[r]. */
void mt_llm_step(mt_session *s, int n, const int32_t *tok, const int *pos, const int *row_slot, const int *row_src);
/* logits [tgt_len][V] (may be NULL) and logp of tgt after prompt src (mt_score). */
mt_status mt_llm_score(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt, int tgt_len, float *logp,
                       float *logits, mt_err *err);
/* mt_attention_run's pass: prompt src then tgt (tgt_len >= 0 ids), N = src_len
 * + tgt_len positions, causal; cap receives [L][H][N][N] softmax probabilities. */
mt_status mt_llm_attention(mt_session *s, const int32_t *src, int src_len, const int32_t *tgt, int tgt_len,
                           float *cap, mt_err *err);
void mt_llm_cache_copy(mt_session *s, int seq, int dst, int src, int cur);

/* shortlist_step.c: sequence id's candidate ids at mt_seq_start (q resolved);
 * before a step of n gathered rows (row_src: their sequences), which rows
 * have a shortlist and the candidates the head gathers (s->sl.n, sl.ids). */
void mt_sl_seq_start(mt_session *s, int id, const mt_decode_params *q, const int32_t *src, int src_len);
void mt_sl_prepare(mt_session *s, int n, const int *row_src);

/* generate.c */
mt_status mt_check_decode_params(const mt_session *s, const mt_decode_params *p, mt_decode_params *out,
                                 mt_err *err);

#endif
