/* routes: the routing table (method + path -> handler) and the checks that
 * run in front of every handler: 404/405, CORS preflight, API key, 503 while
 * loading, body parsing, and rendering errors in the right shape.
 *
 * Two phases, so that decoding never blocks an HTTP thread:
 *   srv_route_prepare   on the HTTP thread: checks, and runs light handlers
 *   srv_route_run       on an inference worker: runs a model handler
 */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include "handlers.h"

/* Returns 0 when resp is final (an error, a preflight, or a light handler's
 * reply), 1 when the handler needs a worker: call srv_route_run there. */
int  srv_route_prepare(srv_request *req, srv_response *resp);
/* Runs the handler chosen by srv_route_prepare (503 if it waited too long). */
void srv_route_run(srv_request *req, srv_response *resp);
/* The reply when no worker could take the request (503 queue_full). */
void srv_route_busy(srv_request *req, srv_response *resp);

/* The metrics label of a path: the route's path, or "other". */
const char *srv_route_label(const char *path);

/* Every distinct route path, for metrics registration; returns the count. */
int srv_route_paths(const char **paths, int max);

#endif
