/* file_takeover: asynchronous file jobs taken over when their replica dies (file_takeover.h). */
#include "file_takeover.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

#include "file_lease.h"
#include "file_prep.h"
#include "server.h"
#include "util/clock.h"
#include "util/thread_prio.h"

#define CLAIM_MAX 4             /* jobs one sweep claims: the others' sweeps share the rest */

struct srv_takeover {
    srv_server     *srv;
    srv_file_share *share;
    srv_lease_ctx   c;
    pthread_mutex_t mu;
    pthread_cond_t  wake;       /* stop (CLOCK_MONOTONIC) */
    pthread_t       thread;
    int             started, stop, stopping, released;
    char          (*held)[SRV_FILE_ID_LEN];   /* the leased jobs this replica runs (under mu) */
    int             n_held, cap;
    double          quiet_until;    /* Redis did not answer: no claim before this */
    _Atomic long    taken, lost, refused;
};

srv_takeover *srv_takeover_new(srv_server *srv, srv_file_share *share, int lease_ms, size_t budget)
{
    srv_takeover *t = calloc(1, sizeof *t);
    if (!t || srv_files_random_id(t->c.me)) {
        free(t);
        return NULL;
    }
    t->srv = srv;
    t->share = share;
    char me[SRV_FILE_ID_LEN];
    memcpy(me, t->c.me, sizeof me);
    t->c = (srv_lease_ctx){ .r = share->r, .lease_ms = lease_ms > 0 ? lease_ms : 1, .ttl_s = share->ttl_s,
                            .budget = budget };
    memcpy(t->c.me, me, sizeof me);
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->wake, &ca);
    pthread_condattr_destroy(&ca);
    return t;
}

/* ---- the jobs held here ------------------------------------------------------------ */

static int held_find(const srv_takeover *t, const char *id)
{
    for (int i = 0; i < t->n_held; i++)
        if (!strcmp(t->held[i], id))
            return i;
    return -1;
}

static int held_add(srv_takeover *t, const char *id)
{
    pthread_mutex_lock(&t->mu);
    int ok = 1;
    if (t->n_held == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        void *more = realloc(t->held, (size_t)cap * sizeof *t->held);
        ok = more != NULL;
        if (ok)
            t->held = more, t->cap = cap;
    }
    if (ok)
        memcpy(t->held[t->n_held++], id, SRV_FILE_ID_LEN);
    pthread_mutex_unlock(&t->mu);
    return ok ? 0 : -1;
}

/* 1 when id was held (removed now), 0 when not (another path removed it first). */
static int held_remove(srv_takeover *t, const char *id)
{
    pthread_mutex_lock(&t->mu);
    int i = held_find(t, id);
    if (i >= 0)
        memcpy(t->held[i], t->held[--t->n_held], SRV_FILE_ID_LEN);
    pthread_mutex_unlock(&t->mu);
    return i >= 0;
}

/* A copy of the ids held (malloc'd, *n of them), or NULL. */
static char (*held_copy(srv_takeover *t, int *n))[SRV_FILE_ID_LEN]
{
    pthread_mutex_lock(&t->mu);
    *n = t->n_held;
    char (*ids)[SRV_FILE_ID_LEN] = *n ? malloc((size_t)*n * sizeof *ids) : NULL;
    if (ids)
        memcpy(ids, t->held, (size_t)*n * sizeof *ids);
    else
        *n = 0;
    pthread_mutex_unlock(&t->mu);
    return ids;
}

/* ---- storing a new job ------------------------------------------------------------ */

/* The job's options as JSON (malloc'd), or NULL. */
static char *job_json(const srv_takeover_job *job)
{
    json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:b,s:s,s:I}", "kind", (int)job->kind, "name", job->name, "target",
                          job->target, "source", job->source, "overwrite", job->opt.overwrite, "secret",
                          job->secret ? job->secret : "", "chars", (json_int_t)job->chars);
    json_t *terms = json_object();
    for (int i = 0; o && terms && i < srv_glossary_size(job->terms); i++)
        json_object_set_new(terms, srv_glossary_source(job->terms, i), json_string(srv_glossary_target(job->terms, i)));
    if (o && terms && json_object_size(terms))
        json_object_set(o, "terms", terms);
    json_decref(terms);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

int srv_takeover_store(srv_takeover *t, const srv_takeover_job *job, const char *data, size_t len,
                       char id[SRV_FILE_ID_LEN], srv_response *resp)
{
    char *opts = job_json(job), err[200] = "";
    if (!opts || srv_files_random_id(id)) {
        free(opts);
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    }
    size_t need = len + strlen(opts);
    if (need > t->c.budget) {
        free(opts);
        return srv_fail(resp, SRV_E_BODY_TOO_LARGE, "the file and its options are %zu bytes; an asynchronous file job "
                        "is kept in Redis for the other replicas to take over, which holds at most %zu bytes of "
                        "them in all (--redis-file-mb)", need, t->c.budget);
    }
    long used = 0;
    srv_lease_rc rc = srv_lease_store(&t->c, id, data, len, opts, &used, err, sizeof err);
    free(opts);
    if (rc == SRV_LEASE_OK && held_add(t, id) == 0)
        return 0;
    resp->retry_after = 5;
    if (rc == SRV_LEASE_OK) {
        srv_lease_drop(&t->c, id);
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    }
    if (rc == SRV_LEASE_FULL)
        return srv_fail(resp, SRV_E_QUEUE_FULL, "Redis holds %ld bytes of running file jobs (the budget of all "
                        "replicas is %zu, --redis-file-mb), this one needs %zu; retry later", used, t->c.budget, need);
    return srv_fail(resp, SRV_E_QUEUE_FULL, "file jobs are kept in Redis, which did not take this one (%s); retry "
                    "later", err);
}

void srv_takeover_abandon(srv_takeover *t, const char *id)
{
    held_remove(t, id);
    srv_lease_drop(&t->c, id);
}

/* ---- publishing ------------------------------------------------------------------ */

int srv_takeover_publish(void *ctx, const char *id, const srv_file_info *info, const char *result)
{
    srv_takeover *t = ctx;
    pthread_mutex_lock(&t->mu);
    int leased = held_find(t, id) >= 0, stopping = t->stopping;
    pthread_mutex_unlock(&t->mu);
    if (!leased)
        return srv_file_share_publish(t->share, id, info, result);
    if (stopping)
        return 0;               /* given up: another replica runs it from its source */
    int done = info->state == SRV_FILE_DONE;
    char *state = srv_file_share_state(info);
    if (!state || (done && !result)) {
        free(state);
        return -1;
    }
    srv_lease_rc rc = info->state == SRV_FILE_RUNNING ? srv_lease_hold(&t->c, id, state)
                                                      : srv_lease_finish(&t->c, id, state, result, info->bytes, done);
    free(state);
    if (rc == SRV_LEASE_DOWN)
        return -1;              /* again next turn */
    int was_held = 1;
    if (rc == SRV_LEASE_LOST || rc == SRV_LEASE_GONE || info->state != SRV_FILE_RUNNING)
        was_held = held_remove(t, id);
    if (rc != SRV_LEASE_LOST)
        return 0;
    if (!was_held)
        return 1;               /* the renewing thread found it lost first: counted there */
    atomic_fetch_add(&t->lost, 1);
    if (done)
        atomic_fetch_add(&t->refused, 1);
    fprintf(stderr, "mtserve: file job %s: its lease is another replica's now; %s here\n", id,
            done ? "its result is not written" : "stopped");
    return 1;
}

/* ---- taking a job over ------------------------------------------------------------ */

/* A job that cannot run here (its source gone, a file or route refused): failed for every replica. */
static void fail_job(srv_takeover *t, const char *id, const char *name, srv_doc_kind kind, const char *why)
{
    srv_file_info info = { .state = SRV_FILE_FAILED, .kind = kind, .t_start = mt_now_s(), .t_end = mt_now_s() };
    snprintf(info.name, sizeof info.name, "%s", name);
    mt_err_set(&info.err, MT_ERR_INPUT, "taken over after its replica stopped, it could not run: %s", why);
    char *state = srv_file_share_state(&info);
    if (state)
        srv_lease_finish(&t->c, id, state, NULL, 0, 0);
    free(state);
    fprintf(stderr, "mtserve: file job %s: taken over, failed: %s\n", id, why);
}

/* The terms of a job's JSON into a glossary (NULL: none); 0, or -1 with resp failed. */
static int terms_of(json_t *o, srv_glossary **out, srv_response *resp)
{
    *out = NULL;
    json_t *terms = json_object_get(o, "terms");
    if (!json_object_size(terms))
        return 0;
    srv_glossary_limits lim = { .max_entries = (int)json_object_size(terms), .max_term_bytes = 1 << 16 };
    if (!(*out = srv_glossary_new(&lim)))
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    const char *k;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach(terms, k, klen, v) {
        mt_err e = { 0 };
        if (!json_is_string(v) || srv_glossary_add(*out, k, klen, json_string_value(v), json_string_length(v), &e))
            return srv_fail(resp, SRV_E_INVALID_FIELD, "its terms: %s", e.msg[0] ? e.msg : "not a string");
    }
    return 0;
}

/* Job id's document made again from its options o and source, and started
 * here under the same id.  0, or -1 with resp failed (*busy: no room here). */
static int restart(srv_takeover *t, const char *id, json_t *o, const char *src, size_t len, srv_response *resp,
                   int *busy)
{
    srv_server *srv = t->srv;
    int kind = json_integer_value(json_object_get(o, "kind"));
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *target = json_string_value(json_object_get(o, "target"));
    const char *source = json_string_value(json_object_get(o, "source"));
    const char *secret = json_string_value(json_object_get(o, "secret"));
    if (!name || !target || !source || !secret || kind < 0 || !srv_doc_kind_name((srv_doc_kind)kind) ||
        strlen(secret) >= SRV_FILE_ID_LEN)
        return srv_fail(resp, SRV_E_INTERNAL, "its options in Redis are not a job's");
    srv_doc_options opt = srv_doc_default_options();
    opt.overwrite = json_is_true(json_object_get(o, "overwrite"));
    char *copy = NULL;
    srv_doc *doc = NULL;
    srv_glossary *terms = NULL;
    srv_file_route r = { 0 };
    srv_lang_guess guess;
    int rc = srv_file_parse(srv, resp, src, len, (srv_doc_kind)kind, &opt, &copy, &doc) ||
             terms_of(o, &terms, resp) || srv_file_route_doc(srv, resp, doc, target, &source, &guess, terms, &r);
    srv_glossary_free(terms);
    if (rc) {
        srv_doc_free(doc);
        free(copy);
        return -1;
    }
    srv_file_info prev;         /* its last owner's progress and start, as published */
    if (srv_file_share_info(t->c.r, id, &prev) == 0 && prev.state == SRV_FILE_RUNNING)
        r.done_floor = prev.done, r.t_start = prev.t_start;
    memcpy(r.id, id, SRV_FILE_ID_LEN);
    snprintf(r.secret, sizeof r.secret, "%s", secret);
    r.chars = (long)json_integer_value(json_object_get(o, "chars"));
    char got[SRV_FILE_ID_LEN];
    mt_err err = { 0 };
    if (held_add(t, id))
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    if (srv_files_start(srv->files, doc, copy, name, &r, got, &err) == MT_OK)    /* doc, copy, r.glossary: its */
        return 0;
    held_remove(t, id);
    *busy = err.status == MT_ERR_BUSY;
    return srv_fail_mt(resp, &err);
}

/* Job id, just claimed: read and started here, else failed (or given back when there is no room). */
static void adopt(srv_takeover *t, const char *id)
{
    char *opts = NULL, *src = NULL;
    size_t olen = 0, slen = 0;
    srv_response resp = { 0 };
    int busy = 0;
    json_t *o = srv_lease_load(&t->c, id, &opts, &olen, &src, &slen) == 0 ? json_loadb(opts, olen, 0, NULL) : NULL;
    const char *name = o ? json_string_value(json_object_get(o, "name")) : NULL;
    if (!o)
        fail_job(t, id, "file", SRV_DOC_UNKNOWN, "its source or options are no longer in Redis");
    else if (restart(t, id, o, src, slen, &resp, &busy) == 0) {
        atomic_fetch_add(&t->taken, 1);
        fprintf(stderr, "mtserve: file job %s taken over (its replica's lease expired): %zu bytes\n", id, slen);
    } else if (busy)
        srv_lease_release(&t->c, id);       /* no room here after all: another replica's sweep takes it */
    else
        fail_job(t, id, name ? name : "file", (srv_doc_kind)json_integer_value(json_object_get(o, "kind")),
                 resp.message);
    json_decref(o);
    free(opts);
    free(src);
}

/* ---- the thread --------------------------------------------------------------------- */

/* Every lease held renewed; a lost one stops its job here.  0, or -1 when Redis did not answer. */
static int renew(srv_takeover *t)
{
    int n, down = 0;
    char (*ids)[SRV_FILE_ID_LEN] = held_copy(t, &n);
    for (int i = 0; i < n; i++) {
        srv_lease_rc rc = srv_lease_hold(&t->c, ids[i], NULL);
        down |= rc == SRV_LEASE_DOWN;
        if (rc == SRV_LEASE_GONE)
            held_remove(t, ids[i]);     /* it ended here meanwhile: its runner published that */
        if (rc != SRV_LEASE_LOST || !held_remove(t, ids[i]))
            continue;                   /* held, or its runner found it lost first */
        srv_files_forget(t->srv->files, ids[i]);
        atomic_fetch_add(&t->lost, 1);
        fprintf(stderr, "mtserve: file job %s: its lease is another replica's now; stopped here\n", ids[i]);
    }
    free(ids);
    return down ? -1 : 0;
}

/* The jobs whose lease expired: up to CLAIM_MAX (and this replica's room) claimed and started. */
static void sweep(srv_takeover *t)
{
    int room = srv_files_room(t->srv->files);
    char ids[CLAIM_MAX][SRV_FILE_ID_LEN];
    int n = room > 0 ? srv_lease_orphans(&t->c, ids, room < CLAIM_MAX ? room : CLAIM_MAX) : 0;
    if (n < 0)
        t->quiet_until = mt_now_s() + t->c.lease_ms * 1e-3;
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&t->mu);
        int ours = held_find(t, ids[i]) >= 0;
        pthread_mutex_unlock(&t->mu);
        if (!ours && srv_lease_claim(&t->c, ids[i]) == SRV_LEASE_OK)
            adopt(t, ids[i]);
    }
}

/* A random factor in [0.75, 1.25): replicas started together do not sweep in step. */
static double jitter(void)
{
    unsigned short x = 0;
    if (getrandom(&x, sizeof x, 0) != sizeof x)
        x = 0;
    return 0.75 + 0.5 * x / 65536.0;
}

static void *takeover_main(void *arg)
{
    mt_thread_rt(0);    /* started from a real-time HTTP thread (--http-sched rr): back in SCHED_OTHER */
    srv_takeover *t = arg;
    double lease_s = t->c.lease_ms * 1e-3, next_sweep = mt_now_s() + lease_s / 2 * jitter();
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct timespec until = mt_abstime_after_ms(t->c.lease_ms / 4 > 0 ? t->c.lease_ms / 4 : 1);
        pthread_cond_timedwait(&t->wake, &t->mu, &until);
        if (t->stop)
            break;
        pthread_mutex_unlock(&t->mu);
        if (renew(t))
            t->quiet_until = mt_now_s() + lease_s;      /* the owners renew first once Redis is back */
        double now = mt_now_s();
        if (now >= next_sweep) {
            if (atomic_load(&t->srv->ready) && now >= t->quiet_until)
                sweep(t);
            next_sweep = now + lease_s / 2 * jitter();
        }
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int srv_takeover_start(srv_takeover *t)
{
    t->started = pthread_create(&t->thread, NULL, takeover_main, t) == 0;
    return t->started ? 0 : -1;
}

void srv_takeover_stop(srv_takeover *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = 1;
    t->stopping = 1;
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->mu);
    if (t->started)
        pthread_join(t->thread, NULL);
    t->started = 0;
    if (t->released)
        return;
    t->released = 1;
    int n;
    char (*ids)[SRV_FILE_ID_LEN] = held_copy(t, &n);
    for (int i = 0; i < n; i++)
        srv_lease_release(&t->c, ids[i]);
    if (n)
        fprintf(stderr, "mtserve: %d file jobs given up for the other replicas to take over\n", n);
    free(ids);
}

void srv_takeover_free(srv_takeover *t)
{
    if (!t)
        return;
    srv_takeover_stop(t);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->mu);
    free(t->held);
    free(t);
}

char *srv_takeover_metrics(srv_takeover *t, size_t *len)
{
    pthread_mutex_lock(&t->mu);
    int held = t->n_held;
    pthread_mutex_unlock(&t->mu);
    char *out = malloc(1536);
    if (!out)
        return NULL;
    int n = snprintf(out, 1536,
        "# HELP mtserve_file_leases_held Asynchronous file jobs this replica runs under its lease in Redis\n"
        "# TYPE mtserve_file_leases_held gauge\nmtserve_file_leases_held %d\n"
        "# HELP mtserve_file_takeovers_total File jobs this replica took over after their replica's lease expired\n"
        "# TYPE mtserve_file_takeovers_total counter\nmtserve_file_takeovers_total %ld\n"
        "# HELP mtserve_file_leases_lost_total File jobs stopped here because another replica took them over\n"
        "# TYPE mtserve_file_leases_lost_total counter\nmtserve_file_leases_lost_total %ld\n"
        "# HELP mtserve_file_results_refused_total Files finished here after their lease was lost: not written\n"
        "# TYPE mtserve_file_results_refused_total counter\nmtserve_file_results_refused_total %ld\n",
        held, atomic_load(&t->taken), atomic_load(&t->lost), atomic_load(&t->refused));
    *len = n > 0 && n < 1536 ? (size_t)n : 0;
    return out;
}
