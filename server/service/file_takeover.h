/* file_takeover: with --redis, asynchronous file jobs (POST /translate_file
 * with async=true, DeepL's POST /v2/document) that outlive the replica that
 * accepted them.
 *
 * Before such a job starts, its source file and options (format, languages
 * as resolved, the request's terms, its name, a document's key and billed
 * characters) go to Redis with this replica's lease on it (file_lease.h),
 * bounded by --redis-file-mb of sources for all replicas: a file over that
 * alone is refused with 413, one that does not fit now (or while Redis does
 * not answer) with 503 + Retry-After.  One thread per replica then:
 *   - renews the leases of the jobs it runs, every --redis-lease / 4; a lease
 *     found taken by another replica (this one was paused past it) stops the
 *     job here (srv_files_forget);
 *   - every --redis-lease / 2 (jittered), once the server is ready, looks for
 *     jobs whose lease expired (their replica died, or stopped and gave them
 *     up) and claims at most 4 a turn, within its free job slots: a claim is
 *     one script, so exactly one replica wins each; the winner reads the
 *     source and options, parses and routes the document as the first
 *     replica did and runs it under the same id (its progress shown from
 *     where the last owner's publish left it, never lower);
 *   - after Redis did not answer, claims nothing for one lease, so that the
 *     owners renew first.
 * Each state a leased job publishes (srv_files_params.publish) is written
 * only while this replica holds its lease, and its result only once: a job
 * is never translated twice to completion.  A server that stops
 * (srv_takeover_stop, before srv_files_free) gives its leases up, so its
 * jobs are taken over at the next sweep, not after their lease.
 */
#ifndef SRV_FILE_TAKEOVER_H
#define SRV_FILE_TAKEOVER_H

#include "document/document.h"
#include "file_job.h"
#include "file_share.h"
#include "http/errors.h"
#include "translate/glossary.h"

typedef struct srv_server srv_server;
typedef struct srv_takeover srv_takeover;

/* srv->redis's jobs: leases of lease_ms, sources of budget bytes in all;
 * non-leased jobs (a synchronous POST /translate_file) publish through share.
 * NULL when out of memory.  The thread starts with srv_takeover_start. */
srv_takeover *srv_takeover_new(srv_server *srv, srv_file_share *share, int lease_ms, size_t budget);
/* Once srv->files exists: the renewing and sweeping thread.  0 or -1. */
int           srv_takeover_start(srv_takeover *t);
/* The thread stopped and every lease given up; later publishes of leased
 * jobs (srv_files_free cancelling them) write nothing.  Before srv_files_free. */
void          srv_takeover_stop(srv_takeover *t);
void          srv_takeover_free(srv_takeover *t);

/* What a job is made of, for another replica to make it again. */
typedef struct {
    srv_doc_kind        kind;
    const char         *name;           /* the result's name */
    const char         *target, *source;    /* codes; source as detected (not "auto") */
    srv_doc_options     opt;
    const srv_glossary *terms;          /* the request's own terms (NULL: none) */
    const char         *secret;         /* a DeepL document's key ("": none) */
    long                chars;          /* its billed characters */
} srv_takeover_job;

/* A new job's id (into id) and its source data[0..len) and job kept in
 * Redis under this replica's lease: 0; or -1 with resp failed (413: over
 * --redis-file-mb alone; 503 + Retry-After: no room now, or Redis did not
 * answer). */
int  srv_takeover_store(srv_takeover *t, const srv_takeover_job *job, const char *data, size_t len,
                        char id[SRV_FILE_ID_LEN], srv_response *resp);
/* The stored job never started here (srv_files_start refused it): deleted. */
void srv_takeover_abandon(srv_takeover *t, const char *id);
/* srv_files_params.publish (ctx: t): a leased job's state through its lease
 * (1 when it is another replica's now), any other job's through share. */
int  srv_takeover_publish(void *ctx, const char *id, const srv_file_info *info, const char *result);
/* The mtserve_file_* lines of GET /metrics (malloc'd, *len bytes); NULL on OOM. */
char *srv_takeover_metrics(srv_takeover *t, size_t *len);

#endif
