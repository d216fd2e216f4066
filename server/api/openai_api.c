/* The OpenAI-compatible API on the decoder-only models (README.md,
 * "OpenAI-compatible API"):
 *   POST /v1/chat/completions  {"model", "messages", "max_tokens"?, "temperature"?,
 *                               "top_p"?, "seed"?, "stop"?, "n"?, "stream"?, "stream_options"?}
 *     -> {"id", "object": "chat.completion", "created", "model",
 *         "choices": [{"index", "message": {"role", "content"}, "finish_reason"}], "usage"}
 *   POST /v1/completions       the same with "prompt" (raw text: the model's
 *                               special tokens as /translate's "raw") -> "text_completion"
 *   GET  /v1/models            the decoder-only models; /v1/models/ID one of them
 * The body is read by openai_req.c; the messages rendered with the model's
 * chat template (engine/tokenizer/prompt.c, mt_prompt_chat_encode) and the
 * ids handed to the one translate path (translate_job.h: the same scheduler,
 * fairness, limits; the router's API keys and rate limits) as a raw
 * continuation: n texts of the same prompt, sentence j drawing with seed + j.
 * "max_tokens" K is a decoder length of K + 2 (K free ids, then the forced
 * end: engine semantics); a reply of K ids ends with "length", an earlier
 * end (eos, the template's end of turn) or a stop string with "stop".
 * Decoding ends at the id whose text completes a stop string (the
 * pipeline's srv_tr_params.stop: mt_stop_match in the decode loop, nothing
 * allocated per token), and usage counts the ids decoded, that one
 * included; the text is cut before the first stop string.  "stream":
 * OpenAI's chunks through stream.c's dialect hooks, a stop string's possible
 * start held back until it is known not to be one.  Errors: OpenAI's shape
 * (errors.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "handlers.h"
#include "openai_req.h"
#include "service/server.h"
#include "service/stream.h"
#include "service/translate_job.h"
#include "util/strbuf.h"

typedef struct {
    oai_req       r;
    json_t       *body;             /* r's strings point into it */
    srv_model    *m;
    srv_path      path;
    srv_tr_params tp;
    srv_trjob    *job;
    const char  **texts;            /* [r.n] the same prompt */
    int32_t      *ids;              /* chat: the prompt's ids */
    int           prompt_tokens, max_tokens;
    long long     created;
    char          id[40];
    /* stream, per choice: the text so far, what of it was sent, cut at a stop string */
    mt_sbuf      *acc;
    size_t       *sent;
    int          *stopped, *role_sent;
} oai_job;

static void job_free(void *p)
{
    oai_job *j = p;
    srv_trjob_free(j->job);
    for (int i = 0; j->acc && i < j->r.n; i++)
        free(j->acc[i].p);
    free(j->acc);
    free(j->sent);
    free(j->stopped);
    free(j->role_sent);
    free(j->texts);
    free(j->ids);
    oai_req_free(&j->r);
    json_decref(j->body);
    free(j);
}

/* ---- the request ------------------------------------------------------------------ */

/* The model: known (404 model_not_found), decoder-only, able to chat (400 naming why). */
static srv_model *pick_model(srv_request *req, srv_response *resp, const oai_req *r)
{
    srv_model *m = r->model[0] ? srv_find_model(req->srv, r->model) : NULL;
    if (!m)
        return srv_fail(resp, SRV_E_UNKNOWN_MODEL, "The model '%.200s' does not exist (GET /v1/models lists "
                        "them)", r->model), NULL;
    if (!m->llm)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "model '%s' is an encoder-decoder translation model (%s): it "
                        "continues no prompt; /v1/ serves the decoder-only models (GET /v1/models); translate "
                        "with POST /translate", m->id, m->info->architecture), NULL;
    if (r->chat && !m->chat)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "model '%s' cannot chat: %s", m->id, m->chat_why), NULL;
    return m;
}

/* The prompt's ids: the messages rendered (chat) or the raw text as the
 * pipeline encodes it (completions: counted here for usage and the limit). */
static int prompt_ids(srv_response *resp, oai_job *j)
{
    const srv_model *m = j->m;
    int max = m->sparams.max_src_len, n = 0;
    mt_err err = { 0 };
    if (!(j->ids = malloc(sizeof *j->ids * (size_t)max)))
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    mt_status st = j->r.chat ? mt_prompt_chat_encode(m->chat, j->r.msgs, j->r.n_msgs, j->ids, max, &n, &err)
                             : mt_tokenizer_encode(m->tok, j->r.prompt, j->r.prompt_len, 0, j->ids, max, &n, &err);
    if (st == MT_ERR_TOO_LONG)
        return srv_fail(resp, SRV_E_INPUT_TOO_LONG, "the %s is %d tokens; model '%s' takes at most %d",
                        j->r.chat ? "conversation" : "prompt", n, m->id, max);
    if (st == MT_ERR_INPUT || st == MT_ERR_UNSUPPORTED)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "%s", err.msg);
    if (st != MT_OK)
        return srv_fail_mt(resp, &err);
    if (n == 0)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "'prompt' gives no token");
    j->prompt_tokens = n;
    return 0;
}

static uint64_t draw_seed(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, GRND_NONBLOCK) != (ssize_t)sizeof x)
        x = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
    return x & ((1ull << 53) - 1);
}

/* The decoding: greedy or sampling, the decoder length, resolved for the model. */
static int decoding(srv_response *resp, oai_job *j)
{
    const srv_model *m = j->m;
    int room = m->sparams.max_tgt_len - 2;
    if (j->r.max_tokens > room)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "'max_tokens' is %d; model '%s' generates at most %d tokens "
                        "(its decoder length %d, limits.max_length)", j->r.max_tokens, m->id, room,
                        m->sparams.max_tgt_len);
    j->tp = (srv_tr_params){ .dp = mt_decode_default_params(), .raw = 1 };
    mt_decode_params *dp = &j->tp.dp;
    dp->lengths.max_length = j->r.max_tokens ? j->r.max_tokens + 2 : 0;
    if (j->r.sample) {
        dp->sampling.enabled = 1;
        dp->sampling.temperature = mt_decode_limit_float(mt_decode_limit_find("sampling.temperature"),
                                                         j->r.temperature);
        dp->sampling.top_p = mt_decode_limit_float(mt_decode_limit_find("sampling.top_p"), j->r.top_p);
        dp->sampling.seed = j->r.has_seed ? (uint64_t)j->r.seed : draw_seed();
    }
    j->tp.stop = j->r.stop;             /* decoding ends at them */
    j->tp.n_stop = j->r.n_stop;
    if (j->r.chat) {
        j->tp.given_ids = j->ids;
        j->tp.n_given = j->prompt_tokens;
        j->tp.end_ids = m->chat_end_ids;
    }
    j->path = (srv_path){ .n_legs = 1, .model = { j->m, NULL }, .lang_id = { -1, -1 } };
    if (srv_translate_resolve(&j->path, &j->tp, resp))
        return -1;
    j->max_tokens = dp->lengths.max_length - 2;
    return 0;
}

static oai_job *parse(srv_request *req, srv_response *resp, int chat)
{
    oai_job *j = calloc(1, sizeof *j);
    if (!j)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory"), NULL;
    j->body = json_incref(req->json);
    char msg[400];
    const char *param;
    if (oai_parse(j->body, chat, &j->r, msg, sizeof msg, &param)) {
        srv_fail(resp, strcmp(msg, "out of memory") ? SRV_E_INVALID_FIELD : SRV_E_INTERNAL, "%s", msg);
    } else if ((j->m = pick_model(req, resp, &j->r)) && prompt_ids(resp, j) == 0 && decoding(resp, j) == 0 &&
               (j->texts = calloc((size_t)j->r.n, sizeof *j->texts))) {
        for (int i = 0; i < j->r.n; i++)
            j->texts[i] = chat ? "." : j->r.prompt;       /* chat: never tokenized (given_ids) */
        j->created = (long long)time(NULL);
        uint64_t x = draw_seed();
        snprintf(j->id, sizeof j->id, "%s-%013llx", chat ? "chatcmpl" : "cmpl", (unsigned long long)x);
        return j;
    }
    srv_fail(resp, SRV_E_INTERNAL, "out of memory");    /* ignored when failed already */
    job_free(j);
    return NULL;
}

/* ---- the reply -------------------------------------------------------------------- */

typedef struct {
    size_t      len;            /* of the result's text, cut before a stop string */
    const char *finish;
    int         tokens;         /* generated: the text's ids, and the end id that ended it */
} choice;

static choice make_choice(const oai_job *j, const srv_tr_result *res)
{
    const char *t = res->alts[0];
    int n = res->n_ids;
    int ended = n < j->max_tokens || res->stopped;
    int end_kept = n && j->tp.end_ids && j->tp.end_ids[res->ids[n - 1]];   /* an end id other than eos */
    /* ids: the pipeline drops eos, which counts; a stop string's last id is one of them */
    choice c = { strlen(t), ended ? "stop" : "length", n + (ended && !end_kept && !res->stopped) };
    for (int k = 0; k < j->r.n_stop; k++) {
        const char *hit = memmem(t, c.len, j->r.stop[k], strlen(j->r.stop[k]));
        if (hit) {
            c.len = (size_t)(hit - t);
            c.finish = "stop";
        }
    }
    return c;
}

static json_t *choice_json(const oai_job *j, int i, const srv_tr_result *res, int *tokens)
{
    choice c = make_choice(j, res);
    *tokens += c.tokens;
    if (j->r.chat)
        return json_pack("{s:i,s:{s:s,s:s%},s:n,s:s}", "index", i, "message", "role", "assistant", "content",
                         res->alts[0], c.len, "logprobs", "finish_reason", c.finish);
    return json_pack("{s:i,s:s%,s:n,s:s}", "index", i, "text", res->alts[0], c.len, "logprobs", "finish_reason",
                     c.finish);
}

static void build_reply(oai_job *j, srv_request *req, srv_response *resp)
{
    (void)req;
    int n = j->r.n, tokens = 0;
    srv_tr_result *res = calloc((size_t)n, sizeof *res);
    if (!res) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        return;
    }
    if (srv_translate_results(j->job, res, resp) == 0) {
        json_t *choices = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(choices, choice_json(j, i, &res[i], &tokens));
        json_t *reply = json_pack("{s:s,s:s,s:I,s:s,s:o,s:{s:i,s:i,s:i}}", "id", j->id, "object",
                                  j->r.chat ? "chat.completion" : "text_completion", "created", j->created, "model",
                                  j->m->id, "choices", choices, "usage", "prompt_tokens", j->prompt_tokens,
                                  "completion_tokens", tokens, "total_tokens", j->prompt_tokens + tokens);
        if (reply)
            srv_reply_json(resp, 200, reply);
        else
            srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        srv_tr_results_free(res, n);
    }
    free(res);
}

static void finish(srv_request *req, srv_response *resp)
{
    oai_job *j = req->pending;
    build_reply(j, req, resp);
    job_free(j);
    req->pending = NULL;
}

/* ---- "stream": true: OpenAI's chunks ----------------------------------------------- */

/* One event: data: {chunk of choice i: delta (chat) or text, finish_reason}. */
static int add_chunk(mt_sbuf *b, const oai_job *j, int i, json_t *delta, const char *finish)
{
    json_t *c = json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:o,s:n,s:o}]}", "id", j->id, "object",
                          j->r.chat ? "chat.completion.chunk" : "text_completion", "created", j->created, "model",
                          j->m->id, "choices", "index", i, j->r.chat ? "delta" : "text", delta, "logprobs",
                          "finish_reason", finish ? json_string(finish) : json_null());
    char *s = c ? json_dumps(c, JSON_COMPACT) : NULL;
    int rc = !s || mt_sb_add(b, "data: ", 6) || mt_sb_add(b, s, strlen(s)) || mt_sb_add(b, "\n\n", 2);
    free(s);
    json_decref(c);
    return rc;
}

/* Choice i's text [from, to) as a chunk; the role first, once (chat). */
static int add_text(mt_sbuf *b, oai_job *j, int i, const char *t, size_t from, size_t to)
{
    int rc = 0;
    if (j->r.chat && !j->role_sent[i]) {
        j->role_sent[i] = 1;
        rc = add_chunk(b, j, i, json_pack("{s:s,s:s}", "role", "assistant", "content", ""), NULL);
    }
    if (!rc && to > from)
        rc = add_chunk(b, j, i, j->r.chat ? json_pack("{s:s%}", "content", t + from, to - from)
                                          : json_stringn(t + from, to - from), NULL);
    return rc;
}

/* How much of s[0..n) may go out: up to the first stop string (*stop set),
 * else all but its longest end that could start one. */
static size_t sendable(const oai_job *j, const char *s, size_t n, int *stop)
{
    size_t cut = n, hold = 0;
    *stop = 0;
    for (int k = 0; k < j->r.n_stop; k++) {
        size_t L = strlen(j->r.stop[k]);
        const char *hit = memmem(s, n, j->r.stop[k], L);
        if (hit && (size_t)(hit - s) <= cut)
            cut = (size_t)(hit - s), *stop = 1;
        for (size_t h = L - 1 < n ? L - 1 : n; h > hold; h--)
            if (!memcmp(s + n - h, j->r.stop[k], h)) {
                hold = h;
                break;
            }
    }
    return *stop ? cut : n - hold;
}

static char *on_delta(void *owner, int i, const char *d, size_t n)
{
    oai_job *j = owner;
    if (i < 0 || i >= j->r.n || j->stopped[i] || mt_sb_add(&j->acc[i], d, n))
        return NULL;
    size_t upto = sendable(j, j->acc[i].p, j->acc[i].n, &j->stopped[i]);
    mt_sbuf b = { 0 };
    if (upto > j->sent[i] && add_text(&b, j, i, j->acc[i].p, j->sent[i], upto) == 0)
        j->sent[i] = upto;
    if (mt_sb_add(&b, "", 0)) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* The end: each choice's rest (the reply's text after what was sent) and its
 * finish_reason, the usage when asked, [DONE]; or the error and [DONE]. */
static char *on_end(void *owner, const srv_response *r)
{
    oai_job *j = owner;
    mt_sbuf b = { 0 };
    int rc = 0;
    json_t *choices = json_object_get(r->json, "choices");
    for (int i = 0; r->error == SRV_OK && !rc && i < j->r.n; i++) {
        json_t *c = json_array_get(choices, (size_t)i);
        json_t *text = j->r.chat ? json_object_get(json_object_get(c, "message"), "content") : json_object_get(c, "text");
        const char *t = json_string_value(text), *fin = json_string_value(json_object_get(c, "finish_reason"));
        size_t len = t ? json_string_length(text) : 0;
        size_t from = !j->sent[i] ? 0 : j->sent[i] <= len && !memcmp(t, j->acc[i].p, j->sent[i]) ? j->sent[i] : len;
        rc = add_text(&b, j, i, t, from, len) || add_chunk(&b, j, i, j->r.chat ? json_object() : json_string(""), fin);
    }
    if (!rc && r->error == SRV_OK && j->r.include_usage) {
        json_t *u = json_pack("{s:s,s:s,s:I,s:s,s:[],s:O}", "id", j->id, "object", j->r.chat ?
                              "chat.completion.chunk" : "text_completion", "created", j->created, "model", j->m->id,
                              "choices", "usage", json_object_get(r->json, "usage"));
        char *s = u ? json_dumps(u, JSON_COMPACT) : NULL;
        rc = !s || mt_sb_add(&b, "data: ", 6) || mt_sb_add(&b, s, strlen(s)) || mt_sb_add(&b, "\n\n", 2);
        free(s);
        json_decref(u);
    }
    if (!rc && r->error != SRV_OK) {
        char *s = json_dumps(r->json, JSON_COMPACT);
        rc = !s || mt_sb_add(&b, "data: ", 6) || mt_sb_add(&b, s, strlen(s)) || mt_sb_add(&b, "\n\n", 2);
        free(s);
    }
    if (rc || mt_sb_add(&b, "data: [DONE]\n\n", 15)) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

static void stream_reply(void *owner, srv_request *req, srv_response *resp)
{
    build_reply(owner, req, resp);
}

static void stream_finish(srv_request *req, srv_response *resp)
{
    srv_stream *st = req->pending;
    if (srv_stream_begin(st, req, resp) == 0)
        return;
    req->pending = NULL;
    srv_stream_conn_release(st);
}

static void stream_start(srv_request *req, srv_response *resp, oai_job *j)
{
    size_t n = (size_t)j->r.n;
    j->acc = calloc(n, sizeof *j->acc);
    j->sent = calloc(n, sizeof *j->sent);
    j->stopped = calloc(n, sizeof *j->stopped);
    j->role_sent = calloc(n, sizeof *j->role_sent);
    srv_stream_params sp = { .tok = j->m->tok, .eos_id = j->m->info->eos_id,
                             .per_token = mt_tokenizer_decode_appends(j->m->tok) ? 1 :
                                          mt_tokenizer_decode_grows(j->m->tok) ? 2 : 0, .reply = stream_reply,
                             .owner_free = job_free, .owner = j, .delta_event = on_delta, .end_events = on_end };
    srv_stream *st = j->acc && j->sent && j->stopped && j->role_sent ? srv_stream_new(req, &sp) : NULL;
    if (!st) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
        job_free(j);
        return;
    }
    srv_tr_sink sink = srv_stream_sink(st);
    if (srv_translate_start(req, resp, &j->path, j->texts, j->r.n, &j->tp, &j->job, stream_finish, st,
                            srv_stream_conn_release, &sink))
        srv_stream_abandon(st);
}

static void start(srv_request *req, srv_response *resp, int chat)
{
    oai_job *j = parse(req, resp, chat);
    if (!j)
        return;
    if (j->r.stream) {
        stream_start(req, resp, j);
        return;
    }
    if (srv_translate_start(req, resp, &j->path, j->texts, j->r.n, &j->tp, &j->job, finish, j, job_free, NULL))
        job_free(j);
}

void srv_handle_oai_chat(srv_request *req, srv_response *resp)
{
    start(req, resp, 1);
}

void srv_handle_oai_completions(srv_request *req, srv_response *resp)
{
    start(req, resp, 0);
}

static json_t *model_json(const srv_server *srv, const srv_model *m)
{
    long long created = (long long)time(NULL) - (long long)(srv_now() - srv->t_start);
    return json_pack("{s:s,s:s,s:I,s:s}", "id", m->id, "object", "model", "created", created, "owned_by", "mtserve");
}

/* GET /v1/models: the decoder-only models (the Marian ones continue no
 * prompt); GET /v1/models/ID: one of them (404 model_not_found otherwise). */
void srv_handle_oai_models(srv_request *req, srv_response *resp)
{
    srv_server *srv = req->srv;
    const char *id = strncmp(req->path, "/v1/models/", 11) == 0 ? req->path + 11 : NULL;
    if (id) {
        srv_model *m = srv_find_model(srv, id);
        if (!id[0] || !m || !m->llm)
            srv_fail(resp, SRV_E_UNKNOWN_MODEL, "The model '%.200s' does not exist (GET /v1/models lists them)", id);
        else
            srv_reply_json(resp, 200, model_json(srv, m));
        return;
    }
    json_t *data = json_array();
    int n = srv->n_models;
    for (int i = 0; i < n; i++) {
        const srv_model *m = &srv->models[i];
        if (srv_model_listed(m) && m->llm)
            json_array_append_new(data, model_json(srv, m));
    }
    srv_reply_json(resp, 200, json_pack("{s:s,s:o}", "object", "list", "data", data));
}
