/* file_job: documents in batches through the decoders, one runner thread (file_job.h). */
#include "file_job.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "util/clock.h"
#include "util/thread_prio.h"

enum { BATCH_BYTES = 8192 };    /* a batch's source text stops growing past this */

typedef struct job job;
struct job {
    char           id[SRV_FILE_ID_LEN];
    srv_file_route r;
    srv_doc       *doc;         /* NULL once rendered or given up */
    char          *data;        /* the source file: doc points into it */
    srv_file_info  info;
    char          *result;      /* done: the finished file */
    /* the batch in flight: units [b_first, b_first + b_n) */
    srv_tr        *tr;
    const char   **texts;       /* [batch_units] */
    int            b_first, b_n;
    int            in_flight;   /* submitted, done() not yet called */
    int            ended;       /* finished: on_end still to be called */
    int            back;        /* done() was called: the runner takes the results */
    _Atomic int    cancel;      /* asked for: the runner ends the job (the decoder polls it) */
    int            lost;        /* another replica holds it now (srv_files_forget): found no more, freed
                                   once its batch is back */
    int            deleted;     /* finished and deleted (srv_files_cancel): found no more at once, freed on
                                   the runner's next turn (a GET right after the DELETE must not find it) */
    int            done_floor;  /* the progress shown never goes below this (a job taken over) */
    int            pub_any, pub_done;   /* srv_files_params.publish: what was published last, when */
    int            pub_final;   /* its end was published (or tried: Redis down): shown as ended only then */
    srv_file_state pub_state;
    double         pub_at;
    srv_files     *owner;
    job           *next;
};

struct srv_files {
    srv_files_params p;
    pthread_mutex_t  mu;
    pthread_cond_t   cv;
    pthread_t        thread;
    int              stop;
    job             *jobs;
    int              n_jobs;
    size_t           stored;    /* bytes of finished files */
};

srv_files_params srv_files_default_params(void)
{
    return (srv_files_params){ .max_jobs = 16, .max_store = 256u << 20, .ttl_s = 600, .batch_units = 16 };
}

const char *srv_file_state_name(srv_file_state s)
{
    static const char *const names[] = { "running", "done", "failed", "cancelled" };
    return s >= 0 && s <= SRV_FILE_CANCELLED ? names[s] : "?";
}

static job *find(srv_files *f, const char *id)
{
    for (job *j = f->jobs; j; j = j->next)
        if (!j->lost && !j->deleted && !strcmp(j->id, id))
            return j;
    return NULL;
}

/* j's info with its progress never below the floor (what is published). */
static srv_file_info progress(const job *j)
{
    srv_file_info i = j->info;
    i.done = i.done > j->done_floor ? i.done : j->done_floor;
    i.done = i.done < i.total ? i.done : i.total;
    return i;
}

/* j's info as shown here: with publish, its end only once that was
 * published, so that a client told "done" here finds the file on every
 * replica it asks next. */
static srv_file_info shown(const srv_files *f, const job *j)
{
    srv_file_info i = progress(j);
    if (f->p.publish && i.state != SRV_FILE_RUNNING && !j->pub_final)
        i.state = SRV_FILE_RUNNING;
    return i;
}

/* Under the lock: j is another replica's now: it ends here and is never found again. */
static void lose(srv_files *f, job *j)
{
    j->lost = 1;
    atomic_store(&j->cancel, 1);
    j->r.on_end = NULL;
    j->r.gone = NULL;
    if (j->info.state != SRV_FILE_RUNNING)
        j->info.expires = 0;
    pthread_cond_broadcast(&f->cv);
}

static void job_free(job *j)
{
    srv_tr_free(j->tr);
    srv_glossary_free(j->r.glossary);
    srv_doc_free(j->doc);
    free(j->data);
    free(j->result);
    free(j->texts);
    free(j);
}

/* The job is over: its document and source go, whoever waits hears of it. */
static void finish(srv_files *f, job *j, srv_file_state state)
{
    j->info.state = state;
    j->info.t_end = mt_now_s();
    j->info.expires = j->lost ? 0 : j->info.t_end + f->p.ttl_s;
    srv_doc_free(j->doc);
    j->doc = NULL;
    free(j->data);
    j->data = NULL;
    j->r.gone = NULL;
    j->ended = 1;               /* the runner calls on_end, without the lock (tell_ended) */
}

/* on_end of the jobs that ended, each called without the lock: it resumes an
 * HTTP connection, which takes libmicrohttpd's locks, which an HTTP thread
 * may hold while it detaches a job. */
static void tell_ended(srv_files *f)
{
    for (job *j = f->jobs; j;) {
        if (!j->ended || !j->r.on_end) {
            j->ended = 0;
            j = j->next;
            continue;
        }
        void (*fn)(void *) = j->r.on_end;
        void *ctx = j->r.end_ctx;
        j->r.on_end = NULL;
        j->ended = 0;
        pthread_mutex_unlock(&f->mu);
        fn(ctx);
        pthread_mutex_lock(&f->mu);
        j = f->jobs;            /* the list may have grown meanwhile: again from the head */
    }
}

static void fail(srv_files *f, job *j, const mt_err *err)
{
    j->info.err = *err;
    finish(f, j, SRV_FILE_FAILED);
}

/* On the decoder's thread: the batch is back. */
static void batch_back(srv_decode_job *dj)
{
    job *j = dj->ctx;
    srv_files *f = j->owner;
    pthread_mutex_lock(&f->mu);
    j->back = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Polled by the decoder while the batch waits or decodes: the job was cancelled. */
static int batch_gone(void *ctx)
{
    const job *j = ctx;
    return atomic_load(&j->cancel);
}

/* The next batch of j, tokenized and submitted (lock released around submit:
 * a decoder may call done() inside it).  0, or -1 with the job failed. */
static int submit_batch(srv_files *f, job *j)
{
    int total = j->info.total, first = j->info.done, n = 0;
    size_t bytes = 0;
    while (first + n < total && n < f->p.batch_units && (n == 0 || bytes < BATCH_BYTES)) {
        j->texts[n] = srv_doc_unit(j->doc, first + n);
        bytes += strlen(j->texts[n]);
        n++;
    }
    srv_tr_params p = j->r.p;
    p.dp.alignment.enabled = 1;        /* the documents put tags and runs back by the word links */
    p.prefix = NULL;
    p.glossary = j->r.glossary;
    mt_err err = { 0 };
    mt_status st = srv_tr_new(&j->r.tm, j->texts, n, &p, &j->tr, &err);
    if (st != MT_OK) {
        mt_err e = err;
        snprintf(e.msg, sizeof e.msg, "units %d-%d: %.400s", first + 1, first + n, err.msg);
        fail(f, j, &e);
        return -1;
    }
    srv_decode_job *dj = srv_tr_job(j->tr);
    dj->done = batch_back;
    dj->ctx = j;
    dj->abort = (srv_abort){ .gone = batch_gone, .ctx = j };
    dj->background = 1;         /* interactive requests first (scheduler.h) */
    j->b_first = first;
    j->b_n = n;
    j->in_flight = 1;
    j->back = 0;
    srv_decoder dec = j->r.decoder;
    pthread_mutex_unlock(&f->mu);
    int refused = dec.submit(dec.self, dj);
    pthread_mutex_lock(&f->mu);
    if (refused) {              /* the queue is full: the next turn tries again */
        j->in_flight = 0;
        srv_tr_free(j->tr);
        j->tr = NULL;
    }
    return 0;
}

/* The batch is back: its translations into the document. */
static void take_batch(srv_files *f, job *j)
{
    srv_decode_job *dj = srv_tr_job(j->tr);
    j->in_flight = j->back = 0;
    mt_err err = dj->err;
    int cancelled = dj->cancelled, timed_out = dj->timed_out;
    if (dj->status != MT_OK || cancelled || timed_out) {
        srv_tr_free(j->tr);             /* dj with it */
        j->tr = NULL;
        if (timed_out && !cancelled)    /* waited past the queue timeout under load: again next turn */
            return;
        if (cancelled) {                /* dropped by the decoder: the job was cancelled */
            mt_err_set(&j->info.err, MT_ERR_ABORTED, "cancelled");
            finish(f, j, SRV_FILE_CANCELLED);
        } else {
            fail(f, j, &err);
        }
        return;
    }
    srv_tr_result *res = calloc((size_t)j->b_n, sizeof *res);
    mt_status st = res ? srv_tr_finish(j->tr, res, &err) : mt_err_set(&err, MT_ERR_NOMEM, "out of memory");
    for (int i = 0; st == MT_OK && i < j->b_n; i++)
        st = srv_doc_set(j->doc, j->b_first + i, res[i].alts[0], strlen(res[i].alts[0]), res[i].words,
                         res[i].n_words, &err);
    if (res)
        srv_tr_results_free(res, j->b_n);
    free(res);
    srv_tr_free(j->tr);
    j->tr = NULL;
    if (st != MT_OK) {
        fail(f, j, &err);
        return;
    }
    j->info.done += j->b_n;
}

/* Every unit is in: the file is rendered (lock released: the job is the runner's). */
static void render(srv_files *f, job *j)
{
    char *out = NULL;
    size_t len = 0;
    mt_err err = { 0 };
    pthread_mutex_unlock(&f->mu);
    mt_status st = srv_doc_render(j->doc, &out, &len, &err);
    pthread_mutex_lock(&f->mu);
    if (st != MT_OK) {
        fail(f, j, &err);
        return;
    }
    if (f->stored + len > f->p.max_store) {
        free(out);
        mt_err_set(&err, MT_ERR_BUSY, "the server holds %zu bytes of finished files, its limit is %zu; retry later",
                   f->stored, f->p.max_store);
        fail(f, j, &err);
        return;
    }
    j->result = out;
    j->info.bytes = len;
    f->stored += len;
    finish(f, j, SRV_FILE_DONE);
}

/* One turn over a running job. */
static void step(srv_files *f, job *j)
{
    if (j->r.gone && j->r.gone(j->r.gone_ctx))
        atomic_store(&j->cancel, 1);        /* also drops the batch in flight (batch_gone) */
    if (j->back)
        take_batch(f, j);
    if (j->info.state != SRV_FILE_RUNNING || j->in_flight)
        return;
    if (atomic_load(&j->cancel)) {
        mt_err_set(&j->info.err, MT_ERR_ABORTED, "cancelled");
        finish(f, j, SRV_FILE_CANCELLED);
        return;
    }
    if (j->info.done < j->info.total)
        submit_batch(f, j);
    else
        render(f, j);
}

static void expire(srv_files *f, double now)
{
    for (job **pj = &f->jobs; *pj;) {
        job *j = *pj;
        if (j->info.state != SRV_FILE_RUNNING && !j->in_flight && (now >= j->info.expires || j->lost) &&
            (j->pub_final || j->lost || !f->p.publish)) {
            *pj = j->next;
            f->stored -= j->info.state == SRV_FILE_DONE ? j->info.bytes : 0;
            f->n_jobs--;
            job_free(j);
        } else {
            pj = &j->next;
        }
    }
}

/* The jobs whose state changed since they were last published (progress at
 * most twice a second; a running job every 2 s all the same: a Redis that
 * restarted empty has it again, and it does not expire however long it
 * runs), each published without the lock: it may wait on Redis.  Only the
 * runner frees a job, so j and its result stay. */
static void publish(srv_files *f)
{
    double now = mt_now_s();
    for (job *j = f->jobs; j && f->p.publish; j = j->next) {
        if (j->lost)
            continue;
        int running = j->info.state == SRV_FILE_RUNNING;
        int changed = !j->pub_any || j->info.state != j->pub_state ||
                      (j->info.done != j->pub_done && now - j->pub_at >= 0.5) || (running && now - j->pub_at >= 2.0);
        if (!changed)
            continue;
        j->pub_any = 1;
        j->pub_state = j->info.state;
        j->pub_done = j->info.done;
        j->pub_at = now;
        srv_file_info info = progress(j);
        const char *result = j->info.state == SRV_FILE_DONE ? j->result : NULL;
        pthread_mutex_unlock(&f->mu);
        int rc = f->p.publish(f->p.publish_ctx, j->id, &info, result);
        pthread_mutex_lock(&f->mu);
        j->pub_final |= info.state != SRV_FILE_RUNNING;     /* tried: what is known is shown, shared or not */
        if (rc < 0)
            j->pub_any = 0;     /* Redis did not take it: again next turn (its client skips at once while down) */
        else if (rc > 0)
            lose(f, j);         /* another replica took it over: its result is that one's */
    }
}

static void *runner(void *arg)
{
    mt_thread_rt(0);    /* started from a real-time HTTP thread (--http-sched rr): back in SCHED_OTHER */
    srv_files *f = arg;
    pthread_mutex_lock(&f->mu);
    while (!f->stop) {
        for (job *j = f->jobs; j && !f->stop; j = j->next)
            if (j->info.state == SRV_FILE_RUNNING)
                step(f, j);
        publish(f);             /* an end first published, then told: a waiting client's next request */
        tell_ended(f);          /* may go to any replica */
        expire(f, mt_now_s());
        int busy = 0;
        for (job *j = f->jobs; j; j = j->next)
            busy |= j->info.state == SRV_FILE_RUNNING && !j->in_flight;
        if (busy && !f->stop)
            continue;           /* a refused submit or a new job: another turn at once... */
        struct timespec ts;     /* ...else sleep until a batch is back, a job comes, or 100 ms
                                   pass (gone() is polled, finished files expire) */
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&f->cv, &f->mu, &ts);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

srv_files *srv_files_new(const srv_files_params *p, mt_err *err)
{
    srv_files *f = calloc(1, sizeof *f);
    if (!f) {
        mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    f->p = p ? *p : srv_files_default_params();
    if (f->p.batch_units < 1)
        f->p.batch_units = 1;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    if (pthread_create(&f->thread, NULL, runner, f) != 0) {
        pthread_mutex_destroy(&f->mu);
        pthread_cond_destroy(&f->cv);
        free(f);
        mt_err_set(err, MT_ERR_NOMEM, "cannot start the file runner thread");
        return NULL;
    }
    return f;
}

void srv_files_free(srv_files *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    for (job *j = f->jobs; j; j = j->next) {
        atomic_store(&j->cancel, 1);
        j->r.on_end = NULL;
        j->r.gone = NULL;
    }
    /* batches in flight come back (the decoders are stopped after this, by
     * the caller, or drain them): wait for them */
    for (;;) {
        int flying = 0;
        for (job *j = f->jobs; j; j = j->next)
            flying |= j->in_flight && !j->back;
        if (!flying)
            break;
        pthread_cond_wait(&f->cv, &f->mu);
    }
    f->stop = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->thread, NULL);
    while (f->jobs) {
        job *j = f->jobs;
        f->jobs = j->next;
        job_free(j);
    }
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
}

/* A new id: 128 random bits in hex (a result's URL is its only key). */
int srv_files_random_id(char id[SRV_FILE_ID_LEN])
{
    unsigned char r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return -1;
    for (int i = 0; i < 16; i++)
        snprintf(id + 2 * i, 3, "%02x", r[i]);
    return 0;
}

mt_status srv_files_start(srv_files *f, srv_doc *doc, char *data, const char *name, const srv_file_route *r,
                          char id[SRV_FILE_ID_LEN], mt_err *err)
{
    job *j = calloc(1, sizeof *j);
    if (j && r->id[0])
        memcpy(j->id, r->id, SRV_FILE_ID_LEN);
    if (!j || !(j->texts = calloc((size_t)f->p.batch_units, sizeof *j->texts)) ||
        (!r->id[0] && srv_files_random_id(j->id))) {
        if (j)
            free(j->texts);
        free(j);
        srv_doc_free(doc);
        srv_glossary_free(r->glossary);
        free(data);
        return mt_err_set(err, MT_ERR_NOMEM, "out of memory");
    }
    j->doc = doc;
    j->data = data;
    j->owner = f;
    j->r = *r;
    j->info.state = SRV_FILE_RUNNING;
    j->info.total = srv_doc_units(doc);
    j->info.kind = srv_doc_kind_of(doc);
    j->info.t_start = r->t_start > 0 ? r->t_start : mt_now_s();
    j->done_floor = r->done_floor;
    memcpy(j->info.secret, r->secret, sizeof j->info.secret);
    j->info.chars = r->chars;
    snprintf(j->info.name, sizeof j->info.name, "%s", name && name[0] ? name : "file");
    pthread_mutex_lock(&f->mu);
    if (f->n_jobs >= f->p.max_jobs || find(f, j->id)) {
        int held = f->p.max_jobs, dup = f->n_jobs < held;
        pthread_mutex_unlock(&f->mu);
        job_free(j);
        if (dup)
            return mt_err_set(err, MT_ERR_INPUT, "file job %s is held here already", r->id);
        return mt_err_set(err, MT_ERR_BUSY, "the server holds %d file jobs, its limit; retry later", held);
    }
    f->n_jobs++;                /* its place, held while it is published */
    if (f->p.publish) {         /* before the caller answers, so that another replica asked next finds it;
                                   not yet in the list: nothing the runner publishes can come first */
        j->pub_any = 1;
        j->pub_state = SRV_FILE_RUNNING;
        j->pub_at = mt_now_s();
        pthread_mutex_unlock(&f->mu);
        srv_file_info first = progress(j);
        if (f->p.publish(f->p.publish_ctx, j->id, &first, NULL) != 0)
            j->pub_any = 0;     /* the runner tries again (and learns then if it was lost) */
        pthread_mutex_lock(&f->mu);
    }
    j->next = f->jobs;
    f->jobs = j;
    memcpy(id, j->id, SRV_FILE_ID_LEN);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return MT_OK;
}

int srv_files_info(srv_files *f, const char *id, srv_file_info *out)
{
    pthread_mutex_lock(&f->mu);
    job *j = find(f, id);
    if (j)
        *out = shown(f, j);
    pthread_mutex_unlock(&f->mu);
    return j ? 0 : -1;
}

mt_status srv_files_result(srv_files *f, const char *id, char **out, size_t *len, srv_file_info *info, mt_err *err)
{
    *out = NULL;
    *len = 0;
    pthread_mutex_lock(&f->mu);
    job *j = find(f, id);
    mt_status st = MT_OK;
    if (!j) {
        st = mt_err_set(err, MT_ERR_INPUT, "no file job %s (unknown, or deleted after it expired)", id);
    } else {
        *info = shown(f, j);
        if (j->info.state != SRV_FILE_DONE)
            st = mt_err_set(err, MT_ERR_INPUT, "file job %s is %s", id, srv_file_state_name(j->info.state));
        else if (!(*out = malloc(j->info.bytes + 1)))
            st = mt_err_set(err, MT_ERR_NOMEM, "out of memory");
        else {
            memcpy(*out, j->result, j->info.bytes);
            (*out)[j->info.bytes] = 0;
            *len = j->info.bytes;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return st;
}

int srv_files_cancel(srv_files *f, const char *id)
{
    pthread_mutex_lock(&f->mu);
    job *j = find(f, id);
    if (j && j->info.state == SRV_FILE_RUNNING)
        atomic_store(&j->cancel, 1);
    else if (j) {
        j->info.expires = 0;            /* finished: freed on the runner's next turn */
        j->deleted = 1;
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return j ? 0 : -1;
}

void srv_files_detach(srv_files *f, const char *id, int cancel)
{
    pthread_mutex_lock(&f->mu);
    job *j = find(f, id);
    if (j) {
        j->r.on_end = NULL;
        j->r.gone = NULL;
        if (cancel)
            atomic_store(&j->cancel, 1);
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void srv_files_forget(srv_files *f, const char *id)
{
    pthread_mutex_lock(&f->mu);
    job *j = find(f, id);
    if (j)
        lose(f, j);
    pthread_mutex_unlock(&f->mu);
}

int srv_files_room(srv_files *f)
{
    pthread_mutex_lock(&f->mu);
    int room = f->p.max_jobs - f->n_jobs;
    pthread_mutex_unlock(&f->mu);
    return room > 0 ? room : 0;
}

void srv_files_usage(srv_files *f, int *held, int *running, size_t *bytes)
{
    pthread_mutex_lock(&f->mu);
    *held = f->n_jobs;
    *running = 0;
    for (job *j = f->jobs; j; j = j->next)
        *running += j->info.state == SRV_FILE_RUNNING;
    *bytes = f->stored;
    pthread_mutex_unlock(&f->mu);
}
