/* workers: W threads fed by a bounded queue.
 *
 * A job is queued if fewer than W + Q jobs are outstanding, else refused at
 * once (the caller answers 503).  Used for what must run on a thread of its
 * own: decoding with --batching off (translate/session_decoder.h) and /attention.
 */
#ifndef SRV_WORKERS_H
#define SRV_WORKERS_H

typedef struct srv_workers srv_workers;
typedef void (*srv_job_fn)(void *arg);

/* nice: the threads' nice value (setpriority; 0 = as created). */
srv_workers *srv_workers_new(int threads, int queue, int nice);
/* Runs every job already queued, then joins the threads. */
void srv_workers_free(srv_workers *w);
/* Queues fn(arg) then after(arg) (may be NULL); -1 when W + Q jobs are
 * already outstanding.  The job stops counting as outstanding between the
 * two, so after() may wake up a client whose next request must be admitted. */
int  srv_workers_submit(srv_workers *w, srv_job_fn fn, srv_job_fn after, void *arg);
/* busy: jobs running; queued: jobs waiting; threads: W. */
void srv_workers_stats(srv_workers *w, int *busy, int *queued, int *threads);

#endif
