/* scheduler: continuous (iteration-level) batching, one scheduler per model;
 * an implementation of the decode interface (decode_job.h).
 *
 * A scheduler thread owns one large session (max_batch decoder rows) and
 * runs the engine's decode loop (mt_decode_run) on it.  Jobs arrive through
 * submit() from any thread and nobody waits on a thread for them: between two
 * decoder steps (the loop's feed) the scheduler drops the jobs whose client
 * went away (job->abort) or that waited too long for rows, admits waiting
 * sentences in FIFO order while rows are free (encoding each source), and
 * the loop runs ONE mt_step for every active sequence together (no lock
 * held) and hands over the finished ones; the scheduler retires them and
 * calls done() of each job whose last sentence is over (outside its lock;
 * done() must be short: it resumes a connection).  A streamed job
 * (job->progress, each sentence's progress callback) gets its greedy
 * sentences' tokens after every step and each sentence's best hypothesis as
 * it finishes.  A sentence's result is that of decoding it alone (the
 * engine's guarantee).
 */
#ifndef SRV_SCHED_H
#define SRV_SCHED_H

/* Background sentences (srv_decode_job.background: a file job's batches) hold
 * at most 1/SRV_SCHED_BACKGROUND_SHARE of the rows (at least one) while
 * interactive sentences decode or wait; every row when none does. */
#define SRV_SCHED_BACKGROUND_SHARE 16

#include "decode_job.h"

typedef struct srv_sched srv_sched;

typedef struct {
    int    max_jobs;            /* jobs waiting or decoding; more are refused (submit -1) */
    double queue_timeout_s;     /* a job none of whose sentences got rows by then: timed_out */
    size_t kv_budget;           /* bytes: a sentence waits while the K/V caches the next step would
                                   read with it (mt_session_kv_step_bytes) exceed this, unless
                                   nothing decodes; 0 = rows only */
    int    nice;                /* the thread's nice value (setpriority); 0 = as created */
} srv_sched_params;

srv_sched_params srv_sched_default_params(void);

/* Starts the thread; session rows = sparams->max_batch.  NULL with err on failure. */
srv_sched *srv_sched_new(const mt_model *model, const mt_session_params *sparams, const srv_sched_params *p,
                         mt_err *err);
/* Stops the thread (after the work it holds) and frees the session. */
void       srv_sched_free(srv_sched *sc);

/* The decode interface over sc. */
srv_decoder srv_sched_decoder(srv_sched *sc);

typedef struct {
    int active, waiting;        /* sentences decoding now, waiting for rows */
    int rows;                   /* decoder rows in use */
    int jobs_started;           /* requests with a sentence decoding or done */
    int jobs_waiting;           /* requests none of whose sentences has rows yet */
} srv_sched_counts;

void       srv_sched_stats(srv_sched *sc, srv_sched_counts *c);

#endif
