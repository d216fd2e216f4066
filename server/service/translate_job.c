/* translate_job: submit to the decoders of a path, resume when done (translate_job.h). */
#include "translate_job.h"

#include <stdlib.h>

#include "common/metrics.h"
#include "glossaries.h"
#include "languages.h"

struct srv_trjob {
    srv_request  *req;
    srv_path      path;
    srv_tr_params p;
    int           leg;           /* the leg decoding now */
    srv_tr       *tr[2];
    srv_tr_result *mid;          /* [n] the first leg's results: the second leg's texts */
    const char  **mid_texts;
    int           n;
    mt_err        err;           /* the second leg could not start */
    int           failed;
    srv_tr_sink   sink;          /* .done NULL: not streamed */
    srv_glossary *gl[2];         /* each leg's terms (glossaries.h), owned */
};

int srv_max_beam(const srv_model *m)
{
    double lo, hi;
    mt_decode_limit_bounds(mt_decode_limit_find("beam_size"), m->model, &m->sparams, NULL, &lo, &hi);
    return (int)hi;
}

int srv_translate_resolve(const srv_path *path, srv_tr_params *p, srv_response *resp)
{
    const srv_model *m = path->model[path->n_legs - 1];
    mt_err err = { 0 };
    if (p->dp.lengths.max_length == 0 && m->max_length > 0)      /* a decoder-only model's own default */
        p->dp.lengths.max_length = m->max_length;
    if (mt_decode_params_resolve(m->model, &m->sparams, &p->dp, &p->dp, &err) != MT_OK)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "%s", err.msg);
    return 0;
}

static void decoded(srv_decode_job *dj);

srv_tr_model srv_leg_model(srv_server *srv, const srv_path *path, int i, int raw)
{
    const srv_model *m = path->model[i];
    srv_tr_model tm = { .tok = m->tok, .eos_id = m->info->eos_id, .max_src_len = m->sparams.max_src_len,
                        .has_lang = path->lang_id[i] >= 0, .lang_id = path->lang_id[i],
                        .cache = srv->cache, .cache2 = srv->rcache, .cache_ns = m->cache_ns,
                        .no_align = m->llm, .copy_gate = m->copy_gate };
    if (m->multi) {                     /* NLLB / M2M-100: the source's token first, the target's generated first */
        tm.has_lang = path->src_id[i] >= 0;
        tm.lang_id = path->src_id[i];
        tm.lang_after = mt_multi_legacy(mt_tokenizer_multi(m->tok));
        tm.has_bos = 1;
        tm.bos_id = path->lang_id[i];
    }
    if (m->llm && !raw && m->prompt) {
        const char *src, *tgt;
        srv_path_leg_langs(path, i, &src, &tgt);
        tm.prompt = m->prompt;
        tm.src_name = srv_lang_name(src);
        tm.tgt_name = srv_lang_name(tgt);
        snprintf(tm.src_code, sizeof tm.src_code, "%s", src);
        snprintf(tm.tgt_code, sizeof tm.tgt_code, "%s", tgt);
        tm.end_ids = m->end_ids;
    }
    return tm;
}

/* Tokenize texts for leg i and submit them to its model's decoder. */
static mt_status submit_leg(srv_trjob *j, int i, const char *const *texts, const srv_tr_params *p, mt_err *err)
{
    srv_model *m = j->path.model[i];
    srv_tr_model tm = srv_leg_model(j->req->srv, &j->path, i, p->raw);
    tm.max_tokens = j->req->srv->opts.max_tokens;
    if ((m->shortlist || m->lang_vocab) && !p->no_shortlist) {     /* its output differs: cached apart */
        tm.shortlist = m->shortlist;
        tm.lang_vocab = m->lang_vocab;
        tm.cache_ns = m->cache_ns_sl;
    }
    srv_tr_params lp = *p;
    lp.glossary = j->gl[i];
    mt_status st = srv_tr_new(&tm, texts, j->n, &lp, &j->tr[i], err);
    if (st != MT_OK)
        return st;
    srv_decode_job *dj = srv_tr_job(j->tr[i]);
    dj->done = decoded;
    dj->ctx = j;
    dj->abort = (srv_abort){ .gone = j->req->client_gone, .ctx = j->req->conn };
    dj->client = srv_decode_client_id(j->req->client);
    if (j->sink.done) {
        dj->abort = (srv_abort){ .gone = j->sink.gone, .ctx = j->sink.ctx };
        if (i == j->path.n_legs - 1) {
            if (j->sink.attach(j->sink.ctx, j->tr[i], m->sparams.max_tgt_len, err)) {
                srv_tr_free(j->tr[i]);
                j->tr[i] = NULL;
                return err->status;
            }
            dj->progress = j->sink.progress;
        }
    }
    j->leg = i;
    if (dj->n == 0) {                   /* every sentence from the cache: nothing to decode */
        srv_decode_job_finish(dj);
        decoded(dj);
        return MT_OK;
    }
    if (m->decoder.submit(m->decoder.self, dj) != 0) {
        srv_tr_free(j->tr[i]);
        j->tr[i] = NULL;
        return mt_err_set(err, MT_ERR_BUSY, "the decoder's queue is full; retry later");
    }
    return MT_OK;
}

/* The first leg is done: its best translations start the second leg.  0: submitted. */
static int second_leg(srv_trjob *j)
{
    const srv_decode_job *dj = srv_tr_job(j->tr[0]);
    if (dj->cancelled || dj->timed_out || dj->status != MT_OK)
        return -1;                      /* srv_translate_results reports the first leg's failure */
    j->mid = calloc((size_t)j->n + 1, sizeof *j->mid);
    j->mid_texts = calloc((size_t)j->n + 1, sizeof *j->mid_texts);
    if (!j->mid || !j->mid_texts) {
        mt_err_set(&j->err, MT_ERR_NOMEM, "out of memory");
    } else if (srv_tr_finish(j->tr[0], j->mid, &j->err) == MT_OK) {
        for (int i = 0; i < j->n; i++)
            j->mid_texts[i] = j->mid[i].alts[0];
        srv_tr_params p = j->p;
        if (submit_leg(j, 1, j->mid_texts, &p, &j->err) == MT_OK)
            return 0;
    }
    j->failed = 1;
    return -1;
}

/* On a decoder's thread: the next leg, or the connection may go on. */
static void decoded(srv_decode_job *dj)
{
    srv_trjob *j = dj->ctx;
    if (j->leg == 0 && j->path.n_legs == 2 && second_leg(j) == 0)
        return;
    if (j->sink.done)
        j->sink.done(j->sink.ctx);
    else
        j->req->resume(j->req);
}

void srv_trjob_free(srv_trjob *j)
{
    if (!j)
        return;
    srv_tr_free(j->tr[0]);
    srv_tr_free(j->tr[1]);
    srv_glossary_free(j->gl[0]);
    srv_glossary_free(j->gl[1]);
    if (j->mid)
        srv_tr_results_free(j->mid, j->n);
    free(j->mid);
    free(j->mid_texts);
    free(j);
}

const srv_model *srv_trjob_model(const srv_trjob *j) { return j->path.model[j->path.n_legs - 1]; }

int srv_translate_start(srv_request *req, srv_response *resp, const srv_path *path, const char *const *texts,
                        int n, const srv_tr_params *p, srv_trjob **job,
                        void (*finish)(srv_request *, srv_response *), void *pending,
                        void (*pending_free)(void *), const srv_tr_sink *sink)
{
    srv_trjob *j = calloc(1, sizeof *j);
    *job = NULL;
    if (!j)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    *j = (srv_trjob){ .req = req, .path = *path, .p = *p, .n = n };
    if (sink)
        j->sink = *sink;
    if (srv_leg_glossaries(req->srv, path, p->glossary, j->gl, resp)) {
        free(j);
        return -1;
    }
    srv_tr_params first = *p;
    mt_err err = { 0 };
    mt_status st = MT_OK;
    if (path->n_legs == 2) {            /* the pivot text: the best translation, without the */
        const srv_model *m0 = path->model[0];   /* last leg's features; its beam if m0 takes it */
        mt_decode_params dp = mt_decode_default_params();
        dp.beam_size = p->dp.beam_size < srv_max_beam(m0) ? p->dp.beam_size : srv_max_beam(m0);
        dp.lengths.max_length = m0->max_length;     /* 0: its own default */
        first.prefix = NULL;
        st = mt_decode_params_resolve(m0->model, &m0->sparams, &dp, &first.dp, &err);
    }
    *job = j;
    req->finish = finish;               /* before submit: done() may come at once */
    req->pending = pending;
    req->pending_free = pending_free;
    if (st == MT_OK)
        st = submit_leg(j, 0, texts, &first, &err);
    if (st == MT_OK)
        return 0;
    req->finish = NULL;
    req->pending = NULL;
    req->pending_free = NULL;
    srv_trjob_free(j);
    *job = NULL;
    if (st == MT_ERR_BUSY) {
        resp->retry_after = 1;
        return srv_fail(resp, SRV_E_QUEUE_FULL, "%s", err.msg);
    }
    return srv_fail_mt(resp, &err);
}

/* The decode job's own failure as a reply. */
static int job_failed(const srv_decode_job *dj, srv_response *resp)
{
    if (dj->cancelled)
        return srv_fail(resp, SRV_E_CLIENT_GONE, "the client went away");
    if (dj->timed_out) {
        resp->retry_after = 1;
        return srv_fail(resp, SRV_E_QUEUE_FULL, "waited too long for the decoder; retry later");
    }
    return dj->status != MT_OK ? srv_fail_mt(resp, &dj->err) : 0;
}

int srv_translate_results(srv_trjob *j, srv_tr_result *out, srv_response *resp)
{
    if (job_failed(srv_tr_job(j->tr[0]), resp))
        return -1;
    if (j->failed) {
        if (j->err.status == MT_ERR_BUSY) {
            resp->retry_after = 1;
            return srv_fail(resp, SRV_E_QUEUE_FULL, "%s", j->err.msg);
        }
        return srv_fail_mt(resp, &j->err);
    }
    srv_tr *last = j->tr[j->path.n_legs - 1];
    if (last != j->tr[0] && job_failed(srv_tr_job(last), resp))
        return -1;
    mt_err err = { 0 };
    if (srv_tr_finish(last, out, &err) != MT_OK)
        return srv_fail_mt(resp, &err);
    for (int i = 0; i < j->path.n_legs; i++)
        srv_metrics_tokens(j->path.model[i]->index, srv_tr_src_tokens(j->tr[i]), srv_tr_gen_tokens(j->tr[i]));
    return 0;
}
