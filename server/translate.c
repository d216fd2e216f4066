/* POST /translate
 *   {"text": string | [strings], "model"?, "source"?, "target"?, "beam_size"?,
 *    "max_length"?, "return_tokens"?, "return_scores"?, "split"?, "stream"?}
 *   -> {"model", "pivot"?, "translations": [{"text", "tokens"?, "token_ids"?, "score"?}], "timing_ms"}
 * With "stream": true the reply is server-sent events (stream.h): the text as
 * it is generated, then that same object.
 * The model: "model" when given, else the one for "source" -> "target"
 * (pairs.h: maybe through a pivot, which the reply names), else the
 * default.  "target" also picks a multilingual model's target token.
 * (The router sends a LibreTranslate-shaped body to libretranslate.c.)
 * The texts are decoded while the connection waits (translate_job.h): the
 * handler starts the work, finish() builds the reply.
 */
#include <stdlib.h>

#include "body.h"
#include "handlers.h"
#include "server.h"
#include "stream.h"
#include "translate_job.h"

typedef struct {
    const char  **texts;
    int           n, is_list;
    srv_path      path;
    srv_tr_params tp;
    int           return_tokens, return_scores, stream;
    srv_trjob    *job;
} translate_req;

/* The path: "model" (with "target" for a multilingual one), or the pair "source" -> "target". */
static int pick_path(srv_request *req, srv_response *resp, translate_req *t)
{
    const char *source = NULL, *target = NULL;
    if (srv_field_string(req, resp, "source", &source) < 0 || srv_field_string(req, resp, "target", &target) < 0)
        return -1;
    if (json_object_get(req->json, "model") || !target) {
        srv_model *m = srv_request_model(req, resp);
        return m ? srv_path_for_model(m, target, &t->path, resp) : -1;
    }
    return srv_path_for_pair(req->srv, source ? source : "auto", target, &t->path, resp);
}

static int parse(srv_request *req, srv_response *resp, translate_req *t)
{
    if (srv_field_texts(req, resp, "text", &t->texts, &t->n, &t->is_list) < 0)
        return -1;
    if (pick_path(req, resp, t) < 0)
        return -1;
    const srv_model *m = t->path.model[t->path.n_legs - 1];
    t->tp = (srv_tr_params){ .beam_size = srv_default_beam(m), .n_best = 1, .split = 1 };
    if (srv_field_int(req, resp, "beam_size", 1, srv_max_beam(m), &t->tp.beam_size) < 0 ||
        srv_field_int(req, resp, "max_length", 2, m->sparams.max_tgt_len, &t->tp.max_length) < 0 ||
        srv_field_bool(req, resp, "return_tokens", &t->return_tokens) < 0 ||
        srv_field_bool(req, resp, "return_scores", &t->return_scores) < 0 ||
        srv_field_bool(req, resp, "split", &t->tp.split) < 0 ||
        srv_field_bool(req, resp, "stream", &t->stream) < 0)
        return -1;
    return 0;
}

static json_t *tokens_json(const srv_model *m, const srv_tr_result *r, json_t **ids)
{
    json_t *pieces = json_array();
    *ids = json_array();
    for (int k = 0; k < r->n_ids; k++) {
        const char *piece = mt_tokenizer_piece(m->tok, r->ids[k]);
        json_array_append_new(pieces, json_string(piece ? piece : ""));
        json_array_append_new(*ids, json_integer(r->ids[k]));
    }
    return pieces;
}

static json_t *translation_json(const translate_req *t, const srv_tr_result *r)
{
    json_t *o = json_pack("{s:s}", "text", r->alts[0]);
    if (o && t->return_tokens) {
        json_t *ids;
        json_object_set_new(o, "tokens", tokens_json(srv_trjob_model(t->job), r, &ids));
        json_object_set_new(o, "token_ids", ids);
    }
    if (o && t->return_scores)
        json_object_set_new(o, "score", json_real(r->score));
    return o;
}

static void translate_free(void *p)
{
    translate_req *t = p;
    srv_trjob_free(t->job);
    free(t->texts);
    free(t);
}

/* The reply, after decoding, on an HTTP thread. */
static void build_reply(translate_req *t, srv_request *req, srv_response *resp)
{
    srv_tr_result *results = calloc((size_t)t->n + 1, sizeof *results);
    if (!results) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    } else if (srv_translate_results(t->job, results, resp) == 0) {
        json_t *list = json_array();
        for (int i = 0; i < t->n; i++)
            json_array_append_new(list, translation_json(t, &results[i]));
        json_t *reply = json_pack("{s:s,s:o,s:f}", "model", srv_trjob_model(t->job)->id, "translations", list,
                                  "timing_ms", (srv_now() - req->t_start) * 1e3);
        if (t->path.n_legs == 2)
            json_object_set_new(reply, "pivot", json_pack("{s:s,s:[s,s]}", "language", t->path.pivot, "models",
                                                          t->path.model[0]->id, t->path.model[1]->id));
        srv_reply_json(resp, 200, reply);
        srv_tr_results_free(results, t->n);
    }
    free(results);
}

static void translate_finish(srv_request *req, srv_response *resp)
{
    translate_req *t = req->pending;
    build_reply(t, req, resp);
    translate_free(t);
    req->pending = NULL;
}

/* ---- "stream": true ------------------------------------------------------------------ */

static void stream_reply(void *owner, srv_request *req, srv_response *resp)
{
    build_reply(owner, req, resp);
}

/* After the first tokens (or the end), on an HTTP thread: the stream, or the
 * ordinary reply of a job that failed before any token. */
static void stream_finish(srv_request *req, srv_response *resp)
{
    srv_stream *st = req->pending;
    if (srv_stream_begin(st, req, resp) == 0)
        return;                         /* the connection's share is released with the request */
    req->pending = NULL;
    srv_stream_conn_release(st);
}

static void stream_start(srv_request *req, srv_response *resp, translate_req *t)
{
    const srv_model *m = t->path.model[t->path.n_legs - 1];
    srv_stream_params sp = { .tok = m->tok, .eos_id = m->info->eos_id,
                             .per_token = t->tp.beam_size == 1 && mt_tokenizer_decode_appends(m->tok),
                             .reply = stream_reply, .owner_free = translate_free, .owner = t };
    srv_stream *st = srv_stream_new(req, &sp);
    if (!st) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        translate_free(t);
        return;
    }
    srv_tr_sink sink = srv_stream_sink(st);
    if (srv_translate_start(req, resp, &t->path, t->texts, t->n, &t->tp, &t->job, stream_finish, st,
                            srv_stream_conn_release, &sink))
        srv_stream_abandon(st);
}

void srv_handle_translate(srv_request *req, srv_response *resp)
{
    translate_req *t = calloc(1, sizeof *t);
    if (!t) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    if (parse(req, resp, t)) {
        translate_free(t);
        return;
    }
    if (t->stream) {
        stream_start(req, resp, t);
        return;
    }
    if (srv_translate_start(req, resp, &t->path, t->texts, t->n, &t->tp, &t->job, translate_finish, t,
                            translate_free, NULL))
        translate_free(t);
}
