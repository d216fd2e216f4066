/* decode_loop.c: the one loop that runs decoding steps (mt_decode_run).
 *
 * Every decoder drives its sequences through it: mt_generate and
 * mt_generate_each (a feed over their sources, generate.c; the server's
 * session decoder and the CLI call them) and the server's continuous-batching
 * scheduler (a feed over its queue, server/translate/scheduler.c).  So the
 * order of a step is written once: the feed starts sequences, one mt_step,
 * every sequence's progress callback and stop callback (which may end it:
 * mt_seq_stop), then each finished one taken and handed to the feed.
 * Nothing here allocates; the takes allocate the results.
 */
#include "model/mt_internal.h"

#include <string.h>

/* After a step: every greedy sequence's ids so far, for its progress
 * callback (final 0), the ones that finished in this step included; then a
 * running one's stop callback, which may end it here. */
static void progress(mt_session *s)
{
    for (int id = 0; id < s->p.max_batch; id++) {
        const mt_seq *q = &s->seqs[id];
        int n;
        const int32_t *ids = q->progress || q->stop ? mt_seq_ids(s, id, &n) : NULL;
        if (ids && q->progress)
            q->progress(q->progress_data, ids, n, 0);
        if (ids && q->stop && !mt_seq_finished(s, id) && q->stop(q->stop_data, ids, n))
            mt_seq_stop(s, id);
    }
}

/* Each finished sequence taken into hyps (at most MT_MAX_BEAM: n_best <=
 * beam size), its best hypothesis to its progress callback (final 1), and
 * the hypotheses handed over to the feed, which owns their arrays from then on. */
static void hand_over(mt_session *s, const mt_decode_feed *feed)
{
    mt_hyp hyps[MT_MAX_BEAM];
    for (int id = 0; id < s->p.max_batch; id++) {
        if (!mt_seq_finished(s, id))
            continue;
        const mt_seq *q = &s->seqs[id];
        void (*cb)(void *, const int32_t *, int, int) = q->progress;   /* the take frees the sequence */
        void *cb_data = q->progress_data;
        int n = q->n_best;
        mt_err err = {0};
        mt_status st = mt_seq_take(s, id, hyps, &err);   /* a broken invariant: MT_ERR_INTERNAL, freed */
        if (st == MT_OK && cb)
            cb(cb_data, hyps[0].ids, hyps[0].n_ids, 1);
        if (st != MT_OK) {                                /* this request fails, the others go on */
            memset(hyps, 0, sizeof hyps);
            n = 0;
        }
        feed->finished(feed->data, id, st, hyps, n, &err);
    }
}

mt_status mt_decode_run(mt_session *s, const mt_decode_feed *feed, mt_err *err)
{
    if (!s || !feed || !feed->start || !feed->finished)
        return mt_err_set(err, MT_ERR_INPUT, "mt_decode_run: bad arguments");
    for (;;) {
        mt_err e = {0};                 /* the feed's failure, whether or not the caller wants it */
        int r = feed->start(feed->data, s, &e);
        if (r < 0) {
            if (err)
                *err = e;
            return e.status != MT_OK ? e.status : MT_ERR_INTERNAL;
        }
        if (r == 0)
            return MT_OK;
        mt_step(s);
        progress(s);
        hand_over(s, feed);
    }
}
