/* test_parallel: the compute pool's claim protocol under stress (engine/kernels/parallel.h).
 *
 * Several threads call mt_par_for at once; every job has a random number of
 * chunks, and every chunk marks its own slot of the job's marker array, which
 * lives on the caller's stack.  Checked for every job:
 *   - each chunk ran exactly once, with this job's context (no chunk of one
 *     job runs with another job's fn/ctx);
 *   - no chunk runs after mt_par_for returned: the caller poisons its frame on
 *     return and every chunk checks the poison first.
 * The pool bug this guards against (a helper running "chunk n" of the next
 * job with a stale claim, and the caller returning while a chunk still ran on
 * its stack) made this test fail within the first few thousand jobs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/parallel.h"
#include "util/thread_prio.h"

#define CALLERS       4
#define JOBS          200000    /* per run, split over the callers */
#define MAX_TEST_CHUNKS 48
#define LIVE          0x11223344u
#define DEAD          0xdeadbeefu

static _Atomic long bad_ctx, late, twice, missed, ran;

typedef struct {
    _Atomic unsigned magic;             /* LIVE while the caller waits in mt_par_for */
    unsigned job;                       /* (caller << 24) | job number */
    int n;
    _Atomic int hits[MAX_TEST_CHUNKS];
    _Atomic unsigned mark[MAX_TEST_CHUNKS];
} job_frame;

/* Checks and marks chunk c of frame f with tag: the caller knows which fn it
 * passed, so a chunk run with another job's fn leaves the wrong tag. */
static void mark_chunk(job_frame *f, int c, unsigned tag, int work)
{
    if (atomic_load(&f->magic) != LIVE) {
        atomic_fetch_add(&late, 1);
        return;
    }
    if (c < 0 || c >= f->n) {
        atomic_fetch_add(&bad_ctx, 1);
        return;
    }
    /* a little work, so that chunks overlap between threads */
    volatile unsigned x = f->job;
    for (int i = 0; work && i < (int)(f->job % 7) * 8; i++)
        x = x * 1103515245u + 12345u;
    atomic_store(&f->mark[c], tag);
    atomic_fetch_add(&f->hits[c], 1);
    atomic_fetch_add(&ran, 1);
}

static void chunk_fn(void *ctx, int c)
{
    job_frame *f = ctx;
    mark_chunk(f, c, f->job, 1);
}

/* A different function over the same frame shape. */
static void chunk_fn_odd(void *ctx, int c)
{
    job_frame *f = ctx;
    mark_chunk(f, c, f->job ^ 0x00800000u, 0);
}

static int jobs_per;

static void *caller(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    unsigned seed = 12345u + id * 7919u;
    for (unsigned j = 0; j < (unsigned)jobs_per; j++) {
        job_frame f;
        seed = seed * 1664525u + 1013904223u;
        f.n = 1 + (int)(seed >> 8) % MAX_TEST_CHUNKS;
        f.job = id << 24 | j;
        int odd = (seed >> 20) & 1;
        for (int c = 0; c < MAX_TEST_CHUNKS; c++) {
            atomic_init(&f.hits[c], 0);
            atomic_init(&f.mark[c], 0);
        }
        atomic_store(&f.magic, LIVE);
        mt_par_for(f.n, odd ? chunk_fn_odd : chunk_fn, &f);
        atomic_store(&f.magic, DEAD);
        unsigned want = odd ? f.job ^ 0x00800000u : f.job;
        for (int c = 0; c < f.n; c++) {
            int h = atomic_load(&f.hits[c]);
            if (h == 0)
                atomic_fetch_add(&missed, 1);
            else if (h > 1)
                atomic_fetch_add(&twice, 1);
            if (h && atomic_load(&f.mark[c]) != want)
                atomic_fetch_add(&bad_ctx, 1);
        }
        for (int c = f.n; c < MAX_TEST_CHUNKS; c++)
            if (atomic_load(&f.hits[c]))
                atomic_fetch_add(&bad_ctx, 1);
    }
    return NULL;
}

static void run_callers(int n_callers)
{
    atomic_store(&bad_ctx, 0), atomic_store(&late, 0), atomic_store(&twice, 0);
    atomic_store(&missed, 0), atomic_store(&ran, 0);
    jobs_per = JOBS / n_callers;
    pthread_t t[CALLERS];
    for (int i = 0; i < n_callers; i++)
        assert_int_equal(pthread_create(&t[i], NULL, caller, (void *)(uintptr_t)i), 0);
    for (int i = 0; i < n_callers; i++)
        pthread_join(t[i], NULL);
    printf("# %d callers x %d jobs: %ld chunks ran; missed %ld, twice %ld, wrong job %ld, after return %ld\n",
           n_callers, jobs_per, atomic_load(&ran), atomic_load(&missed), atomic_load(&twice),
           atomic_load(&bad_ctx), atomic_load(&late));
    assert_int_equal(atomic_load(&missed), 0);
    assert_int_equal(atomic_load(&twice), 0);
    assert_int_equal(atomic_load(&bad_ctx), 0);
    assert_int_equal(atomic_load(&late), 0);
    assert_true(atomic_load(&ran) > 0);
}

/* One caller: every job goes through the pool (no trylock contention), back
 * to back: the old bug's exact window (the next job published while a
 * helper still holds the previous job's claim word). */
static void test_one_caller_back_to_back(void **state)
{
    (void)state;
    mt_par_set_threads(2);
    run_callers(1);
}

/* Several callers at once: one owns the pool, the others run serially. */
static void test_many_callers(void **state)
{
    (void)state;
    mt_par_set_threads(2);
    run_callers(CALLERS);
}

/* More helpers than cores: helpers get descheduled mid-claim. */
static void test_oversubscribed(void **state)
{
    (void)state;
    mt_par_set_threads(4);
    run_callers(CALLERS);
    mt_par_set_threads(2);
}

static void count_fn(void *ctx, int c)
{
    atomic_fetch_add((_Atomic long *)ctx + (c & 1), 1);
}

/* Chunk counts past the claim word's 16 bits run serially, all of them. */
static void test_huge_job(void **state)
{
    (void)state;
    mt_par_set_threads(2);
    _Atomic long n[2] = { 0, 0 };
    mt_par_for(70000, count_fn, (void *)n);
    assert_int_equal(atomic_load(&n[0]) + atomic_load(&n[1]), 70000);
    mt_par_for(0, count_fn, (void *)n);
    mt_par_for(-3, count_fn, (void *)n);
    assert_int_equal(atomic_load(&n[0]) + atomic_load(&n[1]), 70000);
}

/* The stall rule (parallel.c): a wait is a descheduled helper only well past
 * the job's own chunk time.  Cycle counts at ~2.6 GHz. */
static void test_stall_rule(void **state)
{
    (void)state;
    unsigned long long ms = 2600000ull;
    /* a vocabulary product at 128 rows: 4 chunks of 18 ms by the caller; a
     * helper finishing its last chunk 20 ms later is working, not stalled
     * (the fixed 2 ms rule called this a stall) */
    assert_false(mt_par_stalled(20 * ms, 4, 4 * 18 * ms));
    assert_false(mt_par_stalled(36 * ms, 4, 4 * 18 * ms));
    assert_true(mt_par_stalled(60 * ms, 4, 4 * 18 * ms));
    /* small chunks (10 us): a 3 ms wait is a stall, 1 ms is not */
    assert_true(mt_par_stalled(3 * ms, 8, 8 * ms / 100));
    assert_false(mt_par_stalled(1 * ms, 8, 8 * ms / 100));
    /* the caller ran nothing: nothing to compare with, never a stall */
    assert_false(mt_par_stalled(1000 * ms, 0, 0));
}

/* --http-sched rr (thread_prio.h): a thread started from a real-time thread
 * inherits SCHED_RR; mt_thread_nice puts it back in SCHED_OTHER at its nice
 * value, mt_thread_rt(0) at the one it has.  Run in a thread of its own, so
 * that this one's class and nice value stay as they were. */
static void *prio_thread(void *arg)
{
    int *r = arg, policy;
    struct sched_param sp;
    if (mt_thread_rt(1) != 0) {                 /* no CAP_SYS_NICE: EPERM, nothing changed */
        r[0] = errno == EPERM ? -1 : -2;
        return NULL;
    }
    pthread_getschedparam(pthread_self(), &policy, &sp);
    r[1] = policy == SCHED_RR && sp.sched_priority == 1;
    r[2] = mt_thread_nice(3) == 0;
    pthread_getschedparam(pthread_self(), &policy, &sp);
    r[3] = policy == SCHED_OTHER && getpriority(PRIO_PROCESS, 0) == 3;
    r[4] = mt_thread_rt(1) == 0 && mt_thread_rt(0) == 0;
    pthread_getschedparam(pthread_self(), &policy, &sp);
    r[5] = policy == SCHED_OTHER;
    return NULL;
}

static void test_thread_classes(void **state)
{
    (void)state;
    int r[6] = { 0 };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, prio_thread, r), 0);
    pthread_join(t, NULL);
    if (r[0] == -1) {
        print_message("  no CAP_SYS_NICE here: SCHED_RR refused with EPERM, as the server's warning says\n");
        return;
    }
    assert_int_equal(r[0], 0);
    for (int i = 1; i < 6; i++)
        assert_int_equal(r[i], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_caller_back_to_back),
        cmocka_unit_test(test_many_callers),
        cmocka_unit_test(test_oversubscribed),
        cmocka_unit_test(test_huge_job),
        cmocka_unit_test(test_stall_rule),
        cmocka_unit_test(test_thread_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
