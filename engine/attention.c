/* attention.c: scaled dot-product multi-head attention (marian-spec 1.3-1.4).
 *
 * Head h owns columns [h*hd, (h+1)*hd) of q, k, v and of the output.  Scores
 * are q.k^T * hd^-0.5, softmax over the visible keys; masked keys get weight
 * exactly 0 (as exp(finfo.min - max) is 0 in PyTorch).  Padding never appears
 * here: callers pass each source's own keys (nk = its length), which is the
 * key padding mask without the padding.
 */
#include "mt_internal.h"

#include <math.h>
#include <string.h>

/* One query (a decoding step): scores by direct dot products (mt_k_dots), then
 * the weighted sum of V rows (mt_k_wsum); BLAS calls per head cost more than
 * these short products. */
static void attend_one(const float *q, const float *k, const float *v, int ldkv, int nk, int heads, int hd,
                       float scale, float *sc, float *out, float *cap)
{
    for (int h = 0; h < heads; h++) {
        const float *qh = q + h * hd;
        mt_k_dots(nk, hd, scale, k + h * hd, ldkv, qh, sc);
        mt_k_softmax(sc, nk, nk);
        if (cap)
            memcpy(cap + (long)h * nk, sc, sizeof(float) * (size_t)nk);
        mt_k_wsum(nk, hd, sc, v + h * hd, ldkv, out + h * hd);
    }
}

void mt_attend(mt_session *s, const float *q, int ldq, int nq, const float *k, const float *v, int ldkv,
               int nk, int heads, int causal, float *out, int ldo, float *cap)
{
    int hd = s->m->d / heads;
    float scale = (float)(1.0 / sqrt((double)hd));
    float *sc = s->scores;                              /* [nq][nk] */
    if (nq == 1) {
        attend_one(q, k, v, ldkv, nk, heads, hd, scale, sc, out, cap);
        return;
    }
    for (int h = 0; h < heads; h++) {
        mt_k_gemm_nt(nq, nk, hd, scale, q + h * hd, ldq, k + h * hd, ldkv, 0.0f, sc, nk);
        for (int i = 0; i < nq; i++)
            mt_k_softmax(sc + (long)i * nk, causal ? i + 1 : nk, nk);
        if (cap)
            memcpy(cap + (long)h * nq * nk, sc, sizeof(float) * (size_t)nq * nk);
        mt_k_gemm_nn(nq, hd, nk, sc, nk, v + h * hd, ldkv, 0.0f, out + h * hd, ldo);
    }
}

void mt_attend_step(const mt_session *s, const float *q, const float *k, const float *v, int ldkv, int nk,
                    int heads, float *out, float *sc)
{
    int hd = s->m->d / heads;
    attend_one(q, k, v, ldkv, nk, heads, hd, (float)(1.0 / sqrt((double)hd)), sc, out, NULL);
}
