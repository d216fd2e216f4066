/* http: the only file that talks to libmicrohttpd.
 *
 * It runs the daemon (a thread pool), accumulates request bodies up to a
 * size limit (413 as soon as Content-Length says too much; a chunked body
 * that grows too large is discarded, not buffered), hands each complete
 * request to a dispatch function as an srv_request, sends the srv_response
 * back with CORS headers, and writes one access-log line per request.
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <stdatomic.h>
#include <stddef.h>

#include "handlers.h"

typedef struct srv_http srv_http;

typedef void (*srv_dispatch_fn)(void *ctx, srv_request *req, srv_response *resp);

typedef struct {
    const char     *host;           /* numeric address or name to bind */
    int             port;
    int             threads;        /* thread pool size */
    int             max_connections;
    int             timeout_s;      /* idle connection timeout */
    size_t          max_body;
    int             access_log;
    const char     *cors_origins;   /* "*" or a comma-separated list */
    srv_dispatch_fn dispatch;
    void           *ctx;            /* passed to dispatch */
    _Atomic int    *in_flight;      /* counts requests from arrival to reply sent */
} srv_http_config;

/* Starts listening; NULL with a message in err on failure.  cfg's strings
 * must outlive the daemon. */
srv_http *srv_http_start(const srv_http_config *cfg, char *err, size_t err_len);

/* Graceful stop: stop accepting, wait up to drain_s seconds for in-flight
 * requests to be answered, then stop the daemon and free h. */
void srv_http_stop(srv_http *h, int drain_s);

/* The port actually bound (useful with port 0). */
int srv_http_port(const srv_http *h);

#endif
