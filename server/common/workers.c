/* workers: threads behind a bounded queue (workers.h). */
#include "workers.h"

#include <pthread.h>
#include <stdlib.h>

#include "util/thread_prio.h"

/* ---- workers ------------------------------------------------------------------ */

typedef struct {
    srv_job_fn fn, after;
    void      *arg;
} job;

struct srv_workers {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    pthread_t      *tids;
    int             threads, started;
    int             nice;            /* each thread's, set as it starts */
    job            *ring;            /* capacity threads + queue */
    int             cap, head, count;
    int             busy;
    int             stop;
};

static void *worker_main(void *arg)
{
    srv_workers *w = arg;
    /* below the HTTP threads, in SCHED_OTHER (started from a real-time HTTP
     * thread it inherited SCHED_RR: --http-sched rr); failing, it runs at
     * their priority */
    if (w->nice > 0)
        mt_thread_nice(w->nice);
    else
        mt_thread_rt(0);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->count == 0 && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->count == 0)
            break;
        job j = w->ring[w->head];
        w->head = (w->head + 1) % w->cap;
        w->count--;
        w->busy++;
        pthread_mutex_unlock(&w->mu);
        j.fn(j.arg);
        pthread_mutex_lock(&w->mu);
        w->busy--;
        if (j.after) {
            pthread_mutex_unlock(&w->mu);
            j.after(j.arg);
            pthread_mutex_lock(&w->mu);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

srv_workers *srv_workers_new(int threads, int queue, int nice)
{
    srv_workers *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->threads = threads > 0 ? threads : 1;
    w->nice = nice;
    w->cap = w->threads + (queue > 0 ? queue : 0);
    w->ring = calloc((size_t)w->cap, sizeof *w->ring);
    w->tids = calloc((size_t)w->threads, sizeof *w->tids);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (!w->ring || !w->tids)
        goto fail;
    for (; w->started < w->threads; w->started++)
        if (pthread_create(&w->tids[w->started], NULL, worker_main, w) != 0)
            goto fail;
    return w;
fail:
    srv_workers_free(w);                /* stops and joins the threads started */
    return NULL;
}

void srv_workers_free(srv_workers *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->started; i++)
        pthread_join(w->tids[i], NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->ring);
    free(w->tids);
    free(w);
}

/* Outstanding = queued + running; a free thread or a free queue place admits. */
int srv_workers_submit(srv_workers *w, srv_job_fn fn, srv_job_fn after, void *arg)
{
    pthread_mutex_lock(&w->mu);
    if (w->stop || w->count + w->busy >= w->cap) {
        pthread_mutex_unlock(&w->mu);
        return -1;
    }
    w->ring[(w->head + w->count) % w->cap] = (job){ fn, after, arg };
    w->count++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void srv_workers_stats(srv_workers *w, int *busy, int *queued, int *threads)
{
    pthread_mutex_lock(&w->mu);
    *busy = w->busy;
    *queued = w->count;
    *threads = w->threads;
    pthread_mutex_unlock(&w->mu);
}
