/* errors: srv_code -> HTTP status, name, and the JSON error envelope. */
#include "errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reply.h"
#include "util/utf8.h"

/* Each failure's HTTP status in our API, in LibreTranslate's shape and in
 * DeepL's (lt, deepl: 0 when the same as ours), and its name.  LibreTranslate
 * answers a wrong API key 403, and a text over its limit, or a language it
 * lacks, 400 (its app.py); DeepL a wrong key 403, a spent quota 456, a
 * language it lacks 400 (its API reference, "Errors"). */
static const struct {
    int         http, lt, deepl;
    const char *name;
} code_table[SRV_E_COUNT] = {
    [SRV_OK]                     = { 200,   0,   0, "ok" },
    [SRV_E_INVALID_JSON]         = { 400,   0,   0, "invalid_json" },
    [SRV_E_INVALID_FIELD]        = { 400,   0,   0, "invalid_field" },
    [SRV_E_EMPTY_TEXT]           = { 400,   0,   0, "empty_text" },
    [SRV_E_INVALID_UTF8]         = { 400,   0,   0, "invalid_utf8" },
    [SRV_E_BAD_REQUEST]          = { 400,   0,   0, "bad_request" },
    [SRV_E_UNSUPPORTED_LANGUAGE] = { 400,   0,   0, "unsupported_language" },
    [SRV_E_UNAUTHORIZED]         = { 401, 403, 403, "unauthorized" },
    [SRV_E_FORBIDDEN]            = { 403,   0,   0, "forbidden" },
    [SRV_E_NOT_FOUND]            = { 404,   0,   0, "not_found" },
    [SRV_E_UNKNOWN_MODEL]        = { 404, 400, 400, "unknown_model" },
    [SRV_E_METHOD_NOT_ALLOWED]   = { 405,   0,   0, "method_not_allowed" },
    [SRV_E_REQUEST_TIMEOUT]      = { 408,   0,   0, "request_timeout" },
    [SRV_E_BODY_TOO_LARGE]       = { 413,   0,   0, "body_too_large" },
    [SRV_E_UNSUPPORTED_MEDIA]    = { 415,   0, 400, "unsupported_media_type" },
    [SRV_E_INPUT_TOO_LONG]       = { 413, 400,   0, "input_too_long" },
    [SRV_E_RATE_LIMITED]         = { 429,   0,   0, "rate_limited" },
    [SRV_E_QUOTA_EXCEEDED]       = { 429,   0, 456, "quota_exceeded" },
    [SRV_E_INTERNAL]             = { 500,   0,   0, "internal_error" },
    [SRV_E_QUEUE_FULL]           = { 503,   0,   0, "queue_full" },
    [SRV_E_LOADING]              = { 503,   0,   0, "loading" },
    [SRV_E_CLIENT_GONE]          = { 499,   0,   0, "client_closed_request" },
};

int srv_code_http(srv_code code, srv_shape shape)
{
    if (code <= SRV_OK || code >= SRV_E_COUNT)
        return 500;
    int other = shape == SRV_SHAPE_LT ? code_table[code].lt : shape == SRV_SHAPE_DEEPL ? code_table[code].deepl : 0;
    return other ? other : code_table[code].http;
}
const char *srv_code_name(srv_code code)
{
    return code >= SRV_OK && code < SRV_E_COUNT ? code_table[code].name : "internal_error";
}

/* Engine statuses: bad input is the client's (4xx), the rest is ours (500). */
srv_code srv_code_from_mt(mt_status status)
{
    switch (status) {
    case MT_OK:           return SRV_OK;
    case MT_ERR_INPUT:    return SRV_E_BAD_REQUEST;
    case MT_ERR_TOO_LONG: return SRV_E_INPUT_TOO_LONG;
    case MT_ERR_BUSY:     return SRV_E_QUEUE_FULL;
    default:              return SRV_E_INTERNAL;
    }
}

int srv_fail(srv_response *resp, srv_code code, const char *fmt, ...)
{
    if (resp->error != SRV_OK)
        return -1;
    resp->error = code == SRV_OK ? SRV_E_INTERNAL : code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(resp->message, sizeof resp->message, fmt, ap);
    va_end(ap);
    /* truncation may cut a character in two; JSON strings must be UTF-8 */
    resp->message[mt_utf8_valid_prefix(resp->message, strlen(resp->message))] = 0;
    return -1;
}

int srv_fail_mt(srv_response *resp, const mt_err *err)
{
    mt_status st = err->status == MT_OK ? MT_ERR_INTERNAL : err->status;
    const char *msg = err->msg[0] ? err->msg : mt_status_name(st);
    return srv_fail(resp, srv_code_from_mt(st), "%s", msg);
}

void srv_code_openai(srv_code code, const char **type, const char **oai_code)
{
    *type = "invalid_request_error";
    *oai_code = srv_code_name(code);
    switch (code) {
    case SRV_E_UNAUTHORIZED:   *oai_code = "invalid_api_key"; break;
    case SRV_E_UNKNOWN_MODEL:  *oai_code = "model_not_found"; break;
    case SRV_E_RATE_LIMITED:   *type = "rate_limit_error", *oai_code = "rate_limit_exceeded"; break;
    case SRV_E_QUOTA_EXCEEDED: *type = "insufficient_quota", *oai_code = "insufficient_quota"; break;
    case SRV_E_INPUT_TOO_LONG: *oai_code = "context_length_exceeded"; break;
    case SRV_E_INTERNAL: case SRV_E_QUEUE_FULL: case SRV_E_LOADING: *type = "server_error"; break;
    default: break;
    }
}

void srv_error_render(srv_response *resp, srv_shape shape)
{
    if (resp->error == SRV_OK)
        return;
    json_decref(resp->json);
    free(resp->text);
    resp->text = NULL;
    resp->text_len = 0;
    resp->status = srv_code_http(resp->error, shape);
    if (shape == SRV_SHAPE_LT)
        resp->json = json_pack("{s:s}", "error", resp->message);
    else if (shape == SRV_SHAPE_DEEPL)
        resp->json = json_pack("{s:s}", "message", resp->message);
    else if (shape == SRV_SHAPE_OPENAI) {
        const char *type, *code;
        srv_code_openai(resp->error, &type, &code);
        resp->json = json_pack("{s:{s:s,s:s,s:n,s:s}}", "error", "message", resp->message, "type", type, "param",
                               "code", code);
    } else
        resp->json = json_pack("{s:{s:s,s:s}}", "error", "code", srv_code_name(resp->error),
                               "message", resp->message);
    if (resp->status == 503 && resp->retry_after <= 0)
        resp->retry_after = 1;
}
