/* seqloop: a job decoded on a session of its own (seqloop.h). */
#include "session_decoder.h"

#include <stdlib.h>
#include <string.h>

static int job_gone(void *data)
{
    srv_decode_job *job = data;
    return job->abort.gone(job->abort.ctx);
}

/* A streamed job: mt_generate's loop over the mt_seq_* calls (sentences
 * started as rows free up, one mt_step for all, taken when finished), with
 * the job's progress hook after every step and for every finished sentence.
 * Sentence i's hypotheses go to out + i * nb. */
static mt_status stream_generate(mt_session *s, srv_decode_job *job, const mt_decode_params *const *each, int nb,
                                 mt_hyp *out, mt_err *err)
{
    int n = job->n, next = 0, done = 0;
    const mt_decode_params *dp = each[0];           /* every sentence's abort callback is the job's */
    mt_status st = MT_OK;
    while (done < n && st == MT_OK) {
        if (dp->abort_callback && dp->abort_callback(dp->abort_callback_data))
            return mt_err_set(err, MT_ERR_ABORTED, "aborted: the client went away");
        while (next < n) {
            srv_seq_req *it = &job->items[next];
            mt_err busy;
            if (mt_seq_start(s, it->src, it->n_src, each[next], &it->seq, &busy) != MT_OK) {
                if (busy.status != MT_ERR_BUSY)
                    return mt_err_set(err, busy.status, "%s", busy.msg);
                break;                                  /* no rows: after the next step */
            }
            next++;
        }
        if (mt_session_seqs(s) == 0)                    /* cannot happen: beam <= max_batch */
            return mt_err_set(err, MT_ERR_INTERNAL, "no sentence could start");
        mt_step(s);
        for (int i = 0; i < next && st == MT_OK; i++) {
            srv_seq_req *it = &job->items[i];
            int k;
            const int32_t *ids;
            if (it->seq < 0)
                continue;                               /* taken already */
            if ((ids = mt_seq_ids(s, it->seq, &k)))
                job->progress.fn(job->progress.ctx, i, ids, k, 0);
            if (!mt_seq_finished(s, it->seq))
                continue;
            mt_hyp *h = out + (long)i * nb;
            st = mt_seq_take(s, it->seq, h, err);
            it->seq = -1;
            done++;
            if (st == MT_OK)
                job->progress.fn(job->progress.ctx, i, h[0].ids, h[0].n_ids, 1);
        }
    }
    return st;
}

/* Every sequence of the job still in the session (a failed or aborted stream). */
static void cancel_all(mt_session *s, srv_decode_job *job)
{
    for (int i = 0; i < job->n; i++)
        if (job->items[i].seq >= 0) {
            mt_seq_cancel(s, job->items[i].seq);
            job->items[i].seq = -1;
        }
}

/* mt_generate steps the job's sentences together (starting them as rows
 * free up) and stops when the abort callback says the client has gone
 * (a streamed job: stream_generate, the same loop with the progress hook). */
void srv_seqloop_run(mt_session *s, srv_decode_job *job)
{
    int n = job->n, nb = job->dp.n_best > 0 ? job->dp.n_best : 1;
    const int32_t **src = malloc(sizeof *src * (size_t)(n + 1));
    int *len = malloc(sizeof *len * (size_t)(n + 1));
    mt_hyp *out = calloc((size_t)n * (size_t)nb + 1, sizeof *out);
    /* each sentence's own parameters (items' dp), with the abort callback */
    mt_decode_params *dps = malloc(sizeof *dps * (size_t)(n + 1));
    const mt_decode_params **each = malloc(sizeof *each * (size_t)(n + 1));
    mt_err err = { 0 };
    mt_status st;
    if (!src || !len || !out || !dps || !each) {
        st = mt_err_set(&err, MT_ERR_NOMEM, "out of memory");
    } else {
        for (int i = 0; i < n; i++) {
            src[i] = job->items[i].src, len[i] = job->items[i].n_src;
            dps[i] = job->items[i].dp ? *job->items[i].dp : job->dp;
            if (job->abort.gone) {
                dps[i].abort_callback = job_gone;
                dps[i].abort_callback_data = job;
            }
            each[i] = &dps[i];
        }
        if (job->progress.fn) {
            for (int i = 0; i < n; i++)
                job->items[i].seq = -1;
            st = stream_generate(s, job, each, nb, out, &err);
            cancel_all(s, job);
            if (st != MT_OK)
                mt_hyps_free(out, n * nb);
        } else {
            st = mt_generate_each(s, src, len, n, each, out, &err);
        }
    }
    for (int i = 0; i < n; i++) {
        srv_seq_req *it = &job->items[i];
        if (st == MT_OK) {          /* the hypotheses move to the item */
            memcpy(it->hyps, out + (long)i * nb, sizeof *out * (size_t)nb);
        } else {
            it->status = st;
            it->err = err;
        }
    }
    job->cancelled = st == MT_ERR_ABORTED;
    free(src);
    free(len);
    free(out);
    free(dps);
    free(each);
    srv_decode_job_finish(job);
    job->done(job);
}

/* ---- on a worker thread, with a pooled session ----------------------------------------- */

typedef struct {
    srv_seqloop    *loop;
    srv_decode_job *job;
} loop_task;

/* A session for the task: the pool holds as many as there are workers, so
 * one is free; failing that (out of memory) every item fails. */
static void run_task(void *arg)
{
    loop_task *t = arg;
    srv_decode_job *job = t->job;
    mt_session *s = NULL;
    mt_err err = { 0 };
    if (srv_sessions_get(t->loop->sessions, &s, &err) != MT_OK) {
        for (int i = 0; i < job->n; i++) {
            job->items[i].status = err.status ? err.status : MT_ERR_NOMEM;
            job->items[i].err = err;
        }
        srv_decode_job_finish(job);
        job->done(job);
        return;
    }
    srv_seqloop_run(s, job);
    srv_sessions_put(t->loop->sessions, s);
}

static void free_task(void *arg)
{
    free(arg);
}

static int loop_submit(void *self, srv_decode_job *job)
{
    loop_task *t = malloc(sizeof *t);
    if (!t)
        return -1;
    *t = (loop_task){ .loop = self, .job = job };
    if (srv_workers_submit(t->loop->workers, run_task, free_task, t) != 0) {
        free(t);
        return -1;
    }
    return 0;
}

srv_decoder srv_seqloop_decoder(srv_seqloop *loop)
{
    return (srv_decoder){ .submit = loop_submit, .self = loop };
}
