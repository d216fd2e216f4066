/* file_lease: an asynchronous file job kept in Redis so that another replica
 * can take it over when its own dies (file_takeover.h runs the leases; this
 * file is their Redis side: one Lua script per step, so each is atomic).
 *
 * Keys, beside file_share.h's PREFIX file:ID (the state) and file:ID:data
 * (the finished file):
 *   file:ID:src    the source file's bytes      } for --file-ttl, renewed
 *   file:ID:job    its options (JSON: format,   } with the lease while the
 *                  languages, terms, name...)   } job runs
 *   file:ID:lease  the replica that runs it (its token), PX the lease: set by
 *                  the store (SET), renewed by its owner, taken by a claim
 *                  only once it expired (SET NX semantics, in a script)
 *   file:ID:end    set once the job ended (done, failed or cancelled), for
 *                  --file-ttl: no claim after it, no second result
 *   files:held     a hash: the ids whose source is held, and its bytes
 *   files:bytes    their sum, bounded by --redis-file-mb for all replicas
 *   files:stats    a hash: completed (results written), refused (results a
 *                  replica finished after losing its lease: not written),
 *                  taken_over (claims), ended (failed or cancelled)
 *
 * A job is never translated twice to completion: its result is written only
 * by the replica holding its lease, and only once (file:ID:end).
 */
#ifndef SRV_FILE_LEASE_H
#define SRV_FILE_LEASE_H

#include <stddef.h>

#include "file_job.h"
#include "store/redis.h"

typedef struct {
    srv_redis *r;
    char       me[SRV_FILE_ID_LEN];     /* this replica's token: its leases' value */
    int        lease_ms;                /* a lease lasts this long unless renewed */
    int        ttl_s;                   /* --file-ttl: the source, options, state and end marker */
    size_t     budget;                  /* bytes of sources and options held in Redis, every replica's */
} srv_lease_ctx;

typedef enum {
    SRV_LEASE_OK,
    SRV_LEASE_LOST,             /* another replica holds the job, or it ended */
    SRV_LEASE_FULL,             /* the budget has no room for it now */
    SRV_LEASE_GONE,             /* claim: no source left (expired) or ended: dropped from files:held */
    SRV_LEASE_DOWN,             /* Redis did not answer (or answered an error: err) */
} srv_lease_rc;

/* A new job id: its source src[0..len) and options (JSON) stored with this
 * replica's lease: OK; FULL (*used: the bytes held now); DOWN (err). */
srv_lease_rc srv_lease_store(const srv_lease_ctx *c, const char *id, const char *src, size_t len, const char *opts,
                             long *used, char *err, size_t err_len);
/* The lease renewed (and the source and options kept), and state (JSON;
 * NULL: none) published, while id is still this replica's: OK, LOST
 * (another replica holds it or ended it), GONE (this replica ended it: a
 * renewal that crossed its end), DOWN.  A lease that expired unclaimed is
 * taken back. */
srv_lease_rc srv_lease_hold(const srv_lease_ctx *c, const char *id, const char *state);
/* The job ended: its state (and, done, its file result[0..len)) written,
 * the lease, source and options deleted, the end marked -- only while id is
 * this replica's and never ended: OK (also when this replica ended it
 * already: a retry), LOST (nothing written; a done result counted as
 * refused), DOWN. */
srv_lease_rc srv_lease_finish(const srv_lease_ctx *c, const char *id, const char *state, const char *result,
                              size_t len, int done);
/* Up to max ids held in Redis whose lease expired (their replica died, or
 * stopped): the count, or -1 when Redis did not answer. */
int          srv_lease_orphans(const srv_lease_ctx *c, char (*ids)[SRV_FILE_ID_LEN], int max);
/* Takes id's lease if it expired (one replica wins): OK, LOST (held by
 * another), GONE (nothing to run: ended or expired), DOWN. */
srv_lease_rc srv_lease_claim(const srv_lease_ctx *c, const char *id);
/* id's options and source (malloc'd, NUL after *olen and *slen bytes): 0, or -1. */
int          srv_lease_load(const srv_lease_ctx *c, const char *id, char **opts, size_t *olen, char **src,
                            size_t *slen);
/* id's lease given up (the server stops: another replica takes the job at
 * its next sweep), when it is still ours. */
void         srv_lease_release(const srv_lease_ctx *c, const char *id);
/* Everything of a job that never started here deleted (srv_files_start
 * refused it after the store). */
void         srv_lease_drop(const srv_lease_ctx *c, const char *id);

#endif
