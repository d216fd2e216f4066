/* decode_job: what both decoders share about a job (decode_job.h). */
#include "decode_job.h"

#include <string.h>

uint64_t srv_decode_client_id(const char *client)
{
    uint64_t h = 1469598103934665603ull;        /* FNV-1a */
    for (const char *p = client; p && *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

void srv_decode_job_init(srv_decode_job *job, srv_seq_req *items, int n, const mt_decode_params *dp)
{
    srv_decode_job keep = { .items = items, .n = n, .dp = *dp, .abort = job->abort, .progress = job->progress,
                            .done = job->done, .ctx = job->ctx, .background = job->background,
                            .client = job->client };
    *job = keep;
    for (int i = 0; i < n; i++) {
        memset(items[i].hyps, 0, sizeof *items[i].hyps * (size_t)(dp->n_best > 0 ? dp->n_best : 1));
        items[i].status = MT_OK;
        items[i].err = (mt_err){ 0 };
        items[i].seq = -1;
        items[i].next = NULL;
        items[i].job = job;
    }
}

void srv_decode_job_finish(srv_decode_job *job)
{
    job->status = MT_OK;
    for (int i = 0; i < job->n; i++)
        if (job->items[i].status != MT_OK) {
            job->status = job->items[i].status;
            job->err = job->items[i].err;
            return;
        }
}

/* The engine's per-sequence progress callback -> the job's hook, with the
 * item's index. */
static void item_progress(void *data, const int32_t *ids, int n, int final)
{
    srv_seq_req *it = data;
    srv_decode_job *job = it->job;
    job->progress.fn(job->progress.ctx, (int)(it - job->items), ids, n, final);
}

mt_decode_params srv_decode_item_params(srv_decode_job *job, int i)
{
    srv_seq_req *it = &job->items[i];
    mt_decode_params dp = it->dp ? *it->dp : job->dp;
    if (job->progress.fn) {             /* it->job: set by srv_decode_job_init */
        dp.progress_callback = item_progress;
        dp.progress_callback_data = it;
    }
    return dp;
}
