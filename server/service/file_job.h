/* file_job: whole documents (document/document.h) through the translate
 * pipeline, in batches, with progress; the finished files held for a while.
 *
 * One runner thread drives every job: it tokenizes a batch of a job's units
 * (srv_files_params.batch_units), submits it to the model's decoder (the
 * scheduler every request goes through), and when the batch is back sets its
 * translations into the document and submits the next one.  A job has one
 * batch in flight at a time, marked background: while interactive requests
 * decode or wait, the scheduler gives a file's sentences a small share of
 * the rows (translate/scheduler.h), and all of them when nobody else waits.
 * So a big file neither stalls other clients nor waits for a quiet moment,
 * and no request deadline applies to it: it runs as long as it has units.  When the last batch is
 * back the document is rendered and held (srv_files_result) until
 * ttl_s after it finished, then deleted; everything is in memory, nothing
 * touches the disk.
 *
 * A job is cancelled by srv_files_cancel, by its route's gone() (its client
 * left), or by srv_files_detach (the request waiting for it died).
 */
#ifndef SRV_FILE_JOB_H
#define SRV_FILE_JOB_H

#include <stddef.h>

#include "document/document.h"
#include "translate/pipeline.h"

#define SRV_FILE_ID_LEN 33      /* 32 hex digits (128 random bits) and a NUL */

typedef struct srv_file_info srv_file_info;

typedef struct {
    int    max_jobs;        /* jobs held at once: running, and finished ones not yet deleted */
    size_t max_store;       /* bytes of finished files held at once */
    int    ttl_s;           /* a finished file is deleted this long after it is done */
    int    batch_units;     /* units per decode job */
    /* NULL, or called without the lock when a job's state changed: first by
     * srv_files_start on its caller's thread (before it returns), then on the
     * runner thread (progress at most twice a second, a running job every 2 s
     * anyway; result: the finished file, of info->bytes, when done).  --redis's file_share.h makes jobs
     * readable by other replicas with it: it must be thread-safe.  It returns
     * 0, or -1 when nothing was published: the runner tries again next turn;
     * or 1 when the job is no longer this process's (another replica took it
     * over: file_takeover.h): it is dropped here as srv_files_forget does */
    int  (*publish)(void *ctx, const char *id, const srv_file_info *info, const char *result);
    void  *publish_ctx;
} srv_files_params;

/* 16 jobs, 256 MB, 600 s, 16 units. */
srv_files_params srv_files_default_params(void);

typedef enum { SRV_FILE_RUNNING, SRV_FILE_DONE, SRV_FILE_FAILED, SRV_FILE_CANCELLED } srv_file_state;

/* "running", "done", "failed", "cancelled" */
const char *srv_file_state_name(srv_file_state s);

struct srv_file_info {
    srv_file_state state;
    int     done, total;        /* units translated so far, units in all */
    char    name[256];          /* the translated file's name */
    srv_doc_kind kind;
    size_t  bytes;              /* the finished file's size */
    mt_err  err;                /* failed: why (status and message) */
    double  t_start, t_end;     /* srv_now(); t_end 0 while running */
    double  expires;            /* finished: when it is deleted (srv_now() clock) */
    char    secret[SRV_FILE_ID_LEN];    /* the route's (what a reader must show); "" none */
    long    chars;              /* the route's: the source's code points */
};

/* Where a job's units go, and who hears of it. */
typedef struct {
    srv_tr_model  tm;           /* the model's view for the pipeline */
    srv_decoder   decoder;      /* its decoder */
    srv_tr_params p;            /* resolved (srv_translate_resolve); dp.alignments is set by the job */
    srv_glossary *glossary;     /* the terms to keep (NULL: none); taken by srv_files_start, freed with the job */
    char    secret[SRV_FILE_ID_LEN];    /* kept in the job's info for the endpoint that checks it
                                           (DeepL's document_key); "" none */
    long    chars;              /* the source's code points (billed), kept in the info */
    /* on the runner thread, once, when the job is over (done, failed or
     * cancelled), without the jobs' lock (so it may take the HTTP layer's),
     * unless detached first; NULL: nobody waits */
    void (*on_end)(void *ctx);
    void  *end_ctx;
    /* polled on the runner thread: 1 once nobody wants the result (NULL: never) */
    int  (*gone)(void *ctx);
    void  *gone_ctx;
    /* A job that has an id already (its source stored in Redis before it
     * starts, or taken over from another replica: file_takeover.h): that id
     * ("": a new random one), when it began (srv_now() clock; 0: now) and the
     * progress its last owner had published (what is shown never goes below
     * it, as "done" is monotonic) */
    char    id[SRV_FILE_ID_LEN];
    double  t_start;
    int     done_floor;
} srv_file_route;

typedef struct srv_files srv_files;

/* Starts the runner thread.  NULL with err on failure. */
srv_files *srv_files_new(const srv_files_params *p, mt_err *err);
/* Cancels every job, joins the thread, frees everything.  NULL: no-op. */
void       srv_files_free(srv_files *f);

/* A job for doc, parsed from data (both taken: freed by the job, also on
 * failure); name is the source file's name (the result is named after it).
 * MT_OK and id (r->id when given), or MT_ERR_BUSY (max_jobs held: retry
 * later), MT_ERR_INPUT (r->id is held here already), MT_ERR_NOMEM. */
mt_status srv_files_start(srv_files *f, srv_doc *doc, char *data, const char *name, const srv_file_route *r,
                          char id[SRV_FILE_ID_LEN], mt_err *err);
/* The job's state: 0, or -1 when no job has that id (never was, or deleted). */
int       srv_files_info(srv_files *f, const char *id, srv_file_info *out);
/* A finished file: *out malloc'd (a copy), *len its size, info filled.  MT_OK,
 * MT_ERR_INPUT (no such job, or not done: info says which) or MT_ERR_NOMEM. */
mt_status srv_files_result(srv_files *f, const char *id, char **out, size_t *len, srv_file_info *info, mt_err *err);
/* Cancels a running job (0), -1 when no job has that id; a finished one is deleted. */
int       srv_files_cancel(srv_files *f, const char *id);
/* The route's on_end and gone are forgotten (the waiting request is gone):
 * neither is called again, but for an on_end the runner has already begun
 * (it is called without the lock).  So end_ctx must live until on_end ran or
 * the job was detached before it ended: a suspended HTTP request does (it
 * cannot complete before it is resumed).  cancel: the job is cancelled too. */
void      srv_files_detach(srv_files *f, const char *id, int cancel);
/* Job id is another replica's now (its lease was lost: file_takeover.h): it
 * is cancelled, no longer found (info, result: the other replica's, from
 * Redis) and freed once its batch in flight is back.  No job: nothing. */
void      srv_files_forget(srv_files *f, const char *id);
/* How many more jobs may be held now (max_jobs less those held). */
int       srv_files_room(srv_files *f);
/* 128 random bits as 32 hex digits (a job's id; a route's secret): 0, or -1
 * when the system has no randomness to give. */
int       srv_files_random_id(char id[SRV_FILE_ID_LEN]);
/* Jobs held now, of which running, and bytes of finished files held (metrics). */
void      srv_files_usage(srv_files *f, int *held, int *running, size_t *bytes);

#endif
