/* routes: the routing table (method + path -> handler) and the dispatcher
 * that runs in front of every handler: 404/405, CORS preflight, API key,
 * 503 while loading, body parsing, and rendering errors in the right shape. */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include "handlers.h"

/* Fills resp for req (never fails: errors are rendered into resp). */
void srv_route_dispatch(srv_request *req, srv_response *resp);

/* The metrics label of a path: the route's path, or "other". */
const char *srv_route_label(const char *path);

/* Every distinct route path, for metrics registration; returns the count. */
int srv_route_paths(const char **paths, int max);

#endif
