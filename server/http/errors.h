/* errors: the one place where failures become HTTP statuses and JSON bodies.
 *
 * A handler (or anything it calls) records a failure with srv_fail(resp, code,
 * ...) and returns; the router renders it once, at the end, with
 * srv_error_render() in one of two shapes:
 *     {"error": {"code": "invalid_field", "message": "..."}}    our API
 *     {"error": "..."}                                           LibreTranslate
 * Codes and HTTP statuses live in one table (errors.c), so they cannot drift.
 */
#ifndef SRV_ERRORS_H
#define SRV_ERRORS_H

#include "util/status.h"

typedef enum {
    SRV_OK = 0,
    SRV_E_INVALID_JSON,         /* 400 malformed JSON or form body            */
    SRV_E_INVALID_FIELD,        /* 400 missing field, wrong type or range      */
    SRV_E_EMPTY_TEXT,           /* 400 empty or whitespace-only text           */
    SRV_E_INVALID_UTF8,         /* 400 the body or a text is not UTF-8         */
    SRV_E_BAD_REQUEST,          /* 400 anything else the client got wrong      */
    SRV_E_UNSUPPORTED_LANGUAGE, /* 400 no model for the language pair          */
    SRV_E_UNAUTHORIZED,         /* 401 missing or wrong API key                */
    SRV_E_NOT_FOUND,            /* 404 unknown route                           */
    SRV_E_UNKNOWN_MODEL,        /* 404 no model with that id                   */
    SRV_E_METHOD_NOT_ALLOWED,   /* 405 (the router sets Allow)                 */
    SRV_E_REQUEST_TIMEOUT,      /* 408 head and body not received in time      */
    SRV_E_BODY_TOO_LARGE,       /* 413 body over --max-body                    */
    SRV_E_INPUT_TOO_LONG,       /* 413 source tokens over a limit              */
    SRV_E_INTERNAL,             /* 500 our own failure                         */
    SRV_E_QUEUE_FULL,           /* 503 no worker free and the queue is full    */
    SRV_E_LOADING,              /* 503 models still loading                    */
    SRV_E_CLIENT_GONE,          /* 499 the client closed its connection first
                                       (nginx's code: only logs and metrics see it) */
    SRV_E_COUNT
} srv_code;

typedef struct srv_response srv_response;

int         srv_code_http(srv_code code);
const char *srv_code_name(srv_code code);
srv_code    srv_code_from_mt(mt_status status);

/* Records a failure in resp (the first one wins; later calls are ignored).
 * Always returns -1 so that callers can write `return srv_fail(...)`. */
int srv_fail(srv_response *resp, srv_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for an engine error: the status picks the code, err the message. */
int srv_fail_mt(srv_response *resp, const mt_err *err);

/* Replaces resp's body by the error envelope (LibreTranslate's shape when
 * lt_shape) and sets its status and Retry-After.  No-op when resp holds no error. */
void srv_error_render(srv_response *resp, int lt_shape);

#endif
