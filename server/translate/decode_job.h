/* decode_job: the one decode interface of the translate pipeline.
 *
 * Tokenized sentences in, hypotheses out.  Two implementations:
 *   scheduler.c        continuous batching: one thread per model decodes
 *                      the sentences of every request together (batching on)
 *   session_decoder.c  a session of the request's own, its sentences decoded
 *                      by mt_generate_each (batching off, and the CLI)
 * Both run the engine's one decode loop (mt_decode_run).
 *
 * A job is handed over with submit() and comes back through job->done(job),
 * called exactly once, from whatever thread finished the work (possibly
 * inside submit), when every item is decoded, dropped or refused.  The job
 * and its items belong to the caller but must stay untouched until done().
 * Cancellation is explicit: job->abort.gone(job->abort.ctx) is polled while
 * the job waits or decodes; once it returns 1 the job's rows are freed and
 * done() reports `cancelled`.  Streaming too: job->progress, when set, sees
 * each item's tokens as they are generated (both decoders).
 */
#ifndef SRV_DECODER_H
#define SRV_DECODER_H

#include <stdint.h>

#include "mt.h"

/* One sentence of a job. */
typedef struct srv_seq_req {
    const int32_t *src;         /* tokenized, </s> included */
    int            n_src;
    mt_hyp        *hyps;        /* [dp.n_best], filled by the decoder (zeroed if not decoded) */
    mt_status      status;      /* MT_OK, or why it was not decoded */
    mt_err         err;
    /* the decoder's */
    int            seq;
    struct srv_seq_req *next;
    struct srv_decode_job *job;
    /* the caller's: this sentence's own parameters (a prefix, a seed), NULL:
     * the job's dp; beam_size and n_best must be the job's */
    const mt_decode_params *dp;
} srv_seq_req;

typedef struct {
    int  (*gone)(void *ctx);    /* 1 once nobody waits for the result (NULL: never) */
    void  *ctx;
} srv_abort;

/* Streaming (optional): on the decoder's thread, after every step, a greedy
 * item's ids so far (ids[0..n), the final </s> included once produced;
 * final 0), and, when any item finishes, its best hypothesis (final 1).
 * ids live only during the call.  It must not block: it copies and returns
 * (stream.c).  The engine's decode loop calls it, as each item's
 * mt_decode_params.progress_callback (srv_decode_item_params). */
typedef struct {
    void (*fn)(void *ctx, int item, const int32_t *ids, int n, int final);
    void  *ctx;
} srv_progress;

typedef struct srv_decode_job srv_decode_job;
struct srv_decode_job {
    srv_seq_req     *items;
    int              n;
    mt_decode_params dp;        /* resolved: beam_size and n_best explicit */
    srv_abort        abort;
    srv_progress     progress;  /* fn NULL: no streaming */
    void           (*done)(srv_decode_job *job);
    void            *ctx;       /* the caller's, for done() */
    /* 1: bulk work (a file job's batch): the scheduler gives such sentences
     * a small share of the rows while interactive ones decode or wait, all of
     * them otherwise (scheduler.h, SRV_SCHED_BACKGROUND_SHARE); the session
     * decoder ignores it */
    int              background;
    /* whose job (srv_decode_client_id of the request's client): the
     * scheduler admits the sentences of different clients in turn, by
     * deficit round robin (scheduler.h); 0: one anonymous client */
    uint64_t         client;
    /* results, valid in done() */
    mt_status        status;    /* MT_OK, or the first failed item's status */
    mt_err           err;
    int              cancelled; /* abort said gone: the items were dropped */
    int              timed_out; /* waited longer than the decoder's queue timeout */
    /* the decoder's */
    int              remaining;
    int              started;   /* a sentence got decoder rows */
    double           t_submit;
    srv_decode_job  *next;
};

typedef struct {
    /* 0: accepted (done() follows); -1: refused at once, the queue is full
     * (done() is not called). */
    int  (*submit)(void *self, srv_decode_job *job);
    void  *self;
} srv_decoder;

/* A client's id for srv_decode_job.client: a 64-bit hash of its name. */
uint64_t srv_decode_client_id(const char *client);
/* Prepares job for submit: items[0..n) reset, results cleared. */
void srv_decode_job_init(srv_decode_job *job, srv_seq_req *items, int n, const mt_decode_params *dp);
/* Called by a decoder when the job is over: fills status/err from the items. */
void srv_decode_job_finish(srv_decode_job *job);
/* Item i's decoding parameters for the engine: its own dp, else the job's;
 * with job->progress.fn, the job's hook as their progress callback (for
 * item i).  The job and its items must outlive the item's decoding. */
mt_decode_params srv_decode_item_params(srv_decode_job *job, int i);

#endif
