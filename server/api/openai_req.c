/* openai_req: the OpenAI-compatible request bodies (openai_req.h). */
#include "openai_req.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mt.h"
#include "util/strbuf.h"

/* A failure: msg written, param named; always -1. */
static int bad(char *msg, size_t cap, const char **param, const char *p, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int bad(char *msg, size_t cap, const char **param, const char *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    *param = p;
    return -1;
}

#define BAD(p, ...) bad(msg, cap, param, p, __VA_ARGS__)

/* Fields OpenAI documents that we accept and do not use. */
static const char *const ignored[] = { "user", "metadata", "store", "parallel_tool_calls", "service_tier", NULL };
/* Fields we do not implement: refused unless given as their default (null,
 * false, 0, an empty list or object, {"type": "text"}, ["text"], 1). */
static const char *const unsupported[] = { "tools", "tool_choice", "functions", "function_call", "logprobs",
                                           "top_logprobs", "logit_bias", "frequency_penalty", "presence_penalty",
                                           "response_format", "audio", "modalities", "prediction", "echo",
                                           "best_of", "suffix", "reasoning_effort", NULL };
static const char *const known[] = { "model", "messages", "prompt", "max_tokens", "max_completion_tokens",
                                     "temperature", "top_p", "seed", "stop", "n", "stream", "stream_options", NULL };

static int in(const char *const *list, const char *k)
{
    for (; *list; list++)
        if (!strcmp(*list, k))
            return 1;
    return 0;
}

static int is_default(const char *k, const json_t *v)
{
    if (json_is_null(v) || json_is_false(v) || (json_is_number(v) && json_number_value(v) == 0 && strcmp(k, "best_of")))
        return 1;
    if ((json_is_array(v) && !json_array_size(v)) || (json_is_object(v) && !json_object_size(v)))
        return 1;
    if (!strcmp(k, "best_of"))
        return json_is_integer(v) && json_integer_value(v) == 1;
    if (!strcmp(k, "response_format"))
        return json_is_object(v) && json_is_string(json_object_get(v, "type")) &&
               !strcmp(json_string_value(json_object_get(v, "type")), "text") && json_object_size(v) == 1;
    if (!strcmp(k, "modalities"))
        return json_is_array(v) && json_array_size(v) == 1 && json_is_string(json_array_get(v, 0)) &&
               !strcmp(json_string_value(json_array_get(v, 0)), "text");
    return 0;
}

static int check_keys(const json_t *body, int chat, char *msg, size_t cap, const char **param)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v) {
        if (in(ignored, k))
            continue;
        if (in(unsupported, k)) {
            if (is_default(k, v))
                continue;
            return BAD(k, "'%s' is not supported by this server (no tools or function calling, logprobs, logit_bias, "
                       "penalties, response formats, audio, echo, best_of or suffix)", k);
        }
        if (!in(known, k) || (chat && !strcmp(k, "prompt")) || (!chat && !strcmp(k, "messages")))
            return BAD(k, "Unrecognized request argument supplied: %.200s", k);
    }
    return 0;
}

/* The engine table's bounds of a sampling field (no model: the fixed ones). */
static void table_bounds(const char *name, double *lo, double *hi, int *open)
{
    const mt_decode_limit *l = mt_decode_limit_find(name);
    *lo = l ? l->min : 0;
    *hi = l ? l->max : 0;
    *open = l ? l->min_open : 0;
}

static int number(const json_t *body, const char *k, double *x, int *given, char *msg, size_t cap,
                  const char **param)
{
    json_t *v = json_object_get(body, k);
    *given = v && !json_is_null(v);
    if (!*given)
        return 0;
    if (!json_is_number(v))
        return BAD(k, "'%s' must be a number", k);
    *x = json_number_value(v);
    return 0;
}

static int integer(const json_t *body, const char *k, long long lo, long long hi, long long *x, int *given, char *msg,
                   size_t cap, const char **param)
{
    json_t *v = json_object_get(body, k);
    *given = v && !json_is_null(v);
    if (!*given)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return BAD(k, "'%s' must be an integer in [%lld, %lld]", k, lo, hi);
    *x = json_integer_value(v);
    return 0;
}

static int boolean(const json_t *obj, const char *k, const char *name, int *x, char *msg, size_t cap,
                   const char **param)
{
    json_t *v = json_object_get(obj, k);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return BAD(name, "'%s' must be a boolean", name);
    *x = json_is_true(v);
    return 0;
}

static int sampling(const json_t *body, oai_req *r, char *msg, size_t cap, const char **param)
{
    double lo, hi;
    int open, given;
    r->sample = 1;
    r->temperature = 1;
    r->top_p = 1;
    if (number(body, "temperature", &r->temperature, &given, msg, cap, param))
        return -1;
    table_bounds("sampling.temperature", &lo, &hi, &open);
    if (given && (r->temperature < lo || r->temperature > hi))
        return BAD("temperature", "'temperature' must be in [%g, %g] (0: greedy decoding)", lo, hi);
    r->sample = r->temperature > 0;
    if (number(body, "top_p", &r->top_p, &given, msg, cap, param))
        return -1;
    table_bounds("sampling.top_p", &lo, &hi, &open);
    if (given && (r->top_p <= lo || r->top_p > hi))
        return BAD("top_p", "'top_p' must be in (%g, %g]", lo, hi);
    table_bounds("sampling.seed", &lo, &hi, &open);
    return integer(body, "seed", 0, (long long)hi, &r->seed, &r->has_seed, msg, cap, param);
}

static int stops(const json_t *body, oai_req *r, char *msg, size_t cap, const char **param)
{
    json_t *v = json_object_get(body, "stop");
    if (!v || json_is_null(v))
        return 0;
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (!json_is_string(v) && !json_is_array(v))
        return BAD("stop", "'stop' must be a string or a list of strings");
    if (n > OAI_MAX_STOP)
        return BAD("stop", "'stop' has %zu strings; at most %d", n, OAI_MAX_STOP);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_string(s) || json_string_length(s) == 0 || json_string_length(s) > OAI_MAX_STOP_LEN ||
            strlen(json_string_value(s)) != json_string_length(s))
            return BAD("stop", "'stop' strings must be 1 to %d bytes of text", OAI_MAX_STOP_LEN);
        r->stop[r->n_stop++] = json_string_value(s);
    }
    return 0;
}

/* A content: a string, or a list of text parts (joined with "\n", as vLLM does). */
static int content(const json_t *m, int i, oai_req *r, char *msg, size_t cap, const char **param)
{
    json_t *c = json_object_get(m, "content");
    mt_chat_msg *out = &r->msgs[i];
    if (json_is_string(c)) {
        out->content = json_string_value(c);
        out->len = json_string_length(c);
        return 0;
    }
    if (json_is_null(c) || !c) {
        if (json_object_get(m, "tool_calls") || json_object_get(m, "function_call"))
            return BAD("messages", "messages[%d]: tool calls are not supported by this server", i);
        if (strcmp(out->role, "assistant"))
            return BAD("messages", "messages[%d].content is required", i);
        out->content = "";
        return 0;
    }
    if (!json_is_array(c))
        return BAD("messages", "messages[%d].content must be a string or a list of text parts", i);
    mt_sbuf b = { 0 };
    for (size_t k = 0; k < json_array_size(c); k++) {
        json_t *p = json_array_get(c, k), *type = json_object_get(p, "type"), *text = json_object_get(p, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text") || !json_is_string(text)) {
            free(b.p);
            return BAD("messages", "messages[%d].content[%zu]: only parts {\"type\": \"text\", \"text\"} are "
                       "supported (no images, audio or files)", i, k);
        }
        if ((k && mt_sb_add(&b, "\n", 1)) || mt_sb_add(&b, json_string_value(text), json_string_length(text)) ||
            mt_sb_add(&b, "", 0)) {
            free(b.p);
            return BAD(NULL, "out of memory");
        }
    }
    r->joined[i] = b.p;
    out->content = b.p ? b.p : "";
    out->len = b.n;
    return 0;
}

static int messages(const json_t *body, oai_req *r, char *msg, size_t cap, const char **param)
{
    json_t *v = json_object_get(body, "messages");
    if (!json_is_array(v) || !json_array_size(v))
        return BAD("messages", "'messages' must be a non-empty list of {\"role\", \"content\"}");
    size_t n = json_array_size(v);
    if (n > OAI_MAX_MESSAGES)
        return BAD("messages", "'messages' has %zu messages; at most %d", n, OAI_MAX_MESSAGES);
    r->msgs = calloc(n, sizeof *r->msgs);
    r->joined = calloc(n, sizeof *r->joined);
    if (!r->msgs || !r->joined)
        return BAD(NULL, "out of memory");
    r->n_msgs = (int)n;
    for (int i = 0; i < (int)n; i++) {
        json_t *m = json_array_get(v, (size_t)i), *role = json_object_get(m, "role");
        if (!json_is_object(m) || !json_is_string(role))
            return BAD("messages", "messages[%d] must be an object with a string 'role'", i);
        const char *s = json_string_value(role);
        if (!strcmp(s, "tool") || !strcmp(s, "function"))
            return BAD("messages", "messages[%d].role '%s': tools and function calling are not supported by this "
                       "server", i, s);
        if (strcmp(s, "system") && strcmp(s, "developer") && strcmp(s, "user") && strcmp(s, "assistant"))
            return BAD("messages", "messages[%d].role must be system, developer, user or assistant", i);
        r->msgs[i].role = strcmp(s, "developer") ? s : "system";
        if (content(m, i, r, msg, cap, param))
            return -1;
        if (strlen(r->msgs[i].content) != r->msgs[i].len)
            return BAD("messages", "messages[%d].content holds a NUL character", i);
    }
    return 0;
}

static int prompt(const json_t *body, oai_req *r, char *msg, size_t cap, const char **param)
{
    json_t *v = json_object_get(body, "prompt");
    if (json_is_array(v) && json_array_size(v) == 1)
        v = json_array_get(v, 0);
    if (!json_is_string(v))
        return BAD("prompt", "'prompt' must be a string (one prompt per request; 'n' asks for several completions; "
                   "token-id prompts are not supported)");
    r->prompt = json_string_value(v);
    r->prompt_len = json_string_length(v);
    if (strlen(r->prompt) != r->prompt_len)
        return BAD("prompt", "'prompt' holds a NUL character");
    return 0;
}

int oai_parse(const json_t *body, int chat, oai_req *r, char *msg, size_t cap, const char **param)
{
    memset(r, 0, sizeof *r);
    r->chat = chat;
    r->n = 1;
    *param = NULL;
    if (!json_is_object(body))
        return BAD(NULL, "the body must be a JSON object");
    if (check_keys(body, chat, msg, cap, param))
        return -1;
    json_t *model = json_object_get(body, "model");
    if (!json_is_string(model))
        return BAD("model", "'model' must be given: the id of a model (GET /v1/models)");
    r->model = json_string_value(model);
    if (chat ? messages(body, r, msg, cap, param) : prompt(body, r, msg, cap, param))
        return -1;
    long long x = 0;
    int given, given2;
    if (integer(body, "max_tokens", 1, 1 << 30, &x, &given, msg, cap, param))
        return -1;
    r->max_tokens = given ? (int)x : 0;
    if (integer(body, "max_completion_tokens", 1, 1 << 30, &x, &given2, msg, cap, param))
        return -1;
    if (given2 && given && x != r->max_tokens)
        return BAD("max_completion_tokens", "'max_tokens' and 'max_completion_tokens' differ");
    r->max_tokens = given2 ? (int)x : r->max_tokens;
    if (integer(body, "n", 1, OAI_MAX_N, &x, &given, msg, cap, param))
        return -1;
    r->n = given ? (int)x : 1;
    if (sampling(body, r, msg, cap, param) || stops(body, r, msg, cap, param) ||
        boolean(body, "stream", "stream", &r->stream, msg, cap, param))
        return -1;
    json_t *so = json_object_get(body, "stream_options");
    if (so && !json_is_null(so)) {
        if (!r->stream)
            return BAD("stream_options", "'stream_options' is only allowed when 'stream' is true");
        if (!json_is_object(so))
            return BAD("stream_options", "'stream_options' must be an object");
        if (boolean(so, "include_usage", "stream_options.include_usage", &r->include_usage, msg, cap, param))
            return -1;
    }
    return 0;
}

void oai_req_free(oai_req *r)
{
    for (int i = 0; r->joined && i < r->n_msgs; i++)
        free(r->joined[i]);
    free(r->joined);
    free(r->msgs);
    memset(r, 0, sizeof *r);
}
