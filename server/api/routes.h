/* routes: the routing table (method + path -> handler) and the checks that
 * run in front of every handler: 404/405, CORS preflight, API key, 503 while
 * loading, body parsing, and rendering errors in the right shape.
 *
 * Decoding never blocks an HTTP thread and never parks one: see the three
 * calls below.
 */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include "handlers.h"

/* The router as http.c sees it (srv_http_router); ctx is the srv_server.
 *
 * srv_route_prepare  on an HTTP thread, once the whole request is in: the
 *                    checks, and the light handlers.  0: resp is final.
 *                    1: the request must wait; suspend it and call start.
 * srv_route_start    after the suspension: starts the work (a decoder job,
 *                    or the handler on a worker thread), which ends with
 *                    exactly one req->resume(req), maybe inside start.
 * srv_route_finish   on an HTTP thread after the resume: completes resp. */
int  srv_route_prepare(void *ctx, srv_request *req, srv_response *resp);
void srv_route_start(void *ctx, srv_request *req, srv_response *resp);
void srv_route_finish(void *ctx, srv_request *req, srv_response *resp);

/* The metrics label of a path: the route's path, or "other". */
const char *srv_route_label(void *ctx, const char *path);

/* The shape (srv_shape) the errors of req take (srv_http_router.error_shape):
 * req may have only its method, path, Content-Type and the body's first bytes. */
int srv_route_error_shape(void *ctx, const srv_request *req);

/* The body limit of a path: --max-file-bytes (and room for the form around
 * the file) on /translate_file, --max-body elsewhere. */
size_t srv_route_max_body(void *ctx, const char *path);

/* Every distinct route path, for metrics registration; returns the count. */
int srv_route_paths(const char **paths, int max);

#endif
