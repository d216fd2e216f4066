/* errors: the one place where failures become HTTP statuses and JSON bodies.
 *
 * A handler (or anything it calls) records a failure with srv_fail(resp, code,
 * ...) and returns; the router renders it once, at the end, with
 * srv_error_render() in one of three shapes (srv_shape):
 *     {"error": {"code": "invalid_field", "message": "..."}}    our API
 *     {"error": "..."}                                           LibreTranslate
 *     {"message": "..."}                                         DeepL
 *     {"error": {"message", "type", "param": null, "code"}}      OpenAI (/v1/)
 * The codes (srv_code) are listed in reply.h, since a reply carries one; their
 * HTTP statuses (ours, and LibreTranslate's and DeepL's where they answer the
 * same failure with another) and names live in one table (errors.c), so they
 * cannot drift.
 * Which shape a request gets is the router's decision (api/routes.c), made
 * once per request, also for the errors http.c answers before routing.
 * errors sits above reply: reply.c knows nothing of this file.
 */
#ifndef SRV_ERRORS_H
#define SRV_ERRORS_H

#include "reply.h"
#include "util/status.h"

/* Whose error envelope (and statuses) a request gets. */
typedef enum {
    SRV_SHAPE_OURS  = 0,
    SRV_SHAPE_LT    = 1,    /* LibreTranslate's */
    SRV_SHAPE_DEEPL = 2,    /* DeepL's API v2/v3 */
    SRV_SHAPE_OPENAI = 3,   /* OpenAI's: {"error": {"message", "type", "param", "code"}} */
} srv_shape;

/* The HTTP status of a failure in a shape: our API's, or LibreTranslate's or
 * DeepL's for the same failure where they differ (LibreTranslate: 403 for a
 * wrong key, 400 for an unknown model or a text over a limit; DeepL: 403 for
 * a wrong key, 456 for a spent quota); 500 for a code out of range. */
int         srv_code_http(srv_code code, srv_shape shape);
const char *srv_code_name(srv_code code);
srv_code    srv_code_from_mt(mt_status status);
/* OpenAI's "type" and "code" of a failure (statuses as ours): 401
 * invalid_api_key, 404 model_not_found, 429 rate_limit_exceeded, ... */
void        srv_code_openai(srv_code code, const char **type, const char **oai_code);

/* Records a failure in resp (the first one wins; later calls are ignored).
 * Always returns -1 so that callers can write `return srv_fail(...)`. */
int srv_fail(srv_response *resp, srv_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for an engine error: the status picks the code, err the message. */
int srv_fail_mt(srv_response *resp, const mt_err *err);

/* Replaces resp's body by the error envelope of shape, sets its status and
 * Retry-After.  No-op when resp holds no error. */
void srv_error_render(srv_response *resp, srv_shape shape);

#endif
