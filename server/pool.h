/* pool: who may decode now.
 *
 * srv_workers   W inference threads (W x compute threads <= cores) fed by a
 *               bounded queue: a request needing a model is queued if fewer
 *               than W + Q jobs are outstanding, else refused at once (503
 *               queue_full).  The HTTP threads only parse and reply, so
 *               /health and /metrics stay responsive while workers decode.
 * srv_sessions  one model's sessions, created lazily up to W.  A worker
 *               takes one for the duration of a request, so there is always
 *               one free, and a session is used by one thread at a time.
 */
#ifndef SRV_POOL_H
#define SRV_POOL_H

#include "handlers.h"
#include "mt.h"

typedef struct srv_workers srv_workers;
typedef void (*srv_job_fn)(void *arg);

srv_workers *srv_workers_new(int threads, int queue);
/* Runs every job already queued, then joins the threads. */
void srv_workers_free(srv_workers *w);
/* Queues fn(arg) then after(arg) (may be NULL); -1 when W + Q jobs are
 * already outstanding.  The job stops counting as outstanding between the
 * two, so after() may wake up a client whose next request must be admitted. */
int  srv_workers_submit(srv_workers *w, srv_job_fn fn, srv_job_fn after, void *arg);
/* busy: jobs running; queued: jobs waiting; threads: W. */
void srv_workers_stats(srv_workers *w, int *busy, int *queued, int *threads);

typedef struct srv_sessions srv_sessions;

srv_sessions *srv_sessions_new(const mt_model *model, const mt_session_params *params, int max);
void          srv_sessions_free(srv_sessions *p);
/* A free session, created if none is idle; MT_ERR_BUSY when max are in use. */
mt_status     srv_sessions_get(srv_sessions *p, mt_session **out, mt_err *err);
void          srv_sessions_put(srv_sessions *p, mt_session *s);
size_t        srv_sessions_bytes(srv_sessions *p);     /* of one session; 0 before the first */

/* A session held by a handler; 0, or -1 with resp failed (500). */
int  srv_session_take(srv_sessions *p, mt_session **out, srv_response *resp);

#endif
