/* glossary_share: DeepL's stored glossaries (glossary_store.h) kept in the
 * Redis of --redis, so that every replica lists, reads, applies and deletes
 * the same ones.  Only glossary_store.c calls it: the store keeps a parsed
 * copy of each glossary it has used, and asks Redis at each use whether that
 * copy is still the current one (one round trip; the glossary's JSON comes
 * only when it changed).
 *
 * Keys (PREFIX = --redis-prefix):
 *   PREFIX gloss:ID        a hash {owner, rev, json}: the key's index that made
 *                          it, its revision (a new one at each edit) and the
 *                          glossary as JSON {name, created, dicts: [{source,
 *                          target, entries: [[src, tgt]...]}]}
 *   PREFIX glosses:OWNER   a sorted set of the owner's ids, by creation
 *   PREFIX gloss:n         how many glossaries in all (--max-stored-glossaries
 *                          holds across replicas)
 *   PREFIX gloss:seq       the revision counter
 * Every change is one Lua script (atomic): no two replicas both take the last
 * place, an edit of a deleted glossary does not bring it back.  No expiry:
 * a glossary lives until it is deleted, as it would on DeepL.
 *
 * This file knows Redis and the keys, not glossaries: glossary_store.c makes
 * the JSON and reads it back.  Owners are API keys' indexes: replicas must read the same --api-keys file.
 */
#ifndef SRV_GLOSSARY_SHARE_H
#define SRV_GLOSSARY_SHARE_H

#include "store/redis.h"

typedef enum {
    SRV_GSHARE_OK = 0,
    SRV_GSHARE_NONE,            /* no such glossary (or another owner's) */
    SRV_GSHARE_FULL,            /* add: max glossaries in all */
    SRV_GSHARE_TAKEN,           /* add: the id exists already (draw another) */
    SRV_GSHARE_SAME,            /* get: the revision known is the current one */
    SRV_GSHARE_DOWN,            /* Redis did not answer (or answered nonsense): err says why */
} srv_gshare_rc;

/* Glossary id of owner, as JSON (NUL-free, glossary_store.c's), added or put
 * in place of its id's (replace): *rev its new revision. */
srv_gshare_rc srv_gshare_add(srv_redis *r, const char *id, int owner, const char *json, int max, long *rev,
                             char *err, size_t err_len);
srv_gshare_rc srv_gshare_replace(srv_redis *r, const char *id, int owner, const char *json, long *rev, char *err,
                                 size_t err_len);
srv_gshare_rc srv_gshare_remove(srv_redis *r, const char *id, int owner, char *err, size_t err_len);
/* Owner's glossary id: SAME when its revision is known_rev, else OK with its
 * JSON (*json malloc'd, *len bytes) and *rev. */
srv_gshare_rc srv_gshare_get(srv_redis *r, const char *id, int owner, long known_rev, char **json, size_t *len,
                             long *rev, char *err, size_t err_len);
/* Owner's ids in creation order: *ids (malloc'd, 37 bytes each), the count;
 * -1 when Redis did not answer. */
int srv_gshare_list(srv_redis *r, int owner, char (**ids)[37]);

#endif
