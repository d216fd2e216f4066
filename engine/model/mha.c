/* mha.c: the multi-head attention of a session over whole sequences (mt_attend:
 * one head per pool chunk, OpenBLAS products, causal mask, weights captured
 * for /attention) and of decode steps (mt_attend_step), over the kernels of
 * attn_kernels.c.  Scaled dot-product attention as docs/MARIAN.md 1.2.
 * (server/api/attention_api.c is the POST /attention handler, not this file.)
 *
 * Head h owns columns [h*hd, (h+1)*hd) of q, k, v and of the output.  Scores
 * are q.k^T * hd^-0.5, softmax over the visible keys; masked keys get weight
 * exactly 0 (as exp(finfo.min - max) is 0 in PyTorch).  Padding never appears
 * here: callers pass each source's own keys (nk = its length), which is the
 * key padding mask without the padding.
 */
#include "mt_internal.h"
#include "kernels/parallel.h"

#include <math.h>
#include <string.h>

/* One query (a decoding step): all heads in one pass over the keys
 * (mt_k_attend_row); BLAS calls per head cost more than these short products. */
static void attend_one(const float *q, const float *k, const float *v, int ldkv, int nk, int heads, int hd,
                       float scale, float *sc, float *out, float *cap)
{
    mt_k_attend_row(q, k, v, ldkv, nk, heads, hd, scale, sc, out);
    if (cap)
        memcpy(cap, sc, sizeof(float) * (size_t)heads * nk);
}

typedef struct {
    const float *q, *k, *v;
    int ldq, nq, nk, ldkv, hd, causal, ldo;
    float scale, *sc, *out, *cap;
} heads_job;

static void attend_head(void *ctx, int h)
{
    const heads_job *j = ctx;
    int nq = j->nq, nk = j->nk, hd = j->hd;
    float *sc = j->sc + (long)h * nq * nk;
    mt_k_gemm_nt(nq, nk, hd, j->scale, j->q + h * hd, j->ldq, j->k + h * hd, j->ldkv, 0.0f, sc, nk);
    for (int i = 0; i < nq; i++)
        mt_k_softmax(sc + (long)i * nk, j->causal ? i + 1 : nk, nk);
    if (j->cap)
        memcpy(j->cap + (long)h * nq * nk, sc, sizeof(float) * (size_t)nq * nk);
    mt_k_gemm_nn(nq, hd, nk, sc, nk, j->v + h * hd, j->ldkv, 0.0f, j->out + h * hd, j->ldo);
}

void mt_attend(mt_session *s, const float *q, int ldq, int nq, const float *k, const float *v, int ldkv,
               int nk, int heads, int causal, float *out, int ldo, float *cap)
{
    int hd = s->m->d / heads;
    float scale = (float)(1.0 / sqrt((double)hd));
    float *sc = s->scores;                              /* [H][nq][nk] */
    if (nq == 1) {
        attend_one(q, k, v, ldkv, nk, heads, hd, scale, sc, out, cap);
        return;
    }
    /* one head per chunk, each with its own [nq][nk] scores: a head's products
     * are the same calls however many threads run, so are its bits */
    heads_job j = {.q = q, .k = k, .v = v, .ldq = ldq, .nq = nq, .nk = nk, .ldkv = ldkv, .hd = hd, .causal = causal,
                   .scale = scale, .sc = sc, .out = out, .ldo = ldo, .cap = cap};
    mt_par_for(heads, attend_head, &j);
}

void mt_attend_step(const mt_session *s, const float *q, const void *kv, int nk, int heads, float *out, float *sc)
{
    int d = s->m->d, hd = d / heads;
    float scale = (float)(1.0 / sqrt((double)hd));
    if (s->p.kv_f16) {
        const uint16_t *k = kv;
        mt_k_attend_row_f16(q, k, k + d, 2 * d, nk, heads, hd, scale, sc, out);
    } else {
        const float *k = kv;
        attend_one(q, k, k + d, 2 * d, nk, heads, hd, scale, sc, out, NULL);
    }
}
