/* test_scheduler: server/translate/scheduler.c's background priority
 * (srv_decode_job.background, SRV_SCHED_BACKGROUND_SHARE) on models/en-fr.
 *
 * A scheduler of 8 rows (a background share of 1 row):
 *  - an interactive job of 4 sentences, then a background job of 24: the
 *    interactive one is done first; both decode every sentence (greedy ids
 *    equal the same sentence decoded alone);
 *  - while the interactive sentences are held, the scheduler never decodes
 *    more than 4 + 1 sentences at once (stats polled);
 *  - a background job alone takes more than its share: every row;
 *  - fairness between clients (srv_decode_job.client, deficit round robin):
 *    client A queues three jobs of 32 sentences, then client B one sentence:
 *    B is done before A's first job (first come, first served would start
 *    it after 88 of A's sentences); two clients with backlogs of the same
 *    size finish their last jobs close together, not one after the other;
 *  - the K/V budget (srv_sched_params.kv_budget) bounds the sentences that
 *    decode at once; the ids are those of the same job without it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <time.h>

#include "mt.h"
#include "translate/scheduler.h"

static mt_model *model;
static const char *const SENT[] = {
    "This package provides the documentation.", "It is free software.",
    "The library runs on every system that has a compiler.", "This package contains the development files.",
    "The program reads its configuration from a file.", "Debian is a free operating system.",
};

typedef struct {
    srv_decode_job job;
    srv_seq_req    items[32];
    mt_hyp         hyps[32];
    int32_t        src[32][64];
    _Atomic int    done;
    _Atomic int    order;       /* the rank at which it finished */
} job_box;

static _Atomic int finished_rank;

static void on_done(srv_decode_job *j)
{
    job_box *b = j->ctx;
    atomic_store(&b->order, atomic_fetch_add(&finished_rank, 1) + 1);
    atomic_store(&b->done, 1);
}

static void make_job(job_box *b, int n, int background, const mt_decode_params *dp)
{
    memset(b, 0, sizeof *b);
    const mt_tokenizer *tok = mt_model_tokenizer(model);
    for (int i = 0; i < n; i++) {
        int len = 0;
        const char *s = SENT[i % 6];
        assert_int_equal(mt_tokenizer_encode(tok, s, strlen(s), 0, b->src[i], 64, &len, NULL), MT_OK);
        b->items[i].src = b->src[i];
        b->items[i].n_src = len;
        b->items[i].hyps = &b->hyps[i];
    }
    srv_decode_job_init(&b->job, b->items, n, dp);
    b->job.done = on_done;
    b->job.ctx = b;
    b->job.background = background;
}

static void wait_done(job_box *b)
{
    for (int k = 0; k < 60000 && !atomic_load(&b->done); k++) {
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    assert_true(atomic_load(&b->done));
}

static void free_hyps(job_box *b, int n)
{
    for (int i = 0; i < n; i++)
        mt_hyps_free(&b->hyps[i], 1);
}

static int setup(void **state)
{
    (void)state;
    mt_model_params mp = mt_model_default_params();
    mp.n_threads = 1;
    mt_err err;
    return mt_model_load("models/en-fr", &mp, &model, &err) == MT_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    mt_model_free(model);
    return 0;
}

static srv_sched *new_sched_budget(int rows, size_t kv_budget)
{
    mt_session_params sp = mt_session_default_params(model);
    sp.max_batch = rows;
    srv_sched_params p = srv_sched_default_params();
    p.kv_budget = kv_budget;
    mt_err err;
    srv_sched *sc = srv_sched_new(model, &sp, &p, &err);
    if (!sc)
        print_error("%s\n", err.msg);
    assert_non_null(sc);
    return sc;
}

static srv_sched *new_sched(int rows) { return new_sched_budget(rows, 0); }

static void test_interactive_first(void **state)
{
    (void)state;
    srv_sched *sc = new_sched(8);
    srv_decoder dec = srv_sched_decoder(sc);
    mt_decode_params dp = mt_decode_default_params();
    dp.beam_size = 1;                           /* a sentence is a row */
    mt_err err;
    mt_session_params sp = mt_session_default_params(model);
    assert_int_equal(mt_decode_params_resolve(model, &sp, &dp, &dp, &err), MT_OK);
    static job_box bg, fg, alone;
    atomic_store(&finished_rank, 0);
    make_job(&bg, 24, 1, &dp);
    make_job(&fg, 4, 0, &dp);
    /* the interactive job first: were the background one first, the scheduler
     * could rightly give it every row before the interactive one arrives */
    assert_int_equal(dec.submit(dec.self, &fg.job), 0);
    assert_int_equal(dec.submit(dec.self, &bg.job), 0);
    int most = 0;
    while (!atomic_load(&fg.done)) {            /* while the interactive job is held */
        srv_sched_counts c;
        srv_sched_stats(sc, &c);
        if (!atomic_load(&fg.done) && c.active > most)
            most = c.active;
        struct timespec ts = { 0, 200000 };
        nanosleep(&ts, NULL);
    }
    wait_done(&bg);
    printf("interactive job done at rank %d, background at %d; at most %d sentences at once meanwhile\n",
           atomic_load(&fg.order), atomic_load(&bg.order), most);
    assert_int_equal(atomic_load(&fg.order), 1);
    assert_int_equal(atomic_load(&bg.order), 2);
    assert_true(most <= 4 + 1);                 /* the interactive four and the background share */
    assert_int_equal(fg.job.status, MT_OK);
    assert_int_equal(bg.job.status, MT_OK);
    /* the same ids as each sentence alone */
    make_job(&alone, 6, 0, &dp);
    assert_int_equal(dec.submit(dec.self, &alone.job), 0);
    wait_done(&alone);
    for (int i = 0; i < 24; i++) {
        const mt_hyp *a = &bg.hyps[i], *b = &alone.hyps[i % 6];
        assert_int_equal(a->n_ids, b->n_ids);
        assert_memory_equal(a->ids, b->ids, sizeof *a->ids * (size_t)a->n_ids);
    }
    free_hyps(&bg, 24);
    free_hyps(&fg, 4);
    free_hyps(&alone, 6);
    srv_sched_free(sc);
}

static void test_background_alone_takes_every_row(void **state)
{
    (void)state;
    srv_sched *sc = new_sched(8);
    srv_decoder dec = srv_sched_decoder(sc);
    mt_decode_params dp = mt_decode_default_params();
    dp.beam_size = 1;                           /* a sentence is a row */
    mt_err err;
    mt_session_params sp = mt_session_default_params(model);
    assert_int_equal(mt_decode_params_resolve(model, &sp, &dp, &dp, &err), MT_OK);
    static job_box bg;
    make_job(&bg, 24, 1, &dp);
    assert_int_equal(dec.submit(dec.self, &bg.job), 0);
    int most = 0;
    while (!atomic_load(&bg.done)) {
        srv_sched_counts c;
        srv_sched_stats(sc, &c);
        if (c.active > most)
            most = c.active;
        struct timespec ts = { 0, 200000 };
        nanosleep(&ts, NULL);
    }
    printf("a background job alone: up to %d sentences at once (8 rows)\n", most);
    assert_true(most > 1);                      /* more than its share when nobody else waits */
    free_hyps(&bg, 24);
    srv_sched_free(sc);
}

static mt_decode_params greedy_params(void)
{
    mt_decode_params dp = mt_decode_default_params();
    dp.beam_size = 1;                           /* a sentence is a row */
    mt_err err;
    mt_session_params sp = mt_session_default_params(model);
    assert_int_equal(mt_decode_params_resolve(model, &sp, &dp, &dp, &err), MT_OK);
    return dp;
}

/* The most sentences decoding at once while job b runs (stats polled). */
static int most_active(srv_sched *sc, job_box *b)
{
    int most = 0;
    while (!atomic_load(&b->done)) {
        srv_sched_counts c;
        srv_sched_stats(sc, &c);
        most = c.active > most ? c.active : most;
        struct timespec ts = { 0, 200000 };
        nanosleep(&ts, NULL);
    }
    return most;
}

/* srv_sched_params.kv_budget: a sentence starts only while the K/V bytes the
 * next step would read with it stay within the budget.  Every running row
 * reads at least its source and one position, and a newcomer is counted at
 * least as much, so with a budget of k such rows of the shortest sentence at
 * most k decode at once; without a budget the same job fills more rows, and
 * both decode the same ids. */
static void test_kv_budget(void **state)
{
    (void)state;
    mt_decode_params dp = greedy_params();
    static job_box capped, free_run;
    make_job(&capped, 24, 0, &dp);
    int shortest = 1 << 30;
    for (int i = 0; i < 6; i++)
        shortest = capped.items[i].n_src < shortest ? capped.items[i].n_src : shortest;
    mt_session *probe = NULL;
    mt_session_params sp = mt_session_default_params(model);
    assert_int_equal(mt_session_new(model, &sp, &probe, NULL), MT_OK);
    /* the bytes of one row over the shortest source and its start position */
    size_t row = mt_session_kv_step_bytes(probe, shortest, 1) * (size_t)(shortest + 1) / (size_t)(2 * shortest);
    mt_session_free(probe);
    srv_sched *sc = new_sched_budget(8, 3 * row);
    srv_decoder dec = srv_sched_decoder(sc);
    assert_int_equal(dec.submit(dec.self, &capped.job), 0);
    int most_capped = most_active(sc, &capped);
    wait_done(&capped);
    srv_sched_free(sc);
    sc = new_sched(8);
    dec = srv_sched_decoder(sc);
    make_job(&free_run, 24, 0, &dp);
    assert_int_equal(dec.submit(dec.self, &free_run.job), 0);
    int most_free = most_active(sc, &free_run);
    wait_done(&free_run);
    srv_sched_free(sc);
    printf("24 sentences on 8 rows: at most %d at once with a budget of 3 rows' K/V bytes, %d without\n",
           most_capped, most_free);
    assert_int_equal(capped.job.status, MT_OK);
    assert_int_equal(free_run.job.status, MT_OK);
    assert_true(most_capped >= 1 && most_capped <= 3);
    assert_true(most_free > 3);
    for (int i = 0; i < 24; i++) {
        assert_int_equal(capped.hyps[i].n_ids, free_run.hyps[i].n_ids);
        assert_memory_equal(capped.hyps[i].ids, free_run.hyps[i].ids, sizeof(int32_t) * (size_t)capped.hyps[i].n_ids);
    }
    free_hyps(&capped, 24);
    free_hyps(&free_run, 24);
}

static void test_clients_take_turns(void **state)
{
    (void)state;
    srv_sched *sc = new_sched(8);
    srv_decoder dec = srv_sched_decoder(sc);
    mt_decode_params dp = greedy_params();
    static job_box a[3], b;
    atomic_store(&finished_rank, 0);
    for (int k = 0; k < 3; k++) {
        make_job(&a[k], 32, 0, &dp);
        a[k].job.client = srv_decode_client_id("ip:10.0.0.1");
        assert_int_equal(dec.submit(dec.self, &a[k].job), 0);
    }
    make_job(&b, 1, 0, &dp);
    b.job.client = srv_decode_client_id("ip:10.0.0.2");
    assert_int_equal(dec.submit(dec.self, &b.job), 0);
    for (int k = 0; k < 3; k++)
        wait_done(&a[k]);
    wait_done(&b);
    printf("client A's jobs done at ranks %d %d %d, client B's single sentence at %d\n", atomic_load(&a[0].order),
           atomic_load(&a[1].order), atomic_load(&a[2].order), atomic_load(&b.order));
    assert_int_equal(atomic_load(&b.order), 1);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(a[k].job.status, MT_OK);
        free_hyps(&a[k], 32);
    }
    assert_int_equal(b.job.status, MT_OK);
    assert_true(b.hyps[0].n_ids > 1);
    free_hyps(&b, 1);
    srv_sched_free(sc);
}

static void test_equal_backlogs_share(void **state)
{
    (void)state;
    srv_sched *sc = new_sched(8);
    srv_decoder dec = srv_sched_decoder(sc);
    mt_decode_params dp = greedy_params();
    static job_box x[2][2];
    atomic_store(&finished_rank, 0);
    /* client 0 queues both its jobs first: served in order of arrival, its
     * second job would be done before client 1's first */
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < 2; k++) {
            make_job(&x[c][k], 24, 0, &dp);
            x[c][k].job.client = srv_decode_client_id(c ? "key:1" : "key:0");
        }
    assert_int_equal(dec.submit(dec.self, &x[0][0].job), 0);
    assert_int_equal(dec.submit(dec.self, &x[0][1].job), 0);
    assert_int_equal(dec.submit(dec.self, &x[1][0].job), 0);
    assert_int_equal(dec.submit(dec.self, &x[1][1].job), 0);
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < 2; k++)
            wait_done(&x[c][k]);
    printf("ranks: client 0's jobs %d %d, client 1's %d %d\n", atomic_load(&x[0][0].order),
           atomic_load(&x[0][1].order), atomic_load(&x[1][0].order), atomic_load(&x[1][1].order));
    /* turns: each client's first job is done before either's second */
    assert_true(atomic_load(&x[1][0].order) < atomic_load(&x[0][1].order));
    assert_true(atomic_load(&x[0][0].order) < atomic_load(&x[1][1].order));
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < 2; k++) {
            assert_int_equal(x[c][k].job.status, MT_OK);
            free_hyps(&x[c][k], 24);
        }
    srv_sched_free(sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interactive_first),
        cmocka_unit_test(test_background_alone_takes_every_row),
        cmocka_unit_test(test_clients_take_turns),
        cmocka_unit_test(test_equal_backlogs_share),
        cmocka_unit_test(test_kv_budget),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
