/* glossary_store: the glossaries clients create through the API (DeepL's
 * /v2/glossaries and /v3/glossaries), kept by id in memory for the server's
 * life (or in Redis, below), each seen only by the key that made it.
 *
 * A stored glossary is a name and one or more dictionaries, each the terms
 * (translate/glossary.h) of one language pair.  Once added it never changes:
 * an edit builds a new one and srv_gstore_replace puts it under the same id.
 * Readers hold a reference (srv_gstore_get, srv_gstore_list) for as long as
 * they use it, so a glossary deleted or replaced meanwhile stays whole for a
 * translation already using it; the last reference frees it.  Thread-safe.
 *
 * With --redis (srv_gstore_share) the glossaries live in Redis, shared by
 * every replica (glossary_share.h); the store holds the copies it used.
 *
 * Usage:
 *     srv_gstored *g = srv_gstored_new("my terms", owner);
 *     srv_gstored_add_dict(g, "en", "fr", terms);      // terms now g's
 *     if (srv_gstore_add(store, g, err, sizeof err))    // g now the store's
 *         ... 400/413: err
 *     srv_gstored *use = srv_gstore_get(store, id, owner);
 *     ... srv_gstored_dict(use, "en", "fr") ...
 *     srv_gstore_release(use);
 */
#ifndef SRV_GLOSSARY_STORE_H
#define SRV_GLOSSARY_STORE_H

#include <stddef.h>
#include <time.h>

#include "translate/glossary.h"

#define SRV_GSTORE_NAME_MAX  256    /* bytes of a name, NUL included */
#define SRV_GSTORE_MAX_DICTS 64     /* language pairs of one glossary */

typedef struct {
    char          source[16], target[16];   /* the models' codes */
    srv_glossary *terms;
} srv_gdict;

typedef struct srv_gstored {
    char      id[37];               /* a random UUID (version 4), set by srv_gstore_add */
    char      name[SRV_GSTORE_NAME_MAX];
    int       owner;                /* the key's index among the server's, -1: none */
    time_t    created;
    int       n_dicts;
    srv_gdict dicts[SRV_GSTORE_MAX_DICTS];
    int       refs;                 /* the store's lock guards it */
    long      rev;                  /* with --redis: its revision there (glossary_share.h); else 0 */
} srv_gstored;

typedef struct srv_gstore srv_gstore;
struct srv_redis;

/* A store for at most max glossaries in all; NULL when out of memory. */
srv_gstore *srv_gstore_new(int max);
void        srv_gstore_free(srv_gstore *s);
/* With --redis, before the first request: the glossaries are r's, shared by
 * every replica (glossary_share.h), and the store holds the copies it has
 * used (at most max), each checked against Redis at every get.  While Redis
 * does not answer, get and list give the copies held here (a glossary this
 * replica never used is unknown), and add, replace and remove fail with -2. */
void        srv_gstore_share(srv_gstore *s, struct srv_redis *r);

/* A new, empty glossary (not in a store); NULL when out of memory. */
srv_gstored *srv_gstored_new(const char *name, int owner);
/* Adds the dictionary source -> target, taking terms (freed with g); a pair
 * it has already is replaced.  0, or -1 when g has SRV_GSTORE_MAX_DICTS pairs
 * (terms are then freed). */
int  srv_gstored_add_dict(srv_gstored *g, const char *source, const char *target, srv_glossary *terms);
/* Removes the pair's dictionary: 0, or -1 when g has none. */
int  srv_gstored_remove_dict(srv_gstored *g, const char *source, const char *target);
/* The pair's dictionary, or NULL. */
const srv_gdict *srv_gstored_dict(const srv_gstored *g, const char *source, const char *target);
/* A copy of g (its dictionaries' terms copied too) under the same id, for an
 * edit; NULL when out of memory. */
srv_gstored *srv_gstored_copy(const srv_gstored *g);
/* Frees a glossary that is in no store. */
void srv_gstored_free(srv_gstored *g);

/* Adds g, giving it a fresh id: the store owns it now.  0, or -1 with err when
 * the store is full, -2 with err when Redis did not take it (g is then freed). */
int  srv_gstore_add(srv_gstore *s, srv_gstored *g, char *err, size_t err_len);
/* Puts g in place of the glossary with g's id and owner: 0, or -1 when there
 * is none any more, -2 when Redis did not answer (g is then freed). */
int  srv_gstore_replace(srv_gstore *s, srv_gstored *g);
/* The glossary id of owner, with a reference; NULL when there is none. */
srv_gstored *srv_gstore_get(srv_gstore *s, const char *id, int owner);
/* Owner's glossaries in creation order, each with a reference: *out (malloc'd,
 * free it after releasing each) and the count; -1 when out of memory. */
int  srv_gstore_list(srv_gstore *s, int owner, srv_gstored ***out);
/* Removes owner's glossary id: 0, or -1 when there is none, -2 when Redis did not answer. */
int  srv_gstore_remove(srv_gstore *s, const char *id, int owner);
/* Gives back a reference of get or list (NULL is a no-op). */
void srv_gstore_release(srv_gstore *s, srv_gstored *g);

#endif
