/* kernels.c: BLAS-backed kernels and their naive references (kernels.h). */
#include "kernels.h"

#include <cblas.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* ---- small-batch products (decode steps) ------------------------------------------
 * OpenBLAS sgemm packs the whole weight matrix on every call, which for 2-8
 * rows costs more than the product itself (a beam-4 step spent 53% of its time
 * in sgemm_incopy).  This kernel streams W once for up to 4 rows at a time,
 * with NO x NR independent FMA accumulators.  Each (row, output) dot product
 * is accumulated in the same order whatever n is, so a row's result does not
 * depend on which batch it is in. */
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define HAVE_SMALL 1

static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* y[r][o0 + o] = b + W[o0 + o] . x[r] for o < NO, r < NR. */
static inline __attribute__((always_inline)) void small_block(const float *x, int in, const float *W,
                                                               const float *b, int out, float *y, int o0,
                                                               const int NO, const int NR)
{
    __m256 acc[8][4];
#pragma GCC unroll 8
    for (int o = 0; o < NO; o++)
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++)
            acc[o][r] = _mm256_setzero_ps();
    const float *w0 = W + (long)o0 * in;
    for (int i = 0; i < in; i += 8) {
        __m256 xv[4];
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++)
            xv[r] = _mm256_loadu_ps(x + (long)r * in + i);
#pragma GCC unroll 8
        for (int o = 0; o < NO; o++) {
            __m256 w = _mm256_loadu_ps(w0 + (long)o * in + i);
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++)
                acc[o][r] = _mm256_fmadd_ps(w, xv[r], acc[o][r]);
        }
    }
#pragma GCC unroll 8
    for (int o = 0; o < NO; o++)
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++)
            y[(long)r * out + o0 + o] = (b ? b[o0 + o] : 0.0f) + hsum8(acc[o][r]);
}

/* outputs [o_lo, o_hi) of NR rows; o_lo a multiple of 8 */
static inline __attribute__((always_inline)) void small_rows(const float *x, int in, const float *W,
                                                              const float *b, int out, float *y, const int NR,
                                                              int o_lo, int o_hi)
{
    const int NO = NR == 1 ? 8 : NR == 2 ? 4 : 2;        /* ~8 accumulators hide the FMA latency */
    int o = o_lo;
    for (; o + NO <= o_hi; o += NO)
        small_block(x, in, W, b, out, y, o, NO, NR);
    for (; o < o_hi; o++)
        small_block(x, in, W, b, out, y, o, 1, NR);
}

static void linear_small_range(const float *x, int n, int in, const float *W, const float *b, int out, float *y,
                               int o_lo, int o_hi)
{
    for (int r = 0; r < n; r += 4) {
        const float *xr = x + (long)r * in;
        float *yr = y + (long)r * out;
        switch (n - r < 4 ? n - r : 4) {
        case 1: small_rows(xr, in, W, b, out, yr, 1, o_lo, o_hi); break;
        case 2: small_rows(xr, in, W, b, out, yr, 2, o_lo, o_hi); break;
        case 3: small_rows(xr, in, W, b, out, yr, 3, o_lo, o_hi); break;
        default: small_rows(xr, in, W, b, out, yr, 4, o_lo, o_hi); break;
        }
    }
}

/* ---- the output rows of a small-batch product split over threads ---------------------
 * A decode step at batch 1 is a chain of ~20 matrix-vector products, each a few
 * tens of microseconds: too short for a thread wake-up per call (OpenBLAS
 * sgemv's threading, or a condition variable, costs about as much as the
 * product).  Helper threads spin on a job counter while products keep coming
 * (and sleep on a futex after ~100 us idle); the caller publishes a job and
 * everyone claims chunks of output rows with a CAS on (job << 32 | chunk), so
 * a helper that is descheduled (the machine is shared) costs nothing: the
 * caller simply takes the remaining chunks itself.  Each output is computed by
 * the same small_block code in the same order as the serial kernel, so the
 * results are bit-identical to one thread, whatever the split.  One job at a
 * time: a caller that finds the pool busy (another session) runs serially.
 * Opt-in (MT_ROW_SPLIT=1) until measured on an idle machine: under CPU
 * contention spin-waiting loses (BENCHMARKS.md). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#define SPLIT_MAX_HELPERS 7
#define SPLIT_MIN_WORK    (96 * 256)     /* n*out*in below this: serial (measured) */
#define SPLIT_CHUNK_WORK  (32 * 1024)    /* ~weights per chunk (128 KB) */
#define SPLIT_SPIN_CYCLES 300000ull      /* ~100 us of idle spinning before sleeping */

static struct {
    pthread_mutex_t lock;                /* one job at a time (trylock) */
    pthread_mutex_t start_lock;
    _Atomic int n_helpers;
    _Atomic unsigned seq;                /* job number; futex word */
    _Atomic unsigned long long next;     /* job << 32 | next chunk */
    _Atomic int done;                    /* chunks finished in the current job */
    _Atomic int sleeping;
    /* the job */
    const float *x, *W, *b;
    float *y;
    int n, in, out, chunk_rows, n_chunks;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .start_lock = PTHREAD_MUTEX_INITIALIZER};

/* Claim and run chunks of job `job` until none is left; returns chunks run. */
static int split_work(unsigned job)
{
    int ran = 0;
    for (;;) {
        unsigned long long v = atomic_load_explicit(&pool.next, memory_order_acquire);
        if ((unsigned)(v >> 32) != job || (int)(v & 0xffffffffu) >= pool.n_chunks)
            break;
        if (!atomic_compare_exchange_weak_explicit(&pool.next, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_relaxed))
            continue;
        /* the job cannot end while this chunk is unfinished: its fields are stable */
        int c = (int)(v & 0xffffffffu), lo = c * pool.chunk_rows;
        int hi = lo + pool.chunk_rows < pool.out ? lo + pool.chunk_rows : pool.out;
        linear_small_range(pool.x, pool.n, pool.in, pool.W, pool.b, pool.out, pool.y, lo, hi);
        atomic_fetch_add_explicit(&pool.done, 1, memory_order_release);
        ran++;
    }
    return ran;
}

static void *split_helper(void *arg)
{
    unsigned last = atomic_load(&pool.seq);
    for (;;) {
        unsigned long long t0 = __rdtsc();
        unsigned cur;
        while ((cur = atomic_load_explicit(&pool.seq, memory_order_acquire)) == last) {
            if (__rdtsc() - t0 > SPLIT_SPIN_CYCLES) {
                atomic_store(&pool.sleeping, 1);
                if (atomic_load(&pool.seq) == last)
                    syscall(SYS_futex, &pool.seq, FUTEX_WAIT_PRIVATE, last, NULL, NULL, 0);
                atomic_store(&pool.sleeping, 0);
                t0 = __rdtsc();
            } else
                _mm_pause();
        }
        last = cur;
        split_work(cur);
    }
    return arg;
}

static int split_enabled(void)
{
    static _Atomic int on = -1;
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (v < 0) {
        /* opt-in (MT_ROW_SPLIT=1): on a shared machine a preempted helper stalls
         * every product (BENCHMARKS.md: 7x slower than one thread under load) */
        const char *e = getenv("MT_ROW_SPLIT");
        v = e && e[0] == '1';
        atomic_store(&on, v);
    }
    return v;
}

/* Start helpers up to `want` (once; never stopped: they sleep when idle). */
static int split_helpers(int want)
{
    if (want > SPLIT_MAX_HELPERS)
        want = SPLIT_MAX_HELPERS;
    if (pool.n_helpers >= want)
        return pool.n_helpers;
    pthread_mutex_lock(&pool.start_lock);
    while (pool.n_helpers < want) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 64 * 1024);
        int rc = pthread_create(&t, &a, split_helper, NULL);
        pthread_attr_destroy(&a);
        if (rc)
            break;
        pool.n_helpers++;
    }
    pthread_mutex_unlock(&pool.start_lock);
    return pool.n_helpers;
}

static void linear_small(const float *x, int n, int in, const float *W, const float *b, int out, float *y)
{
    int threads = openblas_get_num_threads();
    long work = (long)n * out * in;
    if (threads < 2 || work < SPLIT_MIN_WORK || out < 16 || !split_enabled() || split_helpers(threads - 1) < 1 ||
        pthread_mutex_trylock(&pool.lock)) {
        linear_small_range(x, n, in, W, b, out, y, 0, out);
        return;
    }
    int rows = (int)(SPLIT_CHUNK_WORK / ((long)n * in));
    rows = rows < 8 ? 8 : rows / 8 * 8;
    int min_chunks = 2 * (pool.n_helpers + 1);                  /* room to balance */
    while (rows > 8 && (out + rows - 1) / rows < min_chunks)
        rows = (rows / 2 + 7) / 8 * 8;
    pool.x = x, pool.W = W, pool.b = b, pool.y = y;
    pool.n = n, pool.in = in, pool.out = out;
    pool.chunk_rows = rows;
    pool.n_chunks = (out + rows - 1) / rows;
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    unsigned job = atomic_load_explicit(&pool.seq, memory_order_relaxed) + 1;
    atomic_store_explicit(&pool.next, (unsigned long long)job << 32, memory_order_release);
    atomic_store(&pool.seq, job);
    if (atomic_load(&pool.sleeping))
        syscall(SYS_futex, &pool.seq, FUTEX_WAKE_PRIVATE, SPLIT_MAX_HELPERS, NULL, NULL, 0);
    split_work(job);
    /* a helper still on its chunk; if it was preempted (shared machine), yield to it */
    unsigned long long t0 = __rdtsc();
    while (atomic_load_explicit(&pool.done, memory_order_acquire) < pool.n_chunks)
        if (__rdtsc() - t0 > 50000)
            sched_yield();
        else
            _mm_pause();
    pthread_mutex_unlock(&pool.lock);
}
#else
#define HAVE_SMALL 0
#endif

/* ---- matrix products ---------------------------------------------------------- */
int mt_k_have_small(void) { return HAVE_SMALL; }

#define SMALL_N 8       /* up to this many rows the packing-free kernel wins (measured) */

void mt_k_linear(const float *x, int n, int in, const float *W, const float *b, int out, float *y)
{
#if HAVE_SMALL
    /* single rows with several BLAS threads: OpenBLAS's threaded sgemv, or with
     * MT_ROW_SPLIT=1 the output rows split over spinning helpers (linear_small) */
    if (n <= SMALL_N && in % 8 == 0 && (n > 1 || openblas_get_num_threads() == 1 || split_enabled())) {
        linear_small(x, n, in, W, b, out, y);
        return;
    }
#endif
    /* Start from the bias and accumulate (beta = 1): one pass over y. */
    for (int r = 0; r < n; r++) {
        if (b)
            memcpy(y + (long)r * out, b, sizeof(float) * (size_t)out);
        else
            memset(y + (long)r * out, 0, sizeof(float) * (size_t)out);
    }
    if (n == 1)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, W, in, x, 1, 1.0f, y, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, W, in, 1.0f, y, out);
}

void mt_k_gemv(int m, int k, float alpha, const float *A, int lda, const float *x, float *y)
{
    cblas_sgemv(CblasRowMajor, CblasNoTrans, m, k, alpha, A, lda, x, 1, 0.0f, y, 1);
}

void mt_k_gemm_nt(int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

void mt_k_gemm_nn(int m, int n, int k, const float *A, int lda, const float *B, int ldb, float beta,
                  float *C, int ldc)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

/* ---- normalization ------------------------------------------------------------- */
/* Mean and biased variance in double: the float rounding of PyTorch's moments
 * is not reproducible anyway, so be as exact as is cheap. */
void mt_k_add_layernorm(float *x, const float *h, int rows, int d, const float *g, const float *b)
{
    for (int r = 0; r < rows; r++) {
        float *xr = x + (long)r * d;
        if (h) {
            const float *hr = h + (long)r * d;
            for (int i = 0; i < d; i++)
                xr[i] += hr[i];
        }
        double s = 0, ss = 0;
        for (int i = 0; i < d; i++)
            s += xr[i];
        double mean = s / d;
        for (int i = 0; i < d; i++) {
            double c = xr[i] - mean;
            ss += c * c;
        }
        float rstd = (float)(1.0 / sqrt(ss / d + 1e-5)), m = (float)mean;
        for (int i = 0; i < d; i++)
            xr[i] = (xr[i] - m) * rstd * g[i] + b[i];
    }
}

void mt_k_softmax(float *x, int n, int ld)
{
    float mx = x[0];
    for (int i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    float s = 0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        s += x[i];
    }
    float inv = 1.0f / s;
    for (int i = 0; i < n; i++)
        x[i] *= inv;
    for (int i = n; i < ld; i++)
        x[i] = 0.0f;
}

void mt_k_activation(float *x, long n, mt_act act)
{
    switch (act) {
    case MT_ACT_SWISH:
        for (long i = 0; i < n; i++)
            x[i] = x[i] / (1.0f + expf(-x[i]));
        break;
    case MT_ACT_RELU:
        for (long i = 0; i < n; i++)
            x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case MT_ACT_GELU:
        for (long i = 0; i < n; i++)
            x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
        break;
    }
}

/* max and sum of exp(x - mx) over x[0..n): AVX2 when available.  A beam
 * step normalizes beams x vocab logits (32k for beam 4), so this is hot. */
#if HAVE_SMALL
/* e^x for x in [-87.3, 0]: Cody-Waite reduction + Cephes expf polynomial
 * (about 1 ulp); below -87.3 the result is clamped (irrelevant in a sum). */
static inline __m256 exp8(__m256 x)
{
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
}

static float range_max(const float *x, int n, float mx)
{
    __m256 m = _mm256_set1_ps(mx);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
    float t[8];
    _mm256_storeu_ps(t, m);
    for (int k = 0; k < 8; k++)
        mx = t[k] > mx ? t[k] : mx;
    for (; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    return mx;
}

static double range_sumexp(const float *x, int n, float mx)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();     /* summed in double */
    __m256 vm = _mm256_set1_ps(mx);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double t[4], s = 0;
    _mm256_storeu_pd(t, _mm256_add_pd(s0, s1));
    s = (t[0] + t[1]) + (t[2] + t[3]);
    for (; i < n; i++)
        s += expf(x[i] - mx);
    return s;
}
#else
static float range_max(const float *x, int n, float mx)
{
    for (int i = 0; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    return mx;
}

static double range_sumexp(const float *x, int n, float mx)
{
    double s = 0;                 /* expf (1 ulp) summed in double */
    for (int i = 0; i < n; i++)
        s += expf(x[i] - mx);
    return s;
}
#endif

double mt_k_logsumexp_skip(const float *logits, int n, int skip)
{
    int a = skip >= 0 && skip < n ? skip : n;          /* [0, a) and (a, n) */
    int b = a < n ? a + 1 : n;
    float mx = range_max(logits + b, n - b, range_max(logits, a, -INFINITY));
    double s = range_sumexp(logits, a, mx) + range_sumexp(logits + b, n - b, mx);
    return mx + log(s);
}

void mt_k_log_softmax_skip(const float *logits, int n, int skip, float *lp)
{
    double lse = mt_k_logsumexp_skip(logits, n, skip);
    for (int v = 0; v < n; v++)
        lp[v] = (float)((double)logits[v] - lse);
    if (skip >= 0 && skip < n)
        lp[skip] = -INFINITY;
}

/* ---- naive references ---------------------------------------------------------- */
void mt_ref_linear(const float *x, int n, int in, const float *W, const float *b, int out, float *y)
{
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out; o++) {
            double s = b ? b[o] : 0.0;
            for (int i = 0; i < in; i++)
                s += (double)W[(long)o * in + i] * x[(long)r * in + i];
            y[(long)r * out + o] = (float)s;
        }
}

void mt_ref_add_layernorm(float *x, const float *h, int rows, int d, const float *g, const float *b)
{
    for (int r = 0; r < rows; r++) {
        float *xr = x + (long)r * d;
        double mean = 0, var = 0;
        for (int i = 0; i < d; i++) {
            if (h)
                xr[i] += h[(long)r * d + i];
            mean += xr[i];
        }
        mean /= d;
        for (int i = 0; i < d; i++)
            var += (xr[i] - mean) * (xr[i] - mean);
        var /= d;
        for (int i = 0; i < d; i++)
            xr[i] = (float)((xr[i] - mean) / sqrt(var + 1e-5) * g[i] + b[i]);
    }
}

void mt_ref_softmax(float *x, int n, int ld)
{
    double mx = -INFINITY, s = 0;
    for (int i = 0; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++)
        s += exp(x[i] - mx);
    for (int i = 0; i < n; i++)
        x[i] = (float)(exp(x[i] - mx) / s);
    for (int i = n; i < ld; i++)
        x[i] = 0.0f;
}

void mt_ref_activation(float *x, long n, mt_act act)
{
    for (long i = 0; i < n; i++) {
        double v = x[i];
        if (act == MT_ACT_SWISH)
            v = v / (1.0 + exp(-v));
        else if (act == MT_ACT_RELU)
            v = v > 0 ? v : 0;
        else
            v = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
        x[i] = (float)v;
    }
}
