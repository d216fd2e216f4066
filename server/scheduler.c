/* scheduler: the continuous-batching scheduler (scheduler.h). */
#include "scheduler.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"

#define GONE_POLL_MS 20         /* how often a waiting request checks its client */

typedef struct {
    pthread_cond_t   cv;        /* signalled when remaining reaches 0 */
    int              remaining; /* items not finished (under sc->mu) */
    _Atomic int      cancelled;
    mt_decode_params dp;
} job;

struct srv_sched {
    pthread_mutex_t mu;
    pthread_cond_t  cv;         /* work arrived, or stop */
    pthread_t       tid;
    int             started, stop;
    mt_session     *s;
    int             rows;
    srv_seq_req    *head, *tail;    /* waiting for rows, FIFO */
    srv_seq_req   **active;         /* [rows]: decoding (scheduler thread only) */
    int             n_active;
    _Atomic int     st_active, st_waiting, st_rows;
};

/* Under mu: item done; wake its request when it was the last. */
static void finish(srv_seq_req *it)
{
    job *j = it->job;
    if (--j->remaining == 0)
        pthread_cond_signal(&j->cv);
}

static int cancelled(const srv_seq_req *it)
{
    return atomic_load(&((job *)it->job)->cancelled);
}

static void publish_stats(srv_sched *sc, int waiting_delta)
{
    atomic_store(&sc->st_active, sc->n_active);
    atomic_fetch_add(&sc->st_waiting, waiting_delta);
    atomic_store(&sc->st_rows, mt_session_rows_used(sc->s));
}

/* Under mu: drop the active sequences of requests that went away. */
static void drop_cancelled(srv_sched *sc)
{
    for (int i = 0; i < sc->n_active;) {
        srv_seq_req *it = sc->active[i];
        if (!cancelled(it)) {
            i++;
            continue;
        }
        mt_seq_cancel(sc->s, it->seq);
        srv_metrics_cancelled(1);
        it->status = mt_err_set(&it->err, MT_ERR_BUSY, "cancelled: the client went away");
        finish(it);
        sc->active[i] = sc->active[--sc->n_active];
    }
}

/* Under mu (released while a source is encoded): FIFO admission while rows are free. */
static void admit(srv_sched *sc)
{
    while (sc->head) {
        srv_seq_req *it = sc->head;
        job *j = it->job;
        if (!cancelled(it) && j->dp.beam_size <= sc->rows && !mt_session_can_start(sc->s, j->dp.beam_size))
            break;                      /* the head waits for rows; nobody overtakes it */
        sc->head = it->next;
        if (!sc->head)
            sc->tail = NULL;
        publish_stats(sc, -1);
        if (cancelled(it)) {
            srv_metrics_cancelled(1);
            it->status = mt_err_set(&it->err, MT_ERR_BUSY, "cancelled: the client went away");
            finish(it);
            continue;
        }
        pthread_mutex_unlock(&sc->mu);
        mt_status st = mt_seq_start(sc->s, it->src, it->n_src, &j->dp, &it->seq, &it->err);
        pthread_mutex_lock(&sc->mu);
        if (st != MT_OK) {
            it->status = st;
            finish(it);
        } else {
            sc->active[sc->n_active++] = it;
        }
    }
    publish_stats(sc, 0);
}

/* Under mu: hand the finished sequences their hypotheses. */
static void retire(srv_sched *sc)
{
    for (int i = 0; i < sc->n_active;) {
        srv_seq_req *it = sc->active[i];
        if (!mt_seq_finished(sc->s, it->seq)) {
            i++;
            continue;
        }
        it->status = mt_seq_take(sc->s, it->seq, it->hyps, &it->err);
        finish(it);
        sc->active[i] = sc->active[--sc->n_active];
    }
    publish_stats(sc, 0);
}

static void *sched_main(void *arg)
{
    srv_sched *sc = arg;
    pthread_mutex_lock(&sc->mu);
    for (;;) {
        while (!sc->head && sc->n_active == 0 && !sc->stop)
            pthread_cond_wait(&sc->cv, &sc->mu);
        if (!sc->head && sc->n_active == 0)
            break;                      /* stop, and nothing left */
        drop_cancelled(sc);
        admit(sc);
        if (sc->n_active == 0)
            continue;
        int rows = mt_session_rows_used(sc->s);
        pthread_mutex_unlock(&sc->mu);
        mt_step(sc->s);                 /* the only compute: no lock held */
        srv_metrics_batch_step(rows);
        pthread_mutex_lock(&sc->mu);
        retire(sc);
    }
    pthread_mutex_unlock(&sc->mu);
    return NULL;
}

srv_sched *srv_sched_new(const mt_model *model, const mt_session_params *params, mt_err *err)
{
    srv_sched *sc = calloc(1, sizeof *sc);
    if (!sc) {
        mt_err_set(err, MT_ERR_NOMEM, "scheduler: out of memory");
        return NULL;
    }
    pthread_mutex_init(&sc->mu, NULL);
    pthread_cond_init(&sc->cv, NULL);
    sc->rows = params->max_batch;
    if (mt_session_new(model, params, &sc->s, err) != MT_OK ||
        !(sc->active = calloc((size_t)sc->rows, sizeof *sc->active))) {
        if (sc->s)
            mt_err_set(err, MT_ERR_NOMEM, "scheduler: out of memory");
        srv_sched_free(sc);
        return NULL;
    }
    if (pthread_create(&sc->tid, NULL, sched_main, sc) != 0) {
        mt_err_set(err, MT_ERR_NOMEM, "scheduler: cannot start its thread");
        srv_sched_free(sc);
        return NULL;
    }
    sc->started = 1;
    return sc;
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
    mt_session_free(sc->s);
    free(sc->active);
    pthread_cond_destroy(&sc->cv);
    pthread_mutex_destroy(&sc->mu);
    free(sc);
}

static void deadline_in(struct timespec *t, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, t);
    t->tv_nsec += (long)ms * 1000000L;
    t->tv_sec += t->tv_nsec / 1000000000L;
    t->tv_nsec %= 1000000000L;
}

mt_status srv_sched_run(srv_sched *sc, srv_seq_req *items, int n, const mt_decode_params *dp,
                        int (*gone)(void *ctx), void *ctx, int *was_cancelled, mt_err *err)
{
    *was_cancelled = 0;
    if (n <= 0)
        return MT_OK;
    job j = { .remaining = n, .dp = *dp };
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j.cv, &ca);
    pthread_condattr_destroy(&ca);
    for (int i = 0; i < n; i++) {
        srv_seq_req *it = &items[i];
        memset(it->hyps, 0, sizeof *it->hyps * (size_t)dp->n_best);
        it->status = MT_OK;
        it->seq = -1;
        it->job = &j;
        it->next = i + 1 < n ? &items[i + 1] : NULL;
    }
    pthread_mutex_lock(&sc->mu);
    if (sc->tail)
        sc->tail->next = &items[0];
    else
        sc->head = &items[0];
    sc->tail = &items[n - 1];
    atomic_fetch_add(&sc->st_waiting, n);
    pthread_cond_signal(&sc->cv);
    while (j.remaining > 0) {
        struct timespec t;
        deadline_in(&t, GONE_POLL_MS);
        pthread_cond_timedwait(&j.cv, &sc->mu, &t);
        if (j.remaining > 0 && gone && !atomic_load(&j.cancelled)) {
            pthread_mutex_unlock(&sc->mu);
            int g = gone(ctx);
            pthread_mutex_lock(&sc->mu);
            if (g) {                    /* the scheduler drops our sentences between two steps */
                atomic_store(&j.cancelled, 1);
                pthread_cond_signal(&sc->cv);
            }
        }
    }
    pthread_mutex_unlock(&sc->mu);
    pthread_cond_destroy(&j.cv);
    *was_cancelled = atomic_load(&j.cancelled);
    for (int i = 0; i < n; i++)
        if (items[i].status != MT_OK) {
            if (err)
                *err = items[i].err;
            return items[i].status;
        }
    return MT_OK;
}

void srv_sched_stats(srv_sched *sc, int *active, int *waiting, int *rows)
{
    *active = atomic_load(&sc->st_active);
    *waiting = atomic_load(&sc->st_waiting);
    *rows = atomic_load(&sc->st_rows);
}
