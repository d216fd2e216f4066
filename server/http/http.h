/* http: the only file that talks to libmicrohttpd.
 *
 * It runs the daemon (a thread pool for I/O), accumulates request bodies up
 * to a size limit (413 as soon as Content-Length says too much; a chunked
 * body that grows too large is discarded, not buffered), hands each complete
 * request to the router as an srv_request, and sends the srv_response back
 * with CORS headers and one access-log line per request.
 *
 * Requests that decode are not run on the HTTP threads: the router says
 * the request must wait, its connection is suspended, and whoever finishes
 * the work (a decoder, a worker) resumes it through req->resume.
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <stdatomic.h>
#include <stddef.h>

#include "client_addr.h"
#include "request.h"

typedef struct srv_http srv_http;

/* The bytes of a body kept for srv_http_router.error_shape once the rest is dropped. */
#define SRV_HTTP_BODY_HEAD 512

typedef struct {
    /* The whole request is in (an HTTP thread).  0: resp is final.  1: the
     * request waits: http.c suspends the connection, sets req->resume, and
     * calls start, which ends with one req->resume(req) from any thread. */
    int  (*prepare)(void *ctx, srv_request *req, srv_response *resp);
    void (*start)(void *ctx, srv_request *req, srv_response *resp);
    /* After the resume, on an HTTP thread: completes resp. */
    void (*finish)(void *ctx, srv_request *req, srv_response *resp);
    /* The metrics label of a path, for the replies http.c makes itself. */
    const char *(*label)(void *ctx, const char *path);
    /* The shape (srv_shape, errors.h) of the errors http.c answers itself
     * (framing, 408, 413).  req has the method, path, Content-Type and at most
     * the body's first SRV_HTTP_BODY_HEAD bytes (none before it arrives). */
    int (*error_shape)(void *ctx, const srv_request *req);
    /* The body limit of a path (NULL: srv_http_config.max_body for every path). */
    size_t (*max_body)(void *ctx, const char *path);
    void  *ctx;
} srv_http_router;

typedef struct {
    const char     *host;           /* numeric address or name to bind */
    int             port;           /* 0 = any free port */
    int             threads;        /* HTTP thread pool size */
    int             max_connections;
    int             max_connections_per_ip;     /* 0 = no per-address limit */
    int             timeout_s;      /* keep-alive idle timeout */
    int             request_timeout_s;  /* a whole request (head and body) must arrive within this */
    int             write_timeout_s;    /* a reply no byte of which the client takes for this long
                                           is dropped and its connection closed (0 = never) */
    size_t          max_body;
    int             access_log;
    const char     *cors_origins;   /* "*" or a comma-separated list */
    const srv_proxies *trusted_proxies;     /* whose X-Forwarded-For is believed (NULL: nobody's) */
    srv_http_router router;
    _Atomic int    *in_flight;      /* counts requests from arrival to reply sent */
} srv_http_config;

/* Starts listening; NULL with a message in err on failure.  cfg's strings
 * must outlive the daemon. */
srv_http *srv_http_start(const srv_http_config *cfg, char *err, size_t err_len);

/* Graceful stop: stop accepting, wait up to drain_s seconds for in-flight
 * requests to be answered, stop the daemon and free h.  Returns 0, or -1 when
 * requests were still running after drain_s (h is then left running: the
 * caller should exit the process). */
int srv_http_stop(srv_http *h, int drain_s);

/* The port actually bound (useful with port 0). */
int srv_http_port(const srv_http *h);

#endif
