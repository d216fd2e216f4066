/* POST /translate
 *   {"text": string | [strings], "model"?, "source"?, "target"?, "beam_size"?,
 *    "max_length"?, "return_tokens"?, "return_scores"?, "split"?, "stream"?,
 *    decoding features: "sampling"? {"temperature", "top_k", "top_p", "seed"},
 *    "target_prefix"?, "min_length"?, "repetition_penalty"?,
 *    "no_repeat_ngram_size"?, "length_penalty"?, "return_token_scores"?,
 *    "return_alignments"?, "alignment_layer"?, "alignment_heads"?,
 *    "glossary"? {"source term": "target term"}, "cache"? (default true),
 *    "raw"? (a decoder-only model continues each text as given, no prompt),
 *    "placeholders"? (default true: printf's %s, {name}, URLs... kept byte for
 *    byte, out of the model's sight: translate/protect.h),
 *    "fold_title_case"? (default true: a Title Case sentence is read in
 *    sentence case, a lone word in sentence case lowercased and its
 *    translation capitalized: translate/title_case.h)}
 *   -> {"model", "pivot"?, "seed"?, "translations": [{"text", "tokens"?, "token_ids"?,
 *       "score"?, "token_scores"?, "source_tokens"?, "alignments"?, "word_alignments"?}],
 *      "timing_ms"}
 * With "stream": true the reply is server-sent events (stream.h): the text as
 * it is generated, then that same object.
 * The model: "model" when given, else the one for "source" -> "target"
 * (pairs.h: maybe through a pivot, which the reply names), else the
 * default.  "target" also picks a multilingual model's target token.
 * (The router sends a LibreTranslate-shaped body to libretranslate_api.c.)
 * The texts are decoded while the connection waits (translate_job.h): the
 * handler starts the work, finish() builds the reply.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "http/body.h"
#include "handlers.h"
#include "service/server.h"
#include "service/stream.h"
#include "service/detect_source.h"
#include "service/glossaries.h"
#include "service/markup_job.h"
#include "service/result_json.h"
#include "service/translate_job.h"

typedef struct {
    const char  **texts;
    int           n, is_list;
    srv_path      path;
    srv_tr_params tp;               /* tp.dp: the decoding fields, then resolved */
    int           return_tokens, return_scores, stream;
    srv_trjob    *job;
    srv_prefix   *prefix;           /* [n] target prefixes (tp.prefix), or NULL */
    int32_t      *prefix_ids;       /* their ids, owned */
    int           sampling;
    int           html;             /* "format": "html": texts are pages, mk.units are decoded */
    srv_markup    mk;
    srv_lang_guess detected;        /* "source": "auto" (or none, with a target): what was detected */
    int           has_detected;
    int           raw;              /* "raw": a decoder-only model continues the text, no prompt */
    srv_glossary *glossary;         /* "glossary" (glossaries.h), or NULL */
} translate_req;

/* The texts decoded: the texts, or the units of their pages. */
static int n_decoded(const translate_req *t) { return t->html ? t->mk.n_units : t->n; }
static const char *const *decoded_texts(const translate_req *t) { return t->html ? t->mk.units : t->texts; }

/* The path: "model" (with "target" for a multilingual one), or the pair "source" ->
 * "target", the source detected when it is "auto" or not given (detect_source.h). */
static int pick_path(srv_request *req, srv_response *resp, translate_req *t)
{
    const char *source = NULL, *target = NULL;
    if (srv_field_string(req, resp, "source", &source) < 0 || srv_field_string(req, resp, "target", &target) < 0 ||
        srv_field_bool(req, resp, "raw", &t->raw) < 0)
        return -1;
    if (t->raw) {                       /* the model alone: no languages, no prompt */
        srv_model *m = srv_request_model(req, resp);
        if (m && !m->llm)
            return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'raw' continues a text with a decoder-only model; "
                            "model '%s' is an encoder-decoder (%s)", m->id, m->info->architecture);
        t->path = (srv_path){ .n_legs = 1, .model = { m, NULL }, .lang_id = { -1, -1 } };
        return m ? 0 : -1;
    }
    if (json_object_get(req->json, "model") || !target) {
        srv_model *m = srv_request_model(req, resp);
        return m ? srv_path_for_model(m, source, target, &t->path, resp) : -1;
    }
    if (!source || !strcmp(source, "auto")) {
        if (srv_path_for_pair(req->srv, "auto", target, &t->path, resp))     /* an unknown target first */
            return -1;
        if (srv_detect_source(req->srv, decoded_texts(t), n_decoded(t), target, &t->detected, resp))
            return -1;
        t->has_detected = 1;
        source = t->detected.code;
    }
    return srv_path_for_pair(req->srv, source, target, &t->path, resp);
}

/* A seed for a request that samples without one: 53 bits, so that every
 * JSON client reads it back exactly. */
static uint64_t draw_seed(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, GRND_NONBLOCK) != (ssize_t)sizeof x) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec;
    }
    return x & ((1ull << 53) - 1);
}

/* "sampling": an object of the table's "sampling." fields (parse_limits
 * reads them): draw each token.  A seed drawn here, unless one is given. */
static int parse_sampling(srv_request *req, srv_response *resp, translate_req *t)
{
    const char *keys[8];
    int n = 0;
    for (const mt_decode_limit *l = mt_decode_limits; l->name && n < 7; l++)
        if (strncmp(l->name, "sampling.", 9) == 0)
            keys[n++] = l->name + 9;
    keys[n] = NULL;
    json_t *obj;
    int r = srv_field_object(req, resp, "sampling", keys, &obj);
    if (r <= 0)
        return r;
    t->tp.dp.sampling.enabled = t->sampling = 1;
    t->tp.dp.sampling.seed = draw_seed();
    return 1;
}

/* Every field of the engine's table (mt_decode_limits) within its bounds for
 * model m, into tp.dp; an absent one keeps its default. */
static int parse_limits(srv_request *req, srv_response *resp, translate_req *t, const srv_model *m)
{
    for (const mt_decode_limit *l = mt_decode_limits; l->name; l++) {
        char *f = (char *)&t->tp.dp + l->offset;
        double lo, hi, x;
        long long x64;
        int r;
        mt_decode_limit_bounds(l, m->model, &m->sparams, NULL, &lo, &hi);
        if (l->type == MT_LIMIT_FLOAT) {
            if ((r = srv_field_number(req, resp, l->name, lo, hi, l->min_open, &x)) > 0)
                *(float *)f = mt_decode_limit_float(l, x);
        } else if (l->type == MT_LIMIT_INT) {
            r = srv_field_int(req, resp, l->name, (int)lo, (int)hi, (int *)f);
        } else if (l->type == MT_LIMIT_BOOL) {          /* true: 1, false: -1 (0 is the model's default) */
            int on = 0;
            if ((r = srv_field_bool(req, resp, l->name, &on)) > 0)
                *(int *)f = on ? 1 : -1;
        } else if ((r = srv_field_int64(req, resp, l->name, (long long)lo, (long long)hi, &x64)) > 0) {
            *(uint64_t *)f = (uint64_t)x64;
        }
        if (r < 0)
            return -1;
    }
    return 0;
}

/* One text's prefix: a string, or an array of token ids (not pad, not </s>). */
static int parse_prefix_one(srv_response *resp, const srv_model *m, json_t *v, const char *where, srv_prefix *out,
                            int32_t *ids, int *used)
{
    if (json_is_string(v)) {
        out->text = json_string_value(v);
        return 0;
    }
    if (!json_is_array(v))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "%s must be a string or an array of token ids", where);
    size_t n = json_array_size(v);
    if ((int)n > m->sparams.max_tgt_len)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "%s has %zu ids; the decoder holds %d positions", where, n,
                        m->sparams.max_tgt_len);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        long long x = json_is_integer(e) ? json_integer_value(e) : -1;
        if (x < 0 || x >= m->info->vocab_size || x == m->info->pad_id || x == m->info->eos_id)
            return srv_fail(resp, SRV_E_INVALID_FIELD, "%s: entries must be token ids in [0, %d), not <pad> (%d) "
                            "nor </s> (%d)", where, m->info->vocab_size, (int)m->info->pad_id, (int)m->info->eos_id);
        ids[*used + (int)i] = (int32_t)x;
    }
    out->ids = ids + *used;
    out->n_ids = (int)n;
    *used += (int)n;
    return 0;
}

/* "target_prefix": a string or ids for a single text; for a list of texts a
 * list of those (null: no prefix for that text). */
static int parse_prefix(srv_request *req, srv_response *resp, translate_req *t, const srv_model *m)
{
    json_t *v = json_object_get(req->json, "target_prefix");
    if (!v || json_is_null(v))
        return 0;
    size_t total = 0;
    json_t *each[1] = {v};
    json_t *list = t->is_list ? v : NULL;
    if (t->is_list && (!json_is_array(v) || json_array_size(v) != (size_t)t->n))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'target_prefix' must be a list of %d entries (one per "
                        "text: a string, a list of token ids, or null)", t->n);
    for (int i = 0; i < t->n; i++) {
        json_t *e = list ? json_array_get(list, (size_t)i) : each[0];
        total += json_is_array(e) ? json_array_size(e) : 0;
    }
    t->prefix = calloc((size_t)t->n, sizeof *t->prefix);
    t->prefix_ids = malloc(sizeof(int32_t) * (total + 1));
    if (!t->prefix || !t->prefix_ids)
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    int used = 0;
    for (int i = 0; i < t->n; i++) {
        json_t *e = list ? json_array_get(list, (size_t)i) : each[0];
        char where[64];
        snprintf(where, sizeof where, list ? "field 'target_prefix[%d]'" : "field 'target_prefix'", i);
        if (list && json_is_null(e))
            continue;
        if (parse_prefix_one(resp, m, e, where, &t->prefix[i], t->prefix_ids, &used) < 0)
            return -1;
    }
    if (json_is_true(json_object_get(req->json, "split")))
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'split' cannot be true with 'target_prefix' (a prefixed "
                        "text is one sentence)");
    t->tp.prefix = t->prefix;
    return 0;
}

/* Token scores and alignments. */
static int parse_features(srv_request *req, srv_response *resp, translate_req *t)
{
    mt_decode_params *f = &t->tp.dp;
    if (srv_field_bool(req, resp, "return_token_scores", &f->token_scores) < 0 ||
        srv_field_bool(req, resp, "return_alignments", &f->alignment.enabled) < 0)
        return -1;
    if (f->alignment.enabled && t->path.n_legs == 2)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'return_alignments' is not available through a pivot "
                        "(%s): the source would be the pivot's text; ask a direct model", t->path.pivot);
    return 0;
}

/* "glossary": terms to keep (glossaries.h); "cache": false to decode every
 * sentence again.  Sampling without a seed is never cached (its draws are
 * the point). */
static int parse_terms(srv_request *req, srv_response *resp, translate_req *t)
{
    int cache = 1, shortlist = 1;
    if (srv_request_glossary(req, resp, &t->glossary) < 0 || srv_field_bool(req, resp, "cache", &cache) < 0 ||
        srv_field_bool(req, resp, "shortlist", &shortlist) < 0)
        return -1;
    t->tp.no_shortlist = !shortlist;
    json_t *sampling = json_object_get(req->json, "sampling");
    t->tp.glossary = t->glossary;
    t->tp.cache = cache && (!t->sampling || json_object_get(sampling, "seed"));
    return 0;
}

/* "format": "text" (the default) or "html": the pages' units are translated
 * with word alignments, which put the inline tags back (markup_job.h).  The
 * reply is the pages; per-token fields would be the units', so they are refused. */
static int parse_format(srv_request *req, srv_response *resp, translate_req *t)
{
    const char *format = "text";
    if (srv_field_string(req, resp, "format", &format) < 0)
        return -1;
    if (strcmp(format, "text") != 0 && strcmp(format, "html") != 0)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "field 'format' must be \"text\" or \"html\", not \"%s\"", format);
    if (!(t->html = strcmp(format, "html") == 0))
        return 0;
    static const char *const per_token[] = { "stream", "return_tokens", "return_scores", "return_token_scores",
                                             "return_alignments", "target_prefix", "sampling" };
    for (size_t i = 0; i < sizeof per_token / sizeof per_token[0]; i++) {
        json_t *v = json_object_get(req->json, per_token[i]);
        if (v && !json_is_null(v) && !json_is_false(v))
            return srv_fail(resp, SRV_E_INVALID_FIELD, "field '%s' is not available with format html", per_token[i]);
    }
    return srv_markup_parse(&t->mk, t->texts, t->n, req->srv->opts.max_html_depth, resp);
}

/* The fields as given (the decoding ones over mt_decode_default_params), then
 * resolved for the last leg's model: the defaults and the rules that join fields. */
static int parse(srv_request *req, srv_response *resp, translate_req *t)
{
    if (srv_field_texts(req, resp, "text", &t->texts, &t->n, &t->is_list) < 0)
        return -1;
    if (parse_format(req, resp, t) < 0 || pick_path(req, resp, t) < 0)
        return -1;
    if (t->html && t->path.n_legs == 2)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "format html is not available through a pivot (%s): the tags "
                        "follow the word alignments of one model; ask a direct model", t->path.pivot);
    const srv_model *m = t->path.model[t->path.n_legs - 1];
    if (t->html && m->llm)
        return srv_fail(resp, SRV_E_INVALID_FIELD, "format html puts the tags back along word alignments, which "
                        "decoder-only models (model '%s') do not give", m->id);
    t->tp = (srv_tr_params){ .dp = mt_decode_default_params(), .split = !t->raw, .raw = t->raw, .placeholders = 1 };
    int fold = 1;
    t->tp.dp.alignment.enabled = t->html;      /* the tags follow the words */
    if (srv_field_bool(req, resp, "return_tokens", &t->return_tokens) < 0 ||
        srv_field_bool(req, resp, "return_scores", &t->return_scores) < 0 ||
        srv_field_bool(req, resp, "split", &t->tp.split) < 0 ||
        srv_field_bool(req, resp, "stream", &t->stream) < 0 ||
        srv_field_bool(req, resp, "placeholders", &t->tp.placeholders) < 0 ||
        srv_field_bool(req, resp, "fold_title_case", &fold) < 0)
        return -1;
    t->tp.keep_title_case = !fold;
    if (parse_sampling(req, resp, t) < 0 || parse_limits(req, resp, t, m) < 0 ||
        parse_prefix(req, resp, t, m) < 0 || parse_features(req, resp, t) < 0 || parse_terms(req, resp, t) < 0)
        return -1;
    return srv_translate_resolve(&t->path, &t->tp, resp);
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

/* A float as JSON: -inf (an id every rule banned) as null. */
static json_t *real_json(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* The source's pieces, which the alignments' source indices point into. */
static json_t *source_tokens_json(const srv_model *m, const srv_tr_result *r)
{
    json_t *src = json_array();
    for (int k = 0; k < r->n_src_ids; k++) {
        const char *piece = mt_tokenizer_piece(m->tok, r->src_ids[k]);
        json_array_append_new(src, json_string(piece ? piece : ""));
    }
    return src;
}

static json_t *translation_json(const translate_req *t, const srv_tr_result *r)
{
    json_t *o = json_pack("{s:s}", "text", r->alts[0]);
    if (o && (t->return_tokens || t->tp.dp.token_scores || t->tp.dp.alignment.enabled)) {
        json_t *ids;
        json_object_set_new(o, "tokens", tokens_json(srv_trjob_model(t->job), r, &ids));
        json_object_set_new(o, "token_ids", ids);
    }
    if (o && t->return_scores)
        json_object_set_new(o, "score", real_json(r->score));
    if (o && t->tp.dp.alignment.enabled)
        json_object_set_new(o, "source_tokens", source_tokens_json(srv_trjob_model(t->job), r));
    if (o)
        srv_result_features_json(o, r, t->tp.dp.token_scores, t->tp.dp.alignment.enabled);
    return o;
}

static void translate_free(void *p)
{
    translate_req *t = p;
    srv_trjob_free(t->job);
    free(t->texts);
    free(t->prefix);
    free(t->prefix_ids);
    srv_glossary_free(t->glossary);
    srv_markup_free(&t->mk);
    free(t);
}

/* The translations: one object per text, or per page. */
static json_t *translations_json(translate_req *t, const srv_tr_result *results, srv_response *resp)
{
    json_t *list = json_array();
    if (!t->html) {
        for (int i = 0; i < t->n; i++)
            json_array_append_new(list, translation_json(t, &results[i]));
        return list;
    }
    char **pages = calloc((size_t)t->n + 1, sizeof *pages);
    if (!pages || srv_markup_render(&t->mk, results, pages, resp)) {
        free(pages);
        json_decref(list);
        return pages ? NULL : (srv_fail(resp, SRV_E_INTERNAL, "out of memory"), NULL);
    }
    for (int i = 0; i < t->n; i++) {
        json_array_append_new(list, json_pack("{s:s}", "text", pages[i]));
        free(pages[i]);
    }
    free(pages);
    return list;
}

/* The reply, after decoding, on an HTTP thread. */
static void build_reply(translate_req *t, srv_request *req, srv_response *resp)
{
    int n = n_decoded(t);
    srv_tr_result *results = calloc((size_t)n + 1, sizeof *results);
    json_t *list = NULL;
    if (!results) {
        srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    } else if ((n == 0 || srv_translate_results(t->job, results, resp) == 0) &&
               (list = translations_json(t, results, resp)) == NULL) {
        srv_tr_results_free(results, n);
    } else if (list) {
        const srv_model *m = t->path.model[t->path.n_legs - 1];
        json_t *reply = json_pack("{s:s,s:o,s:f}", "model", m->id, "translations", list,
                                  "timing_ms", (srv_now() - req->t_start) * 1e3);
        if (t->sampling)
            json_object_set_new(reply, "seed", json_integer((json_int_t)t->tp.dp.sampling.seed));
        if (t->has_detected)
            json_object_set_new(reply, "detected_language", json_pack("{s:s,s:f}", "language", t->detected.code,
                                                                      "confidence", round(t->detected.confidence)));
        if (t->path.n_legs == 2)
            json_object_set_new(reply, "pivot", json_pack("{s:s,s:[s,s]}", "language", t->path.pivot, "models",
                                                          t->path.model[0]->id, t->path.model[1]->id));
        srv_reply_json(resp, 200, reply);
        srv_tr_results_free(results, n);
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

static void translate_finish_now(srv_request *req, srv_response *resp, translate_req *t)
{
    build_reply(t, req, resp);
    translate_free(t);
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
                             .per_token = t->tp.dp.beam_size == 1 && mt_tokenizer_decode_appends(m->tok),
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
    if (n_decoded(t) == 0) {            /* pages without a word: nothing to decode */
        translate_finish_now(req, resp, t);
        return;
    }
    if (srv_translate_start(req, resp, &t->path, decoded_texts(t), n_decoded(t), &t->tp, &t->job, translate_finish,
                            t, translate_free, NULL))
        translate_free(t);
}
