/* file_share: POST /translate_file's jobs readable by every replica, through
 * the Redis of --redis (store/redis.h).
 *
 * The replica that takes a job runs it (file_job.h) and publishes it: its
 * state and progress (at most twice a second) as a small JSON value, and
 * once it is done the file's bytes, both expiring --file-ttl after their last
 * write.  Another replica asked for a job it does not hold reads them there:
 * GET /translate_file/ID and GET /download_file/ID/NAME answer from any
 * replica, and so do DeepL's POST /v2/document/ID and .../result (the job's
 * document_key and billed characters are in its state).  Keys: PREFIX file:ID
 * (the state), PREFIX file:ID:data (the file).
 *
 * An asynchronous job (async=true, a DeepL document) is published through
 * its lease instead (file_lease.h), so that another replica can take it over
 * when its own dies (file_takeover.h).  DELETE of a job running on another
 * replica is refused (it is cancelled where it runs).
 */
#ifndef SRV_FILE_SHARE_H
#define SRV_FILE_SHARE_H

#include "file_job.h"
#include "store/redis.h"

/* srv_files_params.publish: the job's state (and, done, its file: result of
 * info->bytes) into Redis r, for ttl_s: 0, or -1 when Redis did not take it
 * (down: at once; else bounded by the client's timeout). */
typedef struct {
    srv_redis *r;
    int        ttl_s;
} srv_file_share;
int  srv_file_share_publish(void *share, const char *id, const srv_file_info *info, const char *result);

/* The JSON published for info (malloc'd), or NULL when out of memory. */
char *srv_file_share_state(const srv_file_info *info);

/* The state of job id as published: 0 with *info (t_start, t_end on this
 * process's clock, as if it ran here), -1 when Redis has none (or is down). */
int  srv_file_share_info(srv_redis *r, const char *id, srv_file_info *info);
/* Its finished file (malloc'd, NUL after *len bytes): 0, or -1. */
int  srv_file_share_result(srv_redis *r, const char *id, char **out, size_t *len);
/* Deletes both keys (a finished job deleted by its client): 0, or -1. */
int  srv_file_share_delete(srv_redis *r, const char *id);
/* A finished job's file taken away on every replica (a DeepL document,
 * deleted once downloaded): its file deleted, its state "cancelled" for the
 * ttl, so the replica that ran it, seeing that, drops its own copy.  0 or -1. */
int  srv_file_share_gone(void *share, const char *id, const srv_file_info *info);
/* 1 when Redis answers now (a new file job may be taken), else 0 with why. */
int  srv_file_share_ready(srv_redis *r, char *why, size_t why_len);

#endif
