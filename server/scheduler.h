/* scheduler: continuous (iteration-level) batching, one scheduler per model.
 *
 * A scheduler thread owns one large session (max_batch decoder rows).  Request
 * threads hand it their tokenized sentences (srv_sched_run) and wait on a
 * condition variable.  Between two decoder steps the scheduler drops the
 * sequences of requests whose client went away, admits waiting sentences in
 * FIFO order while rows are free (encoding each source), then runs ONE
 * mt_step for every active sequence together, and retires the finished ones,
 * waking a request when its last sentence is done.  A sentence's result is
 * that of decoding it alone (the engine's guarantee).
 */
#ifndef SRV_SCHED_H
#define SRV_SCHED_H

#include <stdint.h>

#include "mt.h"

typedef struct srv_sched srv_sched;

/* One sentence of a request. */
typedef struct srv_seq_req {
    const int32_t *src;         /* tokenized, </s> included */
    int            n_src;
    mt_hyp        *hyps;        /* [n_best], filled by the scheduler (zeroed if not decoded) */
    mt_status      status;      /* MT_OK, or why it was not decoded */
    mt_err         err;
    /* the scheduler's */
    int            seq;
    void          *job;
    struct srv_seq_req *next;
} srv_seq_req;

/* Starts the thread; session rows = params->max_batch.  NULL with err on failure. */
srv_sched *srv_sched_new(const mt_model *model, const mt_session_params *params, mt_err *err);
/* Stops the thread (after the work it holds) and frees the session. */
void       srv_sched_free(srv_sched *sc);

/* Decodes items[0..n) with dp (resolved: beam_size, n_best explicit) and waits.
 * gone(ctx) (may be NULL) is polled while waiting: once it returns 1 the
 * sentences are dropped, their rows freed, and *cancelled is set.  Returns
 * MT_OK or the first item's error (err filled). */
mt_status  srv_sched_run(srv_sched *sc, srv_seq_req *items, int n, const mt_decode_params *dp,
                         int (*gone)(void *ctx), void *ctx, int *cancelled, mt_err *err);

/* Sentences decoding now, waiting for rows, and decoder rows in use. */
void       srv_sched_stats(srv_sched *sc, int *active, int *waiting, int *rows);

#endif
