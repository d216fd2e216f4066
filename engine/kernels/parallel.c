/* parallel.c: the compute pool (parallel.h).
 *
 * The claim protocol.  A job is (fn, ctx, n_chunks).  Every claim is a CAS on
 * one 64-bit word, `claim` = job:32 | n_chunks:16 | next chunk:16, so the
 * job number, its size and the next free chunk are read and advanced as one
 * unit.  A CAS from (J, n, k) to (J, n, k+1) with k < n succeeds only while
 * the word still belongs to job J, and job J has exactly n such claims.
 *
 * Why fn/ctx may be read after a successful claim: the caller of job J
 * returns (and releases `busy`, the only way the next caller may overwrite
 * fn/ctx) only after `done` has counted all n chunks, and the chunk just
 * claimed is not counted until after it ran.  The caller's release store of
 * the claim word publishes fn/ctx; the helper's acquiring CAS (a read-modify-
 * write in that release sequence) sees them.  A helper that read a stale
 * word of a finished job fails its CAS or sees k == n: it never mixes jobs.
 *
 * (The first version checked the chunk index against a plain n_chunks that
 * the next job had already overwritten, while `next` still held the old
 * job's word: a helper could then run chunk n of the NEW fn with the old
 * claim and count it as done, and the caller returned while a chunk still
 * ran on its stack.  tests/test_parallel.c hammers exactly that.)
 *
 * Helpers spin on the job number for ~200 us after their last job and then
 * sleep on a futex; the caller wakes them only if one is asleep.  A helper
 * the OS has descheduled (this machine is shared) claims nothing and the
 * caller takes the remaining chunks itself; only a chunk already claimed by
 * a preempted helper makes the caller wait.  When a wait shows the machine
 * is oversubscribed, the next jobs run serially for a while: results are the
 * same bits either way (parallel.h), only the speed differs.
 *
 * "Stalled" is judged against the job's own chunks (mt_par_stalled): once the
 * caller finds no chunk left, a running helper is at most one chunk from
 * done, so only a wait well past a chunk's time (as the caller timed its own)
 * means a descheduled helper.  A fixed 2 ms alone misfired on large chunks:
 * at 128 rows a vocabulary product's chunk takes ~18 ms, every such step
 * "stalled", and beam 4 at batch 32 ran on one core (218 tok/s instead of
 * ~390 on the base shape, BENCHMARKS.md).
 *
 * "For a while" is ~100 ms of wall time, not a number of jobs: one preemption
 * of a few ms (a neighbour on this shared VM, a kernel thread) then costs at
 * most 100 ms at one core, where 2,000 jobs were seconds at 128 rows; on a
 * machine that stays oversubscribed, one probe in 100 ms waits on a helper.
 */
#include "parallel.h"
#include "util/thread_prio.h"

#include <cblas.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#define MAX_HELPERS  15
#define SPIN_CYCLES  600000ull     /* ~200 us at 2.6 GHz before a helper sleeps */
#define WAIT_CYCLES  50000ull      /* the caller spins this long on a claimed chunk, then yields */
#ifndef STALL_CYCLES
#define STALL_CYCLES 5200000ull    /* ~2 ms past two of the job's chunks: a helper was descheduled */
#endif
#define SERIAL_CYCLES 260000000ull /* ... then run jobs alone for ~100 ms before trying again */
#define MAX_CHUNKS   0xffff        /* n_chunks fits the claim word's 16 bits; larger jobs run serially */

static struct {
    pthread_mutex_t busy;          /* one job at a time (trylock) */
    pthread_mutex_t start;
    _Atomic int threads;           /* wanted, caller included */
    _Atomic int helpers;           /* started (never stopped: they sleep when idle) */
    _Atomic unsigned seq;          /* job number; futex word */
    _Atomic unsigned long long claim; /* job:32 | n_chunks:16 | next chunk:16 */
    _Atomic int done;
    _Atomic int sleeping;
    _Atomic unsigned long long serial_until; /* TSC: until then the machine is oversubscribed, run jobs alone */
    _Atomic int stop;              /* process exit: helpers return */
    _Atomic int nice;              /* helpers' nice value (mt_par_set_nice) */
    pthread_t tid[MAX_HELPERS];
    mt_par_fn fn;                  /* the job's, stable until its caller returns */
    void *ctx;
} P = {.busy = PTHREAD_MUTEX_INITIALIZER, .start = PTHREAD_MUTEX_INITIALIZER, .threads = 1};

static unsigned long long claim_word(unsigned job, int n_chunks)
{
    return (unsigned long long)job << 32 | (unsigned long long)n_chunks << 16;
}

/* Claims and runs chunks of `job` until none is left; returns how many it ran. */
static int run_chunks(unsigned job)
{
    unsigned long long v = atomic_load_explicit(&P.claim, memory_order_acquire);
    for (int ran = 0;; ran++) {
        int n = (int)(v >> 16 & 0xffff), k = (int)(v & 0xffff);
        if ((unsigned)(v >> 32) != job || k >= n)
            return ran;
        if (!atomic_compare_exchange_weak_explicit(&P.claim, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;                   /* v now holds the current word */
        P.fn(P.ctx, k);                 /* chunk k of job J: fn/ctx are J's (see the top) */
        atomic_fetch_add_explicit(&P.done, 1, memory_order_release);
        v = atomic_load_explicit(&P.claim, memory_order_acquire);
    }
}

int mt_par_stalled(unsigned long long waited, int ran, unsigned long long ran_cycles)
{
    if (ran <= 0)
        return 0;                       /* no chunk of its own to compare with */
    return waited > STALL_CYCLES + 2 * (ran_cycles / (unsigned)ran);
}

/* A helper takes up the pool's nice value when it changed.  Failing (lowering
 * it again needs a privilege) it stays as it was: a priority is no result. */
static void follow_nice(int *mine)
{
    int want = atomic_load_explicit(&P.nice, memory_order_relaxed);
    if (want != *mine) {
        mt_thread_nice(want);
        *mine = want;
    }
}

void mt_par_set_nice(int nice) { atomic_store(&P.nice, nice); }

static void *helper(void *arg)
{
    unsigned last = atomic_load(&P.seq);
    int nice = 0;
    for (;;) {
        unsigned long long t0 = __rdtsc();
        unsigned cur;
        while ((cur = atomic_load_explicit(&P.seq, memory_order_acquire)) == last) {
            if (__rdtsc() - t0 < SPIN_CYCLES) {
                _mm_pause();
                continue;
            }
            atomic_fetch_add(&P.sleeping, 1);
            if (atomic_load(&P.seq) == last)
                syscall(SYS_futex, &P.seq, FUTEX_WAIT_PRIVATE, last, NULL, NULL, 0);
            atomic_fetch_sub(&P.sleeping, 1);
            t0 = __rdtsc();
        }
        last = cur;
        if (atomic_load(&P.stop))
            return arg;
        follow_nice(&nice);
        run_chunks(cur);
    }
}

/* At exit: wake the helpers, let them return, join them (their stacks and
 * thread state are released: nothing is left for a leak checker). */
static void stop_helpers(void)
{
    atomic_store(&P.stop, 1);
    atomic_fetch_add(&P.seq, 1);
    syscall(SYS_futex, &P.seq, FUTEX_WAKE_PRIVATE, MAX_HELPERS, NULL, NULL, 0);
    for (int i = 0; i < atomic_load(&P.helpers); i++)
        pthread_join(P.tid[i], NULL);
}

void mt_par_set_threads(int n)
{
    n = n < 1 ? 1 : n > MAX_HELPERS + 1 ? MAX_HELPERS + 1 : n;
    openblas_set_num_threads(1);
    pthread_mutex_lock(&P.start);
    while (atomic_load(&P.helpers) < n - 1) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 256 * 1024);
        int i = atomic_load(&P.helpers), rc = pthread_create(&P.tid[i], &a, helper, NULL);
        pthread_attr_destroy(&a);
        if (rc)
            break;
        if (i == 0)
            atexit(stop_helpers);
        atomic_fetch_add(&P.helpers, 1);
    }
    int have = atomic_load(&P.helpers) + 1;
    atomic_store(&P.threads, n < have ? n : have);
    pthread_mutex_unlock(&P.start);
}

int mt_par_threads(void) { return atomic_load_explicit(&P.threads, memory_order_relaxed); }

void mt_par_for(int n_chunks, mt_par_fn fn, void *ctx)
{
    if (n_chunks <= 0)
        return;
    if (n_chunks == 1 || n_chunks > MAX_CHUNKS || mt_par_threads() < 2 ||
        __rdtsc() < atomic_load_explicit(&P.serial_until, memory_order_relaxed) ||
        pthread_mutex_trylock(&P.busy)) {
        for (int c = 0; c < n_chunks; c++)
            fn(ctx, c);
        return;
    }
    /* No helper can be inside the previous job's fn now (its caller saw all
     * its chunks done), and none can claim a chunk until the store below. */
    P.fn = fn, P.ctx = ctx;
    atomic_store_explicit(&P.done, 0, memory_order_relaxed);
    unsigned job = atomic_load_explicit(&P.seq, memory_order_relaxed) + 1;
    atomic_store_explicit(&P.claim, claim_word(job, n_chunks), memory_order_release);
    atomic_store(&P.seq, job);
    if (atomic_load(&P.sleeping))
        syscall(SYS_futex, &P.seq, FUTEX_WAKE_PRIVATE, MAX_HELPERS, NULL, NULL, 0);
    unsigned long long t_run = __rdtsc();
    int ran = run_chunks(job);
    unsigned long long t0 = __rdtsc(), waited = 0;
    t_run = t0 - t_run;
    while (atomic_load_explicit(&P.done, memory_order_acquire) < n_chunks) {
        waited = __rdtsc() - t0;
        if (waited > WAIT_CYCLES)
            sched_yield();
        else
            _mm_pause();
    }
    /* A helper that held a chunk this long was descheduled: other processes
     * want these cores.  Every job would wait on it again, so run alone for a
     * while (one thread's speed, instead of a fraction of it) and then retry. */
    if (mt_par_stalled(waited, ran, t_run))
        atomic_store_explicit(&P.serial_until, __rdtsc() + SERIAL_CYCLES, memory_order_relaxed);
    pthread_mutex_unlock(&P.busy);
}
