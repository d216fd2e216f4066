/* sampling.c: drawing a token from a row's ruled logits (mt_decode_params
 * sample, temperature, top_k, top_p), with the sequence's own random stream.
 *
 * The stream is xoshiro256** (Blackman & Vigna) seeded through splitmix64,
 * held in the sequence (mt_seq.rng) and advanced exactly once per sampled
 * step, so a sequence's draws depend on its seed alone: not on the sequences
 * beside it in a step, nor on which thread runs it.
 *
 * The distribution is Hugging Face's warpers in their order: logits /
 * temperature; top-k keeps the logits >= the k-th largest (ties kept);
 * top-p then keeps, best first, every id while the mass before it (in the
 * top-k-renormalized distribution) is below top_p, so at least one.  The
 * order of the ids is by logit, ties by the lower id.  Allocates nothing:
 * a binary heap over the candidates in the caller's scratch gives them best
 * first, and only as many as are needed are popped.
 */
#include "model/mt_internal.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void mt_rng_seed(uint64_t st[4], uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        st[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next(uint64_t s[4])
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

double mt_rng_uniform(uint64_t st[4]) { return (double)(next(st) >> 11) * 0x1.0p-53; }

/* ---- candidates best first: a max-heap of ids keyed by logit, ties by the lower id */
static int better(const float *lg, int a, int b) { return lg[a] > lg[b] || (lg[a] == lg[b] && a < b); }

static void sift_down(const float *lg, int *h, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, best = i;
        if (l < n && better(lg, h[l], h[best]))
            best = l;
        if (l + 1 < n && better(lg, h[l + 1], h[best]))
            best = l + 1;
        if (best == i)
            return;
        int t = h[i];
        h[i] = h[best];
        h[best] = t;
        i = best;
    }
}

/* Pops the best of h[0..*n) into h[*n - 1] (the popped ids collect at the end, best last). */
static int pop(const float *lg, int *h, int *n)
{
    int top = h[0];
    h[0] = h[--*n];
    h[*n] = top;
    sift_down(lg, h, *n, 0);
    return top;
}

/* The draw's place in lg [len] (-1: every place banned).  Banned places add
 * nothing to any sum, so a list of candidates draws what their [V] row does. */
static int pick(mt_seq *q, const float *lg, int len, int skip, float *w, int *cand)
{
    int n = 0;
    double u = mt_rng_uniform(q->rng), inv_t = 1.0 / q->temperature, total = 0.0;
    float mx = -INFINITY;
    for (int v = 0; v < len; v++)
        if (v != skip && lg[v] > mx)
            mx = lg[v];
    if (mx == -INFINITY)                     /* every id banned: </s> ends it */
        return -1;
    for (int v = 0; v < len; v++) {          /* w: unnormalized softmax(lg / T), 0 for banned ids */
        w[v] = v == skip || lg[v] == -INFINITY ? 0.0f : (float)exp(((double)lg[v] - mx) * inv_t);
        total += w[v];
        if (w[v] > 0.0f)
            cand[n++] = v;
    }
    int top_k = q->top_k < n ? q->top_k : 0;     /* k >= the candidates: all of them */
    if (top_k == 0 && q->top_p >= 1.0f) {         /* the whole distribution, in id order */
        double acc = 0.0, at = u * total;
        int last = cand[n - 1];
        for (int i = 0; i < n; i++) {
            acc += w[cand[i]];
            if (at < acc)
                return cand[i];
        }
        return last;
    }
    for (int i = n / 2 - 1; i >= 0; i--)
        sift_down(lg, cand, n, i);
    int heap = n, kept = 0;                      /* popped: cand[n - kept .. n), best at n - 1 */
    double mass = total;
    if (top_k > 0) {
        mass = 0.0;
        float kth = 0.0f;
        while (heap > 0 && (kept < top_k || lg[cand[0]] == kth)) {
            int v = pop(lg, cand, &heap);
            kth = lg[v];
            mass += w[v];
            kept++;
        }
    }
    if (q->top_p < 1.0f) {                       /* a prefix of the best-first order */
        double before = 0.0, limit = q->top_p * mass;
        int keep = 0;
        for (;;) {
            if (keep == kept) {                  /* pop more (no top-k, or its set not used up) */
                if (heap == 0 || top_k > 0)
                    break;
                pop(lg, cand, &heap);
                kept++;
            }
            int v = cand[n - 1 - keep];
            if (!(before < limit))
                break;
            before += w[v];
            keep++;
        }
        kept = keep;
        mass = before;
    }
    double acc = 0.0, at = u * mass;
    for (int i = 0; i < kept; i++) {
        int v = cand[n - 1 - i];
        acc += w[v];
        if (at < acc)
            return v;
    }
    return cand[n - kept];                       /* rounding: the last kept */
}

int32_t mt_sample_token(const mt_model *m, mt_seq *q, const float *lg, int len, int skip, const int32_t *ids,
                        float *w, int *cand)
{
    int p = pick(q, lg, len, skip, w, cand);
    return p < 0 ? m->info.eos_id : ids ? ids[p] : p;
}
