/* reply: the reply a request gets, and how its body is made.
 *
 * Every handler fills an srv_response through these calls (errors through
 * errors.h's srv_fail), and http.c sends it.  A leaf below the handlers, the
 * router and the error table.
 */
#ifndef SRV_REPLY_H
#define SRV_REPLY_H

#include <stddef.h>

#include <jansson.h>

#include "errors.h"

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
    int         lt_errors;      /* render errors the LibreTranslate way */
    char        allow[96];      /* Allow header (405 and OPTIONS) */
    int         retry_after;    /* seconds; 0 = no header */
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
