/* reply: the reply a request gets, and how its body is made.
 *
 * Every handler fills an srv_response through these calls (errors through
 * errors.h's srv_fail), and http.c sends it.  A leaf below the handlers, the
 * router and the error table (errors.h includes this file, never the other
 * way round).
 */
#ifndef SRV_REPLY_H
#define SRV_REPLY_H

#include <stddef.h>

#include <jansson.h>

/* The failure a reply may carry (srv_fail, errors.h); errors.c's table gives
 * each its HTTP status and name. */
typedef enum {
    SRV_OK = 0,
    SRV_E_INVALID_JSON,         /* 400 malformed JSON or form body            */
    SRV_E_INVALID_FIELD,        /* 400 missing field, wrong type or range      */
    SRV_E_EMPTY_TEXT,           /* 400 empty or whitespace-only text           */
    SRV_E_INVALID_UTF8,         /* 400 the body or a text is not UTF-8         */
    SRV_E_BAD_REQUEST,          /* 400 anything else the client got wrong      */
    SRV_E_UNSUPPORTED_LANGUAGE, /* 400 no model for the language pair          */
    SRV_E_UNAUTHORIZED,         /* 401 missing or wrong API key                */
    SRV_E_FORBIDDEN,            /* 403 a feature this server does not offer (LibreTranslate's /suggest) */
    SRV_E_NOT_FOUND,            /* 404 unknown route                           */
    SRV_E_UNKNOWN_MODEL,        /* 404 no model with that id                   */
    SRV_E_METHOD_NOT_ALLOWED,   /* 405 (the router sets Allow)                 */
    SRV_E_REQUEST_TIMEOUT,      /* 408 head and body not received in time      */
    SRV_E_BODY_TOO_LARGE,       /* 413 body over --max-body                    */
    SRV_E_UNSUPPORTED_MEDIA,    /* 415 a file in no format we read             */
    SRV_E_INPUT_TOO_LONG,       /* 413 source tokens over a limit              */
    SRV_E_RATE_LIMITED,         /* 429 over --req-limit / --char-limit (Retry-After) */
    SRV_E_QUOTA_EXCEEDED,       /* 429 (DeepL: 456) the key's char-quota is spent */
    SRV_E_INTERNAL,             /* 500 our own failure                         */
    SRV_E_QUEUE_FULL,           /* 503 no worker free and the queue is full    */
    SRV_E_LOADING,              /* 503 models still loading                    */
    SRV_E_CLIENT_GONE,          /* 499 the client closed its connection first
                                       (nginx's code: only logs and metrics see it) */
    SRV_E_COUNT
} srv_code;

typedef struct srv_response srv_response;

/* A body produced while it is sent (server-sent events, stream.c), read by
 * http.c on the connection's HTTP thread. */
typedef struct {
    /* Up to max bytes into buf: > 0 bytes; 0 nothing yet (the reader has
     * suspended the connection through req->suspend and a req->resume will
     * follow); -1 the end. */
    long (*read)(void *ctx, char *buf, size_t max);
    void (*release)(void *ctx);     /* the reply is over (sent or aborted): read is not called again */
    void  *ctx;
} srv_body_stream;

struct srv_response {
    int         status;         /* HTTP status */
    json_t     *json;           /* JSON body (owned), or ... */
    char       *text;           /* ... a text body (malloc'd, owned) */
    size_t      text_len;
    const char *content_type;   /* of text; JSON bodies are application/json */
    srv_code    error;          /* SRV_OK, or the failure srv_fail recorded */
    char        message[480];
    int         shape;          /* the envelope errors are rendered in (srv_shape, errors.h) */
    char        allow[96];      /* Allow header (405 and OPTIONS) */
    int         retry_after;    /* seconds; 0 = no header */
    char        attachment[256];/* non-empty: Content-Disposition: attachment with this file name
                                   (the caller's: letters, digits, '.', '-', '_' only) */
    int         preflight;      /* a CORS preflight answer */
    const char *route;          /* metrics label: the route's path or "other" */
    srv_body_stream stream;     /* read != NULL: the body is this stream (status and
                                   content_type set; metrics are the stream's to count) */
};

/* Sets a JSON body (steals body). */
void srv_reply_json(srv_response *resp, int status, json_t *body);
/* A JSON body -> its text, done once by whoever holds the reply last (big
 * replies on the worker that built them, the rest on an HTTP thread). */
void srv_reply_serialize(srv_response *resp);
/* Seconds on a monotonic clock. */
double srv_now(void);

#endif
