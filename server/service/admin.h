/* admin: models added and removed while serving (--admin-key; the routes
 * POST, GET /admin/models and DELETE /admin/models/ID in api/admin_api.c).
 *
 * A model is added by directory or by hub name ("org/name[@rev]", downloaded
 * into the hub's cache by server/hub while the server keeps serving): each
 * add runs on a thread of its own -- the download (one at a time), then the
 * card read -- and is listed as pending meanwhile, with the bytes of the file
 * being downloaded (/health and GET /admin/models show them).  Its card read,
 * the model is published through the residency (srv_residency_add: models
 * load on first use) and is served from the next request on; a failed add
 * stays listed with its error until the same id is added again.
 *
 * A model is removed through the residency (srv_residency_remove): lookups
 * and listings skip it at once, its weights are unloaded when the last
 * request holding it ends.  The last model served cannot be removed.
 *
 * serve's --model org/name not in the cache at start is added the same way
 * (srv_admin_add_at_start), whether or not the admin API is on; its first
 * model served makes the server ready.
 *
 * Thread-safe: pending adds under one mutex; adds and removals published
 * one at a time under another (the model table's index and the "last model"
 * check are decided once).
 */
#ifndef SRV_ADMIN_H
#define SRV_ADMIN_H

#include <stdint.h>

#include "server.h"

#define SRV_ADMIN_MAX_PENDING SRV_MAX_MODELS

typedef enum { SRV_ADMIN_DOWNLOADING, SRV_ADMIN_READING, SRV_ADMIN_FAILED } srv_admin_phase;

/* A model being added (or whose add failed). */
typedef struct {
    char            id[64];
    char            path[1024];     /* the directory asked for ("" when by name) */
    char            name[340];      /* the hub name asked for ("" when by directory) */
    srv_admin_phase phase;
    char            file[64];       /* downloading: the file now ("" before the first) */
    uint64_t        done, total;    /* its bytes so far and in all (0: not known yet) */
    char            error[600];     /* failed: why */
    double          started;        /* srv_now() of the POST */
    int             at_start;       /* a --model org/name of serve's, downloaded once the server listens */
} srv_admin_pending;

/* The admin API of srv (srv->admin).  NULL when out of memory. */
srv_admin *srv_admin_new(srv_server *srv);
/* Waits for the adds still running (a download ends first), then frees. */
void       srv_admin_free(srv_admin *a);

/* Starts adding model id from dir, or from the hub name (exactly one of them
 * given).  0 and *out its pending entry; -1 with resp failed (400 naming the
 * problem: a bad id, an id already served or being added, a name that is not
 * org/name[@rev], a directory that does not exist; 503 no room). */
int srv_admin_add(srv_admin *a, const char *id, const char *dir, const char *name, srv_admin_pending *out,
                  srv_response *resp);
/* The same add for serve's --model org/name not yet in the cache (and
 * serve's first model when none is served yet: it makes the server ready).
 * The admin routes stay closed without --admin-key; only the mechanism is
 * shared.  0, or -1 with resp failed as above. */
int srv_admin_add_at_start(srv_admin *a, const char *id, const char *name, srv_response *resp);
/* 1 and *out (may be NULL) when model id is being added (downloading or
 * reading, not failed); else 0. */
int srv_admin_pending_find(srv_admin *a, const char *id, srv_admin_pending *out);
/* The adds still downloading or reading. */
int srv_admin_in_progress(srv_admin *a);
/* Removes model id (srv_residency_remove).  0 and *m the model; -1 with resp
 * failed (404 unknown, 400 still being added or the last model). */
int srv_admin_remove(srv_admin *a, const char *id, srv_model **m, srv_response *resp);
/* The pending adds into out[0..cap): their count. */
int srv_admin_pending_list(srv_admin *a, srv_admin_pending *out, int cap);

#endif
