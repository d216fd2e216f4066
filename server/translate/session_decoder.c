/* session_decoder: a job decoded on a session of its own (session_decoder.h). */
#include "session_decoder.h"

#include <stdlib.h>
#include <string.h>

static int job_gone(void *data)
{
    srv_decode_job *job = data;
    return job->abort.gone(job->abort.ctx);
}

/* The job's sentences decoded together by mt_generate_each (the engine's
 * decode loop: started as rows free up, one mt_step for all, taken when
 * finished), each with its own parameters (srv_decode_item_params: a
 * streamed job's progress hook among them) and the job's abort callback. */
void srv_session_decode(mt_session *s, srv_decode_job *job)
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
            dps[i] = srv_decode_item_params(job, i);
            if (job->abort.gone) {
                dps[i].abort_callback = job_gone;
                dps[i].abort_callback_data = job;
            }
            each[i] = &dps[i];
        }
        st = mt_generate_each(s, src, len, n, each, out, &err);
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
    srv_session_decoder *dec;
    srv_decode_job *job;
} dec_task;

/* A session for the task: the pool holds as many as there are workers, so
 * one is free; failing that (out of memory) every item fails. */
static void run_task(void *arg)
{
    dec_task *t = arg;
    srv_decode_job *job = t->job;
    mt_session *s = NULL;
    mt_err err = { 0 };
    if (srv_sessions_get(t->dec->sessions, &s, &err) != MT_OK) {
        for (int i = 0; i < job->n; i++) {
            job->items[i].status = err.status ? err.status : MT_ERR_NOMEM;
            job->items[i].err = err;
        }
        srv_decode_job_finish(job);
        job->done(job);
        return;
    }
    srv_session_decode(s, job);
    srv_sessions_put(t->dec->sessions, s);
}

static void free_task(void *arg)
{
    free(arg);
}

static int dec_submit(void *self, srv_decode_job *job)
{
    dec_task *t = malloc(sizeof *t);
    if (!t)
        return -1;
    *t = (dec_task){ .dec = self, .job = job };
    if (srv_workers_submit(t->dec->workers, run_task, free_task, t) != 0) {
        free(t);
        return -1;
    }
    return 0;
}

srv_decoder srv_session_decoder_of(srv_session_decoder *dec)
{
    return (srv_decoder){ .submit = dec_submit, .self = dec };
}
