/* routes: the routing table and the checks every request goes through. */
#include "routes.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/metrics.h"
#include "http/body.h"
#include "service/admin.h"
#include "service/server.h"
#include "common/workers.h"
#include "util/utf8.h"

enum {
    ROUTE_BODY    = 1,   /* POST with a JSON (or form) body */
    ROUTE_PUBLIC  = 2,   /* no API key needed */
    ROUTE_LOADING = 4,   /* answers while models load */
    ROUTE_LT      = 8,   /* LibreTranslate's path: its error shape {"error": "..."} */
    ROUTE_WORKER  = 16,  /* computes: the router runs it on a worker thread */
    ROUTE_PREFIX  = 32,  /* path is a prefix: "/web/" matches /web/app.js */
    ROUTE_ASYNC   = 64,  /* starts work that resumes the request (handlers.h: pending) */
    ROUTE_BOTH    = 128, /* LibreTranslate's requests and ours: the body says whose (request_shape) */
    ROUTE_LIMITED = 256, /* computes for its client: counted by the rate limits */
    ROUTE_DEEPL   = 512, /* DeepL's API: its error shape {"message": "..."}, its key header */
    ROUTE_ADMIN   = 1024,/* the admin API: --admin-key's bearer token, not the API keys */
    ROUTE_OPENAI  = 2048,/* the OpenAI-compatible API: its error shape (errors.h) */
};

typedef struct {
    const char *method;
    const char *path;
    srv_handler handler;
    srv_handler lt_handler;     /* for a LibreTranslate-shaped body, if not NULL */
    int         flags;
} srv_route;

static const srv_route routes[] = {
    { "POST", "/translate",    srv_handle_translate,  srv_handle_lt_translate, ROUTE_BODY | ROUTE_ASYNC | ROUTE_BOTH | ROUTE_LIMITED },
    { "POST", "/attention",    srv_handle_attention,  NULL, ROUTE_BODY | ROUTE_WORKER | ROUTE_LIMITED },
    { "POST", "/score",        srv_handle_score,      NULL, ROUTE_BODY | ROUTE_WORKER | ROUTE_LIMITED },
    { "POST", "/tokenize",     srv_handle_tokenize,   NULL, ROUTE_BODY },
    { "POST", "/detokenize",   srv_handle_detokenize, NULL, ROUTE_BODY },
    { "POST", "/detect",       srv_handle_detect,     NULL, ROUTE_BODY | ROUTE_BOTH | ROUTE_LT | ROUTE_LIMITED },  /* LibreTranslate's, and ours */
    { "GET",  "/languages",    srv_handle_languages,  NULL, ROUTE_LT | ROUTE_PUBLIC },  /* as LibreTranslate's */
    { "GET",  "/frontend/settings", srv_handle_frontend_settings, NULL, ROUTE_LT | ROUTE_PUBLIC },  /* as LibreTranslate's */
    { "GET",  "/spec",         srv_handle_lt_spec,    NULL, ROUTE_LT | ROUTE_PUBLIC | ROUTE_LOADING },  /* LibreTranslate's */
    { "POST", "/suggest",      srv_handle_lt_suggest, NULL, ROUTE_LT | ROUTE_PUBLIC | ROUTE_LOADING },  /* its 403 */
    { "POST", "/translate_file", srv_handle_translate_file, NULL, ROUTE_BODY | ROUTE_ASYNC | ROUTE_LT | ROUTE_LIMITED },  /* as LibreTranslate's */
    { "GET",  "/translate_file/", srv_handle_file_status, NULL, ROUTE_PREFIX },
    { "DELETE", "/translate_file/", srv_handle_file_status, NULL, ROUTE_PREFIX },
    { "GET",  "/download_file/", srv_handle_download_file, NULL, ROUTE_PUBLIC | ROUTE_PREFIX | ROUTE_LT },
    { "POST", "/v2/translate", srv_handle_deepl_translate, NULL, ROUTE_BODY | ROUTE_ASYNC | ROUTE_LIMITED | ROUTE_DEEPL },
    { "GET",  "/v2/languages", srv_handle_deepl_languages, NULL, ROUTE_DEEPL },
    { "POST", "/v2/languages", srv_handle_deepl_languages, NULL, ROUTE_BODY | ROUTE_DEEPL },
    { "GET",  "/v2/usage",     srv_handle_deepl_usage, NULL, ROUTE_DEEPL },
    { "POST", "/v2/document",  srv_handle_deepl_document, NULL, ROUTE_BODY | ROUTE_LIMITED | ROUTE_DEEPL },
    { "POST", "/v2/document/", srv_handle_deepl_document_status, NULL, ROUTE_BODY | ROUTE_DEEPL | ROUTE_PREFIX },
    { "POST", "/v2/glossaries", srv_handle_deepl_glossaries, NULL, ROUTE_BODY | ROUTE_DEEPL },
    { "GET",  "/v2/glossaries", srv_handle_deepl_glossaries, NULL, ROUTE_DEEPL },
    { "GET",  "/v2/glossaries/", srv_handle_deepl_glossaries, NULL, ROUTE_DEEPL | ROUTE_PREFIX },
    { "DELETE", "/v2/glossaries/", srv_handle_deepl_glossaries, NULL, ROUTE_DEEPL | ROUTE_PREFIX },
    { "GET",  "/v2/glossary-language-pairs", srv_handle_deepl_glossary_pairs, NULL, ROUTE_DEEPL },
    { "POST", "/v3/glossaries", srv_handle_deepl_glossaries_v3, NULL, ROUTE_BODY | ROUTE_DEEPL },
    { "GET",  "/v3/glossaries", srv_handle_deepl_glossaries_v3, NULL, ROUTE_DEEPL },
    { "GET",  "/v3/glossaries/", srv_handle_deepl_glossaries_v3, NULL, ROUTE_DEEPL | ROUTE_PREFIX },
    { "DELETE", "/v3/glossaries/", srv_handle_deepl_glossaries_v3, NULL, ROUTE_DEEPL | ROUTE_PREFIX },
    { "PATCH", "/v3/glossaries/", srv_handle_deepl_glossaries_v3, NULL, ROUTE_BODY | ROUTE_DEEPL | ROUTE_PREFIX },
    { "PUT",  "/v3/glossaries/", srv_handle_deepl_glossaries_v3, NULL, ROUTE_BODY | ROUTE_DEEPL | ROUTE_PREFIX },
    { "POST", "/v2/usage",     srv_handle_deepl_usage, NULL, ROUTE_BODY | ROUTE_DEEPL },
    { "GET",  "/models",       srv_handle_models,     NULL, 0 },
    { "POST", "/v1/chat/completions", srv_handle_oai_chat, NULL, ROUTE_BODY | ROUTE_ASYNC | ROUTE_LIMITED | ROUTE_OPENAI },
    { "POST", "/v1/completions", srv_handle_oai_completions, NULL, ROUTE_BODY | ROUTE_ASYNC | ROUTE_LIMITED | ROUTE_OPENAI },
    { "GET",  "/v1/models",    srv_handle_oai_models, NULL, ROUTE_OPENAI },
    { "GET",  "/v1/models/",   srv_handle_oai_models, NULL, ROUTE_OPENAI | ROUTE_PREFIX },
    { "POST", "/admin/models", srv_handle_admin_models, NULL, ROUTE_BODY | ROUTE_ADMIN },
    { "GET",  "/admin/models", srv_handle_admin_models, NULL, ROUTE_ADMIN },
    { "DELETE", "/admin/models/", srv_handle_admin_model, NULL, ROUTE_ADMIN | ROUTE_PREFIX },
    { "GET",  "/health",       srv_handle_health,     NULL, ROUTE_PUBLIC | ROUTE_LOADING },
    { "GET",  "/metrics",      srv_handle_metrics,    NULL, ROUTE_LOADING },
    { "GET",  "/openapi.json", srv_handle_openapi,    NULL, ROUTE_LOADING },
    { "GET",  "/",             srv_handle_web,        NULL, ROUTE_PUBLIC | ROUTE_LOADING },
    { "GET",  "/web/",         srv_handle_web,        NULL, ROUTE_PUBLIC | ROUTE_LOADING | ROUTE_PREFIX },
};
#define N_ROUTES ((int)(sizeof routes / sizeof routes[0]))

static int path_matches(const srv_route *r, const char *path)
{
    if (r->flags & ROUTE_PREFIX)
        return strncmp(r->path, path, strlen(r->path)) == 0;
    return strcmp(r->path, path) == 0;
}

static const srv_route *find_route(const char *method, const char *path)
{
    if (strcmp(method, "HEAD") == 0)
        method = "GET";
    for (int i = 0; i < N_ROUTES; i++)
        if (path_matches(&routes[i], path) && strcmp(routes[i].method, method) == 0)
            return &routes[i];
    return NULL;
}

/* "GET, HEAD, OPTIONS" for a known path; 0 if the path is unknown. */
static int allowed_methods(const char *path, char *out, size_t len)
{
    int n = 0;
    out[0] = 0;
    for (int i = 0; i < N_ROUTES; i++) {
        if (!path_matches(&routes[i], path))
            continue;
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", routes[i].method,
                 strcmp(routes[i].method, "GET") == 0 ? ", HEAD, " : ", ");
        n++;
    }
    if (n) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "OPTIONS");
    }
    return n;
}

const char *srv_route_label(void *ctx, const char *path)
{
    (void)ctx;
    for (int i = 0; i < N_ROUTES; i++)
        if (path_matches(&routes[i], path))
            return routes[i].path;
    return "other";
}

int srv_route_paths(const char **paths, int max)
{
    int n = 0;
    for (int i = 0; i < N_ROUTES && n < max; i++) {
        int seen = 0;
        for (int j = 0; j < n; j++)
            seen |= strcmp(paths[j], routes[i].path) == 0;
        if (!seen)
            paths[n++] = routes[i].path;
    }
    return n;
}

/* ---- API key ------------------------------------------------------------------ */

/* LibreTranslate's api_key field, or NULL. */
static const char *body_key(const srv_request *req)
{
    json_t *field = json_is_object(req->json) ? json_object_get(req->json, "api_key") : NULL;
    return json_is_string(field) ? json_string_value(field) : NULL;
}

/* The Authorization header's key: a bearer token, or DeepL's
 * "DeepL-Auth-Key KEY"; NULL when neither. */
static const char *bearer(const srv_request *req)
{
    static const char *const schemes[] = { "Bearer ", "DeepL-Auth-Key " };
    const char *h = req->authorization;
    for (int i = 0; h && i < 2; i++) {
        size_t n = strlen(schemes[i]);
        if (strncasecmp(h, schemes[i], n) != 0)
            continue;
        for (h += n; *h == ' ';)
            h++;
        return h;
    }
    return NULL;
}

/* 1 if the request may use the route; *key: the index among the server's
 * keys of the one it presents (the bearer token, else LibreTranslate's
 * api_key field), -1 when none is valid or none is required. */
static int authorized(const srv_request *req, const srv_route *route, int *key)
{
    const srv_api_keys *keys = &req->srv->keys;
    const char *b = bearer(req), *f = body_key(req);
    *key = -1;
    if (keys->n && b)
        *key = srv_api_keys_find(keys, b);
    if (keys->n && *key < 0 && f)
        *key = srv_api_keys_find(keys, f);
    return keys->n == 0 || (route->flags & ROUTE_PUBLIC) || *key >= 0;
}

/* 503 + Retry-After before the first model is served: loading, or (serve's
 * --model org/name) downloading. */
static int not_ready(srv_server *srv, srv_response *resp)
{
    srv_admin_pending p[SRV_ADMIN_MAX_PENDING];
    int n = srv->admin ? srv_admin_pending_list(srv->admin, p, SRV_ADMIN_MAX_PENDING) : 0;
    for (int i = 0; i < n; i++)
        if (p[i].phase == SRV_ADMIN_DOWNLOADING) {
            resp->retry_after = 5;
            return srv_fail(resp, SRV_E_LOADING, "no model is served yet: model '%s' is downloading (%s: %s, "
                            "%.1f of %.1f MB; GET /health); retry shortly", p[i].id, p[i].name, p[i].file,
                            (double)p[i].done / 1e6, (double)p[i].total / 1e6);
        }
    resp->retry_after = 2;
    return srv_fail(resp, SRV_E_LOADING, "the models are still loading; retry shortly");
}

/* The admin API: 0 when the request presents --admin-key as its bearer
 * token (compared in full whatever matches); else failed: 403 while the
 * admin API is off, 401 for a wrong or missing key. */
static int admin_check(const srv_request *req, srv_response *resp)
{
    const char *want = req->srv->opts.admin_key, *given = bearer(req);
    if (!want[0])
        return srv_fail(resp, SRV_E_FORBIDDEN, "the admin API is off: start mtserve with --admin-key KEY");
    size_t n = strlen(want), g = given ? strlen(given) : 0;
    unsigned diff = g != n;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)(i < g ? given[i] : 0);
    if (!given || diff)
        return srv_fail(resp, SRV_E_UNAUTHORIZED, "missing or wrong admin key (Authorization: Bearer ADMIN_KEY)");
    return 0;
}

/* LibreTranslate (its access_check) refuses a wrong key with 403 "Invalid API
 * key" (errors.c's table gives SRV_E_UNAUTHORIZED that status in its shape)
 * and a missing one with 400; our API: 401 either way. */
static int unauthorized(const srv_request *req, srv_response *resp)
{
    const char *given = body_key(req);
    if (resp->shape == SRV_SHAPE_DEEPL)     /* DeepL: 403 (errors.c), its client's AuthorizationError */
        return srv_fail(resp, SRV_E_UNAUTHORIZED, "Authorization failure, check auth_key "
                        "(Authorization: DeepL-Auth-Key KEY)");
    if (!req->lt)
        return srv_fail(resp, SRV_E_UNAUTHORIZED, "missing or wrong API key (Authorization: Bearer KEY)");
    if ((given && given[0]) || req->authorization)
        return srv_fail(resp, SRV_E_UNAUTHORIZED, "Invalid API key");
    return srv_fail(resp, SRV_E_BAD_REQUEST, "Please contact the server operator to get an API key");
}

/* ---- whose request: a client, for fairness and rate limits ------------------------ */

/* req->client: "key:N" for the N-th key the request presents, else
 * "ip:ADDR" (its address, from behind a trusted proxy as http.c read it). */
static void identify(srv_request *req, int key)
{
    req->key = key;
    if (key >= 0)
        snprintf(req->client, sizeof req->client, "key:%d", key);
    else
        snprintf(req->client, sizeof req->client, "ip:%s", req->client_addr ? req->client_addr : "");
}

/* Code points of a text field: a string, or an array of strings. */
static long field_chars(const json_t *v)
{
    long n = 0;
    if (json_is_string(v)) {
        n = mt_utf8_count(json_string_value(v), json_string_length(v));
    } else if (json_is_array(v)) {
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e)
            n += json_is_string(e) ? field_chars(e) : 0;
    }
    return n;
}

/* The request's characters of text: its "q" (LibreTranslate's) or "text";
 * OpenAI's "prompt", or the contents of its "messages" (strings or text parts). */
static long request_chars(const srv_request *req)
{
    if (!json_is_object(req->json))
        return 0;
    const json_t *msgs = json_object_get(req->json, "messages"), *m;
    size_t i;
    long n = field_chars(json_object_get(req->json, "prompt"));
    json_array_foreach(msgs, i, m) {
        const json_t *c = json_object_get(m, "content"), *part;
        size_t k;
        n += field_chars(c);
        json_array_foreach(c, k, part)
            n += field_chars(json_object_get(part, "text"));
    }
    if (json_is_array(msgs) || json_object_get(req->json, "prompt"))
        return n;
    const json_t *q = json_object_get(req->json, "q");
    return field_chars(q ? q : json_object_get(req->json, "text"));
}

/* over_limit's failure in LibreTranslate's words: its limiter's 429 is
 * `_("Slowdown:") + " " + str(e.description)`, the description flask-limiter's
 * limit ("10 per 1 minute"); a text over its char_limit 400 "Invalid request:
 * request (%(size)s) exceeds text limit (%(limit)s)" (errors.c: 400 in its shape). */
static int lt_over_limit(srv_response *resp, srv_limit_verdict v, const srv_limit *lim, long chars, int retry)
{
    if (v == SRV_LIMIT_NEVER)
        return srv_fail(resp, SRV_E_INPUT_TOO_LONG, "Invalid request: request (%ld) exceeds text limit (%ld)", chars,
                        lim->chars_per_min);
    srv_metrics_rate_limited(v == SRV_LIMIT_CHARS);
    resp->retry_after = retry;
    if (v == SRV_LIMIT_CHARS)
        return srv_fail(resp, SRV_E_RATE_LIMITED, "Slowdown: %ld characters per 1 minute", lim->chars_per_min);
    return srv_fail(resp, SRV_E_RATE_LIMITED, "Slowdown: %ld per 1 minute", lim->req_per_min);
}

/* The rate limits of the request's client (the key's own, else the
 * server's): 0 when it may go on, else failed with 429 (413 for more
 * characters than a whole minute allows). */
static int over_limit(srv_request *req, srv_response *resp, int key)
{
    srv_server *srv = req->srv;
    if (!srv->limits)
        return 0;
    srv_limit lim = { srv->opts.req_limit, srv->opts.char_limit };
    if (key >= 0 && srv->keys.v[key].req_limit >= 0)
        lim.req_per_min = srv->keys.v[key].req_limit;
    if (key >= 0 && srv->keys.v[key].char_limit >= 0)
        lim.chars_per_min = srv->keys.v[key].char_limit;
    long chars = request_chars(req);
    int retry = 0;
    srv_limit_verdict v = srv_shared_limit_take(srv->shared, req->client, &lim, chars, srv_now(), &retry);
    if (v != SRV_LIMIT_OK && resp->shape == SRV_SHAPE_LT)
        return lt_over_limit(resp, v, &lim, chars, retry);
    switch (v) {
    case SRV_LIMIT_OK:
        return 0;
    case SRV_LIMIT_NEVER:
        return srv_fail(resp, SRV_E_INPUT_TOO_LONG, "the text has %ld characters, over this client's limit of "
                        "%ld per minute", chars, lim.chars_per_min);
    case SRV_LIMIT_REQUESTS:
        srv_metrics_rate_limited(0);
        resp->retry_after = retry;
        return srv_fail(resp, SRV_E_RATE_LIMITED, "over this client's limit of %ld requests per minute; retry "
                        "after %d s", lim.req_per_min, retry);
    case SRV_LIMIT_CHARS:
        srv_metrics_rate_limited(1);
        resp->retry_after = retry;
        return srv_fail(resp, SRV_E_RATE_LIMITED, "over this client's limit of %ld characters per minute (this "
                        "request: %ld); retry after %d s", lim.chars_per_min, chars, retry);
    }
    return 0;
}

/* The request's characters counted against its key's usage (usage.h): 0, or
 * failed with 456 in DeepL's shape (429 in the others) past the key's
 * char-quota.  Given back by render() when the request fails. */
static int take_usage(srv_request *req, srv_response *resp, int key)
{
    srv_server *srv = req->srv;
    long chars = request_chars(req);
    if (!srv->usage || chars == 0)
        return 0;
    if (srv_shared_usage_take(srv->shared, key, chars))
        return srv_fail(resp, SRV_E_QUOTA_EXCEEDED, "Quota exceeded: this key may have %ld characters translated "
                        "in all, %ld are used and this request has %ld", srv_usage_quota(srv->usage, key),
                        srv_shared_usage_known(srv->shared, key), chars);
    req->billed = chars;
    req->billed_key = key;
    return 0;
}

/* ---- whose request: LibreTranslate's or ours ------------------------------------- */

/* LibreTranslate's paths that we do not serve (app.py: its Swagger UI at
 * /docs, its web page's /js/app.js and /static/ files): whoever asks there is
 * a LibreTranslate client, answered 404 in its shape.  A '/' at the end: a prefix. */
static const char *const lt_unserved[] = { "/docs", "/docs/", "/js/app.js", "/static/" };

/* The flags of every route on path (0: an unknown path; ROUTE_LT alone: one
 * of LibreTranslate's that we do not serve). */
static int path_flags(const char *path)
{
    int flags = 0;
    for (int i = 0; i < N_ROUTES; i++)
        if (path_matches(&routes[i], path))
            flags |= routes[i].flags;
    for (size_t i = 0; !flags && i < sizeof lt_unserved / sizeof *lt_unserved; i++) {
        size_t n = strlen(lt_unserved[i]);
        if (lt_unserved[i][n - 1] == '/' ? strncmp(lt_unserved[i], path, n) == 0 : strcmp(lt_unserved[i], path) == 0)
            flags = ROUTE_LT;
    }
    return flags;
}

/* 1 when text (a body that did not parse, or the first bytes of one) holds
 * the JSON key "key": the quoted name, then a colon. */
static int mentions_key(const char *text, size_t len, const char *key)
{
    char quoted[16];
    size_t n = (size_t)snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *p = text, *end = text + len;
    while (p && (p = memmem(p, (size_t)(end - p), quoted, n))) {
        p += n;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
            p++;
        if (p < end && *p == ':')
            return 1;
    }
    return 0;
}

/* Whose the body is: 1 LibreTranslate's (a form, or "q" without our "text"),
 * 0 ours ("text"), -1 it does not say (no body, neither key).  A body that
 * did not parse (or was not read) is searched for the keys as text. */
static int body_owner(const srv_request *req)
{
    int q, text;
    if (req->form)
        return 1;
    if (json_is_object(req->json)) {
        q = json_object_get(req->json, "q") != NULL;
        text = json_object_get(req->json, "text") != NULL;
    } else if (req->body_len == 0 && json_is_object(req->query)) {     /* the query string's fields */
        q = json_object_get(req->query, "q") != NULL;
        text = json_object_get(req->query, "text") != NULL;
    } else {
        q = mentions_key(req->body, req->body_len, "q");
        text = mentions_key(req->body, req->body_len, "text");
    }
    if (text || q)
        return !text;
    return srv_body_is_form(req) ? 1 : -1;
}

/* The request's shape, decided once, before any check can fail: it picks the
 * handler (route.lt_handler) and the error shape.  DeepL's paths are DeepL's
 * and LibreTranslate's LibreTranslate's; on a path both LibreTranslate and we
 * serve the body decides, and when it cannot (no body, a body without "q" or
 * "text") the path's default does: /detect is LibreTranslate's, /translate ours. */
static srv_shape request_shape(const srv_request *req)
{
    int flags = path_flags(req->path);
    if (flags & ROUTE_DEEPL)
        return SRV_SHAPE_DEEPL;
    if ((flags & ROUTE_OPENAI) || strncmp(req->path, "/v1/", 4) == 0)
        return SRV_SHAPE_OPENAI;
    if (!(flags & ROUTE_BOTH))
        return (flags & ROUTE_LT) ? SRV_SHAPE_LT : SRV_SHAPE_OURS;
    int owner = body_owner(req);
    return owner > 0 || (owner < 0 && (flags & ROUTE_LT)) ? SRV_SHAPE_LT : SRV_SHAPE_OURS;
}

size_t srv_route_max_body(void *ctx, const char *path)
{
    const srv_server *srv = ctx;
    size_t form = 64 << 10;             /* the other fields and the part headers around the file */
    if ((strcmp(path, "/translate_file") == 0 || strcmp(path, "/v2/document") == 0) &&
        srv->opts.max_file_bytes + form > srv->opts.max_body)
        return srv->opts.max_file_bytes + form;
    return srv->opts.max_body;
}

int srv_route_error_shape(void *ctx, const srv_request *req)
{
    (void)ctx;
    return request_shape(req);
}

/* ---- dispatch ------------------------------------------------------------------- */

/* The query string's arguments fill the fields the body does not have (as
 * LibreTranslate's Flask reads request.values, and DeepL's GET requests send
 * theirs); a request with no body takes them as a form's (strings).  A
 * LibreTranslate form's fields give way to the query's: its translate(),
 * detect() and suggest() read `request.values.get(...)`, werkzeug's
 * CombinedMultiDict of the query's arguments, then the form's (translate_file()
 * reads `request.form` alone: there the form's fields stay first). */
static int merge_query(srv_request *req, srv_response *resp)
{
    if (req->query_invalid)
        return srv_fail(resp, SRV_E_INVALID_UTF8, "the query string is not valid UTF-8");
    if (!req->query)
        return 0;
    if (!req->json) {
        req->json = json_incref(req->query);
        req->form = 1;
        return 0;
    }
    if (!json_is_object(req->json))
        return 0;
    const char *name;
    json_t *v;
    int query_first = req->lt && req->form && strcmp(req->path, "/translate_file") != 0;
    json_object_foreach(req->query, name, v)
        if ((query_first || !json_object_get(req->json, name)) && json_object_set(req->json, name, v))
            return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    return 0;
}

/* The checks in front of a handler; 0 when it may run.  body: how parsing
 * the body went (routes with a body). */
static int admit(const srv_route *route, srv_request *req, srv_response *resp, const srv_response *body)
{
    int body_ok = body->error == SRV_OK;
    if (!body_ok && req->body_len == 0 && (req->lt || resp->shape == SRV_SHAPE_DEEPL || req->query)) {
        /* LibreTranslate and DeepL read no body as no fields (the handler names the one
         * missing); a query string's fields stand for a body */
        json_decref(req->json);
        req->json = NULL;
        body_ok = 1;
    }
    int key;
    if (merge_query(req, resp))
        return -1;
    if (body_ok && !req->json && (route->flags & ROUTE_BODY) && !(req->json = json_object()))
        return srv_fail(resp, SRV_E_INTERNAL, "out of memory");
    if ((route->flags & ROUTE_ADMIN) && admin_check(req, resp))
        return -1;
    /* the keys as one table: SIGHUP swaps it under the write side (server.h) */
    pthread_rwlock_rdlock(&req->srv->reload_lock);
    int ok = (route->flags & ROUTE_ADMIN) || authorized(req, route, &key);
    if (!ok) {
        pthread_rwlock_unlock(&req->srv->reload_lock);
        return unauthorized(req, resp);
    }
    if (route->flags & ROUTE_ADMIN)
        key = -1;
    identify(req, key);
    if (!atomic_load(&req->srv->ready) && !(route->flags & ROUTE_LOADING)) {
        pthread_rwlock_unlock(&req->srv->reload_lock);
        return not_ready(req->srv, resp);
    }
    int limited = (route->flags & ROUTE_LIMITED) && over_limit(req, resp, key);
    pthread_rwlock_unlock(&req->srv->reload_lock);
    if (limited)
        return -1;
    if (!body_ok)
        return srv_fail(resp, body->error, "%s", body->message);
    if ((route->flags & ROUTE_LIMITED) && take_usage(req, resp, key))
        return -1;
    return 0;
}

/* Renders a recorded error; a handler that set nothing is our bug.  A failed
 * request's characters are no longer counted as used. */
static void render(srv_request *req, srv_response *resp)
{
    if (resp->error == SRV_OK && resp->status == 0)
        srv_fail(resp, SRV_E_INTERNAL, "the handler of %s sent no reply", req->path);
    if (resp->error != SRV_OK && req->billed && req->srv && req->srv->usage) {
        srv_shared_usage_give_back(req->srv->shared, req->billed_key, req->billed);
        req->billed = 0;
    }
    srv_error_render(resp, (srv_shape)resp->shape);
}

/* 404, 405 or a CORS preflight.  In LibreTranslate's shape the message starts
 * with the words its server (Flask, werkzeug's NotFound and MethodNotAllowed)
 * gives, then says what we know. */
static void no_route(srv_request *req, srv_response *resp)
{
    int lt = resp->shape == SRV_SHAPE_LT;
    if (!allowed_methods(req->path, resp->allow, sizeof resp->allow)) {
        if (lt)
            srv_fail(resp, SRV_E_NOT_FOUND, "The requested URL was not found on the server. If you entered the URL "
                     "manually please check your spelling and try again. (%s %s)", req->method, req->path);
        else
            srv_fail(resp, SRV_E_NOT_FOUND, "no route %s %s", req->method, req->path);
    } else if (strcmp(req->method, "OPTIONS") == 0) {
        resp->preflight = 1;
        resp->status = 204;
    } else if (lt) {
        srv_fail(resp, SRV_E_METHOD_NOT_ALLOWED, "The method is not allowed for the requested URL. (%s %s; "
                 "allowed: %s)", req->method, req->path, resp->allow);
    } else {
        srv_fail(resp, SRV_E_METHOD_NOT_ALLOWED, "%s is not allowed on %s (allowed: %s)",
                 req->method, req->path, resp->allow);
    }
}

int srv_route_prepare(void *ctx, srv_request *req, srv_response *resp)
{
    req->srv = ctx;
    resp->route = srv_route_label(ctx, req->path);
    const srv_route *route = find_route(req->method, req->path);
    srv_response body = { 0 };      /* srv_fail only writes into it */
    req->form_lists = route && (route->flags & ROUTE_DEEPL);     /* text=a&text=b */
    if (route && (route->flags & ROUTE_BODY))
        srv_body_parse(req, &body);     /* first: the body tells the shape, api_key may be in it */
    resp->shape = request_shape(req);
    req->lt = resp->shape == SRV_SHAPE_LT;
    if (!route) {
        no_route(req, resp);
    } else if (admit(route, req, resp, &body) == 0) {
        if (route->flags & (ROUTE_WORKER | ROUTE_ASYNC)) {
            req->route = route;
            return 1;
        }
        route->handler(req, resp);
    }
    render(req, resp);
    return 0;
}

/* ---- work off the HTTP thread -------------------------------------------------------- */

/* On a worker: the handler, unless the request waited too long or its
 * client left while it was queued (no compute for nobody). */
static void run_on_worker(void *arg)
{
    srv_request *req = arg;
    srv_response *resp = req->pending;
    const srv_route *route = req->route;
    double waited_ms = (srv_now() - req->t_queued) * 1e3;
    if (req->client_gone && req->client_gone(req->conn)) {
        srv_fail(resp, SRV_E_CLIENT_GONE, "the client went away after %.0f ms in the queue", waited_ms);
    } else if (waited_ms > req->srv->opts.queue_timeout_ms) {
        resp->retry_after = 1;
        srv_fail(resp, SRV_E_QUEUE_FULL, "waited %.0f ms for a worker; retry later", waited_ms);
    } else {
        route->handler(req, resp);
    }
    render(req, resp);
    srv_reply_serialize(resp);      /* a big reply (attention) costs the worker, not an HTTP thread */
}

static void worker_done(void *arg)
{
    srv_request *req = arg;
    req->pending = NULL;
    req->resume(req);
}

void srv_route_start(void *ctx, srv_request *req, srv_response *resp)
{
    srv_server *srv = ctx;
    const srv_route *route = req->route;
    if (route->flags & ROUTE_WORKER) {
        req->t_queued = srv_now();
        req->pending = resp;        /* the worker's reply goes there */
        if (srv_workers_submit(srv->workers_pool, run_on_worker, worker_done, req) == 0)
            return;
        req->pending = NULL;
        resp->retry_after = 1;
        srv_fail(resp, SRV_E_QUEUE_FULL, "all workers are busy and the queue is full; retry later");
        render(req, resp);
        req->resume(req);
        return;
    }
    (req->lt && route->lt_handler ? route->lt_handler : route->handler)(req, resp);
    if (!req->finish) {             /* answered at once (an error): nothing is pending */
        render(req, resp);
        req->resume(req);
    }
}

void srv_route_finish(void *ctx, srv_request *req, srv_response *resp)
{
    (void)ctx;
    if (!req->finish)
        return;                     /* resp is final already */
    req->finish(req, resp);
    req->finish = NULL;
    render(req, resp);
}
