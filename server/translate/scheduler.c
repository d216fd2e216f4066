/* scheduler: the continuous-batching scheduler (scheduler.h): a feed of the
 * engine's decode loop (mt_decode_run), which its thread runs. */
#include "scheduler.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/metrics.h"
#include "sessions.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/thread_prio.h"

#define GONE_POLL_S 0.02        /* how often the clients of decoding jobs are checked */
/* ... and of jobs still waiting for rows: a poll() each costs the decode
 * thread ~1 us, and 500 queued requests polled every 20 ms took ~5% of its
 * time (wrk at 512 connections); a departed client's waiting job holds no
 * row, so finding it later costs nothing */
#define GONE_POLL_WAITING_S 0.2
#define IDLE_WAIT_MS 20         /* the thread's sleep with work held but nothing to step */
/* Deficit round robin: each turn gives a client this much credit, in source
 * tokens x beams (a sentence's cost); a client admits sentences while its
 * credit covers them.  About two typical sentences: small enough that one
 * client's backlog delays another's next sentence by one turn at most,
 * large enough that turns are not wasted on credit alone. */
#define QUANTUM 64
#define CLIENT_BUCKETS 256      /* the client table's hash buckets */

/* One client's interactive sentences waiting for rows, FIFO; in the ring of
 * clients with waiting sentences while it has any. */
typedef struct client_q {
    uint64_t         id;
    srv_seq_req     *head, *tail;
    long             deficit;
    int              credited;  /* this turn's quantum was given (a turn cut short by full rows resumes) */
    struct client_q *prev, *next;   /* the ring */
    struct client_q *chain;         /* the hash bucket */
} client_q;

struct srv_sched {
    pthread_mutex_t  mu;
    pthread_cond_t   cv;        /* work arrived, or stop */
    pthread_t        tid;
    int              started, stop;
    srv_sched_params p;
    mt_session      *s;
    int              rows;
    client_q        *clients[CLIENT_BUCKETS];   /* clients with waiting interactive sentences */
    client_q        *turn;          /* the ring's client whose turn it is; NULL: none waits */
    srv_seq_req     *bg_head, *bg_tail;     /* background sentences waiting for rows, FIFO */
    int              n_waiting;     /* sentences waiting, interactive and background */
    int              n_fg_waiting;  /* ... of them interactive */
    srv_decode_job  *jobs;          /* every job held (waiting or decoding) */
    int              n_jobs;
    srv_seq_req    **active;        /* [rows] by sequence id: decoding, NULL (scheduler thread only) */
    int              n_active;
    int              n_bg_rows;     /* rows the active background sentences hold (srv_decode_job.background) */
    int              bg_rows;       /* the rows they may hold beside interactive ones */
    srv_seq_req     *retired;       /* finished by the last step, not yet over (scheduler thread only) */
    double           last_poll, last_poll_waiting;
    double           t_step;        /* when the running step began; 0: none (scheduler thread only) */
    _Atomic int      st_active, st_waiting, st_rows, st_jobs_started, st_jobs_waiting;
};

srv_sched_params srv_sched_default_params(void)
{
    return (srv_sched_params){ .max_jobs = 1024, .queue_timeout_s = 30 };
}

/* ---- jobs (under mu) ---------------------------------------------------------- */

static void unlink_job(srv_sched *sc, srv_decode_job *job)
{
    for (srv_decode_job **pp = &sc->jobs; *pp; pp = &(*pp)->next)
        if (*pp == job) {
            *pp = job->next;
            sc->n_jobs--;
            return;
        }
}

/* An item is over; a job whose last item is over moves to *done_list (its
 * done() is called once mu is released). */
static void finish_item(srv_sched *sc, srv_seq_req *it, srv_decode_job **done_list)
{
    srv_decode_job *job = it->job;
    if (--job->remaining > 0)
        return;
    unlink_job(sc, job);
    srv_decode_job_finish(job);
    job->next = *done_list;
    *done_list = job;
}

static void fail_item(srv_sched *sc, srv_seq_req *it, mt_status st, const char *why, srv_decode_job **done_list)
{
    it->status = mt_err_set(&it->err, st, "%s", why);
    finish_item(sc, it, done_list);
}

/* The rows a background item holds: its beam; 0 for an interactive one. */
static int bg_rows_of(const srv_seq_req *it)
{
    return it->job->background ? (it->dp ? it->dp : &it->job->dp)->beam_size : 0;
}

/* Active background sentences (their rows: n_bg_rows). */
static int count_bg_active(const srv_sched *sc)
{
    int n = 0;
    for (int i = 0; i < sc->rows; i++)
        n += sc->active[i] && sc->active[i]->job->background;
    return n;
}

static void publish_stats(srv_sched *sc)
{
    int waiting = sc->n_waiting;
    int started = 0;
    for (srv_decode_job *job = sc->jobs; job; job = job->next)
        started += job->started;
    atomic_store(&sc->st_active, sc->n_active);
    atomic_store(&sc->st_waiting, waiting);
    atomic_store(&sc->st_rows, mt_session_rows_used(sc->s));
    atomic_store(&sc->st_jobs_started, started);
    atomic_store(&sc->st_jobs_waiting, sc->n_jobs - started);
}

/* ---- waiting sentences (under mu) ------------------------------------------------- */

static client_q **bucket_of(srv_sched *sc, uint64_t id)
{
    return &sc->clients[(id ^ (id >> 32)) % CLIENT_BUCKETS];
}

/* The client's queue, in the ring; NULL when out of memory. */
static client_q *client_get(srv_sched *sc, uint64_t id)
{
    client_q **b = bucket_of(sc, id);
    for (client_q *c = *b; c; c = c->chain)
        if (c->id == id)
            return c;
    client_q *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->id = id;
    c->chain = *b;
    *b = c;
    if (sc->turn) {                 /* joins the ring just before the client whose turn it is: last */
        c->next = sc->turn;
        c->prev = sc->turn->prev;
        c->prev->next = c;
        sc->turn->prev = c;
    } else {
        c->prev = c->next = c;
        sc->turn = c;
    }
    return c;
}

/* An empty client leaves the ring and the table; the turn passes on. */
static void client_drop(srv_sched *sc, client_q *c)
{
    for (client_q **pp = bucket_of(sc, c->id); *pp; pp = &(*pp)->chain)
        if (*pp == c) {
            *pp = c->chain;
            break;
        }
    if (c->next == c) {
        sc->turn = NULL;
    } else {
        c->prev->next = c->next;
        c->next->prev = c->prev;
        if (sc->turn == c)
            sc->turn = c->next;
    }
    free(c);
}

/* Queues a job's sentences: its client's queue, or the background FIFO.
 * -1 when out of memory (nothing queued). */
static int enqueue(srv_sched *sc, srv_decode_job *job)
{
    srv_seq_req **head = &sc->bg_head, **tail = &sc->bg_tail;
    client_q *c = NULL;
    if (!job->background) {
        if (!(c = client_get(sc, job->client)))
            return -1;
        head = &c->head;
        tail = &c->tail;
    }
    for (int i = 0; i < job->n; i++) {
        job->items[i].job = job;
        job->items[i].next = i + 1 < job->n ? &job->items[i + 1] : NULL;
    }
    if (*tail)
        (*tail)->next = &job->items[0];
    else
        *head = &job->items[0];
    *tail = &job->items[job->n - 1];
    sc->n_waiting += job->n;
    sc->n_fg_waiting += job->background ? 0 : job->n;
    return 0;
}

/* Removes the items keep() refuses from the queue *head..*tail, handing each
 * to out(); returns how many left. */
static int filter(srv_sched *sc, srv_seq_req **head, srv_seq_req **tail,
                  int (*keep)(srv_sched *, srv_seq_req *, double), double now, srv_decode_job **done_list)
{
    int gone = 0;
    *tail = NULL;
    for (srv_seq_req **pp = head; *pp;) {
        srv_seq_req *it = *pp;
        if (keep(sc, it, now)) {
            *tail = it;
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        gone++;
        srv_decode_job *job = it->job;
        if (job->cancelled) {
            srv_metrics_cancelled(1);
            fail_item(sc, it, MT_ERR_BUSY, "cancelled: the client went away", done_list);
        } else {
            job->timed_out = 1;
            fail_item(sc, it, MT_ERR_BUSY, "waited too long for decoder rows", done_list);
        }
    }
    return gone;
}

/* Under mu: mark the jobs whose client went away, decoding ones at most
 * every GONE_POLL_S, waiting ones every GONE_POLL_WAITING_S (gone() is a
 * poll() of a socket with no wait: cheap enough to hold mu). */
static void poll_gone(srv_sched *sc)
{
    double t = mt_now_s();
    if (t - sc->last_poll < GONE_POLL_S)
        return;
    sc->last_poll = t;
    int waiting_too = t - sc->last_poll_waiting >= GONE_POLL_WAITING_S;
    if (waiting_too)
        sc->last_poll_waiting = t;
    for (srv_decode_job *job = sc->jobs; job; job = job->next)
        if (!job->cancelled && (job->started || waiting_too) && job->abort.gone && job->abort.gone(job->abort.ctx))
            job->cancelled = 1;         /* (only this thread writes it while held) */
}

/* A waiting sentence stays unless its job was cancelled or, interactive,
 * has waited past the queue timeout (background work never times out: it
 * always gets its share of the rows). */
static int keep_waiting(srv_sched *sc, srv_seq_req *it, double now)
{
    const srv_decode_job *job = it->job;
    return !job->cancelled && (job->background || !(now - job->t_submit > sc->p.queue_timeout_s));
}

/* Under mu: drop the sentences of cancelled jobs, active and waiting, and
 * fail the waiting sentences of interactive jobs past the queue timeout. */
static void drop(srv_sched *sc, srv_decode_job **done_list)
{
    for (int i = 0; i < sc->rows; i++) {
        srv_seq_req *it = sc->active[i];
        if (!it || !it->job->cancelled)
            continue;
        mt_seq_cancel(sc->s, it->seq);
        srv_metrics_cancelled(1);
        sc->active[i] = NULL;
        sc->n_active--;
        sc->n_bg_rows -= bg_rows_of(it);
        fail_item(sc, it, MT_ERR_BUSY, "cancelled: the client went away", done_list);
    }
    double t = mt_now_s();
    int gone = filter(sc, &sc->bg_head, &sc->bg_tail, keep_waiting, t, done_list);
    sc->n_waiting -= gone;
    if (sc->turn) {
        client_q *c = sc->turn;
        do {
            int n = filter(sc, &c->head, &c->tail, keep_waiting, t, done_list);
            sc->n_waiting -= n;
            sc->n_fg_waiting -= n;
            c = c->next;
        } while (c != sc->turn);
    }
}

/* A background sentence must wait: interactive ones decode or wait, and the
 * background ones hold their share of the rows already. */
static int bg_must_wait(const srv_sched *sc, int fg_active, int fg_waiting)
{
    return (fg_active > 0 || fg_waiting > 0) && sc->n_bg_rows >= sc->bg_rows;
}

/* The row the engine gave a starting sentence is free in active[]: a bug if
 * not (the engine reuses an id still decoding, or one out of its rows). */
static mt_status check_new_seq(const srv_sched *sc, int seq, mt_err *err)
{
    MT_ASSERT(seq >= 0 && seq < sc->rows, err);
    MT_ASSERT(!sc->active[seq], err);
    return MT_OK;
}

/* Under mu (released around mt_seq_start): starts waiting sentence it, taken
 * off its queue already; 0, or -1 when it could not start (it is over). */
static int start_one(srv_sched *sc, srv_seq_req *it, srv_decode_job **done_list)
{
    int bg = it->job->background != 0;
    sc->n_waiting--;
    sc->n_fg_waiting -= !bg;
    sc->n_bg_rows += bg_rows_of(it);    /* counted now: a failed start takes them back below */
    it->job->started = 1;
    it->next = NULL;
    pthread_mutex_unlock(&sc->mu);
    mt_decode_params q = srv_decode_item_params(it->job, (int)(it - it->job->items));
    mt_status st = mt_seq_start(sc->s, it->src, it->n_src, &q, &it->seq, &it->err);
    pthread_mutex_lock(&sc->mu);
    if (st == MT_OK)
        st = check_new_seq(sc, it->seq, &it->err);     /* broken: this sentence fails (HTTP 500) */
    if (st != MT_OK) {
        sc->n_bg_rows -= bg_rows_of(it);
        it->status = st;
        finish_item(sc, it, done_list);
        return -1;
    }
    sc->active[it->seq] = it;
    sc->n_active++;
    return 0;
}

/* 1 when the session has rows for it now (a beam wider than the session
 * "fits": mt_seq_start refuses it with a message) and, while anything
 * decodes, the K/V caches the next step would read with it stay within the
 * budget: past it the caches of a full step no longer stay in the CPU's
 * cache, and every row's attention pays for it (BENCHMARKS.md, issue 32). */
static int fits(const srv_sched *sc, const srv_seq_req *it)
{
    const mt_decode_params *dp = it->dp ? it->dp : &it->job->dp;
    if (dp->beam_size > sc->rows)
        return 1;
    if (!mt_session_can_start(sc->s, dp->beam_size))
        return 0;
    return !sc->p.kv_budget || mt_session_rows_used(sc->s) == 0 ||
           mt_session_kv_step_bytes(sc->s, it->n_src, dp->beam_size > 0 ? dp->beam_size : 1) <= sc->p.kv_budget;
}

/* A sentence's cost for the round robin: its source tokens x beams. */
static long cost_of(const srv_seq_req *it)
{
    const mt_decode_params *dp = it->dp ? it->dp : &it->job->dp;
    return (long)it->n_src * (dp->beam_size > 0 ? dp->beam_size : 1);
}

/* Background sentences, FIFO, while they are under their share (or nothing
 * interactive decodes or waits) and rows are free. */
static void admit_background(srv_sched *sc, srv_decode_job **done_list)
{
    while (sc->bg_head) {
        int fg_active = sc->n_active - count_bg_active(sc);
        if (bg_must_wait(sc, fg_active, sc->n_fg_waiting) || !fits(sc, sc->bg_head))
            return;
        srv_seq_req *it = sc->bg_head;
        if (!(sc->bg_head = it->next))
            sc->bg_tail = NULL;
        start_one(sc, it, done_list);
    }
}

/* Interactive sentences by deficit round robin over their clients: at its
 * turn a client gets QUANTUM of credit and starts sentences, in its own
 * order, while the credit covers them; the turn then passes.  When the rows
 * run out, the client whose sentence does not fit keeps the turn (and its
 * credit): nobody overtakes it, so a wide beam is never starved by narrow
 * ones.  A client with nothing left leaves the ring, its credit lost. */
static void admit_interactive(srv_sched *sc, srv_decode_job **done_list)
{
    while (sc->turn) {
        client_q *c = sc->turn;
        if (!c->head) {
            client_drop(sc, c);
            continue;
        }
        if (!c->credited) {
            c->deficit += QUANTUM;
            c->credited = 1;
        }
        srv_seq_req *it = c->head;
        long cost = cost_of(it);
        if (cost > c->deficit) {        /* the turn is over */
            c->credited = 0;
            sc->turn = c->next;
            continue;
        }
        if (!fits(sc, it))
            return;                     /* it waits for rows, its turn kept */
        if (!(c->head = it->next))
            c->tail = NULL;
        c->deficit -= cost;
        start_one(sc, it, done_list);
        if (!c->head) {
            client_drop(sc, c);         /* (its turn passes on) */
        }
    }
}

/* Under mu: admission while rows are free: background sentences within their
 * share, then interactive ones, fairly across clients. */
static void admit(srv_sched *sc, srv_decode_job **done_list)
{
    admit_background(sc, done_list);
    admit_interactive(sc, done_list);
}

/* A finished sentence's hypotheses fit its item's hyps[] (the job's n_best). */
static mt_status check_hyps(const srv_seq_req *it, int n, mt_err *err)
{
    int cap = it->job->dp.n_best > 0 ? it->job->dp.n_best : 1;
    MT_ASSERT(n >= 0 && n <= cap, err);
    return MT_OK;
}

/* The decode loop's hand-over after a step (scheduler thread, no lock: the
 * active items are its own): sequence seq finished (its progress hook has
 * seen its best hypothesis); its item leaves the active ones for retire. */
static void sched_finished(void *data, int seq, mt_status st, mt_hyp *hyps, int n, const mt_err *err)
{
    srv_sched *sc = data;
    /* a sequence we did not start: no request to fail, nothing to hand over */
    MT_ASSERT_OR(seq >= 0 && seq < sc->rows && sc->active[seq], mt_hyps_free(hyps, n); return);
    srv_seq_req *it = sc->active[seq];
    mt_status checked = st == MT_OK ? check_hyps(it, n, &it->err) : st;
    it->status = checked;
    if (st != MT_OK)
        it->err = *err;
    else if (checked != MT_OK)
        mt_hyps_free(hyps, n);          /* broken: this sentence fails (HTTP 500) */
    else
        memcpy(it->hyps, hyps, sizeof *hyps * (size_t)n);
    sc->active[seq] = NULL;
    sc->n_active--;
    sc->n_bg_rows -= bg_rows_of(it);
    it->next = sc->retired;
    sc->retired = it;
}

/* Under mu: the items the last step finished are over. */
static void retire(srv_sched *sc, srv_decode_job **done_list)
{
    while (sc->retired) {
        srv_seq_req *it = sc->retired;
        sc->retired = it->next;
        it->next = NULL;
        finish_item(sc, it, done_list);
    }
}

/* Calls done() of finished jobs with mu released: done() may resume a
 * connection whose thread then frees the job. */
static void complete(srv_sched *sc, srv_decode_job **done_list)
{
    srv_decode_job *job = *done_list;
    *done_list = NULL;
    if (!job)
        return;
    pthread_mutex_unlock(&sc->mu);
    while (job) {
        srv_decode_job *next = job->next;
        job->done(job);
        job = next;
    }
    pthread_mutex_lock(&sc->mu);
}

/* The decode loop's start, before every step: under mu, retire what the last
 * step finished, then wait for work (or stop), drop, admit, publish and
 * complete until something is active; mt_step then runs with no lock held.
 * At stop, once nothing is left (the session is empty), the loop ends.
 * About to wait with nothing held, it trims the session once (outside mu:
 * a submit does not wait for the madvise). */
static int sched_start(void *data, mt_session *s, mt_err *err)
{
    srv_sched *sc = data;
    srv_decode_job *done_list = NULL;
    int rows = 0;                       /* 0: stop, and nothing left */
    int trimmed = 0;
    double t_in = mt_now_s(), idle = 0, t_wait;
    pthread_mutex_lock(&sc->mu);
    retire(sc, &done_list);
    publish_stats(sc);
    complete(sc, &done_list);
    for (;;) {
        if (!sc->jobs && !sc->stop && !trimmed) {
            trimmed = 1;                /* nothing held: no sequence in the session */
            pthread_mutex_unlock(&sc->mu);
            mt_session_trim(s, SRV_SESSION_TRIM_MIN_BYTES, NULL);
            pthread_mutex_lock(&sc->mu);
        }
        t_wait = mt_now_s();
        while (!sc->jobs && !sc->stop)
            pthread_cond_wait(&sc->cv, &sc->mu);
        idle += mt_now_s() - t_wait;
        if (!sc->jobs)
            break;                      /* stop, and nothing left */
        poll_gone(sc);
        drop(sc, &done_list);
        admit(sc, &done_list);
        publish_stats(sc);
        complete(sc, &done_list);
        if (sc->n_active > 0) {
            rows = mt_session_rows_used(s);
            break;
        }
        if (sc->jobs) {                 /* waiting for rows that only a timeout frees: look again shortly */
            struct timespec t = mt_abstime_after_ms(IDLE_WAIT_MS);
            t_wait = mt_now_s();
            pthread_cond_timedwait(&sc->cv, &sc->mu, &t);
            idle += mt_now_s() - t_wait;
        }
    }
    pthread_mutex_unlock(&sc->mu);
    double t_out = mt_now_s();
    srv_metrics_sched_time(sc->t_step > 0 ? t_in - sc->t_step : 0, t_out - t_in - idle, idle);
    sc->t_step = rows ? t_out : 0;
    if (rows == 0)
        return 0;                       /* the loop ends */
    srv_metrics_batch_step(rows);       /* the step about to run */
    return 1;
}

/* The scheduler thread: the engine's decode loop over the queue. */
static void *sched_main(void *arg)
{
    srv_sched *sc = arg;
    /* below the HTTP threads, in SCHED_OTHER (started from a real-time HTTP
     * thread it inherited SCHED_RR: --http-sched rr); failing, it runs at
     * their priority */
    if (sc->p.nice > 0)
        mt_thread_nice(sc->p.nice);
    else
        mt_thread_rt(0);
    mt_decode_feed feed = { .start = sched_start, .finished = sched_finished, .data = sc };
    mt_decode_run(sc->s, &feed, NULL);  /* returns at stop, once everything held is over */
    return NULL;
}

srv_sched *srv_sched_new(const mt_model *model, const mt_session_params *sparams, const srv_sched_params *p,
                         mt_err *err)
{
    srv_sched *sc = calloc(1, sizeof *sc);
    if (!sc) {
        mt_err_set(err, MT_ERR_NOMEM, "scheduler: out of memory");
        return NULL;
    }
    pthread_mutex_init(&sc->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sc->cv, &ca);
    pthread_condattr_destroy(&ca);
    sc->p = *p;
    sc->rows = sparams->max_batch;
    sc->bg_rows = sc->rows / SRV_SCHED_BACKGROUND_SHARE > 1 ? sc->rows / SRV_SCHED_BACKGROUND_SHARE : 1;
    if (mt_session_new(model, sparams, &sc->s, err) != MT_OK)
        goto fail;
    if (!(sc->active = calloc((size_t)sc->rows, sizeof *sc->active))) {
        mt_err_set(err, MT_ERR_NOMEM, "scheduler: out of memory");
        goto fail;
    }
    if (pthread_create(&sc->tid, NULL, sched_main, sc) != 0) {
        mt_err_set(err, MT_ERR_NOMEM, "scheduler: cannot start its thread");
        goto fail;
    }
    sc->started = 1;
    return sc;
fail:
    srv_sched_free(sc);
    return NULL;
}

void srv_sched_free(srv_sched *sc)
{
    if (!sc)
        return;
    if (sc->started) {
        pthread_mutex_lock(&sc->mu);
        sc->stop = 1;
        pthread_cond_signal(&sc->cv);
        pthread_mutex_unlock(&sc->mu);
        pthread_join(sc->tid, NULL);
    }
    while (sc->turn)                    /* emptied by drops, not yet visited */
        client_drop(sc, sc->turn);
    mt_session_free(sc->s);
    free(sc->active);
    pthread_cond_destroy(&sc->cv);
    pthread_mutex_destroy(&sc->mu);
    free(sc);
}

static int sched_submit(void *self, srv_decode_job *job)
{
    srv_sched *sc = self;
    if (job->n <= 0) {
        srv_decode_job_finish(job);
        job->done(job);
        return 0;
    }
    pthread_mutex_lock(&sc->mu);
    if (sc->stop || sc->n_jobs >= sc->p.max_jobs) {
        pthread_mutex_unlock(&sc->mu);
        return -1;
    }
    job->remaining = job->n;
    job->t_submit = mt_now_s();
    if (enqueue(sc, job)) {
        pthread_mutex_unlock(&sc->mu);
        return -1;
    }
    job->next = sc->jobs;
    sc->jobs = job;
    sc->n_jobs++;
    atomic_fetch_add(&sc->st_waiting, job->n);
    atomic_fetch_add(&sc->st_jobs_waiting, 1);
    pthread_cond_signal(&sc->cv);
    pthread_mutex_unlock(&sc->mu);
    return 0;
}

srv_decoder srv_sched_decoder(srv_sched *sc)
{
    return (srv_decoder){ .submit = sched_submit, .self = sc };
}

void srv_sched_stats(srv_sched *sc, srv_sched_counts *c)
{
    c->active = atomic_load(&sc->st_active);
    c->waiting = atomic_load(&sc->st_waiting);
    c->rows = atomic_load(&sc->st_rows);
    c->jobs_started = atomic_load(&sc->st_jobs_started);
    c->jobs_waiting = atomic_load(&sc->st_jobs_waiting);
}
