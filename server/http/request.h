/* request: what the HTTP layer hands an endpoint and takes back.  No
 * libmicrohttpd type appears here: http/http.c turns a connection into an
 * srv_request, the router (api/routes.c) picks the handler from its table,
 * and the handler fills an srv_response (status + JSON, reply.h) that
 * http.c sends.
 */
#ifndef SRV_REQUEST_H
#define SRV_REQUEST_H

#include <stddef.h>

#include <jansson.h>

#include "errors.h"
#include "reply.h"

typedef struct srv_server srv_server;

typedef struct srv_request srv_request;
typedef struct srv_response srv_response;

struct srv_request {
    srv_server *srv;
    const char *method;         /* "GET", "POST", ... */
    const char *path;           /* "/translate", without the query */
    const char *content_type;   /* request headers, NULL when absent */
    const char *authorization;
    const char *host;           /* the Host header (absolute URLs in replies) */
    const char *client_addr;    /* the client's address (http/client_addr.h; "" when unknown) */
    /* whose request, for fairness and rate limits: "key:N" (the N-th API key)
     * or "ip:ADDR"; set by the router (api/routes.c) */
    char        client[64];
    int         key;            /* the index of the API key presented among the server's, -1: none
                                   (set by the router) */
    const char *body;           /* not NUL-terminated */
    size_t      body_len;
    json_t     *json;           /* the parsed body (JSON, or form fields as strings); NULL if none */
    int         form;           /* the body was application/x-www-form-urlencoded */
    int         form_lists;     /* a form's repeated names give arrays (srv_form_parse; the router's) */
    json_t     *query;          /* the URL's query arguments: name -> string, or an array of
                                   strings for a repeated name; NULL when there are none */
    int         query_invalid;  /* a query argument is not UTF-8 (the router answers 400) */
    int         lt;             /* LibreTranslate's request: its path, or its body where both APIs
                                   are served; picks the handler and the error shape (the router
                                   decides, once: routes.c request_shape) */
    long        billed;         /* characters counted against the client's usage (the router's:
                                   given back when the request fails) */
    int         billed_key;     /* whose: the key's index, -1 none */
    double      t_start;        /* srv_now() when the request arrived */
    double      t_queued;       /* srv_now() when it was queued for a worker */
    const void *route;          /* the router's */
    /* 1 once the client has closed its connection (http.c's; NULL = unknown) */
    int       (*client_gone)(void *conn);
    void       *conn;
    /* Work that completes on another thread (a decoder, a worker): the handler
     * sets finish and pending (its state) and arranges for resume(req) to be
     * called exactly once, from any thread, when the work is over; finish
     * then builds the reply on an HTTP thread and frees pending.  If the
     * request dies first, pending_free(pending) frees it. */
    void      (*resume)(srv_request *req);      /* http.c's */
    /* A streamed body's reader with nothing to send yet: suspends the
     * connection (only from inside srv_body_stream.read; resume wakes it). */
    void      (*suspend)(srv_request *req);     /* http.c's */
    void      (*finish)(srv_request *req, srv_response *resp);
    void       *pending;
    void      (*pending_free)(void *pending);
};

typedef void (*srv_handler)(srv_request *req, srv_response *resp);

#endif
