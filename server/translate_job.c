/* translate_job: submit to the model's decoder, resume when done (translate_job.h). */
#include "translate_job.h"

#include "metrics.h"

int srv_max_beam(const srv_model *m)
{
    return m->sparams.max_batch < SRV_MAX_BEAM ? m->sparams.max_batch : SRV_MAX_BEAM;
}

int srv_default_beam(const srv_model *m)
{
    int b = m->info->default_beam > 0 ? m->info->default_beam : 1;
    int max = srv_max_beam(m);
    return b > max ? max : b;
}

/* On the decoder's thread: the connection may go on. */
static void decoded(srv_decode_job *job)
{
    srv_request *req = job->ctx;
    req->resume(req);
}

int srv_translate_start(srv_request *req, srv_response *resp, srv_model *m, const char *const *texts, int n,
                        const srv_tr_params *p, srv_tr **tr, void (*finish)(srv_request *, srv_response *),
                        void *pending, void (*pending_free)(void *))
{
    srv_tr_model tm = { .tok = m->tok, .eos_id = m->info->eos_id, .max_src_len = m->sparams.max_src_len,
                        .max_tokens = req->srv->opts.max_tokens };
    mt_err err = { 0 };
    if (srv_tr_new(&tm, texts, n, p, tr, &err) != MT_OK)
        return srv_fail_mt(resp, &err);
    srv_decode_job *job = srv_tr_job(*tr);
    job->done = decoded;
    job->ctx = req;
    job->abort = (srv_abort){ .gone = req->client_gone, .ctx = req->conn };
    req->finish = finish;           /* before submit: done() may come at once */
    req->pending = pending;
    req->pending_free = pending_free;
    if (m->decoder.submit(m->decoder.self, job) != 0) {
        req->finish = NULL;
        req->pending = NULL;
        req->pending_free = NULL;
        srv_tr_free(*tr);
        *tr = NULL;
        resp->retry_after = 1;
        return srv_fail(resp, SRV_E_QUEUE_FULL, "the decoder's queue is full; retry later");
    }
    return 0;
}

int srv_translate_results(srv_model *m, srv_tr *tr, srv_tr_result *out, srv_response *resp)
{
    const srv_decode_job *job = srv_tr_job(tr);
    if (job->cancelled)
        return srv_fail(resp, SRV_E_CLIENT_GONE, "the client went away");
    if (job->timed_out) {
        resp->retry_after = 1;
        return srv_fail(resp, SRV_E_QUEUE_FULL, "waited too long for the decoder; retry later");
    }
    if (job->status != MT_OK)
        return srv_fail_mt(resp, &job->err);
    mt_err err = { 0 };
    if (srv_tr_finish(tr, out, &err) != MT_OK)
        return srv_fail_mt(resp, &err);
    srv_metrics_tokens(m->index, srv_tr_src_tokens(tr), srv_tr_gen_tokens(tr));
    return 0;
}
